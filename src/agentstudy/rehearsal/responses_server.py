"""A scripted, zero-spend OpenAI Responses API server on 127.0.0.1 for Codex rehearsals (issue 21).

:class:`ResponsesRehearsalServer` is the Messages rehearsal server
(:class:`~agentstudy.rehearsal.messages_server.RehearsalServer`: loopback only, request log
without header values, optional latency, scripted failure statuses) answering
``POST /v1/responses`` instead, always as a server-sent event stream (Codex only streams). Each
reply is the careful agent's (:func:`agentstudy.rehearsal.policy.next_reply`) for the request
as :func:`~agentstudy.rehearsal.responses_wire.messages_view` sees it, so the real ``codex``
binary reads the repository by shell in the control arm and by the MCP server's tools in the
treatment arm. Codex reaches it through a custom ``[model_providers.rehearsal]`` entry
(``base_url = <base_url>/v1``, ``wire_api = "responses"``) and the dummy key
:data:`REHEARSAL_KEY` in the variable :data:`REHEARSAL_KEY_ENV`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from starlette.responses import Response, StreamingResponse

from agentstudy.protocol.fault_schedule import FaultSchedule
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.rehearsal.policy import ScriptedReply, next_reply
from agentstudy.rehearsal.responses_wire import messages_view, response_events

__all__ = ["REHEARSAL_KEY", "REHEARSAL_KEY_ENV", "ResponsesRehearsalServer", "responses_policy"]

REHEARSAL_KEY_ENV = "AGENTSTUDY_REHEARSAL_KEY"
"""The variable the rehearsal provider's ``env_key`` names (never ``OPENAI_API_KEY``)."""
REHEARSAL_KEY = "rehearsal-dummy-key"


def responses_policy(body: Mapping[str, Any]) -> ScriptedReply:
    """The careful agent's reply to a Responses request ``body``.

    Raises:
        ValueError: ``body["input"]`` is not a non-empty list (answered with HTTP 400).
    """
    return next_reply(messages_view(body))


def _encode(event: Mapping[str, Any]) -> bytes:
    data = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
    return f"event: {event['type']}\ndata: {data}\n\n".encode()


class ResponsesRehearsalServer(RehearsalServer):
    """Context manager running the scripted Responses API on ``http://127.0.0.1:<port>``.

    Same arguments as :class:`~agentstudy.rehearsal.messages_server.RehearsalServer` (``port``,
    ``fail_with_status``, ``startup_timeout`` seconds, ``policy``, ``latency_ms``, ``faults``); the default
    policy is :func:`responses_policy`. ``provider_base_url`` is what a Codex
    ``[model_providers]`` entry's ``base_url`` takes.

    Raises:
        ValueError: ``fail_with_status`` is no HTTP error status, or ``latency_ms`` is negative.
    """

    route_path = "/v1/responses"
    thread_name = "rehearsal-responses-server"

    def __init__(self, port: int = 0, *, fail_with_status: int | None = None, startup_timeout: float = 10.0,
                 policy: Callable[[Mapping[str, Any]], ScriptedReply] = responses_policy,
                 latency_ms: int = 0, faults: FaultSchedule | None = None) -> None:
        super().__init__(port, fail_with_status=fail_with_status, startup_timeout=startup_timeout,
                         policy=policy, latency_ms=latency_ms, faults=faults)

    def __enter__(self) -> ResponsesRehearsalServer:
        self.start()
        return self

    @property
    def provider_base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``; RuntimeError before :meth:`start`."""
        return f"{self.base_url}/v1"

    @property
    def agent_base_url(self) -> str:
        """``provider_base_url`` (what Codex's ``[model_providers]`` entry takes)."""
        return self.provider_base_url

    def _answer(self, body: dict[str, Any], reply: ScriptedReply) -> Response:
        events = response_events(reply, body, f"resp_rehearsal_{uuid.uuid4().hex[:24]}")

        async def stream() -> AsyncIterator[bytes]:
            for event in events:
                yield _encode(event)

        return StreamingResponse(stream(), media_type="text/event-stream", headers={"cache-control": "no-cache"})

    def _broken_stream(self, body: dict[str, Any]) -> Response:
        """An HTTP 200 event stream: ``response.created``, then ``response.failed`` with ``server_is_overloaded``."""
        response_id = f"resp_rehearsal_{uuid.uuid4().hex[:24]}"
        failed = {"id": response_id, "status": "failed",
                  "error": {"code": "server_is_overloaded", "message": "Overloaded"}}

        async def stream() -> AsyncIterator[bytes]:
            yield _encode({"type": "response.created", "response": {"id": response_id}})
            yield _encode({"type": "response.failed", "response": failed})

        return StreamingResponse(stream(), media_type="text/event-stream", headers={"cache-control": "no-cache"})
