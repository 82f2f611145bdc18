"""Variants of the scripted Responses policy that break one setup rule on purpose (issue 21 item 7).

Used to capture the real-binary transcripts of each setup rule (``scripts/capture_codex_transcripts.py``)
and by the tests that replay those rules through the real attempt path. Each variant is the
careful agent (``responses_server.responses_policy``) with one change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agentstudy.rehearsal.policy import ScriptedReply
from agentstudy.rehearsal.responses_server import responses_policy

Policy = Callable[[Mapping[str, Any]], ScriptedReply]
"""A scripted model: the request body in, the reply out."""


def erroring_calls(body: Mapping[str, Any]) -> ScriptedReply:
    """The careful agent, but every search becomes a ``doc.get`` of a missing file (every MCP call errors)."""
    reply = responses_policy(body)
    for block in reply.content:
        if block.get("type") == "tool_use" and block["name"].endswith("doc_search"):
            block["name"] = block["name"].replace("doc_search", "doc_get")
            block["input"] = {"path": "no/such/file.md"}
    return reply


def first_call(name: str, tool_input: Mapping[str, Any], intro: str = "I will try it.") -> Policy:
    """The careful agent, but its first turn calls ``name`` (the policy's Messages-view name: ``Bash`` runs a
    shell command, ``mcp__doc_bridge__doc_write`` the write tool) with ``tool_input``."""
    def policy(body: Mapping[str, Any]) -> ScriptedReply:
        reply = responses_policy(body)
        items = body.get("input")
        if any(isinstance(i, Mapping) and i.get("type") == "function_call_output"
               for i in (items if isinstance(items, list) else [])):
            return reply
        return ScriptedReply([{"type": "text", "text": intro},
                              {"type": "tool_use", "id": "call_first_1", "name": name, "input": dict(tool_input)}],
                             "tool_use", reply.usage)
    return policy
