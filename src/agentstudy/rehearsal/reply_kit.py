"""What every scripted agent of the rehearsal servers shares (pure, no IO): the bundled server's tool
names, :class:`ScriptedReply`, the search-term rule, tool-call ids, the request's tool kit, and the
usage a scripted answer reports. The repository agent (``rehearsal.policy``) and the controlled-study
adapter agent (``rehearsal.study_policy``) both build on it, so neither imports the other.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from agentstudy.protocol.tool_roles import ServerTools, choose_server_tools
from agentstudy.rehearsal.server_moves import content_words

MCP_SEARCH_TOOL = "mcp__doc-bridge__doc_search"
MCP_GET_TOOL = "mcp__doc-bridge__doc_get"
HTTP_MCP_SEARCH_TOOL = "doc_search"
HTTP_MCP_GET_TOOL = "doc_get"
BUNDLED_SEARCH_TOOLS = (MCP_SEARCH_TOOL, HTTP_MCP_SEARCH_TOOL)
BUNDLED_GET_TOOLS = (MCP_GET_TOOL, HTTP_MCP_GET_TOOL)
_SEARCH_TOOLS = frozenset({*BUNDLED_SEARCH_TOOLS, "Grep", "repo_search", "Glob"})
_READ_TOOLS = frozenset({*BUNDLED_GET_TOOLS, "Read", "repo_read"})
MAX_TURNS = 4
MAX_TURNS_OTHER_SERVER = 8

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
    "while", "within", "without", "would", "your",
    # short words that carry no content (issue 32: the search uses the question's content words)
    "all", "and", "any", "are", "can", "did", "edit", "file", "files", "for", "has", "have", "its", "line",
    "lines", "not", "number", "numbers", "our", "said", "says", "the", "was", "who", "why", "with", "you",
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


def search_terms(prompt: str) -> list[str]:
    """The words the agent searches for, best first (issue 32): the question's content words
    (``rehearsal.server_moves.content_words``: no stop words, not the first word, names last), those of at
    least 5 letters first; else the longest word of at least 3 letters; else none."""
    words = content_words(prompt, _STOPWORDS)
    ranked = [w for w in words if len(w) >= 5] + [w for w in words if len(w) < 5]
    if ranked:
        return ranked
    longest = max(_WORD_RE.findall(prompt), key=len, default="")
    return [longest] if len(longest) >= 3 else []


def pick_term(prompt: str) -> str | None:
    """Return the search term for ``prompt``: the first of :func:`search_terms` (original case kept), else None."""
    terms = search_terms(prompt)
    return terms[0] if terms else None


def tool_call_id(message_count: int, name: str, tool_input: Mapping[str, Any]) -> str:
    seed = f"{message_count}:{name}:{json.dumps(tool_input, sort_keys=True)}"
    return "toolu_" + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:24]


def tools_by_name(tools: Any) -> dict[str, Mapping[str, Any]]:
    if not isinstance(tools, list):
        return {}
    return {t["name"]: t for t in tools if isinstance(t, Mapping) and isinstance(t.get("name"), str)}


@dataclass(frozen=True)
class ToolKit:
    """The tools of one request as the policy uses them: the offered ``tools``, the other server's
    chosen tools (``server``: none chosen with the bundled server or without MCP tools) and the
    names that count as searches / reads."""

    tools: dict[str, Mapping[str, Any]]
    server: ServerTools
    searches: frozenset[str]
    reads: frozenset[str]


def tool_kit(tools: dict[str, Mapping[str, Any]]) -> ToolKit:
    bundled = any(name in tools for name in (*BUNDLED_SEARCH_TOOLS, *BUNDLED_GET_TOOLS))
    server = ServerTools(None, None) if bundled else choose_server_tools(tools)
    searches = _SEARCH_TOOLS | ({server.search.name} if server.search else set())
    reads = _READ_TOOLS | ({server.read[0]} if server.read else set())
    return ToolKit(tools, server, frozenset(searches), frozenset(reads))


def scripted_usage(body: Mapping[str, Any], content: list[dict[str, Any]]) -> dict[str, int]:
    """The usage the scripted server reports for answering ``body`` with ``content``: ``ceil``-free
    ``bytes // 4`` (at least 1) of what was sent and of the reply, no cache tokens."""
    sent = {k: body.get(k) for k in ("messages", "system", "tools")}
    in_bytes = len(json.dumps(sent, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    out_bytes = len(json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    return {"input_tokens": max(1, in_bytes // 4), "output_tokens": max(1, out_bytes // 4),
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
