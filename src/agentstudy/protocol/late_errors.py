"""Internal errors once an attempt has its result (issue 40): how they are told apart and named.

Pure. An attempt whose body raised before its agent process started spent nothing (``never started: …``,
``protocol.records.NEVER_STARTED``). One whose agent process ended did spend, so an internal error after
that point — reading or evaluating its output, pricing it, keeping its transcript or its server's stderr
tail, building its observation, a bug — must never lose it: the runners write its observation ``failed``
with a ``statusReason`` beginning :data:`INTERNAL_ERROR` and charge it by the seed's conservative rule
(its whole reservation, or more when more is known), then stop the run. :class:`AgentEndedThenFailed` is
how an attempt's body or evaluation says the error came after its agent ended.
"""

from __future__ import annotations

INTERNAL_ERROR = "internal error after the agent ended: "
"""The start of the ``statusReason`` of an attempt recorded after an internal error (issue 40)."""

REASON_CHARS = 300
"""The most characters of an error kept in a reason."""


def error_text(error: BaseException, *, with_kind: bool = True) -> str:
    """``Kind: message`` of ``error`` on one line (control characters removed; an ``OSError`` by its
    ``strerror`` alone when ``with_kind`` is false), at most :data:`REASON_CHARS` characters."""
    message = " ".join("".join(c if c.isprintable() else " " for c in str(error)).split())
    if isinstance(error, OSError) and error.strerror:
        message = message if with_kind else " ".join(error.strerror.split())
    kind = type(error).__name__
    text = (f"{kind}: {message}" if with_kind else message) if message else kind
    if len(text) > REASON_CHARS:
        text = text[: REASON_CHARS - 1] + "…"
    return text


def internal_error_reason(error: BaseException) -> str:
    """The ``statusReason`` of an attempt recorded after ``error``: ``internal error after the agent ended:
    Kind: message`` (the cause of an :class:`AgentEndedThenFailed`)."""
    cause = error.cause if isinstance(error, AgentEndedThenFailed) else error
    return INTERNAL_ERROR + error_text(cause)


class AgentEndedThenFailed(RuntimeError):
    """Something failed after the attempt's agent process ended (``cause``): the attempt spent money the run
    cannot know, so it is recorded ``failed`` and charged its whole reservation, never as ``never started``."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(error_text(cause))
        self.cause = cause


__all__ = ["INTERNAL_ERROR", "REASON_CHARS", "AgentEndedThenFailed", "error_text", "internal_error_reason"]
