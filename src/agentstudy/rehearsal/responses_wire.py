"""OpenAI Responses API wire shapes for the scripted Codex rehearsal (pure, no IO; issue 21).

The careful agent of :mod:`agentstudy.rehearsal.policy` reads Messages API bodies. This module
lets Codex CLI 0.171.0 talk to the same agent: :func:`messages_view` turns a Responses request
(``input`` items, ``tools``) into the Messages-shaped body the policy reads, and
:func:`response_events` turns the policy's :class:`~agentstudy.rehearsal.policy.ScriptedReply`
back into the server-sent events Codex consumes (``response.created``,
``response.output_item.added`` / ``.done``, ``response.output_text.delta``,
``response.completed`` with usage).

Facts about Codex 0.171.0 this relies on (measured, docs/codex.md): the shell tool is the
function ``exec_command {cmd}`` (feature ``unified_exec``; the older ``shell {command: [...]}``
is understood too); MCP tools arrive as a ``namespace`` tool ``mcp__<server>`` (dashes become
underscores) whose ``tools`` are functions named like the server's tools with dots as
underscores; the working directory is in a user message as ``<environment_context>`` (not needed: commands
run in the ``-C`` directory and paths stay relative); tool results come
back as ``function_call_output {call_id, output}``. The shell stands in for the policy's
``Grep`` (``grep -rli -- TERM``: ``rg`` is not on an allowlisted PATH) and ``Read``
(``sed -n 1,400p -- PATH``, numbered here), so the control arm reads the repository by shell
and the treatment arm by the server's tools.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from agentstudy.rehearsal.policy import ScriptedReply

__all__ = ["GREP_TOOL", "READ_TOOL", "messages_view", "response_events", "shell_command"]

GREP_TOOL = {"name": "Grep", "description": "Search file contents (shell grep -rli).",
             "input_schema": {"type": "object", "properties": {"pattern": {"type": "string"},
                                                               "output_mode": {"type": "string"},
                                                               "path": {"type": "string"}},
                              "required": ["pattern"]}}
READ_TOOL = {"name": "Read", "description": "Read a file (shell sed -n).",
             "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}},
                              "required": ["file_path"]}}
_SHELL_TOOLS = ("exec_command", "shell")
_EXIT_RE = re.compile(r"(?:Process exited with code|Exit code:)\s*(-?\d+)")
_READ_RANGE = "1,400p"


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [str(c["text"]) for c in content if isinstance(c, Mapping) and isinstance(c.get("text"), str)]


def _tools(body: Mapping[str, Any]) -> list[Any]:
    tools = body.get("tools")
    return tools if isinstance(tools, list) else []


def _mcp_tools(tools: Sequence[Any]) -> dict[str, tuple[str | None, str, Mapping[str, Any]]]:
    """Messages-style name -> (namespace or None, Codex function name, definition) of every MCP tool."""
    found: dict[str, tuple[str | None, str, Mapping[str, Any]]] = {}
    for tool in tools:
        if not isinstance(tool, Mapping) or not str(tool.get("name", "")).startswith("mcp__"):
            continue
        namespace = str(tool["name"])
        members = tool.get("tools") if tool.get("type") == "namespace" else [tool]
        for member in members if isinstance(members, list) else []:
            if isinstance(member, Mapping) and isinstance(member.get("name"), str):
                space = namespace if tool.get("type") == "namespace" else None
                short = member["name"] if space else member["name"].rsplit("__", 1)[-1]
                found[f"{namespace.rstrip('_')}__{short}" if space else member["name"]] = (space, member["name"],
                                                                                       member)
    return found


def _shell_name(tools: Sequence[Any]) -> str | None:
    names = {t.get("name") for t in tools if isinstance(t, Mapping)}
    return next((name for name in _SHELL_TOOLS if name in names), None)


def shell_command(name: str, tool_input: Mapping[str, Any]) -> str:
    """The shell command line standing in for the policy's ``Grep`` / ``Read`` call.

    Raises:
        ValueError: ``name`` is neither ``Grep`` nor ``Read``.
    """
    if name == "Grep":
        return shlex.join(["grep", "-rli", "--", str(tool_input["pattern"])])
    if name == "Read":
        return shlex.join(["sed", "-n", _READ_RANGE, "--", str(tool_input["file_path"])])
    raise ValueError(f"no shell form for tool {name!r}")


def _from_shell(arguments: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The policy's view of a shell call: ``Grep`` / ``Read`` when it is one of ours, else the raw command."""
    raw = arguments.get("cmd", arguments.get("command"))
    command = raw if isinstance(raw, str) else shlex.join(str(a) for a in raw) if isinstance(raw, list) else ""
    try:
        words = shlex.split(command)
    except ValueError:
        words = []
    if words[:3] == ["grep", "-rli", "--"] and len(words) == 4:
        return "Grep", {"pattern": words[3], "output_mode": "files_with_matches"}
    if words[:4] == ["sed", "-n", _READ_RANGE, "--"] and len(words) == 5:
        return "Read", {"file_path": words[4]}
    return "Bash", {"command": command}


def _shell_output(text: str) -> tuple[str, bool]:
    """The command's own output and whether it failed, from Codex's wrapped tool output."""
    try:
        decoded = json.loads(text)
    except ValueError:
        decoded = None
    if isinstance(decoded, Mapping) and isinstance(decoded.get("output"), str):
        meta = decoded.get("metadata")
        code = meta.get("exit_code", 0) if isinstance(meta, Mapping) else 0
        return decoded["output"], code != 0
    exit_match = _EXIT_RE.search(text)
    body = text.split("\nOutput:\n", 1)[1] if "\nOutput:\n" in text else text
    return body, bool(exit_match and exit_match.group(1) != "0")


_MCP_HEADER_RE = re.compile(r"^Wall time: [\d.]+ seconds\nOutput:$")
_CWD_RE = re.compile(r"<cwd>([^<\n]+)</cwd>")


def _without_duplicates(texts: list[str]) -> list[str]:
    """An MCP output's text blocks without Codex's ``Wall time ... Output:`` header block and without a
    ``{"content": TEXT}`` block repeating another block's TEXT (a server's structured content; issue 32)."""
    texts = [t for t in texts if not _MCP_HEADER_RE.match(t)]
    kept: list[str] = []
    for text in texts:
        try:
            decoded = json.loads(text)
        except ValueError:
            decoded = None
        if isinstance(decoded, dict) and list(decoded) == ["content"] and decoded["content"] in texts:
            continue
        kept.append(text)
    return kept


_MCP_PREFIX_RE = re.compile(r"^Wall time: [\d.]+ seconds\nOutput:\n")


def _output_text(output: Any) -> str:
    """A function call's output text; an MCP call's without Codex's ``Wall time ... Output:`` header (a
    server's structured content then stays one JSON text the conversation unwraps)."""
    if isinstance(output, Mapping):
        output = output.get("content", output.get("output", ""))
    if isinstance(output, str):
        return _MCP_PREFIX_RE.sub("", output, count=1)
    return "\n".join(_without_duplicates(_texts(output)))


def _working_directory(items: list[Any]) -> str | None:
    """The ``<cwd>`` Codex names in its ``<environment_context>`` message, if any."""
    for item in items:
        if isinstance(item, Mapping) and item.get("type") == "message":
            for text in _texts(item.get("content")):
                found = _CWD_RE.search(text)
                if found:
                    return found.group(1).strip()
    return None


def messages_view(body: Mapping[str, Any]) -> dict[str, Any]:
    """The Messages API body the careful-agent policy reads, for one Responses request ``body``.

    Shapes: ``{"model": str, "messages": [...], "tools": [...]}``. The first user message holds
    the prompt (the last user text not starting with ``<``, e.g. not ``<environment_context>``)
    and no working directory, so every path the agent uses is relative to the ``-C`` directory;
    every ``function_call`` becomes an assistant ``tool_use`` and every
    ``function_call_output`` a user ``tool_result``. Offered tools: ``Grep`` and ``Read`` when a
    shell tool is offered, plus each MCP tool as ``mcp__<server>__<tool>``. ``workingDirectory`` (when
    Codex names its ``<cwd>``) is where the policy puts a server's absolute paths (issue 32).

    Raises:
        ValueError: ``body["input"]`` is not a non-empty list.
    """
    items = body.get("input")
    if not isinstance(items, list) or not items:
        raise ValueError("request body needs a non-empty 'input' list")
    tools = _tools(body)
    mcp = _mcp_tools(tools)
    by_codex = {(space, name): messages_name for messages_name, (space, name, _) in mcp.items()}
    prompt = ""
    calls: list[dict[str, Any]] = []
    for item in items:
        if not isinstance(item, Mapping):
            continue
        if item.get("type") == "message" and item.get("role") == "user" and not calls:
            for text in _texts(item.get("content")):
                if not text.lstrip().startswith("<"):
                    prompt = text
        elif item.get("type") == "function_call" and isinstance(item.get("call_id"), str):
            try:
                arguments = json.loads(str(item.get("arguments", "{}")))
            except ValueError:
                arguments = {}
            arguments = arguments if isinstance(arguments, dict) else {}
            name = str(item.get("name", ""))
            namespace = item.get("namespace") if isinstance(item.get("namespace"), str) else None
            if name in _SHELL_TOOLS:
                name, arguments = _from_shell(arguments)
            else:
                name = by_codex.get((namespace, name), name)
            calls.append({"role": "assistant", "content": [
                {"type": "tool_use", "id": item["call_id"], "name": name, "input": arguments}]})
        elif item.get("type") == "function_call_output" and isinstance(item.get("call_id"), str):
            called = next((c["content"][0] for c in calls
                           if c["role"] == "assistant" and c["content"][0]["id"] == item["call_id"]), None)
            text, failed = _output_text(item.get("output")), False
            if called is not None and called["name"] in ("Grep", "Read", "Bash"):
                text, failed = _shell_output(text)
                if called["name"] == "Read" and not failed:
                    text = "\n".join(f"{n}\t{line}" for n, line in enumerate(text.splitlines(), start=1))
            calls.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": item["call_id"], "content": text, "is_error": failed}]})
    messages = [{"role": "user", "content": [{"type": "text", "text": prompt}]}, *calls]
    offered = [GREP_TOOL, READ_TOOL] if _shell_name(tools) else []
    offered += [{"name": name, "description": str(defn.get("description", "")),
                 "input_schema": defn.get("parameters", {})} for name, (_, _, defn) in mcp.items()]
    view: dict[str, Any] = {"model": body.get("model"), "messages": messages, "tools": offered}
    cwd = _working_directory(items)
    if cwd is not None:  # for the server's absolute paths only: repository tools stay relative to -C
        view["workingDirectory"] = cwd
    return view


def _function_call(block: Mapping[str, Any], tools: Sequence[Any]) -> dict[str, Any]:
    name, tool_input = str(block["name"]), block.get("input", {})
    item: dict[str, Any] = {"type": "function_call", "id": f"fc_{block['id']}", "call_id": block["id"],
                            "status": "completed"}
    shell = _shell_name(tools)
    if name in ("Grep", "Read", "Bash") and shell is not None:
        command = str(tool_input["command"]) if name == "Bash" else shell_command(name, tool_input)
        arguments: dict[str, Any] = {"cmd": command} if shell == "exec_command" \
            else {"command": ["bash", "-lc", command]}
        return {**item, "name": shell, "arguments": json.dumps(arguments)}
    space, codex_name, _ = _mcp_tools(tools).get(name, (None, name, {}))
    if space is not None:
        item["namespace"] = space
    return {**item, "name": codex_name, "arguments": json.dumps(tool_input)}


def response_events(reply: ScriptedReply, body: Mapping[str, Any], response_id: str) -> list[dict[str, Any]]:
    """The ordered Responses API stream events for ``reply`` to request ``body`` (each a JSON object
    with ``type``): ``response.created``, per output item ``response.output_item.added`` (text
    deltas for messages) and ``response.output_item.done``, then ``response.completed`` whose usage
    (tokens) is the policy's: ``input_tokens``, ``output_tokens``, cached and reasoning details 0."""
    tools = _tools(body)
    events: list[dict[str, Any]] = [{"type": "response.created", "response": {"id": response_id}}]
    for index, block in enumerate(reply.content):
        if block.get("type") == "tool_use":
            item = _function_call(block, tools)
            events += [{"type": "response.output_item.added", "output_index": index, "item": item},
                       {"type": "response.output_item.done", "output_index": index, "item": item}]
            continue
        text = str(block.get("text", ""))
        if not text:
            continue
        message_id = f"msg_{response_id}_{index}"
        done = {"type": "message", "id": message_id, "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}
        events += [{"type": "response.output_item.added", "output_index": index,
                    "item": {**done, "status": "in_progress", "content": []}},
                   {"type": "response.output_text.delta", "output_index": index, "item_id": message_id,
                    "content_index": 0, "delta": text},
                   {"type": "response.output_item.done", "output_index": index, "item": done}]
    usage = reply.usage
    tokens_in, tokens_out = int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
    events.append({"type": "response.completed", "response": {
        "id": response_id, "status": "completed",
        "usage": {"input_tokens": tokens_in, "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens": tokens_out, "output_tokens_details": {"reasoning_tokens": 0},
                  "total_tokens": tokens_in + tokens_out}}})
    return events
