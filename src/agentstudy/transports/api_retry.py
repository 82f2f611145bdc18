"""Retrying a refused Messages API request the way the official SDK does, with one back-off per run (issue 33).

A request the API refused (HTTP 408, 409, 429, 5xx, or a connection that failed before any
byte of the answer) consumed nothing, so it may be sent again: at most
:attr:`RetryPolicy.max_retries` times (default 2), after the server's ``retry-after`` /
``retry-after-ms`` when it gives 0..60 s, else after ``min(0.5 x 2^n, 8)`` seconds less up to a
quarter (jitter) — the SDK's rule. A retry never outlives the request's own timeout window.
This is not a retry of an attempt: the seed's "no automatic retry/resume" is about attempts,
and an attempt's reservation and settlement do not change (the call stays reserved once).

:class:`BackoffGate` is the run's one back-off: a 429 or 529 seen by any attempt pauses every
new request of every in-flight attempt (and the admission of new attempts) until its wait has
passed; each waiter leaves the gate after its own small jitter, and for a second after the pause
every request leaves at least 30 ms after the one before (at most 4 in any 100 ms, whatever answers
quickly meanwhile), so the run does not resume in a synchronised burst. The pauses are kept as
``[{"start", "end", "cause"}]`` for the ledger's ``backoffPauses``.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from agentstudy.io.messages_api import MessagesApiError
from agentstudy.io.signals import StopRequested, stop_signal

__all__ = ["BackoffGate", "RetryPolicy", "RetryTally", "failure_kind", "is_retryable", "retry_delay_s",
           "send_with_retries"]

RETRYABLE_STATUSES = frozenset({408, 409, 429})
PAUSING_STATUSES = frozenset({429, 529})
MAX_HONOURED_RETRY_AFTER_S = 60.0
SLEEP_SLICE_S = 0.05
GATE_JITTER_S = 0.25
"""Largest extra wait (seconds) each waiter draws when a run-wide pause ends."""
GATE_RAMP_S = 1.0
"""For this long (seconds) after a run-wide pause ends, requests leave the gate spaced (:data:`GATE_SPACING_S`)."""
GATE_SPACING_S = 0.03
"""Least time (seconds) between two requests leaving the gate during the ramp: never more than 4 in any 100 ms."""


class RetrySender(Protocol):
    """What the retry loop sends through: ``post(body, timeout_s, retry_count=n)`` (``MessagesClient``)."""

    def post(self, body: bytes, timeout_s: float, retry_count: int = 0) -> dict[str, Any]:
        """Send once; raise :class:`~agentstudy.io.messages_api.MessagesApiError` on failure."""
        ...


@dataclass(frozen=True)
class RetryPolicy:
    """``max_retries`` (0 = never retry), ``initial_delay_s`` and ``max_delay_s`` of the exponential back-off."""

    max_retries: int = 2
    initial_delay_s: float = 0.5
    max_delay_s: float = 8.0


DEFAULT_RETRY = RetryPolicy()


@dataclass
class RetryTally:
    """One attempt's refused requests: ``retries`` sent again, ``wait_ms`` waited before them (retry waits and
    run-wide pauses), ``statuses`` seen (an HTTP status, or ``network`` for a connection that failed)."""

    retries: int = 0
    wait_ms: int = 0
    statuses: list[int | str] = field(default_factory=list)


def is_retryable(error: MessagesApiError) -> bool:
    """True for 408, 409, 429 and 5xx statuses and for a connection error before any answer byte."""
    if error.kind == "status" and error.status is not None:
        return error.status in RETRYABLE_STATUSES or error.status >= 500
    return error.kind == "connect"


def failure_kind(error: MessagesApiError | None, timed_out: bool = False) -> str:
    """The ``failureKind`` of an attempt that failed on ``error`` (issue 33 item 6).

    ``rate-limited`` (429), ``overloaded`` (529), ``server-error`` (other 5xx), ``network`` (the
    connection failed or broke), ``timeout`` (the request or the attempt ran out of time), else ``agent``.
    """
    if timed_out or (error is not None and error.kind == "timeout"):
        return "timeout"
    if error is None:
        return "agent"
    if error.kind in ("connect", "transport"):
        return "network"
    if error.status == 429:
        return "rate-limited"
    if error.status == 529:
        return "overloaded"
    if error.kind == "status" and error.status is not None and error.status >= 500:
        return "server-error"
    return "agent"


def retry_delay_s(policy: RetryPolicy, retries_done: int, retry_after_s: float | None, draw: float) -> float:
    """Seconds to wait before retry ``retries_done + 1``: the server's ``retry_after_s`` when 0..60, else
    ``min(initial x 2^retries_done, max) x (1 - 0.25 x draw)`` with ``draw`` in [0, 1) (the SDK's rule)."""
    if retry_after_s is not None and 0 <= retry_after_s <= MAX_HONOURED_RETRY_AFTER_S:
        return retry_after_s
    return min(policy.initial_delay_s * 2.0 ** retries_done, policy.max_delay_s) * (1 - 0.25 * draw)


def _iso(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _sleep(seconds: float, clock: Callable[[], float], sleep: Callable[[float], None]) -> None:
    """Sleep ``seconds`` in short slices, raising ``StopRequested`` as soon as a stop signal arrived."""
    until = clock() + seconds
    while (left := until - clock()) > 0:
        signum = stop_signal()
        if signum is not None:
            raise StopRequested(signum)
        sleep(min(left, SLEEP_SLICE_S))


class BackoffGate:
    """The run's one back-off (thread-safe): :meth:`pause` after a 429/529, :meth:`wait` before each request.

    ``clock`` is monotonic seconds, ``wall`` epoch seconds (the recorded pauses), ``draw`` the jitter source.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep, draw: Callable[[], float] | None = None,
                 jitter_s: float = GATE_JITTER_S) -> None:
        self._clock, self._wall, self._sleep = clock, wall, sleep
        self._draw = draw if draw is not None else random.Random().random  # noqa: S311 - jitter, not a secret
        self._jitter_s = jitter_s
        self._lock = threading.Lock()
        self._until = 0.0
        self._ramp_until = 0.0
        self._last_departure = float("-inf")
        self._pauses: list[dict[str, Any]] = []
        self._open: dict[str, Any] | None = None

    def pause(self, seconds: float, cause: str) -> None:
        """Pause every new request until ``seconds`` from now (extending a pause in force); ``cause`` is
        the status that caused it (``"429"``, ``"529"``)."""
        with self._lock:
            now, wall = self._clock(), self._wall()
            until = now + seconds
            self._ramp_until = max(self._ramp_until, until + GATE_RAMP_S)
            if self._open is not None and now < self._until:
                if until > self._until:
                    self._open["end"] = _iso(wall + seconds)
                    self._until = until
                return
            self._until = until
            self._open = {"start": _iso(wall), "end": _iso(wall + seconds), "cause": cause}
            self._pauses.append(self._open)

    def wait(self) -> float:
        """Block until no pause is in force (plus this waiter's jitter); the seconds waited.

        Raises:
            StopRequested: a stop signal arrived while waiting.
        """
        with self._lock:
            now = self._clock()
            left = self._until - now
            if left <= 0 and now >= self._ramp_until:
                return 0.0
            depart = now + left + self._jitter_s * self._draw() if left > 0 else now
            if depart < self._ramp_until:  # spaced while the run resumes
                depart = max(depart, self._last_departure + GATE_SPACING_S)
                self._last_departure = depart
            waited = depart - now
        if waited <= 0:
            return 0.0
        _sleep(waited, self._clock, self._sleep)
        return waited

    def paused(self) -> bool:
        """Whether a pause is in force now."""
        with self._lock:
            return self._until > self._clock()

    @property
    def pauses(self) -> list[dict[str, Any]]:
        """The pauses so far: ``[{"start", "end", "cause"}]`` (ISO 8601 UTC, ms), oldest first."""
        with self._lock:
            return [dict(p) for p in self._pauses]


def send_with_retries(
    sender: RetrySender, body: bytes, timeout_s: float, tally: RetryTally, *, policy: RetryPolicy = DEFAULT_RETRY,
    gate: BackoffGate | None = None, clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep, draw: Callable[[], float] | None = None,
) -> dict[str, Any]:
    """Send ``body`` once, and again after each refusal :func:`is_retryable` allows, within ``timeout_s`` seconds.

    Each refusal is noted in ``tally``; a 429/529 also pauses ``gate``. The wait before a retry
    (and any run-wide pause) counts against ``timeout_s``: a retry that would not fit is not sent.

    Raises:
        MessagesApiError: the last refusal (or a failure that is not retried).
        StopRequested: a stop signal arrived while waiting.
    """
    chance = draw if draw is not None else random.Random().random  # noqa: S311 - jitter, not a secret
    deadline = clock() + timeout_s
    retries_done = 0
    while True:
        if gate is not None:
            tally.wait_ms += round(gate.wait() * 1000)
        left = deadline - clock()
        try:
            return sender.post(body, max(left, 0.001), retry_count=retries_done)
        except MessagesApiError as error:
            if not is_retryable(error):
                raise
            tally.statuses.append(error.status if error.kind == "status" and error.status is not None
                                  else "network")
            delay = retry_delay_s(policy, retries_done, error.retry_after_s, chance())
            if gate is not None and error.status in PAUSING_STATUSES:
                gate.pause(delay, str(error.status))
            if retries_done >= policy.max_retries or deadline - clock() - delay < 1.0:
                raise
            _sleep(delay, clock, sleep)
            tally.wait_ms += round(delay * 1000)
            tally.retries += 1
            retries_done += 1
