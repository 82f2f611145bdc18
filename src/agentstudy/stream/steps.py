"""One normalised step model that every agent's private transcript maps to (issue 43).

Claude Code's stream-json, Codex's ``exec --json`` events, Gemini CLI's stream-json and the http transport's
request/response lines (``io.transcripts``) each become a tuple of :class:`Step`: the assistant's text, a tool
call with its id and arguments, and the call's result, in the order the agent produced them. The pair page of
``agentstudy view`` and the ATIF export both read only this model. Each stream format has one small
function here; an agent names its own through ``agents.base.AgentCli.transcript_steps``. Lines that are
not JSON objects or that no rule reads are skipped: a step list is for reading, the runner's checks
(``stream.transcript``, ``stream.codex``) judge the attempt.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

StepKind = Literal["text", "call", "result"]
MCP_PREFIX = "mcp__"


@dataclass(frozen=True)
class StepUsage:
    """The tokens of the model turn a step came from (tokens; cache reads included in ``cached``)."""

    input_tokens: int
    output_tokens: int
    cached_tokens: int = 0


@dataclass(frozen=True)
class Step:
    """One step of an attempt.

    ``kind`` is ``text`` (assistant text in ``text``), ``call`` (a tool call: ``tool``, ``call_id``,
    ``arguments``) or ``result`` (a call's result: ``call_id``, its text in ``text``, ``error`` when the tool
    said it failed). ``server`` names the MCP server a call or result went to (``None`` for the agent's own
    tools). ``usage`` is the model turn's usage on the first step of that turn (Claude Code, the http
    transport) or on the last step (Codex, which reports one total per turn).
    """

    kind: StepKind
    text: str = ""
    tool: str | None = None
    call_id: str | None = None
    arguments: Mapping[str, Any] = field(default_factory=dict)
    server: str | None = None
    error: bool = False
    usage: StepUsage | None = None


def _objects(data: bytes) -> Iterator[dict[str, Any]]:
    for line in data.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            yield value


def _text_of(content: Any) -> str:
    """A tool result's or message's content as text: strings as they are, text blocks joined by newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [str(block.get("text", "")) for block in content if isinstance(block, dict) and "text" in block]
        return "\n".join(parts) if parts else json.dumps(content, ensure_ascii=False)
    if content is None:
        return ""
    return json.dumps(content, ensure_ascii=False)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _claude_server(name: str) -> str | None:
    """``mcp__SERVER__tool`` -> ``SERVER``; the agent's own tools -> ``None``."""
    if not name.startswith(MCP_PREFIX):
        return None
    server, _, _ = name[len(MCP_PREFIX):].partition("__")
    return server or None


def _anthropic_usage(usage: Any) -> StepUsage | None:
    if not isinstance(usage, dict):
        return None
    return StepUsage(_int(usage.get("input_tokens")), _int(usage.get("output_tokens")),
                     _int(usage.get("cache_read_input_tokens")))


def _content_steps(blocks: list[Any], usage: StepUsage | None, servers: dict[str, str | None],
                   server_of: Any) -> list[Step]:
    """Steps of one assistant message's content blocks (Messages API shape), ``usage`` on the first."""
    steps: list[Step] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and str(block.get("text", "")).strip():
            steps.append(Step("text", text=str(block["text"])))
        elif block.get("type") == "tool_use":
            name, call_id = str(block.get("name", "")), str(block.get("id", ""))
            given = block.get("input")
            arguments: Mapping[str, Any] = given if isinstance(given, dict) else {}
            servers[call_id] = server_of(name)
            steps.append(Step("call", tool=name, call_id=call_id, arguments=arguments, server=servers[call_id]))
    if steps and usage is not None:
        steps[0] = Step(**{**steps[0].__dict__, "usage": usage})
    return steps


def _result_steps(blocks: Any, servers: Mapping[str, str | None]) -> list[Step]:
    """Steps of the ``tool_result`` blocks of one user message (Messages API shape)."""
    if not isinstance(blocks, list):
        return []
    steps = []
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            call_id = str(block.get("tool_use_id", ""))
            steps.append(Step("result", text=_text_of(block.get("content")), call_id=call_id,
                              server=servers.get(call_id), error=block.get("is_error") is True))
    return steps


def claude_steps(data: bytes) -> tuple[Step, ...]:
    """Claude Code ``--output-format stream-json`` lines -> steps (its ``assistant`` and ``user`` events).

    One API message arrives as several ``assistant`` events sharing ``message.id``; its usage is given once.
    """
    steps: list[Step] = []
    servers: dict[str, str | None] = {}
    seen_messages: set[str] = set()
    for event in _objects(data):
        message = event.get("message")
        if not isinstance(message, dict):
            continue
        if event.get("type") == "assistant" and isinstance(message.get("content"), list):
            message_id = str(message.get("id", ""))
            usage = None if message_id in seen_messages else _anthropic_usage(message.get("usage"))
            seen_messages.add(message_id)
            steps += _content_steps(message["content"], usage, servers, _claude_server)
        elif event.get("type") == "user":
            steps += _result_steps(message.get("content"), servers)
    return tuple(steps)


def _codex_item(item: Mapping[str, Any]) -> list[Step]:
    kind, call_id = item.get("type"), str(item.get("id", ""))
    if kind == "agent_message":
        return [Step("text", text=str(item.get("text", "")))]
    if kind == "command_execution":
        status, code = item.get("status"), item.get("exit_code")
        failed = status in ("failed", "declined") or (isinstance(code, int) and code != 0)
        return [Step("call", tool="shell", call_id=call_id, arguments={"command": item.get("command", "")}),
                Step("result", text=str(item.get("aggregated_output", "")), call_id=call_id, error=failed)]
    if kind == "mcp_tool_call":
        server = str(item.get("server", "")) or None
        given = item.get("arguments")
        arguments: Mapping[str, Any] = given if isinstance(given, dict) else {}
        error = item.get("error")
        result = item.get("result")
        text = _text_of(error.get("message") if isinstance(error, dict) else error) if error else (
            _text_of(result.get("content")) if isinstance(result, dict) else "")
        failed = bool(error) or item.get("status") == "failed" or (
            isinstance(result, dict) and result.get("is_error") is True)
        return [Step("call", tool=str(item.get("tool", "")), call_id=call_id, arguments=arguments, server=server),
                Step("result", text=text, call_id=call_id, server=server, error=failed)]
    return []


def codex_steps(data: bytes) -> tuple[Step, ...]:
    """Codex ``exec --json`` events -> steps (each ``item.completed``; a turn's usage on its last step)."""
    steps: list[Step] = []
    for event in _objects(data):
        item = event.get("item")
        if event.get("type") == "item.completed" and isinstance(item, dict):
            steps += _codex_item(item)
        elif event.get("type") == "turn.completed" and isinstance(event.get("usage"), dict) and steps:
            usage = event["usage"]
            total = StepUsage(_int(usage.get("input_tokens")), _int(usage.get("output_tokens")),
                              _int(usage.get("cached_input_tokens")))
            steps[-1] = Step(**{**steps[-1].__dict__, "usage": total})
    return tuple(steps)


def _gemini_server(name: str) -> str | None:
    """``mcp_SERVER_tool`` -> ``SERVER`` (Gemini CLI's MCP tool names); built-in tools -> ``None``."""
    if not name.startswith("mcp_"):
        return None
    server, _, tool = name[len("mcp_"):].partition("_")
    return server if server and tool else None


def gemini_steps(data: bytes) -> tuple[Step, ...]:
    """Gemini CLI ``-o stream-json`` events -> steps: consecutive assistant ``message`` chunks joined into one
    text step, each ``tool_use`` a call, each ``tool_result`` its result (``status: error`` an error)."""
    steps: list[Step] = []
    servers: dict[str, str | None] = {}
    for event in _objects(data):
        kind = event.get("type")
        if kind == "message" and event.get("role") == "assistant" and isinstance(event.get("content"), str):
            if steps and steps[-1].kind == "text" and event.get("delta") is True:
                steps[-1] = Step("text", text=steps[-1].text + event["content"])
            elif event["content"].strip():
                steps.append(Step("text", text=event["content"]))
        elif kind == "tool_use":
            name, call_id = str(event.get("tool_name", "")), str(event.get("tool_id", ""))
            given = event.get("parameters")
            arguments: Mapping[str, Any] = given if isinstance(given, dict) else {}
            servers[call_id] = _gemini_server(name)
            steps.append(Step("call", tool=name, call_id=call_id, arguments=arguments, server=servers[call_id]))
        elif kind == "tool_result":
            call_id = str(event.get("tool_id", ""))
            failed = event.get("status") == "error"
            error = event.get("error")
            text = _text_of(error.get("message") if isinstance(error, dict) else error) if failed and error else (
                _text_of(event.get("output")))
            steps.append(Step("result", text=text, call_id=call_id, server=servers.get(call_id), error=failed))
    return tuple(steps)


def http_steps(data: bytes, server_tools: frozenset[str] = frozenset(), server: str = "mcp") -> tuple[Step, ...]:
    """The http transport's ``{"turn", "request"|"response"|"lost"}`` lines -> steps.

    A response's content blocks are the assistant's steps; the tool results are the ``tool_result`` blocks
    of the last message of the next request. A tool named in ``server_tools`` (the names the model saw)
    is a call to ``server``.
    """
    steps: list[Step] = []
    servers: dict[str, str | None] = {}

    def server_of(name: str) -> str | None:
        return server if name in server_tools else None

    for line in _objects(data):
        request, response = line.get("request"), line.get("response")
        if isinstance(request, dict) and isinstance(request.get("messages"), list) and request["messages"]:
            last = request["messages"][-1]
            if isinstance(last, dict) and last.get("role") == "user":
                steps += _result_steps(last.get("content"), servers)
        elif isinstance(response, dict) and isinstance(response.get("content"), list):
            steps += _content_steps(response["content"], _anthropic_usage(response.get("usage")), servers,
                                    server_of)
    return tuple(steps)


def _signature(step: Step) -> tuple[Any, ...]:
    if step.kind == "call":
        return ("call", step.tool, json.dumps(step.arguments, sort_keys=True, default=str))
    if step.kind == "result":
        return ("result", step.error)
    return ("text",)


def first_divergence(left: tuple[Step, ...], right: tuple[Step, ...]) -> int | None:
    """The index of the first step where two attempts differ, or ``None`` when they agree throughout.

    Steps agree when they are both text, both results with the same error flag, or calls of the same tool
    with the same arguments (the text itself is not compared: wording differs between any two runs). When
    one list is a prefix of the other, the divergence is where the shorter one ends.
    """
    for index, (a, b) in enumerate(zip(left, right, strict=False)):
        if _signature(a) != _signature(b):
            return index
    return None if len(left) == len(right) else min(len(left), len(right))


__all__ = ["Step", "StepKind", "StepUsage", "claude_steps", "codex_steps", "first_divergence", "gemini_steps",
           "http_steps"]
