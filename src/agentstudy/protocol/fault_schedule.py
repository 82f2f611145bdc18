"""A rehearsal fault schedule: which scripted-API request gets which fault (issue 33 item 1; pure).

The scripted servers (``rehearsal.messages_server``, ``rehearsal.responses_server``) take a
schedule from ``--rehearsal-faults SPEC`` or a study file's ``rehearsalFaults`` string. A SPEC is
comma-separated rules; each rule is ``WHEN:FAULT``:

- ``WHEN`` — ``N`` (the N-th request the server receives, from 1), ``N-M`` (requests N to M),
  ``*`` (every request), ``P%`` (each request with probability P percent, drawn from a
  ``random.Random`` seeded by the rule ``seed=S``, default 0, so a schedule replays exactly), or
  ``attempt=K`` (every request of the K-th conversation: a conversation is a Claude Code session,
  told by its ``x-claude-code-session-id`` header, else opened by a request carrying one message
  that is not a retry — its ``x-stainless-retry-count`` is absent or 0 — so this is exact at
  ``--concurrency 1``).
- ``FAULT`` — ``429`` (rate limited, with ``retry-after: 1``; ``429/ra=S`` another whole number of
  seconds), ``529`` (overloaded), ``500``, ``408``, ``409``, ``503`` (any status 400..599), ``reset``
  (the connection is closed without an answer), ``slow=MS`` (the first byte of a normal answer
  after MS milliseconds), ``sse-error`` (an HTTP 200 stream that sends ``message_start`` and then
  an ``error`` event of type ``overloaded_error``; a non-streaming request gets a 529 instead).

The first rule that matches a request decides its fault; a request no rule matches is answered
normally. Example: ``1:429,30%:529,seed=7``.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["Fault", "FaultRule", "FaultSchedule", "FaultScheduleError", "parse_fault_schedule"]

FaultKind = Literal["status", "reset", "slow", "sse-error"]
DEFAULT_RETRY_AFTER_S = 1


class FaultScheduleError(ValueError):
    """A fault SPEC that does not follow the grammar (one line naming the bad rule)."""


@dataclass(frozen=True)
class Fault:
    """One fault: ``kind``; ``status`` (HTTP status of a ``status`` fault), ``retry_after_s`` (seconds, a 429's
    header; ``None`` = no header), ``delay_ms`` (a ``slow`` fault's wait before the first byte)."""

    kind: FaultKind
    status: int | None = None
    retry_after_s: int | None = None
    delay_ms: int = 0

    @property
    def label(self) -> str:
        """A short name for the request log: ``429``, ``529``, ``reset``, ``slow``, ``sse-error``."""
        return str(self.status) if self.kind == "status" else self.kind


@dataclass(frozen=True)
class FaultRule:
    """``fault`` for requests ``first``..``last`` (1-based, inclusive; ``last`` None = no end), with
    probability ``rate`` (0..1; 1 = always), or for every request of conversation ``attempt``."""

    fault: Fault
    first: int = 1
    last: int | None = None
    rate: float = 1.0
    attempt: int | None = None


@dataclass
class FaultSchedule:
    """The parsed rules and the seeded draw; :meth:`fault_for` decides one request (call it in arrival order).

    Not thread-safe by itself: the server calls it under its lock.
    """

    rules: tuple[FaultRule, ...]
    seed: int = 0
    _rng: random.Random = field(init=False, repr=False)
    _conversations: int = field(default=0, init=False, repr=False)
    _sessions: dict[str, int] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)  # noqa: S311 - a replayable schedule, not a secret

    def fault_for(self, number: int, message_count: int, session: str | None = None,
                  retry: bool = False) -> Fault | None:
        """The fault of request ``number`` (1-based) carrying ``message_count`` messages, or ``None``.

        ``session`` is the client's session id (a Claude Code header) when it sent one; ``retry`` says
        the client marked the request as a repeat of a refused one.
        """
        if session is not None:
            if session not in self._sessions:
                self._conversations += 1
                self._sessions[session] = self._conversations
            conversation = self._sessions[session]
        else:
            if message_count == 1 and not retry:
                self._conversations += 1
            conversation = self._conversations
        chosen: Fault | None = None
        for rule in self.rules:
            if rule.attempt is not None:
                hit = rule.attempt == conversation
            else:
                in_range = rule.first <= number and (rule.last is None or number <= rule.last)
                hit = in_range and (rule.rate >= 1.0 or self._rng.random() < rule.rate)
            if hit:
                chosen = rule.fault
                break
        return chosen


_STATUS = re.compile(r"^([45]\d\d)(?:/ra=(\d{1,4}))?$")
_SLOW = re.compile(r"^slow=(\d{1,7})$")


def _fault(text: str) -> Fault:
    if text == "reset":
        return Fault("reset")
    if text == "sse-error":
        return Fault("sse-error", status=529)
    slow = _SLOW.match(text)
    if slow:
        return Fault("slow", delay_ms=int(slow.group(1)))
    status = _STATUS.match(text)
    if status:
        code = int(status.group(1))
        after = status.group(2)
        retry_after = int(after) if after is not None else (DEFAULT_RETRY_AFTER_S if code == 429 else None)
        return Fault("status", status=code, retry_after_s=retry_after)
    raise FaultScheduleError(f"unknown fault {text!r} (429, 429/ra=S, 529, 500, reset, slow=MS, sse-error)")


def _rule(when: str, fault: Fault) -> FaultRule:
    if when == "*":
        return FaultRule(fault)
    if when.startswith("attempt="):
        number = when.removeprefix("attempt=")
        if number.isdigit() and int(number) >= 1:
            return FaultRule(fault, attempt=int(number))
    elif when.endswith("%"):
        try:
            percent = float(when[:-1])
        except ValueError:
            percent = -1.0
        if 0 <= percent <= 100:
            return FaultRule(fault, rate=percent / 100)
    else:
        first, _, last = when.partition("-")
        if first.isdigit() and int(first) >= 1 and (not last or (last.isdigit() and int(last) >= int(first))):
            return FaultRule(fault, first=int(first), last=int(last) if last else int(first))
    raise FaultScheduleError(f"unknown request selector {when!r} (N, N-M, *, P%, attempt=K)")


def parse_fault_schedule(spec: str) -> FaultSchedule:
    """Parse a fault SPEC (module docstring) into a :class:`FaultSchedule`.

    Raises:
        FaultScheduleError: an empty SPEC, a rule without ``:``, an unknown selector or fault, a bad seed.
    """
    rules: list[FaultRule] = []
    seed = 0
    for part in (p.strip() for p in spec.split(",")):
        if part.startswith("seed="):
            value = part.removeprefix("seed=")
            if not value.isdigit():
                raise FaultScheduleError(f"the fault schedule's seed must be a whole number, got {value!r}")
            seed = int(value)
            continue
        when, colon, fault = part.partition(":")
        if not colon:
            raise FaultScheduleError(f"fault rule {part!r} must be WHEN:FAULT (e.g. 1:429, 30%:529)")
        rules.append(_rule(when.strip(), _fault(fault.strip())))
    if not rules:
        raise FaultScheduleError("the fault schedule names no rule")
    return FaultSchedule(tuple(rules), seed)
