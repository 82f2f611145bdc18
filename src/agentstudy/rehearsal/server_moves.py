"""How the rehearsal agent fills another MCP server's arguments the way a model would (pure, no IO; issue 32 item 4).

From each tool's input schema and description, and from what the server answered earlier in the same
conversation:

- :func:`content_words`: the question's content words (stop words, the question's first word and
  capitalised names — usually the project's own name — last or dropped), so the search term is what
  the question is about;
- :func:`needs_absolute` / :func:`server_base` / :func:`server_path`: a path argument becomes absolute
  when the schema or description says "absolute" or the server refused a relative or foreign path
  ("must be absolute", "outside allowed directories"); the base directory is the one the server named
  (its error text or a listing of allowed directories) or else the agent's working directory;
- :func:`id_keys` / :func:`ids_in`: a required argument named like ``*_id``, ``id``, ``handle`` or
  ``cursor`` is filled with a value of that name returned by an earlier call (JSON keys, or
  ``name: value`` text);
- :func:`fill_arguments` / :func:`next_untried`: every allowed tool of the server is tried once per
  conversation after the answer is found, with arguments filled from the above (a tool whose required
  argument cannot be filled is skipped).

Deterministic: the same conversation always gives the same arguments.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agentstudy.protocol.tool_roles import SearchTool, schema_properties, server_tool_names
from agentstudy.rehearsal.conversation import ToolStep

__all__ = ["content_words", "fill_arguments", "id_keys", "ids_in", "is_id_key", "known_id", "line_hits",
           "needs_absolute", "next_untried", "search_arguments", "server_base", "server_path"]

_WORD_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_ABSOLUTE_REFUSAL = re.compile(r"must be (?:an )?absolute|outside (?:the )?allowed director|not an absolute",
                               re.IGNORECASE)
_NAMED_ROOTS = (re.compile(r"\bnot in\s+(/[^\s,'\"\]]*)", re.IGNORECASE),
                re.compile(r"allowed director(?:y|ies)(?: are| is)?:?\s+(/[^\s,'\"\]]*)", re.IGNORECASE))
_ID_KEY = re.compile(r"^(?:id|handle|cursor|token|ref|key)$|(?:_id|Id|_handle|Handle|_cursor|Cursor|_ref)$")
_LISTS = re.compile(r"\blist(?:s|ing)?\b|\btree\b")
_PATH_WORDS = ("path", "file", "dir", "directory", "folder", "uri", "root", "source")
_QUERY_WORDS = ("query", "q", "pattern", "text", "search", "term", "keyword", "keywords", "regex", "question")


def content_words(prompt: str, stopwords: frozenset[str], exclude: Iterable[str] = ()) -> list[str]:
    """The question's content words in order, lower-case words first, then capitalised ones (names:
    usually the project's own, which every file mentions), without stop words, words shorter than 3
    letters, the question's first word and ``exclude`` (case-insensitive; duplicates dropped)."""
    words: list[str] = _WORD_RE.findall(prompt)
    dropped = {w.lower() for w in exclude} | ({words[0].lower()} if words else set())
    kept: list[str] = []
    for word in words[1:]:
        lowered = word.lower()
        if len(word) >= 3 and lowered not in stopwords and lowered not in dropped \
                and lowered not in {k.lower() for k in kept}:
            kept.append(word)
    return [w for w in kept if w[0].islower()] + [w for w in kept if not w[0].islower()]


def _description(tool: Mapping[str, Any], key: str | None = None) -> str:
    props, _ = schema_properties(tool)
    spec = props.get(key) if key is not None else None
    text = str(tool.get("description") or "")
    if isinstance(spec, Mapping):
        text += " " + str(spec.get("description") or "")
    return text.lower()


def _server_steps(steps: Sequence[ToolStep], server: Iterable[str]) -> list[ToolStep]:
    names = set(server)
    return [step for step in steps if step.name in names]


def needs_absolute(tool: Mapping[str, Any], key: str, steps: Sequence[ToolStep], server: Iterable[str]) -> bool:
    """Whether ``tool``'s path argument ``key`` must be absolute: its description or the argument's says
    "absolute", or an earlier answer of the server (``server``: its tool names) refused a path as not
    absolute or outside its allowed directories."""
    if "absolute" in _description(tool, key):
        return True
    return any(_ABSOLUTE_REFUSAL.search(step.result) for step in _server_steps(steps, server))


def server_base(steps: Sequence[ToolStep], server: Iterable[str], cwd: str | None) -> str | None:
    """The directory absolute paths go under: the first one the server named (``... not in /dir``,
    ``allowed directories: /dir``, or a line of a successful listing of allowed directories), else
    ``cwd`` (the agent's working directory); ``None`` when neither is known."""
    for step in _server_steps(steps, server):
        for pattern in _NAMED_ROOTS:
            named = pattern.search(step.result)
            if named and len(named.group(1)) > 1:
                return named.group(1).rstrip("/")
        if not step.is_error and "allowed" in step.name.lower():
            lines = [line.strip() for line in step.result.splitlines() if line.strip().startswith("/")]
            if lines:
                return lines[0].rstrip("/")
    return cwd


def server_path(relative: str, absolute: bool, base: str | None) -> str:
    """``relative`` (a repository-relative path, ``"."`` for the root) as the server gets it: joined to
    ``base`` when ``absolute`` and a base is known, else unchanged (an absolute path stays as it is)."""
    if not absolute or base is None or relative.startswith("/"):
        return relative
    return base if relative in (".", "") else f"{base}/{relative}"


def is_id_key(key: str) -> bool:
    """An argument named like an id or handle a previous call returns (``id``, ``*_id``, ``handle``, ``cursor``)."""
    return bool(_ID_KEY.search(key))


def id_keys(tool: Mapping[str, Any]) -> list[str]:
    """The required id-like string arguments of ``tool``."""
    props, required = schema_properties(tool)
    return [key for key in required if is_id_key(key) and isinstance(props.get(key), Mapping)
            and props[key].get("type") in ("string", "integer", None)]


def _json_values(value: Any, key: str, out: list[tuple[str, str | None]]) -> None:
    if isinstance(value, Mapping):
        if key in value and isinstance(value[key], str | int) and not isinstance(value[key], bool):
            sibling = next((str(value[k]) for k in ("path", "file", "title", "name", "uri") if
                            isinstance(value.get(k), str)), None)
            out.append((str(value[key]), sibling))
        for item in value.values():
            _json_values(item, key, out)
    elif isinstance(value, list):
        for item in value:
            _json_values(item, key, out)


def ids_in(result: str, key: str) -> list[tuple[str, str | None]]:
    """Values of ``key`` in a result, in order, each with the path/title beside it in the same JSON object
    (``None`` when there is none): from JSON when the text is JSON, else from ``key: value`` / ``key=value``."""
    found: list[tuple[str, str | None]] = []
    try:
        _json_values(json.loads(result), key, found)
    except ValueError:
        pattern = re.compile(rf"\b{re.escape(key)}\b[\"']?\s*[:=]\s*[\"']?([\w.:/-]+)")
        found = [(m.group(1), None) for m in pattern.finditer(result)]
    return list(dict.fromkeys(found))


def _json_lines(value: Any, out: list[tuple[str, str, str]]) -> None:
    if isinstance(value, Mapping):
        where = next((value[k] for k in ("file", "path", "file_path", "uri") if isinstance(value.get(k), str)), None)
        line, text = value.get("line"), value.get("text") or value.get("content")
        if where and isinstance(line, int) and not isinstance(line, bool) and isinstance(text, str):
            out.append((where, str(line), text))
        for item in value.values():
            _json_lines(item, out)
    elif isinstance(value, list):
        for item in value:
            _json_lines(item, out)


def line_hits(result: str) -> list[tuple[str, str, str]]:
    """A search result's ``(path, line number, text)`` hits, in order: its ``path:line: text`` lines, or, when
    it is JSON, every object with a path (``file``/``path``/``file_path``/``uri``), an integer ``line`` and a
    ``text`` (code-index-mcp's ``search_code_advanced``, issue 32)."""
    try:
        found: list[tuple[str, str, str]] = []
        _json_lines(json.loads(result), found)
        return found
    except ValueError:
        parts = (line.strip().split(":", 2) for line in result.splitlines())
        return [(p[0], p[1], p[2].strip()) for p in parts if len(p) == 3 and p[1].isdigit()]


def known_id(key: str, steps: Sequence[ToolStep], server: Iterable[str]) -> str | None:
    """The first value of ``key`` a successful earlier answer of the server returned (for ``*_id``, a plain
    ``id`` too: a listing of projects answers ``{"id": ...}`` for a search's ``project_id``); else None."""
    names = list(server)
    plain = ("id",) if key != "id" and (key.endswith("_id") or key.endswith("Id")) else ()
    for wanted in (key, *plain):
        for step in _server_steps(steps, names):
            if not step.is_error:
                values = ids_in(step.result, wanted)
                if values:
                    return values[0][0]
    return None


def fill_arguments(tool: Mapping[str, Any], *, term: str, found: str | None, steps: Sequence[ToolStep],
                   server: Sequence[str], cwd: str | None) -> dict[str, Any] | None:
    """Arguments for one call of ``tool`` from its schema: ids from earlier answers, paths (the file the
    search found, or the root ``"."``; absolute when needed), the search ``term`` for query-like and other
    strings, ``1`` for numbers, ``False`` for booleans, an enum's first value, a one-item list; ``None``
    when a required argument cannot be filled (an id no call returned, an object)."""
    props, required = schema_properties(tool)
    base = server_base(steps, server, cwd)
    arguments: dict[str, Any] = {}
    for key in required:
        raw = props.get(key)
        spec: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        kind = spec.get("type")
        lowered = key.lower()
        if is_id_key(key):
            value = known_id(key, steps, server)
            if value is None:
                return None
            arguments[key] = value
        elif isinstance(spec.get("enum"), list) and spec["enum"]:
            arguments[key] = spec["enum"][0]
        elif kind in ("integer", "number"):
            arguments[key] = 1
        elif kind == "boolean":
            arguments[key] = False
        elif kind == "array":
            items = spec.get("items")
            if isinstance(items, Mapping) and items.get("type") not in ("string", None):
                return None
            is_path = any(word in lowered for word in _PATH_WORDS)
            absolute = is_path and needs_absolute(tool, key, steps, server)
            arguments[key] = [server_path(found or ".", absolute, base) if is_path else term]
        elif kind in ("string", None):
            if any(word in lowered for word in _PATH_WORDS):
                directory = "dir" in lowered or "folder" in lowered or _LISTS.search(_description(tool))
                target = found if found is not None and not directory else "."
                arguments[key] = server_path(target, needs_absolute(tool, key, steps, server), base)
            elif lowered in _QUERY_WORDS or kind == "string":
                arguments[key] = term
            else:
                return None
        else:
            return None
    return arguments


def next_untried(tools: Mapping[str, Mapping[str, Any]], server: Sequence[str], steps: Sequence[ToolStep], *,
                 term: str, found: str | None, cwd: str | None) -> tuple[str, dict[str, Any]] | None:
    """The first tool of ``server`` (request order) this conversation has not called yet whose arguments
    :func:`fill_arguments` can fill, with them; ``None`` when every fillable tool was tried."""
    tried = {step.name for step in steps}
    for name in server:
        if name in tried or name not in tools:
            continue
        arguments = fill_arguments(tools[name], term=term, found=found, steps=steps, server=server, cwd=cwd)
        if arguments is not None:
            return name, arguments
    return None


def search_arguments(search: SearchTool, term: str, tools: Mapping[str, Mapping[str, Any]], steps: Sequence[ToolStep],
                     cwd: str | None, *, broad: bool = False) -> dict[str, Any]:
    """A chosen search tool's arguments for ``term`` (``broad``: every file), its directory arguments
    absolute under :func:`server_base` when :func:`needs_absolute` says so."""
    arguments: dict[str, Any] = search.arguments(term, broad=broad)
    names = server_tool_names(tools)
    base = server_base(steps, names, cwd)
    for key in search.needs:
        known = known_id(key, steps, names)
        if known is not None:
            arguments[key] = known
    for key in search.fixed:
        arguments[key] = server_path(str(arguments[key]), needs_absolute(tools[search.name], key, steps, names), base)
    return arguments
