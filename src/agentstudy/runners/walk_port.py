"""What the concurrent walk (:mod:`agentstudy.runners.concurrent_walk`) asks of a transport and how an attempt that
could not run is told (issues 19, 29, 40): the :class:`AttemptPort`, a finished attempt's :class:`Outcome`, the
errors that stop the walk and the never-started attempt's reason and charge. The walk re-exports every name here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from decimal import Decimal
from typing import Generic, TypeVar

from agentstudy.pricing.money import exact
from agentstudy.pricing.tally import Tally
from agentstudy.protocol.records import NEVER_STARTED, CliObservation, HttpObservation
from agentstudy.protocol.schedule import ScheduleEntry

R = TypeVar("R")
"""An attempt's raw result (``CliAttemptResult``, ``HttpAttemptResult``)."""
O = TypeVar("O", CliObservation, HttpObservation)  # noqa: E741
"""An attempt's ledger observation (either transport's; both carry ``startedAt`` / ``endedAt``)."""


@dataclass(frozen=True)
class AttemptPort(Generic[R, O]):
    """What the walk needs from a transport, as four callables (no transport names in the walk).

    Attributes:
        submit: starts one scheduled attempt on an executor; its future holds the result (the body
            runs off the coordinator and must not touch the ledger or the run's budget).
        settle: the pure settlement of a result against the attempt's reservation: ``(status, charged)``,
            ``charged`` in USD (in the thread that completed the future).
        measure: the tally after counting a result's measured cost (coordinator).
        observe: ``(entry, result, status, reservation, charged, cap_exceeded)`` -> the observation
            (coordinator; the walk adds ``startedAt`` / ``endedAt``).
    """

    submit: Callable[[ScheduleEntry], Future[R]]
    settle: Callable[[R], tuple[str, Decimal]]
    measure: Callable[[Tally, R], Tally]
    observe: Callable[[ScheduleEntry, R, str, Decimal, Decimal, bool], O]
    unstarted: Callable[[ScheduleEntry, str], R]
    """``(entry, status_reason)`` -> the ``failed`` result of an attempt whose body raised before its agent
    process started (issue 40, break 11); ``settle`` charges it its whole reservation."""


def never_started_reason(error: BaseException) -> str:
    """The ``statusReason`` of an attempt whose body raised ``error`` before its agent process started:
    ``never started: <message>`` (control characters removed, at most ``REASON_CHARS`` characters)."""
    return NEVER_STARTED + _error_text(error, with_kind=False)


def never_started_usd(observations: Sequence[CliObservation] | Sequence[HttpObservation]) -> Decimal:
    """What the attempts that never started were charged (USD): charged by the seed's conservative rule,
    never spent on any provider (issue 40, break 11)."""
    with exact():
        return sum((Decimal(str(o.charged_usd)) for o in observations
                    if (o.status_reason or "").startswith(NEVER_STARTED)), Decimal(0))


@dataclass(frozen=True)
class Outcome(Generic[R]):
    """A finished attempt: its result, settled ``status`` and ``charged`` USD, and when it ran (ISO 8601 ms)."""

    result: R
    status: str
    charged: Decimal
    started_at: str
    ended_at: str


REASON_CHARS = 300
"""The most characters of an attempt body's error kept in the stop reason."""


class AttemptBodyError(RuntimeError):
    """An attempt's body raised: the walk stopped admission, recorded what was running, and ends with this.

    ``str(error)`` is one line, ``attempt N (task, scenario, repetition R) could not run: Kind: message``
    (also the ledger's ``stopReason``). ``charged_not_spent_usd`` is what the attempts that never started
    were charged (USD; :func:`never_started_usd`, issue 40).
    """

    def __init__(self, reason: str, charged_not_spent_usd: Decimal = Decimal(0)) -> None:
        super().__init__(reason)
        self.charged_not_spent_usd = charged_not_spent_usd


def _error_text(error: BaseException, *, with_kind: bool = True) -> str:
    message = " ".join("".join(c if c.isprintable() else " " for c in str(error)).split())
    if isinstance(error, OSError) and error.strerror:
        message = message if with_kind else " ".join(error.strerror.split())
    kind = type(error).__name__
    text = (f"{kind}: {message}" if with_kind else message) if message else kind
    if len(text) > REASON_CHARS:
        text = text[: REASON_CHARS - 1] + "…"
    return text


class ObservedThenFailed(RuntimeError):
    """A port's ``observe`` built the attempt's observation, then something after it failed (its transcript could
    not be kept): the walk records the observation and checkpoints, then stops with this error (issue 40: an
    internal error after an attempt settles never loses its observation). ``observation`` is the built one
    (either transport's), ``cause`` the error."""

    def __init__(self, observation: CliObservation | HttpObservation, cause: BaseException) -> None:
        super().__init__(f"attempt recorded, then: {type(cause).__name__}: {cause}")
        self.observation, self.cause = observation, cause


def body_error_reason(index: int, entry: ScheduleEntry, error: BaseException) -> str:
    """The one-line stop reason of attempt ``index`` whose body raised ``error`` (control characters removed)."""
    return (f"attempt {index} ({entry.task_id}, {entry.scenario}, repetition {entry.repetition}) could not run: "
            f"{_error_text(error)}")
