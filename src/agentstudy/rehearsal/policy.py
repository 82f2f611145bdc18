"""The scripted "careful agent" behind the rehearsal Messages API server (pure, no IO).

Given one Messages API request body, :func:`next_reply` decides the next assistant message the
way a careful agent would: search the repository for a distinctive word of the question, read the
first file found, then answer with a ``path:line`` citation — or say honestly that it found no
evidence. With the bundled server it uses ``doc_search`` / ``doc_get``; with any other server it
uses the search-like and read-like tools :mod:`agentstudy.protocol.tool_roles` picks from the
request's tool list (issue 18). Everything is decided from the request body alone (``messages`` and ``tools``), so the
same body always yields the same reply, whichever process or thread asks.

How the conversation is read (prompt, working directory, tool results) lives in
:mod:`agentstudy.rehearsal.conversation`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from agentstudy.protocol.tool_roles import ServerTools, choose_server_tools, schema_properties
from agentstudy.rehearsal.conversation import (
    ToolStep,
    find_cwd,
    find_prompt,
    numbered_lines,
    relative_path,
    result_paths,
    tool_steps,
)

__all__ = ["HTTP_MCP_GET_TOOL", "HTTP_MCP_SEARCH_TOOL", "MCP_GET_TOOL", "MCP_SEARCH_TOOL", "ScriptedReply",
           "StopReason", "find_cwd", "find_prompt", "next_reply", "pick_term"]

MCP_SEARCH_TOOL = "mcp__doc-bridge__doc_search"
MCP_GET_TOOL = "mcp__doc-bridge__doc_get"
HTTP_MCP_SEARCH_TOOL = "doc_search"
HTTP_MCP_GET_TOOL = "doc_get"
_MCP_SEARCH = (MCP_SEARCH_TOOL, HTTP_MCP_SEARCH_TOOL)
_MCP_GET = (MCP_GET_TOOL, HTTP_MCP_GET_TOOL)
_SEARCH_TOOLS = frozenset({*_MCP_SEARCH, "Grep", "repo_search", "Glob"})
_READ_TOOLS = frozenset({*_MCP_GET, "Read", "repo_read"})
_MAX_TURNS = 4
_MAX_TURNS_OTHER_SERVER = 8

_WORD_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]*")

_STOPWORDS = frozenset({
    "about", "above", "after", "again", "against", "among", "another", "answer", "answers", "based",
    "because", "been", "before", "being", "below", "between", "both", "cannot", "citation", "cite",
    "could", "describe", "described", "describes", "details", "does", "doing", "documentation",
    "documented", "during", "each", "every", "example", "explain", "exactly", "following", "found", "from",
    "further", "given", "having", "how", "however", "include", "included", "includes", "including",
    "information", "inside", "instead", "into", "itself", "mentioned", "might", "other", "others",
    "please", "project", "question", "quote", "repository", "should", "since", "some", "something",
    "state", "stated", "states", "their", "them", "then", "there", "these", "they", "thing", "things",
    "this", "those", "through", "under", "until", "using", "what", "when", "where", "whether", "which",
    "while", "within", "without", "would", "your"
})


StopReason = Literal["tool_use", "end_turn", "max_tokens", "stop_sequence"]


@dataclass(frozen=True)
class ScriptedReply:
    """One scripted assistant message.

    ``content`` is a list of Messages API content blocks (``{"type": "text", "text": ...}`` or
    ``{"type": "tool_use", "id": "toolu_...", "name": ..., "input": {...}}``); ``stop_reason`` is
    ``"tool_use"`` when the last block is a tool call, else ``"end_turn"`` (the careful agent never
    says anything else; test policies may script ``max_tokens`` or ``stop_sequence``); ``usage``
    holds integer token counts ``input_tokens``, ``output_tokens``, ``cache_creation_input_tokens``
    (always 0) and ``cache_read_input_tokens`` (always 0) — test policies may script any values.
    """

    content: list[dict[str, Any]]
    stop_reason: StopReason
    usage: dict[str, Any]
    model: str | None = None
    """The model the reply says answered (``None``: the requested one); a test policy may answer as another
    model (issue 28: arms that ran different models)."""


def pick_term(prompt: str) -> str | None:
    """Return the search term for ``prompt``: its first word of at least 5 letters that is not a
    stopword (original case kept), else its longest word of at least 3 letters, else None."""
    words: list[str] = _WORD_RE.findall(prompt)
    for word in words:
        if len(word) >= 5 and word.lower() not in _STOPWORDS:
            return word
    longest = max(words, key=len, default="")
    return longest if len(longest) >= 3 else None


def _tool_id(message_count: int, name: str, tool_input: Mapping[str, Any]) -> str:
    seed = f"{message_count}:{name}:{json.dumps(tool_input, sort_keys=True)}"
    return "toolu_" + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:24]


def _tool_names(tools: Any) -> dict[str, Mapping[str, Any]]:
    if not isinstance(tools, list):
        return {}
    return {t["name"]: t for t in tools if isinstance(t, Mapping) and isinstance(t.get("name"), str)}


@dataclass(frozen=True)
class _Kit:
    """The tools of one request as the policy uses them: the offered ``tools``, the other server's
    chosen tools (``server``: none chosen with the bundled server or without MCP tools) and the
    names that count as searches / reads."""

    tools: dict[str, Mapping[str, Any]]
    server: ServerTools
    searches: frozenset[str]
    reads: frozenset[str]


def _kit(tools: dict[str, Mapping[str, Any]]) -> _Kit:
    bundled = any(name in tools for name in (*_MCP_SEARCH, *_MCP_GET))
    server = ServerTools(None, None) if bundled else choose_server_tools(tools)
    searches = _SEARCH_TOOLS | ({server.search.name} if server.search else set())
    reads = _READ_TOOLS | ({server.read[0]} if server.read else set())
    return _Kit(tools, server, frozenset(searches), frozenset(reads))


def _broad_search(term: str, kit: _Kit, steps: list[ToolStep]) -> tuple[str, dict[str, Any]] | None:
    """The other server's glob search over every file (``**/*``), unless it is no glob search or ran already."""
    other = kit.server.search
    if other is None or not other.glob:
        return None
    broad = other.arguments(term, broad=True)
    if any(s.name == other.name and dict(s.input) == broad for s in steps):
        return None
    return other.name, broad


def _search_call(term: str, cwd: str | None, kit: _Kit, steps: list[ToolStep]) -> tuple[str, dict[str, Any]] | None:
    tools, tried = kit.tools, {s.name for s in steps}
    other = kit.server.search
    if other is not None:
        if other.name not in tried:
            return other.name, other.arguments(term)
        if steps and steps[-1].name == other.name and not steps[-1].is_error:
            broad = _broad_search(term, kit, steps)  # the term named no file: look at every file instead
            if broad is not None:
                return broad
    for search in _MCP_SEARCH:
        if search in tools and search not in tried:
            return search, {"query": term}
    if "Grep" in tools and "Grep" not in tried:
        grep_input: dict[str, Any] = {"pattern": term, "output_mode": "files_with_matches"}
        if cwd:
            grep_input["path"] = cwd
        if "-i" in schema_properties(tools["Grep"])[0]:
            grep_input["-i"] = True
        return "Grep", grep_input
    if "repo_search" in tools and "repo_search" not in tried:
        return "repo_search", {"term": term}
    if "Glob" in tools and "Glob" not in tried:
        return "Glob", {"pattern": "**/*.md"}
    return None


def _read_call(path: str, cwd: str | None, kit: _Kit) -> tuple[str, dict[str, Any]] | None:
    tools = kit.tools
    if kit.server.read is not None:
        name, key = kit.server.read
        return name, {key: relative_path(path, cwd)}
    for get in _MCP_GET:
        if get in tools:
            props, required = schema_properties(tools[get])
            key = "path" if "path" in props or not required else required[0]
            return get, {key: relative_path(path, cwd)}
    if "Read" in tools:
        absolute = path if path.startswith("/") or not cwd else f"{cwd}/{path}"
        return "Read", {"file_path": absolute}
    if "repo_read" in tools:
        return "repo_read", {"path": relative_path(path, cwd)}
    return None


def _read_target(step: ToolStep, cwd: str | None) -> str:
    """The repository-relative path a Read / doc_get step asked for."""
    raw = step.input.get("file_path") or step.input.get("path") or next(iter(step.input.values()), "")
    return relative_path(str(raw), cwd)


def _citation(term: str, step: ToolStep, kit: _Kit) -> tuple[int, str] | None:
    """First ``(line number, stripped text)`` of a read result mentioning ``term`` (any case),
    preferring a line that is not a Markdown heading; None when no line mentions it. Another
    server's read result without line numbers counts its lines from 1."""
    lines = numbered_lines(step.result)
    if not lines and kit.server.read is not None and step.name == kit.server.read[0] and not step.is_error:
        lines = list(enumerate(step.result.splitlines(), start=1))
    hits = [(n, text.strip()) for n, text in lines if term.lower() in text.lower()]
    ranked = sorted(hits, key=lambda hit: hit[1].startswith("#"))  # stable: headings last
    return ranked[0] if ranked else None


def _answer(term: str | None, steps: list[ToolStep], cwd: str | None, kit: _Kit) -> str:
    for step in steps:
        if term and step.name in kit.reads and not step.is_error:
            found = _citation(term, step, kit)
            if found:
                return f"Based on the repository, {found[1]} ({_read_target(step, cwd)}:{found[0]})."
    subject = f'"{term}"' if term else "the question"
    return (f"I found no evidence in the repository about {subject}: the available tools returned no "
            "matching file or line, so I cannot give a sourced answer.")


def _next_hit(steps: list[ToolStep], cwd: str | None, kit: _Kit) -> str | None:
    """The first hit of the latest successful search that no later step has read yet."""
    searches = [i for i, s in enumerate(steps) if s.name in kit.searches and not s.is_error]
    if not searches:
        return None
    read = {_read_target(s, cwd) for s in steps[searches[-1] + 1:] if s.name in kit.reads}
    hits = result_paths(steps[searches[-1]].result)
    return next((hit for hit in hits if relative_path(hit, cwd) not in read), None)


def _usage(body: Mapping[str, Any], content: list[dict[str, Any]]) -> dict[str, int]:
    sent = {k: body.get(k) for k in ("messages", "system", "tools")}
    in_bytes = len(json.dumps(sent, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    out_bytes = len(json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    return {"input_tokens": max(1, in_bytes // 4), "output_tokens": max(1, out_bytes // 4),
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def next_reply(body: Mapping[str, Any]) -> ScriptedReply:
    """Decide the next assistant message for a Messages API request ``body``.

    Turn 1 searches (the MCP ``doc_search`` if offered — ``mcp__doc-bridge__doc_search`` from the
    CLI, ``doc_search`` from the http transport — else ``Grep``, else ``repo_search``, else
    ``Glob``); the turn after a search reads its first hit (the MCP ``doc_get`` if offered, else
    ``Read``, else ``repo_read`` with a repository-relative path); the turn after a read
    answers with ``end_turn`` and a ``path:line`` citation of the first line mentioning the term
    (non-heading lines first). A failed search falls back to the next offered search tool; a read
    without the term moves on to the next hit. No hit, no term, no usable tool or the 4th turn
    gives an honest "no evidence" answer. Only tools named in ``body["tools"]`` are ever called.

    Another server's tools (any MCP tools but the bundled ``doc_search`` / ``doc_get``) come first
    when :func:`~agentstudy.protocol.tool_roles.choose_server_tools` finds a search-like or
    read-like one: its search is called with the term (a glob-style search with ``**/*TERM*``,
    then once with ``**/*`` when that named no file or none of its hits mentions the term; an
    empty result falls back like a failed one), its read tool reads every hit, whatever search
    found it, and a result without line numbers is counted from line 1. Such conversations end
    by the 8th turn.
    Raises ValueError when ``body["messages"]`` is not a non-empty list.
    """
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValueError("request body needs a non-empty 'messages' list")
    tools = _tool_names(body.get("tools"))
    cwd = find_cwd(messages)
    term = pick_term(find_prompt(messages))
    steps = tool_steps(messages)
    turn = 1 + sum(1 for m in messages if isinstance(m, Mapping) and m.get("role") == "assistant")

    kit = _kit(tools)
    call: tuple[str, dict[str, Any]] | None = None
    intro = ""
    last = steps[-1] if steps else None
    max_turns = _MAX_TURNS if kit.server == ServerTools(None, None) else _MAX_TURNS_OTHER_SERVER
    if term and turn < max_turns:
        other_search = kit.server.search.name if kit.server.search else None
        if last is None or (last.name in kit.searches and last.is_error) \
                or (last.name == other_search and not result_paths(last.result)):
            call = _search_call(term, cwd, kit, steps)
            intro = f'I will search the repository for "{term}".'
        elif last.name in kit.searches or (last.name in kit.reads and _citation(term, last, kit) is None):
            hit = _next_hit(steps, cwd, kit)
            call = _read_call(hit, cwd, kit) if hit else None
            intro = f"I will read {relative_path(hit, cwd)} to check the exact wording." if hit else ""
            if call is None and (broad := _broad_search(term, kit, steps)) is not None:
                call, intro = broad, f'No file named "{term}" says it; I will look at every file.'

    content: list[dict[str, Any]]
    if call is None:
        content = [{"type": "text", "text": _answer(term, steps, cwd, kit)}]
        return ScriptedReply(content, "end_turn", _usage(body, content))
    name, tool_input = call
    content = [{"type": "text", "text": intro},
               {"type": "tool_use", "id": _tool_id(len(messages), name, tool_input), "name": name,
                "input": tool_input}]
    return ScriptedReply(content, "tool_use", _usage(body, content))
