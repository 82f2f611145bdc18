"""Reading a Messages API conversation the way the rehearsal policy needs it (pure, no IO).

Facts about the real Claude Code CLI 2.1.296 this relies on (shared/reference/claude-code-cli-facts.md
and the recorded transcripts): the first user message starts with ``<system-reminder>`` text blocks
(one holds ``Primary working directory: <abs path>``) and ends with the prompt; the CLI appends
``<system-reminder>`` blocks to every tool result; built-in tool results are strings, MCP tool
results are lists of text blocks whose text may be wrapped as ``{"result": "..."}`` (the bundled
server) or ``{"content": "..."}`` (a server's ``structuredContent``, e.g. server-filesystem's). Grep
(``files_with_matches``) answers ``"Found N files\\n<relpath>\\n..."`` or ``"No files found"``,
Glob answers one relative path per line, Read answers ``"<n>\\t<line text>"`` lines.

The http transport (no working directory in the conversation) sends every tool result as
compact JSON text: ``repo_search`` answers ``{"matches": ["path:line: text", ...], ...}``,
``repo_read`` a JSON string of ``"<n>: <line text>"`` lines, and the MCP tools a JSON string of
the server's text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ToolStep", "find_cwd", "find_prompt", "numbered_lines", "relative_path", "result_paths",
           "tool_steps"]

_REMINDER_RE = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
_CWD_RE = re.compile(r"(?:Primary working directory|CWD):[ \t]*(\S[^\n]*)")
_NUMBERED_LINE_RE = re.compile(r"^\s*(\d+)(?:\t|\u2192|: )(.*)$")
_PATH_LINE_RE = re.compile(r"^([\w@+~./-]*[\w-](?:\.[A-Za-z0-9]+|/[\w@+~.-]+))(?::\d+)?(?::.*)?$")
_PATH_KEYS = ("path", "relpath", "file", "file_path", "filePath", "uri")


@dataclass(frozen=True)
class ToolStep:
    """A finished tool call: tool ``name``, its ``input``, the result text (MCP ``{"result"}`` or
    ``{"content"}`` wrapper and ``<system-reminder>`` blocks removed) and the result's ``is_error`` flag."""

    name: str
    input: Mapping[str, Any]
    result: str
    is_error: bool


def _blocks(content: Any) -> list[Mapping[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, Mapping)]
    return []


def _texts(content: Any) -> list[str]:
    return [str(b["text"]) for b in _blocks(content)
            if b.get("type") == "text" and isinstance(b.get("text"), str)]


def _first_user_content(messages: Sequence[Any]) -> Any:
    for message in messages:
        if isinstance(message, Mapping) and message.get("role") == "user":
            return message.get("content")
    return None


def find_prompt(messages: Sequence[Any]) -> str:
    """Return the study prompt: the last text block of the first user message that does not
    start with ``<system-reminder>``; ``""`` when there is none."""
    texts = [t for t in _texts(_first_user_content(messages))
             if not t.lstrip().startswith("<system-reminder>")]
    return texts[-1] if texts else ""


def find_cwd(messages: Sequence[Any]) -> str | None:
    """Return the absolute working directory named in the first user message (``Primary working
    directory: ...`` or, in ``--bare`` mode, ``CWD: ...``), without a trailing slash; else None."""
    for text in _texts(_first_user_content(messages)):
        match = _CWD_RE.search(text)
        if match:
            return str(match.group(1)).strip().rstrip("/") or "/"
    return None


def _result_text(content: Any) -> str:
    parts: list[str] = []
    for text in _texts(content):
        try:
            decoded = json.loads(text)
        except ValueError:
            decoded = None
        if isinstance(decoded, dict) and len(decoded) == 1 and set(decoded) <= {"result", "content"} \
                and isinstance(next(iter(decoded.values())), str):
            text = next(iter(decoded.values()))
        elif isinstance(decoded, str):  # the http transport's JSON string results
            text = decoded
        parts.append(text)
    return _REMINDER_RE.sub("", "\n".join(parts)).strip()


def tool_steps(messages: Sequence[Any]) -> list[ToolStep]:
    """Pair every assistant ``tool_use`` with its user ``tool_result``, in conversation order
    (tool calls without a result yet are left out)."""
    calls: dict[str, tuple[str, Mapping[str, Any]]] = {}
    steps: list[ToolStep] = []
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        for block in _blocks(message.get("content")):
            if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                raw = block.get("input")
                calls[block["id"]] = (str(block.get("name", "")), raw if isinstance(raw, Mapping) else {})
            elif block.get("type") == "tool_result" and block.get("tool_use_id") in calls:
                name, tool_input = calls[block["tool_use_id"]]
                steps.append(ToolStep(name, tool_input, _result_text(block.get("content")),
                                      bool(block.get("is_error"))))
    return steps


def _collect_json_paths(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        match = _PATH_LINE_RE.match(value.strip())
        if match:
            out.append(match.group(1))
    elif isinstance(value, list):
        for item in value:
            _collect_json_paths(item, out)
    elif isinstance(value, Mapping):
        keyed = [value[k] for k in _PATH_KEYS if isinstance(value.get(k), str)]
        if keyed:
            out.append(keyed[0].strip())
            return
        for item in value.values():
            _collect_json_paths(item, out)


def result_paths(result: str) -> list[str]:
    """Return the file paths named in a search result, in order: from JSON (``path``-like keys,
    path-looking strings) when the text is JSON, else one ``path`` or ``path:line:...`` per line.
    Lines such as ``Found 2 files`` or ``No files found`` are skipped."""
    found: list[str] = []
    try:
        _collect_json_paths(json.loads(result), found)
    except ValueError:
        for line in result.splitlines():
            match = _PATH_LINE_RE.match(line.strip())
            if match:
                found.append(match.group(1))
    return found


def numbered_lines(result: str) -> list[tuple[int, str]]:
    """Return ``(line number, text)`` for every ``<n>\\t<text>`` (or ``<n>→<text>``, or ``repo_read``'s
    ``<n>: <text>``) line of a Read / doc_get / repo_read result."""
    matches = (_NUMBERED_LINE_RE.match(line) for line in result.splitlines())
    return [(int(m.group(1)), m.group(2)) for m in matches if m]


def relative_path(path: str, cwd: str | None) -> str:
    """Return ``path`` relative to ``cwd`` when it lies under it, else ``path`` unchanged."""
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1:]
    return path
