"""The server's word checked in each cli attempt (issue 40, break 6). Pure.

A Claude Code, Codex or Gemini CLI attempt reaches the MCP server only through our relay
(``io.server_host``), so every byte the server sends the agent passes us. :class:`WordWatch` is fed
those bytes in order; MCP's stdio transport sends one JSON-RPC message per line. Every message whose
``result`` carries a ``tools`` list (the answer to ``tools/list``) is held to the preflight's rule,
:func:`agentstudy.protocol.read_only.read_only_evidence` — the same rule the preflight and the http
transport apply, never a copy: a named tool the server no longer lists, or now annotates
``readOnlyHint: false``, ``destructiveHint: true`` or ``openWorldHint: true`` (not let through), is a
changed word. The host then withholds that answer and ends the server, so the agent is never offered
the changed tool; the attempt ends ``invalid-setup`` naming the change (``transports.cli``).

Lines that are not JSON, or deeper or longer than the one bounded JSON reader accepts
(``protocol.json_input``), are not MCP answers we can read and are left to the agent's client.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentstudy.protocol.json_input import JsonInputError, load_json
from agentstudy.protocol.read_only import ReadOnlyError, ToolHints, read_only_evidence

CHANGED_WORD = "invalid setup: the MCP server changed its word since the preflight"
"""How the ``statusReason`` of an attempt whose server changed its tools' annotations begins."""
MAX_LINE_BYTES = 4 * 1024 * 1024
"""The longest line (bytes) the watch holds while waiting for its end; a longer one is passed unread."""


def _hint(annotations: Mapping[str, Any], key: str) -> bool | None:
    value = annotations.get(key)
    return value if isinstance(value, bool) else None


def listed_hints(message: Any) -> dict[str, ToolHints] | None:
    """The ``{tool name: ToolHints}`` of a JSON-RPC ``tools/list`` answer (``result.tools``), ``None`` for any
    other message. A tool without annotations has no hints (``ToolHints()``)."""
    if not isinstance(message, dict):
        return None
    result = message.get("result")
    tools = result.get("tools") if isinstance(result, dict) else None
    if not isinstance(tools, list):
        return None
    hints: dict[str, ToolHints] = {}
    for tool in tools:
        if isinstance(tool, dict) and isinstance(tool.get("name"), str):
            annotations = tool.get("annotations")
            notes = annotations if isinstance(annotations, dict) else {}
            hints[tool["name"]] = ToolHints(_hint(notes, "readOnlyHint"), _hint(notes, "destructiveHint"),
                                            _hint(notes, "openWorldHint"))
    return hints


class WordWatch:
    """Reads the server-to-agent byte stream of one connection and holds every ``tools/list`` answer to the rule.

    Args:
        read_only: the operator's read-only tools (the spec's ``read_only_tools``, as the preflight checked).
        open_world: the ``openWorldHint: true`` tools the operator let through (``open_world_tools``).

    ``changed`` is ``None`` until an answer breaks the rule, then the one-line change (``CHANGED_WORD: …``).
    """

    def __init__(self, read_only: Sequence[str], open_world: Sequence[str]) -> None:
        self._read_only, self._open_world = tuple(read_only), tuple(open_world)
        self._pending = bytearray()
        self.changed: str | None = None

    def feed(self, chunk: bytes) -> bytes:
        """Take the next ``chunk``; return the bytes that may go on to the agent (whole lines, in order), or
        ``b""`` from the first line that changed the server's word on (``changed`` is then set)."""
        if self.changed is not None:
            return b""
        self._pending += chunk
        passed = bytearray()
        while (end := self._pending.find(b"\n")) >= 0:
            line = bytes(self._pending[: end + 1])
            del self._pending[: end + 1]
            if self._check(line):
                return bytes(passed)
            passed += line
        if len(self._pending) > MAX_LINE_BYTES:  # not a line we can read: passed on unread
            passed += self._pending
            self._pending.clear()
        return bytes(passed)

    def flush(self) -> bytes:
        """At the stream's end: what is left of an unterminated last line (checked as a line)."""
        rest, self._pending = bytes(self._pending), bytearray()
        if self.changed is not None or (rest and self._check(rest)):
            return b""
        return rest

    def _check(self, line: bytes) -> bool:
        """Whether ``line`` is a ``tools/list`` answer that breaks the rule (and note the change)."""
        if b'"tools"' not in line:
            return False
        try:
            hints = listed_hints(load_json(line))
        except JsonInputError:
            return False
        if hints is None:
            return False
        try:
            read_only_evidence(self._read_only, hints, self._open_world)
        except ReadOnlyError as error:
            self.changed = f"{CHANGED_WORD}: {error}; no tool of it was offered to the agent"
            return True
        return False


__all__ = ["CHANGED_WORD", "MAX_LINE_BYTES", "WordWatch", "listed_hints"]
