"""What an MCP server's own stderr says about why it could not serve, in words (pure; issue 39 items 5 and 7).

``server_failure_words`` gives the last line the server wrote, and, when that text shows one of the
world's usual causes, a sentence naming it: a server that needs ``/proc``, one that reads its
working directory, one whose tools take absolute paths. The text must already be redacted
(``io.server_host`` redacts it before anything keeps or shows it).
"""

from __future__ import annotations

import re

CAUSES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"uv_resident_set_memory|/proc/(?:self|\d+)/|no such file or directory.{0,40}/proc", re.I),
     "the server needs /proc (its sandbox has a private one of its own pid namespace; the host's is never bound)"),
    (re.compile(r"getcwd|uv_cwd|current working directory|cwd.{0,20}(?:no such|not found|enoent)", re.I),
     "the server reads its working directory (the repository's export, read-only, at the agent's own path)"),
    (re.compile(r"must be (?:an )?absolute|not an absolute|outside (?:the )?allowed director|directory not found",
                re.I),
     "the server's tools take absolute paths: the repository is at the agent's working directory, the same "
     "absolute path in the server's sandbox"),
)
"""(pattern over the server's stderr, the sentence it earns), first match wins."""
LAST_LINE_CHARS = 300


def last_line(text: str) -> str:
    """The last non-blank line of ``text``, stripped, at most ``LAST_LINE_CHARS`` characters (``""`` if none)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:LAST_LINE_CHARS] if lines else ""


def server_cause(text: str) -> str | None:
    """The sentence naming the world's cause ``text`` (what the server said) shows, or ``None``."""
    return next((words for pattern, words in CAUSES if pattern.search(text)), None)


def with_cause(text: str, said: str) -> str:
    """``text`` followed by ``"; " + server_cause(said)`` when what the server ``said`` shows a known cause."""
    cause = server_cause(said)
    return f"{text}; {cause}" if cause else text


def server_failure_words(stderr: str) -> str | None:
    """``"the MCP server's stderr ends: LINE"`` (plus ``"; " + cause`` when one is recognised in ``stderr``),
    or ``None`` when the server wrote nothing."""
    line = last_line(stderr)
    if not line:
        return None
    return with_cause(f"the MCP server's stderr ends: {line}", stderr)


def with_server_words(status: str, reason: str | None, server_stderr: bytes) -> str | None:
    """``reason`` followed by what the MCP server's stderr says (:func:`server_failure_words`) when the attempt's
    ``status`` is not ``completed`` (issue 39): the root cause, not only the first failed call. Pure."""
    words = server_failure_words(server_stderr.decode("utf-8", "replace")) if status != "completed" else None
    if words is None:
        return reason
    return f"{reason}; {words}" if reason else words
