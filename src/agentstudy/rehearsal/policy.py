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

from collections.abc import Mapping
from typing import Any

from agentstudy.protocol.controlled.agent_prompt import REQUEST_MARKER, request_in_prompt
from agentstudy.protocol.tool_roles import (
    SearchTool,
    ServerTools,
    recommends_itself,
    schema_properties,
    search_like,
    server_tool_names,
)
from agentstudy.rehearsal.conversation import (
    ToolStep,
    find_cwd,
    find_prompt,
    numbered_lines,
    relative_path,
    result_paths,
    tool_steps,
)
from agentstudy.rehearsal.reply_kit import (
    BUNDLED_GET_TOOLS,
    BUNDLED_SEARCH_TOOLS,
    HTTP_MCP_GET_TOOL,
    HTTP_MCP_SEARCH_TOOL,
    MAX_TURNS,
    MAX_TURNS_OTHER_SERVER,
    MCP_GET_TOOL,
    MCP_SEARCH_TOOL,
    ScriptedReply,
    StopReason,
    ToolKit,
    pick_term,
    scripted_usage,
    search_terms,
    tool_call_id,
    tool_kit,
    tools_by_name,
)
from agentstudy.rehearsal.server_moves import (
    ids_in,
    is_id_key,
    known_id,
    line_hits,
    needs_absolute,
    next_untried,
    search_arguments,
    server_base,
    server_path,
)

__all__ = ["HTTP_MCP_GET_TOOL", "HTTP_MCP_SEARCH_TOOL", "MCP_GET_TOOL", "MCP_SEARCH_TOOL", "ScriptedReply",
           "StopReason", "find_cwd", "find_prompt", "next_reply", "pick_term"]

MAX_SEARCH_TERMS = 3
"""How many of the question's content words another server's search is tried with before a broad search."""


def _server_arguments(other: SearchTool, term: str, kit: ToolKit, steps: list[ToolStep], cwd: str | None,
                      *, broad: bool = False) -> dict[str, Any]:
    """The search's arguments, its directory arguments absolute when the server needs them (issue 32)."""
    return search_arguments(other, term, kit.tools, steps, cwd, broad=broad)


def _broad_search(term: str, kit: ToolKit, steps: list[ToolStep], cwd: str | None = None
                  ) -> tuple[str, dict[str, Any]] | None:
    """The other server's glob search over every file (``**/*``), unless it is no glob search or ran already."""
    other = kit.server.search
    if other is None or not other.glob:
        return None
    broad = _server_arguments(other, term, kit, steps, cwd, broad=True)
    if any(s.name == other.name and dict(s.input) == broad for s in steps):
        return None
    return other.name, broad


def _search_call(term: str, cwd: str | None, kit: ToolKit, steps: list[ToolStep],
                 terms: list[str] | None = None, server_cwd: str | None = None) -> tuple[str, dict[str, Any]] | None:
    tools, tried = kit.tools, {s.name for s in steps}
    other = kit.server.search
    names = server_tool_names(tools)
    if other is not None and any(known_id(key, steps, names) is None for key in other.needs):
        # the search needs an id no call returned yet: another of the server's tools first (issue 32)
        opener = next_untried(tools, [n for n in names if n != other.name], steps, term=term, found=None,
                              cwd=server_cwd)
        if opener is not None:
            return opener
        other = None  # no way to the id: the repository tools search instead
    if other is not None:
        words = [term] if other.glob else (terms or [term])[:MAX_SEARCH_TERMS]  # a glob search goes broad instead
        done = [s for s in steps if s.name == other.name]
        last_failed = bool(done) and steps[-1].name == other.name and (steps[-1].is_error
                                                                       or not result_paths(steps[-1].result))
        if not done or last_failed:
            # a search that failed or found nothing is tried again: with the arguments the server's answer
            # corrected (an absolute path), else with the question's next content word (issue 32)
            asked = [dict(s.input) for s in done]
            for word in words:
                arguments = _server_arguments(other, word, kit, steps, server_cwd)
                if arguments not in asked:
                    return other.name, arguments
        if steps and steps[-1].name == other.name and not steps[-1].is_error:
            broad = _broad_search(term, kit, steps, server_cwd)  # the term named no file: look at every file instead
            if broad is not None:
                return broad
    for search in BUNDLED_SEARCH_TOOLS:
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


def _read_call(path: str, cwd: str | None, kit: ToolKit, steps: list[ToolStep] | None = None,
               server_cwd: str | None = None) -> tuple[str, dict[str, Any]] | None:
    tools = kit.tools
    if kit.server.read is not None:
        name, key = kit.server.read
        if is_id_key(key):  # an id an earlier answer returned, as it was returned
            return name, {key: path}
        names, done = server_tool_names(tools), steps or []
        absolute = needs_absolute(tools[name], key, done, names)
        return name, {key: server_path(relative_path(path, cwd), absolute, server_base(done, names, server_cwd))}
    for get in BUNDLED_GET_TOOLS:
        if get in tools:
            props, required = schema_properties(tools[get])
            key = "path" if "path" in props or not required else required[0]
            return get, {key: relative_path(path, cwd)}
    if "Read" in tools:
        return "Read", {"file_path": path if path.startswith("/") or not cwd else f"{cwd}/{path}"}
    if "repo_read" in tools:
        return "repo_read", {"path": relative_path(path, cwd)}
    return None


def _read_target(step: ToolStep, cwd: str | None) -> str:
    """The repository-relative path a Read / doc_get step asked for."""
    raw = step.input.get("file_path") or step.input.get("path") or next(iter(step.input.values()), "")
    return relative_path(str(raw), cwd)


def _citation(term: str, step: ToolStep, kit: ToolKit) -> tuple[int, str] | None:
    """First ``(line number, stripped text)`` of a read result mentioning ``term`` (any case),
    preferring a line that is not a Markdown heading; None when no line mentions it. Another
    server's read result without line numbers counts its lines from 1."""
    lines = numbered_lines(step.result)
    if not lines and kit.server.read is not None and step.name == kit.server.read[0] and not step.is_error:
        lines = list(enumerate(step.result.splitlines(), start=1))
    hits = [(n, text.strip()) for n, text in lines if term.lower() in text.lower()]
    ranked = sorted(hits, key=lambda hit: hit[1].startswith("#"))  # stable: headings last
    return ranked[0] if ranked else None


def _cited(terms: list[str], step: ToolStep, kit: ToolKit) -> tuple[int, str] | None:
    """The first of ``terms`` (search order) that :func:`_citation` finds in ``step``'s result."""
    for term in terms[:MAX_SEARCH_TERMS]:
        found = _citation(term, step, kit)
        if found:
            return found
    return None


def _target(step: ToolStep, cwd: str | None, steps: list[ToolStep], kit: ToolKit) -> str:
    """The repository-relative path a read step read: an id's path (or title) beside it in the search
    result that returned it, else the path asked for, without the server's own base directory."""
    if kit.server.read is not None and step.name == kit.server.read[0] and is_id_key(kit.server.read[1]):
        wanted = str(step.input.get(kit.server.read[1]))
        for earlier in steps:
            for value, beside in ids_in(earlier.result, kit.server.read[1]) if earlier.name in kit.searches else []:
                if value == wanted and beside:
                    return beside
        return wanted
    base = server_base(steps, server_tool_names(kit.tools), None)
    return relative_path(_read_target(step, cwd), base)


def _search_line(terms: list[str], steps: list[ToolStep], kit: ToolKit) -> str | None:
    """A ``path:line: text`` hit (:func:`line_hits`) of another server's search result naming a term, as a
    citation (a server whose search answers with the lines themselves needs no read)."""
    for step in steps:
        if kit.server.search is not None and step.name == kit.server.search.name and not step.is_error:
            for path, line, text in line_hits(step.result):
                if any(t.lower() in text.lower() for t in terms):
                    return f"Based on the repository, {text.strip()} ({path.removeprefix('./')}:{line})."
    return None


def _found(steps: list[ToolStep], cwd: str | None, kit: ToolKit) -> str | None:
    """The file the conversation read last (repository-relative), else the first hit of a search."""
    reads = [s for s in steps if s.name in kit.reads and not s.is_error]
    if reads:
        return _target(reads[-1], cwd, steps, kit)
    searches = [s for s in steps if s.name in kit.searches and not s.is_error and result_paths(s.result)]
    return relative_path(result_paths(searches[0].result)[0], cwd) if searches else None


def _answer(terms: list[str], steps: list[ToolStep], cwd: str | None, kit: ToolKit) -> str:
    for step in steps:
        if terms and step.name in kit.reads and not step.is_error:
            found = _cited(terms, step, kit)
            if found:
                return f"Based on the repository, {found[1]} ({_target(step, cwd, steps, kit)}:{found[0]})."
    from_search = _search_line(terms, steps, kit) if terms else None
    if from_search is not None:
        return from_search
    subject = f'"{terms[0]}"' if terms else "the question"
    return (f"I found no evidence in the repository about {subject}: the available tools returned no "
            "matching file or line, so I cannot give a sourced answer.")


def _next_hit(steps: list[ToolStep], cwd: str | None, kit: ToolKit) -> str | None:
    """The first hit of the latest successful search that no later step has read yet."""
    searches = [i for i, s in enumerate(steps) if s.name in kit.searches and not s.is_error]
    if not searches:
        return None
    later = steps[searches[-1] + 1:]
    if kit.server.read is not None and is_id_key(kit.server.read[1]):  # follow the ids the search returned
        name, key = kit.server.read
        asked = {str(s.input.get(key)) for s in later if s.name == name}
        ids = [value for value, _ in ids_in(steps[searches[-1]].result, key)]
        return next((value for value in ids if value not in asked), None)
    read = {_read_target(s, cwd) for s in later if s.name in kit.reads}
    hits = result_paths(steps[searches[-1]].result)
    return next((hit for hit in hits if relative_path(hit, cwd) not in read), None)


def _usage(body: Mapping[str, Any], content: list[dict[str, Any]]) -> dict[str, int]:
    return scripted_usage(body, content)


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
    A prompt carrying a controlled-study request (a bundled provider or adjudicator adapter's,
    ``protocol.controlled.agent_prompt``) is answered by ``rehearsal.study_policy.study_reply``
    instead, in the adapter's output schema (issue 34).
    Raises ValueError when ``body["messages"]`` is not a non-empty list.
    """
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValueError("request body needs a non-empty 'messages' list")
    prompt = find_prompt(messages)
    if REQUEST_MARKER in prompt:  # a bundled provider or adjudicator adapter's agent (issue 34)
        from agentstudy.rehearsal.study_policy import study_reply
        request = request_in_prompt(prompt)
        if request is not None:
            return study_reply(body, request)
    tools = tools_by_name(body.get("tools"))
    cwd = find_cwd(messages)
    given_cwd = body.get("workingDirectory")  # the Responses view's cwd (Codex names it only in its context)
    server_cwd = cwd or (given_cwd if isinstance(given_cwd, str) and given_cwd.startswith("/") else None)
    terms = search_terms(prompt)
    term = terms[0] if terms else None
    steps = tool_steps(messages)
    turn = 1 + sum(1 for m in messages if isinstance(m, Mapping) and m.get("role") == "assistant")

    kit = tool_kit(tools)
    call: tuple[str, dict[str, Any]] | None = None
    intro = ""
    last = steps[-1] if steps else None
    other_server = kit.server != ServerTools(None, None)
    max_turns = MAX_TURNS_OTHER_SERVER if other_server else MAX_TURNS
    if term and turn < max_turns:
        other_search = kit.server.search.name if kit.server.search else None
        if last is None or (last.name in kit.searches and last.is_error) \
                or (last.name == other_search and not result_paths(last.result)) \
                or (other_search is not None and last.name not in kit.searches and last.name not in kit.reads
                    and all(s.name != other_search for s in steps)):  # after the call that gave the search its id
            call = _search_call(term, cwd, kit, steps, terms, server_cwd)
            searched = call[1].get(kit.server.search.term_key, term) if call and kit.server.search \
                and call[0] == kit.server.search.name else term
            intro = f'I will search the repository for "{searched}".'
        elif last.name in kit.searches or (last.name in kit.reads and _cited(terms, last, kit) is None):
            hit = _next_hit(steps, cwd, kit)
            call = _read_call(hit, cwd, kit, steps, server_cwd) if hit else None
            intro = f"I will read {relative_path(hit, cwd)} to check the exact wording." if hit else ""
            if call is None and (broad := _broad_search(term, kit, steps, server_cwd)) is not None:
                call, intro = broad, f'No file named "{term}" says it; I will look at every file.'
    if call is None and other_server and term and turn < max_turns + len(server_tool_names(tools)):
        # every allowed tool of the server once, after the answer is found (issue 32); no other search-like tool
        # when the chosen search's description recommends it (issue 44: a rewrite changes the tool choice)
        explored = server_tool_names(tools)
        chosen = kit.server.search
        if chosen is not None and recommends_itself(tools[chosen.name]):
            explored = [n for n in explored if n == chosen.name or not search_like(n, tools[n])]
        call = next_untried(tools, explored, steps, term=term, found=_found(steps, cwd, kit), cwd=server_cwd)
        intro = f"I will also try {call[0]}." if call else ""

    content: list[dict[str, Any]]
    if call is None:
        content = [{"type": "text", "text": _answer(terms, steps, cwd, kit)}]
        return ScriptedReply(content, "end_turn", _usage(body, content))
    name, tool_input = call
    content = [{"type": "text", "text": intro},
               {"type": "tool_use", "id": tool_call_id(len(messages), name, tool_input), "name": name,
                "input": tool_input}]
    return ScriptedReply(content, "tool_use", _usage(body, content))
