"""An agent stream's treatment record (issue 28 item 1): Claude Code's stream-json and Codex's exec events.

Claude Code: the server is offered when its init event lists the server ``connected`` and its
``mcp__SERVER__*`` tools; the calls are the ``tool_use`` blocks of those tools, their errors and
result texts the matching ``tool_result`` blocks. Codex reports no tool set: the offer is the
``[mcp_servers]`` table of the configuration we wrote (a required server that failed to start is
already a setup problem); the calls are its ``mcp_tool_call`` items. In the control arm every
``mcp__`` tool and every MCP call counts, so an empty record is the proof that no server was offered.

Pure: no IO.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentstudy.protocol.treatment import (
    ServerCall,
    TreatmentRecord,
    content_text,
    server_not_ready,
    text_bytes,
    tool_set_sha256,
    treatment_record,
)
from agentstudy.stream.codex import CodexTranscript
from agentstudy.stream.transcript import Transcript

MCP_PREFIX = "mcp__"


def _prefix(server: str | None) -> str:
    return MCP_PREFIX if server is None else f"{MCP_PREFIX}{server}__"


def _short(name: str, server: str | None) -> str:
    """The server's own tool name (``doc_search`` for ``mcp__doc-bridge__doc_search``); control keeps the full name."""
    prefix = _prefix(server)
    return name[len(prefix):] if server is not None and name.startswith(prefix) else name


def _connected(init: Mapping[str, Any], server: str | None) -> bool:
    servers = init.get("mcp_servers")
    if not isinstance(servers, list):
        return False
    entries = [s for s in servers if isinstance(s, Mapping)]
    if server is None:
        return bool(entries)
    return any(s.get("name") == server and s.get("status") == "connected" for s in entries)


def claude_treatment(transcript: Transcript, server: str | None) -> TreatmentRecord:
    """The treatment record of a Claude Code attempt whose arm's server is ``server`` (``None``: control).

    The first request's prompt tokens are those of the first ``message.id`` (input + cache read + cache
    write); the agent's version is the init event's ``claude_code_version``; the answering models are the
    ``assistant`` messages' ``model`` (Claude Code's own ``<synthetic>`` messages left out).
    """
    init = transcript.init or {}
    prefix = _prefix(server)
    tools = init.get("tools")
    listed = [t for t in tools if isinstance(t, str) and t.startswith(prefix)] if isinstance(tools, list) else []
    offered: list[str] = [_short(t, server) for t in listed]
    if server is not None and not _connected(init, server):
        offered = []
    elif server is None and _connected(init, None) and not offered:
        offered = [str(s.get("name")) for s in init.get("mcp_servers", []) if isinstance(s, Mapping)]
    calls = [
        ServerCall(_short(use.name, server), tool_id in transcript.tool_errors, transcript.result_bytes.get(tool_id),
                   tool_id in transcript.not_ready)
        for tool_id, use in transcript.tool_uses.items() if use.name.startswith(prefix)
    ]
    first = next(iter(transcript.message_prompts.values()), None)
    record = treatment_record(server=server, offered_server_tools=offered,
                              evidence="init" if transcript.init else "none", calls=calls,
                              answering_models=transcript.models, first_request_input_tokens=first)
    if isinstance(tools, list):
        builtin = [t for t in tools if isinstance(t, str) and not t.startswith(MCP_PREFIX)]
        record = record.model_copy(update={"builtin_tools_sha256": tool_set_sha256(builtin)})
    version = init.get("claude_code_version")
    if isinstance(version, str) and version:
        record = record.model_copy(update={"agent_version": version})
    return record


def _codex_result_bytes(call: Mapping[str, Any]) -> int | None:
    result = call.get("result")
    if not isinstance(result, Mapping):
        return 0 if call.get("status") == "failed" else None
    return text_bytes(content_text(result.get("content")))


def _codex_not_ready(call: Mapping[str, Any]) -> bool:
    result = call.get("result")
    return isinstance(result, Mapping) and server_not_ready(content_text(result.get("content")))


def codex_treatment(transcript: CodexTranscript, server: str | None, allowed_tools: Sequence[str],
                    model: str) -> TreatmentRecord:
    """The treatment record of a Codex attempt whose arm's server is ``server`` (``None``: control).

    ``allowed_tools`` are the server's tools the configuration enables (what Codex offers the model);
    Codex's events name no model, so ``model`` is the configured one, and no per-request usage is
    reported (the first request's tokens are unknown).
    """
    calls = [
        ServerCall(str(c.get("tool")) if server is not None else f"{MCP_PREFIX}{c.get('server')}__{c.get('tool')}",
                   c.get("status") == "failed", _codex_result_bytes(c), _codex_not_ready(c))
        for c in transcript.mcp_calls if server is None or c.get("server") == server
    ]
    offered = list(allowed_tools) if server is not None else []
    return treatment_record(server=server, offered_server_tools=offered,
                            evidence="config" if transcript.event_count else "none", calls=calls,
                            answering_models=[model] if transcript.event_count else [])
