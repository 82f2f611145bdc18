"""What a transport gives the walks, and how a result becomes its observation even when that fails (issue 40).

:class:`AttemptPort` is a transport's attempt callables (issue 19). :func:`observe_result` is the one path
both walks (the concurrent walk and the cli runner's one-at-a-time loop) take from an attempt's result to
its observation: settle it, count what it measured, build its observation. Once an attempt has its result,
its observation is always written: if any of those steps raises (a transcript that cannot be kept, a
pricing or evaluation error, an ``OSError``, a bug), the attempt is observed again from its transport's
``failed`` result (``port.unstarted``) with the ``statusReason`` ``internal error after the agent ended: …``
and charged by the seed's conservative rule — its whole reservation, or what its settlement already
charged when that is more — and the error comes back as :class:`ObservedThenFailed`, which the walk raises
once the observation is checkpointed (the run stops; no reservation is left open).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from decimal import Decimal
from typing import Generic, TypeVar, cast

from agentstudy.pricing.budget import Budget
from agentstudy.pricing.tally import Tally
from agentstudy.protocol.late_errors import error_text, internal_error_reason
from agentstudy.protocol.records import CliObservation, HttpObservation
from agentstudy.protocol.schedule import ScheduleEntry

R = TypeVar("R")
"""An attempt's raw result (``CliAttemptResult``, ``HttpAttemptResult``)."""
O = TypeVar("O", CliObservation, HttpObservation)  # noqa: E741
"""An attempt's ledger observation (either transport's)."""


@dataclass(frozen=True)
class AttemptPort(Generic[R, O]):
    """What the walks need from a transport, as callables (no transport names in the walks).

    Attributes:
        submit: starts one scheduled attempt on an executor; its future holds the result (the body
            runs off the coordinator and must not touch the ledger or the run's budget).
        settle: the pure settlement of a result against the attempt's reservation: ``(status, charged)``,
            ``charged`` in USD (in the thread that completed the future).
        measure: the tally after counting a result's measured cost (coordinator).
        observe: ``(entry, result, status, reservation, charged, cap_exceeded)`` -> the observation
            (coordinator; the walk adds ``startedAt`` / ``endedAt``).
        unstarted: ``(entry, status_reason)`` -> the ``failed`` result of an attempt without a result of its
            own (its body raised; issue 40), which ``settle`` charges its whole reservation.
    """

    submit: Callable[[ScheduleEntry], Future[R]]
    settle: Callable[[R], tuple[str, Decimal]]
    measure: Callable[[Tally, R], Tally]
    observe: Callable[[ScheduleEntry, R, str, Decimal, Decimal, bool], O]
    unstarted: Callable[[ScheduleEntry, str], R]


class ObservedThenFailed(RuntimeError):
    """An attempt's observation was built, then something failed (issue 40: an internal error after an attempt
    settles never loses its observation): the walk records ``observation`` (either transport's) and
    checkpoints, then stops with this error; ``cause`` is the error. ``str(error)`` is one line."""

    def __init__(self, observation: CliObservation | HttpObservation, cause: BaseException) -> None:
        super().__init__(f"attempt recorded, then: {error_text(cause)}")
        self.observation, self.cause = observation, cause


def kept_or_late(build: Callable[[dict[str, str]], O], keep: Callable[[dict[str, str]], None]) -> O:
    """``build(kept)``: an observation with what ``keep`` kept of its attempt (``keep`` adds each file's
    ``*_file`` / ``*_sha256`` fields to ``kept`` as it is written: the transcript, the server's stderr tail).
    When ``keep`` raises (a transcript name already taken, a directory that is not private, an ``OSError``, a
    bug), the observation is built with what was kept before it — a file on disk is always named — and comes
    back in an :class:`ObservedThenFailed` (recorded, then the run stops; issue 40)."""
    kept: dict[str, str] = {}
    try:
        keep(kept)
    except Exception as error:
        raise ObservedThenFailed(build(dict(kept)), error) from error
    return build(kept)


@dataclass(frozen=True)
class Observed(Generic[O]):
    """A result turned into its observation: the ``budget`` after settling its ``charged`` USD, the ``tally``
    after counting it, and ``late`` when an internal error came first (recorded, then the run stops)."""

    observation: O
    charged: Decimal
    budget: Budget
    tally: Tally
    late: ObservedThenFailed | None


def observe_result(port: AttemptPort[R, O], entry: ScheduleEntry, result: R, *, reservation: Decimal,
                   budget: Budget, tally: Tally, settled: tuple[str, Decimal] | None = None,
                   settle_error: BaseException | None = None) -> Observed[O]:
    """Settle ``result`` (or take ``settled``, computed elsewhere), count it and build its observation; on an
    internal error, the ``failed`` observation described in the module docstring.

    Args:
        reservation: the attempt's reservation (USD), released from ``budget`` as it is settled.
        settle_error: settling already raised this (off the coordinator): go straight to the failed observation.

    Raises:
        Exception: only when even the failed observation cannot be built (the reservation then stays open,
            charged in full, for the caller's ``close_on_error``).
    """
    known = Decimal(0)
    error = settle_error
    if error is None:
        try:
            status, known = settled if settled is not None else port.settle(result)
            after, counted = budget.settle(reservation, known), port.measure(tally, result)
        except Exception as raised:
            error = raised
        else:
            try:
                observation = port.observe(entry, result, status, reservation, known, after.cap_exceeded)
                return Observed(observation, known, after, counted, None)
            except ObservedThenFailed as failed:  # built, then keeping its transcript failed
                return Observed(cast(O, failed.observation), known, after, counted, failed)
            except Exception as raised:
                error = raised
    fallback = port.unstarted(entry, internal_error_reason(error))
    _status, charged = port.settle(fallback)
    charged = max(charged, known)  # the conservative rule: never less than a charge already known
    after = budget.settle(reservation, charged)
    counted = port.measure(tally, fallback)
    try:
        observation = port.observe(entry, fallback, "failed", reservation, charged, after.cap_exceeded)
    except ObservedThenFailed as again:  # the transcript name was taken by the first try
        observation = cast(O, again.observation)
    return Observed(observation, charged, after, counted, ObservedThenFailed(observation, error))


__all__ = ["AttemptPort", "Observed", "ObservedThenFailed", "kept_or_late", "observe_result"]
