"""Strict checks of Gemini CLI 0.61.0's ``-o stream-json`` output (pure, no IO).

Grammar (JSONL; every event an object with a string ``type`` and ``timestamp``): ``init {session_id,
model}``, ``message {role: user|assistant, content, delta?}``, ``tool_use {tool_name, tool_id, parameters}``,
``tool_result {tool_id, status: success|error, output?, error?}``, ``error {severity: warning|error,
message}``, ``result {status: success|error, error?, stats?}``. Exactly one ``init`` (the first event) and one
``result`` (the last); every ``tool_result`` answers an earlier, unanswered ``tool_use`` of the same id; a
line longer than :data:`MAX_LINE_BYTES`, a line that is no JSON object, an unknown ``type`` or a missing or
mistyped field is a grammar problem (``invalid-output`` is how the runners word a stream that breaks it:
``invalid-setup`` with the problem, as for the other agents).

:func:`gemini_outcome` maps the transcript to the same outcome words as the other agents
(``stream.outcome.outcome``'s precedence): ``result.status == "success"`` stands for a successful result,
``error`` for an error result (its message is the problem). Setup checks: an MCP call in the control arm,
a call outside the arm's allowed tools, a built-in tool that writes or runs commands, a first request offering
built-ins beyond the read-only set (:data:`POLICY_NOT_APPLIED`), and — the fidelity check — a treatment arm
whose MCP tools the agent never offered the model (:data:`NO_MCP_TOOL`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentstudy.stream.outcome import Outcome, ProcessFacts, outcome

__all__ = ["MAX_LINE_BYTES", "NO_MCP_TOOL", "POLICY_NOT_APPLIED", "READ_ONLY_BUILTINS", "GeminiExpectations",
           "GeminiTranscript", "check_gemini_setup", "gemini_outcome", "mcp_parts", "parse_gemini_stream"]

MAX_LINE_BYTES = 1024 * 1024
"""The longest stream-json line accepted (bytes)."""
NO_MCP_TOOL = "the agent offered no MCP tool: tools.core or folder trust"
"""The setup problem of a treatment attempt whose MCP tools never reached the model."""
POLICY_NOT_APPLIED = "built-in tools beyond the read-only set were offered (the policy rules did not apply)"
READ_ONLY_BUILTINS = ("read_file", "grep_search", "glob", "list_directory", "read_many_files")
"""Gemini CLI's built-in tools a read-only study allows (the policy rules deny every other built-in)."""

_FIELDS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "init": {"session_id": str, "model": str},
    "message": {"role": str, "content": str},
    "tool_use": {"tool_name": str, "tool_id": str, "parameters": dict},
    "tool_result": {"tool_id": str, "status": str},
    "error": {"severity": str, "message": str},
    "result": {"status": str},
}
_ENUMS = {("message", "role"): ("user", "assistant"), ("tool_result", "status"): ("success", "error"),
          ("error", "severity"): ("warning", "error"), ("result", "status"): ("success", "error")}


@dataclass(frozen=True)
class GeminiExpectations:
    """What the arm's configuration promises: ``mcp_server`` (the one ``mcpServers`` alias, ``None`` in the
    control arm), ``allowed_tools`` (its ``includeTools``, the server's own names) and ``offered_tools`` (the
    function names the agent offered the model in its first request, from its own record; ``None`` when no
    record says)."""

    mcp_server: str | None
    allowed_tools: tuple[str, ...] = ()
    offered_tools: tuple[str, ...] | None = None


@dataclass
class GeminiTranscript:
    """Facts of one stream: the ``init`` and ``result`` events, the assistant's ``answer`` (its text after the
    last tool result), ``tool_calls`` by name, the ``tool_uses`` and ``tool_results`` by id, the ``errors``
    events, ``grammar_problems`` and ``event_count``."""

    init: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    answer: str = ""
    tool_calls: Counter[str] = field(default_factory=Counter)
    tool_uses: dict[str, dict[str, Any]] = field(default_factory=dict)
    tool_results: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: list[dict[str, Any]] = field(default_factory=list)
    grammar_problems: list[str] = field(default_factory=list)
    event_count: int = 0

    @property
    def answering_models(self) -> list[str]:
        """The models ``result.stats.models`` names, in its order (``[]`` without stats)."""
        stats = (self.result or {}).get("stats")
        models = stats.get("models") if isinstance(stats, Mapping) else None
        return [str(m) for m in models] if isinstance(models, Mapping) else []


def _field_problem(event: Mapping[str, Any], kind: str) -> str | None:
    for name, wanted in _FIELDS[kind].items():
        if not isinstance(event.get(name), wanted) or isinstance(event.get(name), bool):
            return f"{kind} event without a valid {name!r}"
        allowed = _ENUMS.get((kind, name))
        if allowed is not None and event[name] not in allowed:
            return f"{kind} event with {name} {event[name]!r} (not one of {', '.join(allowed)})"
    if kind == "message" and "delta" in event and event["delta"] is not True:
        return "message event whose delta is not true"
    if kind == "result" and "stats" in event and not isinstance(event["stats"], dict):
        return "result event whose stats is not an object"
    return None


def _add(transcript: GeminiTranscript, event: dict[str, Any], number: int, pieces: list[str]) -> None:
    kind = event["type"]
    if kind == "init" and (transcript.init is not None or transcript.event_count > 1):
        transcript.grammar_problems.append(f"line {number}: init is not the one first event")
    if kind != "init" and transcript.init is None:
        transcript.grammar_problems.append(f"line {number}: {kind} before init")
    if transcript.result is not None:
        transcript.grammar_problems.append(f"line {number}: {kind} after the result")
    if kind == "init":
        transcript.init = transcript.init or event
    elif kind == "result":
        transcript.result = event
    elif kind == "message" and event["role"] == "assistant":
        pieces.append(str(event["content"]))
    elif kind == "tool_use":
        if event["tool_id"] in transcript.tool_uses:
            transcript.grammar_problems.append(f"line {number}: tool_use id {event['tool_id']!r} repeated")
        transcript.tool_uses[event["tool_id"]] = event
        transcript.tool_calls[str(event["tool_name"])] += 1
    elif kind == "tool_result":
        if event["tool_id"] not in transcript.tool_uses:
            transcript.grammar_problems.append(f"line {number}: tool_result for unknown tool_id {event['tool_id']!r}")
        elif event["tool_id"] in transcript.tool_results:
            transcript.grammar_problems.append(f"line {number}: a second tool_result for {event['tool_id']!r}")
        transcript.tool_results[event["tool_id"]] = event
        pieces.clear()
    elif kind == "error":
        transcript.errors.append(event)


def parse_gemini_stream(lines: Sequence[str]) -> GeminiTranscript:
    """Read one attempt's stdout lines (blank lines skipped) into a :class:`GeminiTranscript`; never raises."""
    transcript = GeminiTranscript()
    pieces: list[str] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if len(line.encode("utf-8", "replace")) > MAX_LINE_BYTES:
            transcript.grammar_problems.append(f"line {number} is longer than {MAX_LINE_BYTES} bytes")
            continue
        try:
            event = json.loads(line)
        except ValueError:
            transcript.grammar_problems.append(f"line {number} is not JSON")
            continue
        if not isinstance(event, dict) or not isinstance(event.get("type"), str) \
                or not isinstance(event.get("timestamp"), str):
            transcript.grammar_problems.append(f"line {number} is no event with a type and a timestamp")
            continue
        if event["type"] not in _FIELDS:
            transcript.grammar_problems.append(f"line {number}: unknown event type {str(event['type'])[:40]!r}")
            continue
        problem = _field_problem(event, event["type"])
        if problem is not None:
            transcript.grammar_problems.append(f"line {number}: {problem}")
            continue
        transcript.event_count += 1
        _add(transcript, event, number, pieces)
    if transcript.event_count and transcript.init is None:
        transcript.grammar_problems.append("no init event")
    if transcript.result is not None and transcript.result.get("status") == "success":
        unanswered = [i for i in transcript.tool_uses if i not in transcript.tool_results]
        if unanswered:
            transcript.grammar_problems.append(f"tool_use {unanswered[0]!r} has no tool_result")
    transcript.answer = "".join(pieces)
    return transcript


def mcp_parts(name: str, server: str) -> str | None:
    """The server's own tool name of ``mcp_<server>_<tool>``, ``None`` for another name."""
    prefix = f"mcp_{server}_"
    return name[len(prefix):] if name.startswith(prefix) and len(name) > len(prefix) else None


def check_gemini_setup(transcript: GeminiTranscript, expected: GeminiExpectations) -> list[str]:
    """Every setup problem of a Gemini attempt, grammar problems first (one line each; never raises)."""
    problems = list(transcript.grammar_problems)
    for name in transcript.tool_calls:
        if name.startswith("mcp_"):
            tool = None if expected.mcp_server is None else mcp_parts(name, expected.mcp_server)
            if expected.mcp_server is None:
                problems.append(f"an MCP tool call ({name}) in the repository-only arm")
            elif tool is None or tool not in expected.allowed_tools:
                problems.append(f"MCP tool call {name} outside the allowed set")
        elif name not in READ_ONLY_BUILTINS:
            unregistered = any(r.get("error", {}).get("type") == "tool_not_registered"
                               for i, r in transcript.tool_results.items()
                               if transcript.tool_uses.get(i, {}).get("tool_name") == name
                               and isinstance(r.get("error"), Mapping))
            if not unregistered:
                problems.append(f"built-in tool {name} in a read-only study")
    extra = sorted(n for n in expected.offered_tools or () if not n.startswith("mcp_") and n not in READ_ONLY_BUILTINS)
    if extra:
        problems.append(f"{POLICY_NOT_APPLIED}: {', '.join(extra)}")
    if expected.mcp_server is not None:
        offered = None if expected.offered_tools is None else \
            [n for n in expected.offered_tools if mcp_parts(n, expected.mcp_server)]
        called = any(mcp_parts(n, expected.mcp_server) for n in transcript.tool_calls)
        if (offered is not None and not offered) or (offered is None and transcript.result is not None
                                                     and not called):
            problems.append(NO_MCP_TOOL)
    return problems


def gemini_outcome(process: ProcessFacts, transcript: GeminiTranscript, expected: GeminiExpectations,
                   cost_problem: str | None = None, extra_setup: Sequence[str] = ()) -> Outcome:
    """The attempt's status (one of the six) and why, by :func:`agentstudy.stream.outcome.outcome`'s precedence;
    ``extra_setup``: problems found outside the stream (the session file's disagreement with the stream)."""
    result: dict[str, Any] | None = None
    if transcript.result is not None:
        failed = transcript.result.get("status") != "success"
        error = transcript.result.get("error")
        message = error.get("message") if isinstance(error, Mapping) else None
        result = {"subtype": "success" if not failed else f"error: {str(message)[:200]}", "is_error": failed}
    setup = [*check_gemini_setup(transcript, expected), *extra_setup]
    return outcome(process, setup, cost_problem, result)
