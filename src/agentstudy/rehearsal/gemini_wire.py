"""Gemini API wire shapes for the scripted Gemini CLI rehearsal (pure, no IO).

The careful agent of :mod:`agentstudy.rehearsal.policy` reads Messages API bodies. This module lets
Gemini CLI 0.61.0 talk to the same agent: :func:`messages_view` turns a ``generateContent`` /
``streamGenerateContent`` request (``contents`` of ``parts``, ``tools[].functionDeclarations``) into the
Messages-shaped body the policy reads, and :func:`gemini_chunks` turns the policy's
:class:`~agentstudy.rehearsal.policy.ScriptedReply` back into the response chunks the CLI consumes
(``candidates[0].content.parts`` with ``text`` / ``functionCall``, ``finishReason``, ``usageMetadata``).

Facts about Gemini CLI 0.61.0 this relies on (measured against a local server, docs/agents.md): the
model is named in the URL (``/v1beta/models/<model>:streamGenerateContent?alt=sse``), not the body;
declarations carry ``parametersJsonSchema``; the read-only built-ins are ``grep_search {pattern}``
(answering ``Found N match(es) ...`` then ``File: <relpath>`` / ``L<n>: <text>`` blocks), ``read_file
{file_path}`` (the file's text, unnumbered) and ``glob {pattern}`` (absolute paths, one a line); MCP tools
are ``mcp_<server>_<tool>`` and their results come back wrapped in ``<untrusted_context>``; every tool
result is a ``functionResponse {id, name, response: {output} | {error}}``; the first user turn starts with a
``<session_context>`` part naming the workspace directory.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from agentstudy.rehearsal.policy import ScriptedReply

__all__ = ["GEMINI_TOOLS", "gemini_chunks", "gemini_tool_names", "mcp_name", "messages_view"]

GEMINI_TOOLS = {"grep_search": "Grep", "read_file": "Read", "glob": "Glob"}
"""Gemini CLI's read-only built-ins -> the policy's names for the same moves."""
_POLICY_TOOLS: dict[str, dict[str, Any]] = {
    "Grep": {"name": "Grep", "description": "Search file contents (grep_search).",
             "input_schema": {"type": "object", "properties": {"pattern": {"type": "string"},
                                                               "output_mode": {"type": "string"}},
                              "required": ["pattern"]}},
    "Read": {"name": "Read", "description": "Read a file (read_file).",
             "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}},
                              "required": ["file_path"]}},
    "Glob": {"name": "Glob", "description": "Find files (glob).",
             "input_schema": {"type": "object", "properties": {"pattern": {"type": "string"}},
                              "required": ["pattern"]}},
}
_WORKSPACE_RE = re.compile(r"\*\*Workspace Directories:\*\*\s*\n\s*-\s*(/[^\n]*)")
_FILE_RE = re.compile(r"^File: (.+)$", re.MULTILINE)
_UNTRUSTED_RE = re.compile(r"^<untrusted_context>\n?(.*?)\n?</untrusted_context>$", re.DOTALL)


def mcp_name(gemini_name: str, servers: Sequence[str]) -> str | None:
    """``mcp__<server>__<tool>`` for Gemini's ``mcp_<server>_<tool>`` of one of ``servers``, else ``None``."""
    for server in servers:
        prefix = f"mcp_{server}_"
        if gemini_name.startswith(prefix) and len(gemini_name) > len(prefix):
            return f"mcp__{server}__{gemini_name[len(prefix):]}"
    return None


def _declarations(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    tools = body.get("tools")
    found: list[Mapping[str, Any]] = []
    for tool in tools if isinstance(tools, list) else []:
        declared = tool.get("functionDeclarations") if isinstance(tool, Mapping) else None
        found += [d for d in declared if isinstance(d, Mapping) and isinstance(d.get("name"), str)] \
            if isinstance(declared, list) else []
    return found


def gemini_tool_names(body: Mapping[str, Any]) -> tuple[str, ...]:
    """The function names a request offers the model, in order (the fidelity check's evidence)."""
    return tuple(str(d["name"]) for d in _declarations(body))


def _servers(names: Sequence[str]) -> list[str]:
    """MCP server aliases in the offered names (``mcp_<alias>_<tool>``; an alias has no underscore)."""
    return sorted({name.split("_")[1] for name in names if name.startswith("mcp_") and name.count("_") >= 2})


def _parts(content: Any) -> list[Mapping[str, Any]]:
    parts = content.get("parts") if isinstance(content, Mapping) else None
    return [p for p in parts if isinstance(p, Mapping)] if isinstance(parts, list) else []


def _result_text(name: str, response: Any) -> tuple[str, bool]:
    """The policy's view of one tool result: ``(text, failed)``."""
    if not isinstance(response, Mapping):
        return "", True
    if "error" in response:
        return str(response["error"]), True
    text = str(response.get("output", ""))
    unwrapped = _UNTRUSTED_RE.match(text)
    text = unwrapped.group(1) if unwrapped else text
    if name == "Grep":
        files = list(dict.fromkeys(f.strip() for f in _FILE_RE.findall(text)))
        return (f"Found {len(files)} files\n" + "\n".join(files)) if files else "No files found", False
    if name == "Read":
        return "\n".join(f"{n}\t{line}" for n, line in enumerate(text.splitlines(), start=1)), False
    if name == "Glob":
        lines = [line.strip() for line in text.splitlines() if line.strip().startswith("/")]
        return "\n".join(lines), False
    return text, False


def messages_view(body: Mapping[str, Any], model: str) -> dict[str, Any]:
    """The Messages API body the careful-agent policy reads, for one Gemini request ``body`` to ``model``.

    Shape: ``{"model", "messages", "tools", "stream": True, "workingDirectory"?}``. The first user message
    holds the prompt (the last text part of the first user turn not starting with ``<``); every
    ``functionCall`` becomes an assistant ``tool_use`` (built-ins under the policy's names, MCP tools as
    ``mcp__<server>__<tool>``) and every ``functionResponse`` a user ``tool_result``. ``workingDirectory`` is the
    workspace directory the ``<session_context>`` names (where a server's absolute paths go).

    Raises:
        ValueError: ``body["contents"]`` is not a non-empty list.
    """
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        raise ValueError("request body needs a non-empty 'contents' list")
    offered = gemini_tool_names(body)
    servers = _servers(offered)
    prompt, cwd = "", None
    calls: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    for turn, content in enumerate(contents):
        for part in _parts(content):
            text = part.get("text")
            if isinstance(text, str) and turn == 0 and not calls:
                found = _WORKSPACE_RE.search(text)
                cwd = found.group(1).strip().rstrip("/") if found and cwd is None else cwd
                prompt = text if not text.lstrip().startswith("<") else prompt
            call, answer = part.get("functionCall"), part.get("functionResponse")
            if isinstance(call, Mapping) and isinstance(call.get("name"), str):
                raw = str(call["name"])
                name = GEMINI_TOOLS.get(raw) or mcp_name(raw, servers) or raw
                call_id = str(call.get("id") or f"call_{len(calls)}")
                names[call_id] = name
                arguments = call.get("args") if isinstance(call.get("args"), Mapping) else {}
                calls.append({"role": "assistant", "content": [
                    {"type": "tool_use", "id": call_id, "name": name, "input": dict(arguments or {})}]})
            elif isinstance(answer, Mapping):
                call_id = str(answer.get("id") or "")
                text_out, failed = _result_text(names.get(call_id, ""), answer.get("response"))
                calls.append({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": call_id, "content": text_out, "is_error": failed}]})
    tools: list[dict[str, Any]] = [_POLICY_TOOLS[GEMINI_TOOLS[n]] for n in offered if n in GEMINI_TOOLS]
    tools += [{"name": mcp_name(str(d["name"]), servers), "description": str(d.get("description", "")),
               "input_schema": d.get("parametersJsonSchema", d.get("parameters", {}))}
              for d in _declarations(body) if mcp_name(str(d["name"]), servers)]
    view: dict[str, Any] = {"model": model, "stream": True, "tools": tools,
                            "messages": [{"role": "user", "content": [{"type": "text", "text": prompt}]}, *calls]}
    if cwd is not None:
        view["workingDirectory"] = cwd
    return view


def _gemini_call(block: Mapping[str, Any], declared: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The ``functionCall`` part for one policy ``tool_use`` block: the Gemini name, and only the arguments the
    tool declares (the policy's ``Grep`` carries Claude Code's ``output_mode``, which ``grep_search`` has not)."""
    name = str(block["name"])
    back = {policy: gemini for gemini, policy in GEMINI_TOOLS.items()}
    if name in back:
        name = back[name]
    elif name.startswith("mcp__"):
        server, _, tool = name[len("mcp__"):].partition("__")
        name = f"mcp_{server}_{tool}"
    arguments = dict(block.get("input") or {})
    schema = declared.get(name, {}).get("parametersJsonSchema", declared.get(name, {}).get("parameters"))
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if isinstance(properties, Mapping):
        arguments = {key: value for key, value in arguments.items() if key in properties}
    return {"functionCall": {"id": str(block["id"]), "name": name, "args": arguments}}


def gemini_chunks(reply: ScriptedReply, body: Mapping[str, Any], model: str) -> list[dict[str, Any]]:
    """The ``GenerateContentResponse`` chunks carrying ``reply`` (one text chunk per text block, then one
    with the function calls, ``finishReason: STOP`` and ``usageMetadata`` on the last): prompt tokens =
    the policy's ``input_tokens``, candidates = ``output_tokens``, cached and thoughts 0 (tokens)."""
    declared = {str(d["name"]): d for d in _declarations(body)}
    parts: list[dict[str, Any]] = []
    for block in reply.content:
        if block.get("type") == "tool_use":
            parts.append(_gemini_call(block, declared))
        elif str(block.get("text", "")):
            parts.append({"text": str(block["text"])})
    tokens_in, tokens_out = int(reply.usage.get("input_tokens", 0)), int(reply.usage.get("output_tokens", 0))
    answering = reply.model or model
    texts = [p for p in parts if "text" in p]
    calls = [p for p in parts if "functionCall" in p]
    chunks: list[dict[str, Any]] = [
        {"candidates": [{"content": {"role": "model", "parts": [p]}, "index": 0}], "modelVersion": answering}
        for p in (texts if calls else texts[:-1])]
    last_parts = calls if calls else texts[-1:] or [{"text": ""}]
    chunks.append({"candidates": [{"content": {"role": "model", "parts": last_parts}, "finishReason": "STOP",
                                   "index": 0}],
                   "usageMetadata": {"promptTokenCount": tokens_in, "candidatesTokenCount": tokens_out,
                                     "totalTokenCount": tokens_in + tokens_out},
                   "modelVersion": answering})
    return chunks


def encode_chunk(chunk: Mapping[str, Any]) -> bytes:
    """One chunk as a server-sent event (``data: <json>`` and a blank line)."""
    return f"data: {json.dumps(chunk, ensure_ascii=False, separators=(',', ':'))}\r\n\r\n".encode()
