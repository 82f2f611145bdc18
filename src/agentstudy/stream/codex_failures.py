"""What Codex's ``exec --json`` stream says about refused requests (issue 33 items 5 and 6; pure).

Codex 0.171.0 (measured against the scripted Responses server with fault schedules) reports the API's
refusals only in the text of its messages: each retry of a sampling request is a top-level ``error`` event
``Reconnecting... n/m (<cause>)``, and a turn that still fails ends with ``turn.failed`` whose
``error.message`` is the cause. The causes seen:

- ``exceeded retry limit, last status: 429 Too Many Requests`` (HTTP 429);
- ``unexpected status 529 <unknown status code>: …``, ``unexpected status 503 Service Unavailable: …``
  (any other refused status, named);
- ``We’re currently experiencing high demand, which may cause temporary errors.`` (Codex's words for an
  HTTP 500);
- ``Selected model is at capacity. Please try a different model.`` (an overloaded error inside an HTTP 200
  stream: the scripted ``sse-error`` fault);
- ``stream disconnected before completion: error sending request`` (a reset connection).

Codex's usage limits (``usage limit``, ``rate limit``) are rate limiting; a message naming a timeout is a
timeout. Each cause maps to an HTTP status, ``network`` or ``timeout`` (:func:`codex_error_status`), and
that to the observation's ``failureKind`` by the rule every cli agent shares
(``transports.cli_evaluation.cli_failure_kind``). The wait before each retry is printed only on stderr
(``retrying sampling request (1/1 in 997.689172ms)``): :func:`codex_retry_wait_ms` sums it when the kept
stderr tail holds one such line per counted retry, else says nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["codex_error_status", "codex_failure_status", "codex_retry_wait_ms"]

_NAMED = (re.compile(r"last status: (\d{3})\b"), re.compile(r"unexpected status (\d{3})\b"))
_WORDS: tuple[tuple[tuple[str, ...], int | str], ...] = (
    (("at capacity", "server_is_overloaded", "overloaded"), 529),
    (("high demand",), 500),
    (("usage limit", "rate limit", "too many requests"), 429),
    (("timed out", "timeout"), "timeout"),
    (("stream disconnected", "error sending request", "connection reset", "connection refused",
      "connection closed"), "network"),
)
_WAIT = re.compile(r"retrying sampling request \(\d+/\d+ in (\d+(?:\.\d+)?)(ms|s)\)")


def codex_error_status(message: str) -> int | str | None:
    """The refusal a Codex error message names: an HTTP status (``429``, ``529``, ``500``, ``503`` …),
    ``"network"`` or ``"timeout"``; ``None`` for a message that names none (an agent-side failure)."""
    for pattern in _NAMED:
        found = pattern.search(message)
        if found:
            return int(found.group(1))
    lower = message.lower()
    for words, status in _WORDS:
        if any(word in lower for word in words):
            return status
    return None


def codex_failure_status(terminal: Mapping[str, Any] | None) -> int | str | None:
    """The refusal that ended a Codex attempt: :func:`codex_error_status` of a ``turn.failed`` event's
    ``error.message``; ``None`` for ``turn.completed``, no terminal event, or a message that names none."""
    if terminal is None or terminal.get("type") != "turn.failed":
        return None
    error = terminal.get("error")
    message = error.get("message") if isinstance(error, Mapping) else None
    return codex_error_status(message) if isinstance(message, str) else None


def codex_retry_wait_ms(stderr_tail: str, retries: int) -> int | None:
    """Milliseconds Codex waited before its ``retries`` retries, summed from its stderr lines ``retrying
    sampling request (n/m in 997.7ms)`` (rounded); ``None`` when there were none or the tail does not hold
    exactly one line per retry (it was cut, or the line changed)."""
    waits = [float(value) * (1000.0 if unit == "s" else 1.0) for value, unit in _WAIT.findall(stderr_tail)]
    if retries == 0 or len(waits) != retries:
        return None
    return round(sum(waits))
