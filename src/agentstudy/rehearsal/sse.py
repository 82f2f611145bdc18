"""Messages API wire shapes for the rehearsal server (pure, no IO).

Turns a :class:`~agentstudy.rehearsal.policy.ScriptedReply` into either one JSON message (the
non-streaming form) or the ordered list of Anthropic server-sent events the Claude Code CLI reads
when it sends ``"stream": true``: ``message_start``, then per content block
``content_block_start`` / ``content_block_delta`` (``text_delta`` or ``input_json_delta``) /
``content_block_stop``, then ``message_delta`` (stop reason and output usage) and
``message_stop``. Also builds the Messages API error body.
"""

from __future__ import annotations

import json
from typing import Any

from agentstudy.rehearsal.policy import ScriptedReply

__all__ = ["encode_event", "error_body", "error_type_for", "message_json", "sse_events"]

_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
                500: "api_error", 529: "overloaded_error"}
_JSON_CHUNK = 16  # characters of tool input JSON per input_json_delta event


def error_type_for(status: int) -> str:
    """Return the Messages API error ``type`` for an HTTP ``status`` (``api_error`` if unknown)."""
    return _ERROR_TYPES.get(status, "api_error")


def error_body(status: int, message: str) -> dict[str, Any]:
    """Return the Messages API error JSON: ``{"type": "error", "error": {"type", "message"}}``."""
    return {"type": "error", "error": {"type": error_type_for(status), "message": message}}


def message_json(reply: ScriptedReply, model: str, message_id: str) -> dict[str, Any]:
    """Return the complete non-streaming Messages API response for ``reply``."""
    return {"id": message_id, "type": "message", "role": "assistant", "model": model,
            "content": [dict(block) for block in reply.content], "stop_reason": reply.stop_reason,
            "stop_sequence": None, "usage": dict(reply.usage)}


def sse_events(reply: ScriptedReply, model: str, message_id: str) -> list[tuple[str, dict[str, Any]]]:
    """Return the streaming form of ``reply`` as ordered ``(event name, data)`` pairs.

    Text arrives as one ``text_delta``; tool input JSON is cut into ``input_json_delta`` pieces
    whose concatenation is the compact JSON of the input. ``message_start`` carries the input
    usage with ``output_tokens`` 1; ``message_delta`` carries the final ``output_tokens``.
    """
    start_usage = dict(reply.usage, output_tokens=1)
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": {
            "id": message_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": start_usage}}),
    ]
    for index, block in enumerate(reply.content):
        if block.get("type") == "tool_use":
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            raw = json.dumps(block.get("input", {}), ensure_ascii=False, separators=(",", ":"))
            deltas = [{"type": "input_json_delta", "partial_json": raw[i:i + _JSON_CHUNK]}
                      for i in range(0, len(raw), _JSON_CHUNK)]
        else:
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": str(block.get("text", ""))}]
        events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": start}))
        events.extend(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
                      for d in deltas)
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
                                     "usage": {"output_tokens": reply.usage["output_tokens"]}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def encode_event(name: str, data: dict[str, Any]) -> bytes:
    """Encode one server-sent event as UTF-8 ``event: <name>\\ndata: <json>\\n\\n``."""
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False, separators=(',', ':'))}\n\n".encode()
