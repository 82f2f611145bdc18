"""Why a run is refused before anything is reserved: ``PreflightError`` and what any failure before the ledger exists
becomes (seed 000, "CLI transport contract", first paragraph). :mod:`agentstudy.runners.preflight` re-exports
every name here.
"""

from __future__ import annotations

from agentstudy.io.signals import StopRequested, stop_signal


class PreflightError(RuntimeError):
    """The run is refused before any reservation (one-line reason)."""


NOTHING_WRITTEN = "nothing was reserved or written"


def refusal(error: BaseException, refused: tuple[type[BaseException], ...] = ()) -> BaseException:
    """What a failure before the ledger exists becomes: ``StopRequested`` after a stop signal; ``error``
    itself when it is a ``PreflightError``, one of ``refused`` or not an ``Exception``; any other error
    a ``PreflightError`` naming it (a run refused before any ledger exits 2, never 1)."""
    signum = stop_signal()
    if signum is not None:
        return StopRequested(signum, NOTHING_WRITTEN)
    if isinstance(error, (PreflightError, *refused)) or not isinstance(error, Exception):
        return error
    text = str(error).splitlines()[0][:300] if str(error) else ""
    return PreflightError(f"preflight failed: {error.__class__.__name__}" + (f": {text}" if text else ""))
