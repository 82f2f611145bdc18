"""Which of an unknown MCP server's tools search and which read, from their definitions alone. Pure.

Issue 18: the rehearsal agent (item 3) must use whatever server is under study, knowing nothing
but the request's tool list (names, descriptions, input schemas), and ``agentstudy init`` (item
2) chooses the server's freshness probe the same way. :func:`choose_server_tools` picks

- a *search-like* tool: one with a required string parameter named like a query (``query``,
  ``pattern``, ``q``, ``text``, ``search``, ``term``, ``keyword(s)``), every other required
  parameter fillable (a string naming a path/directory gets ``"."``; an id or handle, the agent
  fills from an earlier call's answer); a search of the files' text ranks before one that matches
  file names by glob (issue 32: code-index-mcp's ``search_code_advanced`` before its ``find_files``); a
  tool whose description recommends it (``use this first``, ``prefer this``, ``the preferred search``) ranks
  before every other (and the rehearsal agent then tries no other search-like tool), so a rewrite of the
  descriptions (an arm's ``toolDescriptions``, issue 44) changes which searches the rehearsal agent makes. That
  is a property of the rehearsal, never evidence about real agents;
- a *read-like* tool: one with a required string parameter naming a path, uri, id (``*_id``) or file
  and no other required parameter, preferring names that read (``read``, ``get``, ``fetch``, ``open``,
  ``show``, ``cat``) and descriptions that speak of text, avoiding deprecated and media tools and
  tools whose description says they list a directory (issue 32).

Which names are the server's: the Claude Code CLI sends them as ``mcp__SERVER__TOOL``; the http
transport sends the repository tools (``repo_list``, ``repo_read``, ``repo_search``) and the
server's tools under their own names (dots as underscores), so there every other name is the
server's. Ties are broken by request order, so the same tool list always gives the same choice.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["BROAD_GLOB", "SearchTool", "ServerTools", "choose_server_tools", "recommends_itself", "search_like",
           "server_tool_names", "takes_glob"]

HTTP_REPOSITORY_TOOLS = frozenset({"repo_list", "repo_read", "repo_search"})
_QUERY_KEYS = ("query", "q", "pattern", "text", "search", "term", "keyword", "keywords", "regex")
_PATH_KEYS = ("path", "file_path", "filepath", "file", "uri", "url", "id", "name", "filename")
_DIRECTORY_KEYS = ("path", "paths", "directory", "dir", "root", "folder", "base", "cwd")
_READ_WORDS = re.compile(r"read|get|fetch|open|show|cat|view")
_AVOID_WORDS = re.compile(r"media|image|binary|multiple|info|stat|list|tree|write|edit|delete|move|create")
_ID_KEY = re.compile(r"(?:_id|Id|_handle|Handle)$")
_LISTING = re.compile(r"^\s*(?:get a |a )?(?:detailed )?list(?:s|ing)?\b|\bentries of a director")
BROAD_GLOB = "**/*"
"""The pattern a glob-style search tool is retried with when the question's term named no file."""
_GLOB_WORDS = re.compile(r"\bglob|\bwildcard", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")
_RECOMMENDED = re.compile(r"\buse (?:this|it) first\b|\bprefer (?:this|it)\b|\bthe preferred (?:tool|search)\b",
                          re.IGNORECASE)
RECOMMENDED_RANK = 100
"""How far a recommending description moves a search tool ahead (more than any other rank difference)."""


def _names(sentence: str, key: str) -> bool:
    """Whether ``sentence`` names the argument ``key`` as a word of its own (``pattern``/``patterns``,
    never the ``pattern`` inside ``file_pattern``)."""
    return re.search(rf"(?<![\w-]){re.escape(key)}(?:e?s)?(?![\w-])", sentence, re.IGNORECASE) is not None


def takes_glob(key: str, properties: Mapping[str, Any], description: str) -> bool:
    """Whether the argument ``key`` of a tool (``properties``: its input schema's properties; ``description``:
    the tool's) takes a glob pattern that matches file names: its own schema says so, or a sentence of the
    description that speaks of a glob (or wildcard) names ``key`` or names none of the tool's arguments.
    A sentence about another argument's glob (code-index-mcp's ``search_code_advanced``: "Supports glob
    file_pattern") says nothing about ``key`` (issue 32)."""
    spec = properties.get(key)
    if isinstance(spec, Mapping) and _GLOB_WORDS.search(" ".join(str(v) for v in spec.values())):
        return True
    for sentence in _SENTENCE_END.split(description):
        if _GLOB_WORDS.search(sentence) and (_names(sentence, key)
                                             or not any(_names(sentence, other) for other in properties)):
            return True
    return False


@dataclass(frozen=True)
class SearchTool:
    """A chosen search-like tool: its request ``name``, the parameter that takes the term
    (``term_key``), fixed values for its other required parameters (``fixed``, e.g.
    ``{"path": "."}``) and whether it matches file names by glob (``glob``: the term is then sent
    as ``**/*TERM*``)."""

    name: str
    term_key: str
    fixed: Mapping[str, str]
    glob: bool
    needs: tuple[str, ...] = ()
    """Required id-like arguments (``*_id``, ``id``, ``handle``, ``cursor``) an earlier call must return (issue 32)."""

    def arguments(self, term: str, *, broad: bool = False) -> dict[str, str]:
        """The call's input for ``term`` (``broad``: the :data:`BROAD_GLOB` pattern instead)."""
        value = (BROAD_GLOB if broad else f"**/*{term}*") if self.glob else term
        return {**self.fixed, self.term_key: value}


@dataclass(frozen=True)
class ServerTools:
    """The server tools the agent uses: ``search`` (or None) and ``read`` name / path parameter
    (``read`` None when the server offers no read-like tool)."""

    search: SearchTool | None
    read: tuple[str, str] | None


def schema_properties(tool: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A Messages API tool's ``input_schema`` properties and required names (``{}``, ``[]`` when malformed)."""
    schema = tool.get("input_schema")
    schema = schema if isinstance(schema, Mapping) else {}
    props = schema.get("properties")
    required = schema.get("required")
    return (dict(props) if isinstance(props, Mapping) else {},
            [r for r in required if isinstance(r, str)] if isinstance(required, list) else [])


def _is_string(props: Mapping[str, Any], key: str) -> bool:
    spec = props.get(key)
    return isinstance(spec, Mapping) and spec.get("type") in ("string", None) and "enum" not in spec


def _text(value: Any) -> str:
    return value.lower() if isinstance(value, str) else ""


def server_tool_names(tools: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The names in a request's tool list (name -> definition, request order) that belong to the MCP
    server: ``mcp__*`` names when the CLI sent them, else — when the http repository tools are
    present — every name that is not one of them; ``[]`` otherwise."""
    prefixed = [name for name in tools if name.startswith("mcp__")]
    if prefixed:
        return prefixed
    if HTTP_REPOSITORY_TOOLS & set(tools):
        return [name for name in tools if name not in HTTP_REPOSITORY_TOOLS]
    return []


def _short(name: str) -> str:
    return name.rsplit("__", 1)[-1].lower()


def _search_tool(name: str, tool: Mapping[str, Any]) -> tuple[int, SearchTool] | None:
    props, required = schema_properties(tool)
    keys = [k for k in _QUERY_KEYS if k in required and _is_string(props, k)]
    if not keys:
        return None
    term_key = keys[0]
    fixed: dict[str, str] = {}
    needs: list[str] = []
    for other in required:
        if other == term_key:
            continue
        if other.lower() in _DIRECTORY_KEYS and _is_string(props, other):
            fixed[other] = "."
        elif (_ID_KEY.search(other) or other.lower() in ("id", "handle", "cursor")) and _is_string(props, other):
            needs.append(other)  # filled from an earlier answer by the agent
        else:
            return None
    glob = takes_glob(term_key, props, str(tool.get("description") or ""))
    rank = _QUERY_KEYS.index(term_key) + len(fixed) + 2 * len(needs) + (1 if glob else 0)  # text before names
    if recommends_itself(tool):
        rank -= RECOMMENDED_RANK  # the description recommends it (issue 44)
    return rank, SearchTool(name, term_key, fixed, glob, tuple(needs))


def recommends_itself(tool: Mapping[str, Any]) -> bool:
    """Whether a tool's description recommends it (``use this first``, ``prefer this``, ``the preferred search``;
    issue 44): the rehearsal agent searches with it and tries no other search-like tool."""
    return bool(_RECOMMENDED.search(str(tool.get("description") or "")))


def search_like(name: str, tool: Mapping[str, Any]) -> bool:
    """Whether ``tool`` (a definition ``{description, input_schema}``) is one :func:`choose_server_tools` could
    pick as the search."""
    return _search_tool(name, tool) is not None


def _read_tool(name: str, tool: Mapping[str, Any]) -> tuple[int, tuple[str, str]] | None:
    props, required = schema_properties(tool)
    short, description = _short(name), _text(tool.get("description"))
    if len(required) != 1 or not (required[0].lower() in _PATH_KEYS or _ID_KEY.search(required[0])) \
            or not _is_string(props, required[0]) or _LISTING.search(description):
        return None  # a listing is no read, whatever its name (issue 32)
    score = 2 * bool(_READ_WORDS.search(short)) + ("text" in description or "content" in description)
    score -= 3 * ("deprecated" in description) + 2 * bool(_AVOID_WORDS.search(short))
    return -score, (name, required[0])


def choose_server_tools(tools: Mapping[str, Mapping[str, Any]], names: Sequence[str] | None = None) -> ServerTools:
    """Choose the server's search-like and read-like tools from a tool list (name -> definition
    ``{description, input_schema}``, in request order) among ``names`` (default: the server's
    names as :func:`server_tool_names` reads a request). Deterministic: the best ranked tool
    wins, the earlier one on a tie; the read tool is never the chosen search tool."""
    names = server_tool_names(tools) if names is None else [n for n in names if n in tools]
    search: tuple[int, int, SearchTool] | None = None
    for index, name in enumerate(names):
        found = _search_tool(name, tools[name])
        if found is not None and (search is None or (found[0], index) < search[:2]):
            search = (found[0], index, found[1])
    chosen = search[2] if search else None
    read: tuple[int, int, tuple[str, str]] | None = None
    for index, name in enumerate(names):
        if chosen is not None and name == chosen.name:
            continue
        candidate = _read_tool(name, tools[name])
        if candidate is not None and (read is None or (candidate[0], index) < read[:2]):
            read = (candidate[0], index, candidate[1])
    return ServerTools(chosen, read[2] if read else None)
