"""A scripted, zero-spend Gemini API server on 127.0.0.1 for Gemini CLI rehearsals.

:class:`GeminiRehearsalServer` is the Messages rehearsal server
(:class:`~agentstudy.rehearsal.messages_server.RehearsalServer`: loopback only, request log without header
values, optional latency, the fault schedules: 429 with ``retry-after``, 503/529, connection resets, slow
first bytes, a stream broken mid-way) answering ``POST /v1beta/models/<model>:streamGenerateContent``
(server-sent events, ``?alt=sse``) and ``:generateContent`` (one JSON object). Each reply is the careful
agent's (:func:`agentstudy.rehearsal.policy.next_reply`) for the request as
:func:`~agentstudy.rehearsal.gemini_wire.messages_view` sees it, so the real ``gemini`` binary reads the
repository with its read-only built-ins in the control arm and with the MCP server's tools in the treatment
arm. The CLI reaches it through ``GOOGLE_GEMINI_BASE_URL`` and the dummy key :data:`REHEARSAL_KEY` in
``GEMINI_API_KEY``. :attr:`GeminiRehearsalServer.offered_tools` keeps, per answered request, the function
names the CLI offered the model (the fidelity check's evidence in rehearsal).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from agentstudy.protocol.fault_schedule import FaultSchedule
from agentstudy.rehearsal.gemini_wire import encode_chunk, gemini_chunks, gemini_tool_names, messages_view
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.rehearsal.policy import ScriptedReply, next_reply

__all__ = ["REHEARSAL_KEY", "GeminiRehearsalServer"]

REHEARSAL_KEY = "rehearsal-dummy-key"
"""The dummy ``GEMINI_API_KEY`` of a rehearsal (never a real key)."""
_ORIGINAL = "_gemini"


class GeminiRehearsalServer(RehearsalServer):
    """Context manager running the scripted Gemini API on ``http://127.0.0.1:<port>``.

    Same arguments as :class:`~agentstudy.rehearsal.messages_server.RehearsalServer` (``port``,
    ``fail_with_status``, ``startup_timeout`` seconds, ``policy`` over the Messages-shaped view,
    ``latency_ms``, ``faults``). ``agent_base_url`` is what ``GOOGLE_GEMINI_BASE_URL`` takes.

    Raises:
        ValueError: ``fail_with_status`` is no HTTP error status, or ``latency_ms`` is negative.
    """

    route_path = "/v1beta/models/{target}"
    thread_name = "rehearsal-gemini-server"

    def __init__(self, port: int = 0, *, fail_with_status: int | None = None, startup_timeout: float = 10.0,
                 policy: Callable[[Mapping[str, Any]], ScriptedReply] = next_reply,
                 latency_ms: int = 0, faults: FaultSchedule | None = None) -> None:
        super().__init__(port, fail_with_status=fail_with_status, startup_timeout=startup_timeout,
                         policy=policy, latency_ms=latency_ms, faults=faults)
        self.offered_tools: list[tuple[str, ...]] = []
        """Per request the policy answered, in arrival order: the function names the CLI offered."""

    def __enter__(self) -> GeminiRehearsalServer:
        self.start()
        return self

    def _request_view(self, request: Request, body: Any) -> Any:
        """The Messages-shaped view of a Gemini request (the model from the URL's ``<model>:<method>``); a
        body that is no object or has no ``contents`` list is passed on as ``{}`` (answered with HTTP 400)."""
        model, _, method = str(request.path_params.get("target", "")).partition(":")
        if not isinstance(body, dict) or method not in ("generateContent", "streamGenerateContent"):
            return {}
        try:
            view = messages_view(body, model)
        except ValueError:
            return {"model": model}
        with self._lock:
            self.offered_tools.append(gemini_tool_names(body))
        view[_ORIGINAL] = {"tools": body.get("tools"), "stream": method == "streamGenerateContent"}
        return view

    def _answer(self, body: dict[str, Any], reply: ScriptedReply) -> Response:
        original = body.get(_ORIGINAL, {})
        chunks = gemini_chunks(reply, original, str(body["model"]))
        headers = {"x-request-id": f"req_rehearsal_{uuid.uuid4().hex[:24]}"}
        if not original.get("stream"):
            parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
            merged = {**chunks[-1], "candidates": [{**chunks[-1]["candidates"][0],
                                                    "content": {"role": "model", "parts": parts}}]}
            return JSONResponse(merged, headers=headers)

        async def stream() -> AsyncIterator[bytes]:
            for chunk in chunks:
                yield encode_chunk(chunk)

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={**headers, "cache-control": "no-cache"})

    def _broken_stream(self, body: dict[str, Any]) -> Response:
        """An HTTP 200 event stream: one text chunk, then an ``error`` object with status ``UNAVAILABLE``."""
        first = {"candidates": [{"content": {"role": "model", "parts": [{"text": "…"}]}, "index": 0}]}
        failed = {"error": {"code": 503, "message": "Scripted rehearsal fault: overloaded", "status": "UNAVAILABLE"}}

        async def stream() -> AsyncIterator[bytes]:
            yield encode_chunk(first)
            yield encode_chunk(failed)

        return StreamingResponse(stream(), media_type="text/event-stream", headers={"cache-control": "no-cache"})
