"""The running per-attempt limit of a Gemini CLI attempt (issue 45): its session file, read while the child runs.

Gemini CLI's stream carries no usage, but the session file it keeps in the attempt's private
``GEMINI_CLI_HOME`` gains each answered request's tokens as the request ends: measured with 0.61.0 against
the scripted server, a request's tokens are on disk by the ``tool_result`` event of the tool call it asked
for, before the next request is sent. :class:`SessionWatch` is the attempt's ``StdoutWatch``: at every line
end of the stream it re-reads the newest session file when that file grew (bounded, never following a link
or blocking on a special file), prices its requests (``pricing.gemini``) and returns a stop reason once the
running cost passes the limit, so the child is stopped before its next request. The request that crossed the
limit was already spent: it is the overshoot, as for Codex's running limit, and the attempt is charged at
least the largest running cost seen (``peak_usd``).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from agentstudy.pricing.cost import CostProblem
from agentstudy.pricing.gemini import gemini_cost
from agentstudy.stream.gemini_records import RECORD_LIMIT_BYTES, session_usage

__all__ = ["SessionWatch", "newest_session", "read_regular"]


def newest_session(gemini_home: Path) -> Path | None:
    """The newest ``session-*.jsonl`` under ``gemini_home/.gemini/tmp/*/chats`` (``None`` when there is none)."""
    found: list[tuple[float, Path]] = []
    for path in (gemini_home / ".gemini" / "tmp").glob("*/chats/session-*.jsonl"):
        try:
            found.append((path.lstat().st_mtime, path))
        except OSError:
            continue
    return max(found)[1] if found else None


def read_regular(path: Path, limit: int = RECORD_LIMIT_BYTES) -> bytes | None:
    """At most ``limit`` bytes of ``path`` when it is a regular file (not a link, a FIFO or a device: opened
    without following links and without blocking), else ``None``."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read(limit)


@dataclass
class SessionWatch:
    """Fed the child's stdout chunks; returns a stop reason once the session file's requests cost more than
    ``limit_usd`` (USD). ``gemini_home`` is the attempt's private ``GEMINI_CLI_HOME``."""

    gemini_home: Path
    limit_usd: Decimal
    peak_usd: Decimal | None = None
    """The largest running cost seen (USD; ``StdoutWatch.peak_usd``): the attempt is charged at least this."""
    _size: int = field(default=-1, repr=False)

    def __call__(self, chunk: bytes) -> str | None:
        """The stop reason, or ``None`` to let the child run on (looked at only when a stream line ended)."""
        if b"\n" not in chunk:
            return None
        path = newest_session(self.gemini_home)
        data = None if path is None else read_regular(path)
        if data is None or len(data) == self._size:
            return None
        grown, self._size = data[max(0, self._size):] if len(data) > self._size else data, len(data)
        if b'"tokens"' not in grown:
            return None  # no request's usage was added (a user turn, a streamed update): nothing to price again
        requests, _ = session_usage(data.decode("utf-8", "replace"))
        if not requests:
            return None
        try:
            cost = gemini_cost(requests).usd
        except CostProblem:
            return None  # an unpriced request: the attempt's own evaluation names it
        self.peak_usd = cost if self.peak_usd is None else max(self.peak_usd, cost)
        if cost > self.limit_usd:
            return (f"the running usage cost {cost.normalize():f} USD (its session file, {len(requests)} "
                    f"request(s)) passed the per-attempt limit of {self.limit_usd.normalize():f} USD; the child "
                    "was stopped")
        return None
