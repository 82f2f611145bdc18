"""The scripted model's answers to a bundled provider or adjudicator adapter's agent (issue 34). Pure.

A provider request is worked like the scripted provider works it (``rehearsal.controlled_provider``),
but through the agent's own tools, one call per turn: the MCP server's search once when the agent
offers one (the doc-bridge arm), then ``Read`` of every file the request's evidence descriptions
and ``grep -F`` acceptance checks name; the last turn answers one JSON object of the provider
output schema, decided from what those reads returned (a check passes when its file was read and
holds its text; an evidence id is cited when a file its description names was read). An
adjudicator request is answered at once with ``rehearsal.controlled_adjudicator.verdict``. Usage is
the scripted server's (``policy.scripted_usage``), so the adapter's provider-reported tokens are
exactly what the server served.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agentstudy.rehearsal.controlled_adjudicator import verdict
from agentstudy.rehearsal.controlled_provider import grep_check, named_files
from agentstudy.rehearsal.conversation import ToolStep, find_cwd, numbered_lines, relative_path, tool_steps
from agentstudy.rehearsal.reply_kit import (
    MCP_SEARCH_TOOL,
    ScriptedReply,
    pick_term,
    scripted_usage,
    tool_call_id,
    tool_kit,
    tools_by_name,
)
from agentstudy.rehearsal.server_moves import search_arguments

__all__ = ["study_reply"]

ADJUDICATOR_PROTOCOL = "doc-bridge.study-adjudicator.v1"
MAX_READS = 12


def _targets(request: Mapping[str, Any]) -> list[str]:
    """Every file the evidence descriptions and ``grep -F`` checks name, first mention first."""
    names: list[str] = []
    for requirement in request.get("evidenceRequirements", []):
        names += named_files(str(requirement.get("description", "")))
    for check in request.get("acceptanceChecks", []):
        parts = grep_check(str(check.get("command", "")))
        if parts is not None:
            names.append(parts[1])
    return list(dict.fromkeys(names))


def _read_texts(steps: list[ToolStep], cwd: str | None) -> dict[str, str]:
    """Repository-relative path -> text of every successful ``Read`` (line numbers removed)."""
    texts: dict[str, str] = {}
    for step in steps:
        if step.name != "Read" or step.is_error:
            continue
        path = relative_path(str(step.input.get("file_path", "")), cwd)
        lines = numbered_lines(step.result)
        texts[path] = "\n".join(text for _n, text in lines) if lines else step.result
    return texts


def _answer(request: Mapping[str, Any], texts: Mapping[str, str]) -> dict[str, Any]:
    requirements = list(request.get("evidenceRequirements", []))
    cited = [str(item["id"]) for item in requirements
             if any(name in texts for name in named_files(str(item.get("description", ""))))]
    checks = [grep_check(str(check.get("command", ""))) for check in request.get("acceptanceChecks", [])]
    executed = [parts for parts in checks if parts is not None and parts[1] in texts]
    passed = sum(1 for text, name in executed if text in texts[name])
    complete = passed == len(checks) and len(cited) == len(requirements)
    return {
        "taskOutcome": "success" if complete else ("incomplete" if not passed and not cited else "partial"),
        "evidenceQuality": "high" if len(cited) == len(requirements) else ("medium" if cited else "low"),
        "safetyOutcome": "safe",
        "evidenceIds": cited,
        "clarificationRequests": 0,
        "reworkCount": 0,
        "measurements": [{"name": "acceptanceChecksPassed", "value": passed},
                         {"name": "acceptanceChecksTotal", "value": len(checks)},
                         {"name": "acceptanceChecksExecuted", "value": len(executed)},
                         {"name": "searchHitRate", "value": len(cited) / len(requirements) if requirements else 0}],
    }


def _search_call(request: Mapping[str, Any], tools: dict[str, Mapping[str, Any]],
                 steps: list[ToolStep], cwd: str | None = None) -> tuple[str, dict[str, Any]] | None:
    """The MCP server's search (the bundled ``doc_search`` or another server's search-like tool, with the
    objective's content words and absolute paths where it needs them; issue 32), once."""
    term = pick_term(str(request.get("objective", ""))) or "the"
    other = tool_kit(tools).server.search
    if MCP_SEARCH_TOOL in tools:
        call: tuple[str, dict[str, Any]] = (MCP_SEARCH_TOOL, {"query": term})
    elif other is not None:
        call = (other.name, search_arguments(other, term, tools, steps, cwd))
    else:
        return None
    return None if any(step.name == call[0] for step in steps) else call


def _reply(body: Mapping[str, Any], content: list[dict[str, Any]], stop: str) -> ScriptedReply:
    return ScriptedReply(content, "tool_use" if stop == "tool_use" else "end_turn", scripted_usage(body, content))


def study_reply(body: Mapping[str, Any], request: Mapping[str, Any]) -> ScriptedReply:
    """The next assistant message for an adapter's agent working ``request`` (see the module docstring)."""
    if request.get("protocol") == ADJUDICATOR_PROTOCOL:
        text = json.dumps(verdict(dict(request)), separators=(",", ":"))
        return _reply(body, [{"type": "text", "text": text}], "end_turn")
    messages = list(body.get("messages") or [])
    tools = tools_by_name(body.get("tools"))
    cwd = find_cwd(messages)
    steps = tool_steps(messages)
    call = _search_call(request, tools, steps, cwd)
    if call is None and "Read" in tools and len(steps) < MAX_READS:
        tried = {relative_path(str(step.input.get("file_path", "")), cwd) for step in steps if step.name == "Read"}
        target = next((name for name in _targets(request) if name not in tried), None)
        if target is not None:
            call = ("Read", {"file_path": f"{cwd}/{target}" if cwd else target})
    if call is not None:
        name, tool_input = call
        return _reply(body, [{"type": "tool_use", "id": tool_call_id(len(messages), name, tool_input), "name": name,
                              "input": tool_input}], "tool_use")
    answer = _answer(request, _read_texts(steps, cwd))
    return _reply(body, [{"type": "text", "text": json.dumps(answer, separators=(",", ":"))}], "end_turn")
