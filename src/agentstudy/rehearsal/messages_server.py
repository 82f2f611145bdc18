"""A scripted, zero-spend Messages API server on 127.0.0.1 for rehearsals and tests.

:class:`RehearsalServer` runs a small starlette app under uvicorn in a background thread. It
answers ``POST /v1/messages`` (the Claude Code CLI adds ``?beta=true``) with the reply of
:func:`agentstudy.rehearsal.policy.next_reply` — as Anthropic server-sent events when the body
says ``"stream": true``, else as one JSON message — so the real ``claude`` binary can run a whole
study against it for free. It listens on loopback only and keeps a small in-memory log of what
it received; it never stores header values, so no credential can leak through the log. A client
that goes away before its body arrived (a run stopped by a signal mid-request) gets no answer and
leaves no traceback.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import struct
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from agentstudy.protocol.fault_schedule import Fault, FaultSchedule
from agentstudy.rehearsal.policy import ScriptedReply, next_reply
from agentstudy.rehearsal.sse import encode_event, error_body, message_json, sse_events

__all__ = ["RehearsalServer", "RequestRecord"]

_HOST = "127.0.0.1"
CLIENT_GONE = 499
"""The status given (to nobody) when the client disconnected before its request body arrived."""


@dataclass(frozen=True)
class RequestRecord:
    """What the server noted about one request; never a header value or a body.

    ``path`` is the URL path without the query string; ``model`` / ``stream`` /
    ``message_count`` / ``tool_names`` come from the JSON body (None / False / 0 / () when it was
    missing or malformed); ``has_x_api_key`` and ``has_authorization`` only say whether those
    headers were present; ``status`` is the HTTP status the server answered with.
    """

    method: str
    path: str
    model: str | None
    stream: bool
    message_count: int
    tool_names: tuple[str, ...]
    has_x_api_key: bool
    has_authorization: bool
    status: int
    answered_after_ms: float = 0.0
    """Milliseconds from the request's arrival to its answer, by the server's monotonic clock (issue 19, item 5)."""
    number: int = 0
    """The request's arrival number (1-based) among the answered route's requests; 0 for other paths."""
    fault: str | None = None
    """The scheduled fault this request got (``429``, ``529``, ``reset``, ``slow``, ``sse-error``; issue 33)."""
    arrived_at: float = 0.0
    """When the request's body had arrived, in ``time.monotonic`` seconds (the burst check after a back-off)."""
    served_input_tokens: int = 0
    """The ``input_tokens`` the answer reported (0 for an error answer; issue 34: what a rehearsal served)."""
    served_output_tokens: int = 0
    """The ``output_tokens`` the answer reported (0 for an error answer)."""


class _GoneClientWrites(logging.Filter):
    """Drops asyncio's "socket.send() raised exception." warning: after 5 writes to a connection whose client
    went away (an agent stopped by a signal mid-stream) asyncio logs it once per write, on the operator's
    terminal, though the scripted server losing a killed client is expected and recorded elsewhere."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "socket.send() raised exception."


_ASYNCIO_FILTER = _GoneClientWrites()


class _Server(uvicorn.Server):
    """uvicorn server that signals when it has started (or given up)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().startup(sockets=sockets)
        finally:
            self.ready.set()


class RehearsalServer:
    """Context manager running the scripted Messages API on ``http://127.0.0.1:<port>``.

    ``port`` 0 (default) picks a free ephemeral port. ``fail_with_status`` (e.g. 500, 401, 529)
    makes every request to any path get that HTTP status with a Messages API error body.
    ``startup_timeout`` is in seconds; :meth:`start` raises RuntimeError if uvicorn is not
    serving by then. ``policy`` decides each reply from the request body (default: the careful
    agent of :func:`~agentstudy.rehearsal.policy.next_reply`; tests pass a scripted one; it may
    raise ValueError for a 400). ``latency_ms`` (default 0) delays every answer by that many
    milliseconds, so throughput can be measured in the regime of a real model (issue 19, item 5);
    each :class:`RequestRecord` notes ``answered_after_ms``. ``faults`` (issue 33) is a
    :class:`~agentstudy.protocol.fault_schedule.FaultSchedule` deciding, per request in arrival
    order, a 429 with ``retry-after``, a 529, another error status, a reset connection, a slow
    first byte or an SSE ``error`` event after ``message_start``; the log notes each request's
    ``number`` and ``fault``. Use as ``with RehearsalServer() as server: ... server.base_url``.

    Subclasses serve another wire format by overriding :attr:`route_path`, :attr:`thread_name`
    and :meth:`_answer` (``rehearsal.responses_server`` does, for Codex; issue 21).

    Raises:
        ValueError: ``fail_with_status`` is no HTTP error status, or ``latency_ms`` is negative.
    """

    route_path = "/v1/messages"
    """The one POST path answered."""
    thread_name = "rehearsal-messages-server"

    def __init__(self, port: int = 0, *, fail_with_status: int | None = None,
                 startup_timeout: float = 10.0,
                 policy: Callable[[Mapping[str, Any]], ScriptedReply] = next_reply, latency_ms: int = 0,
                 faults: FaultSchedule | None = None) -> None:
        if fail_with_status is not None and not 400 <= fail_with_status <= 599:
            raise ValueError(f"fail_with_status must be an HTTP error status, got {fail_with_status}")
        if latency_ms < 0:
            raise ValueError(f"latency_ms must be >= 0, got {latency_ms}")
        self.latency_ms = latency_ms
        self._port = port
        self._policy = policy
        self._faults = faults
        self._count = 0
        self._fail_with_status = fail_with_status
        self._startup_timeout = startup_timeout
        self._lock = threading.Lock()
        self._records: list[RequestRecord] = []
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self._bound_port: int | None = None
        self.app = Starlette(
            routes=[Route(self.route_path, self._messages, methods=["POST"])],
            exception_handlers={404: self._not_found, 405: self._not_found},
        )
        if fail_with_status is not None:
            self.app.add_middleware(_FailEverything, status=fail_with_status, log=self._log)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` (no trailing slash); RuntimeError before :meth:`start`."""
        if self._bound_port is None:
            raise RuntimeError("RehearsalServer is not started")
        return f"http://{_HOST}:{self._bound_port}"

    @property
    def agent_base_url(self) -> str:
        """The URL an agent is pointed at (here ``base_url``, Claude Code's ``ANTHROPIC_BASE_URL``)."""
        return self.base_url

    @property
    def requests(self) -> tuple[RequestRecord, ...]:
        """A snapshot of the request log, oldest first (safe to call from any thread)."""
        with self._lock:
            return tuple(self._records)

    def start(self) -> None:
        """Bind 127.0.0.1, start uvicorn in a daemon thread and wait until it serves."""
        if self._thread is not None:
            raise RuntimeError("RehearsalServer already started")
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((_HOST, self._port))
        sock.listen(128)
        self._socket = sock
        self._bound_port = int(sock.getsockname()[1])
        logging.getLogger("asyncio").addFilter(_ASYNCIO_FILTER)  # once: adding the same filter twice is a no-op
        config = uvicorn.Config(self.app, log_level="warning", lifespan="off", access_log=False,
                                timeout_graceful_shutdown=5)
        self._server = _Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]},
                                        name=self.thread_name, daemon=True)
        self._thread.start()
        if not self._server.ready.wait(self._startup_timeout) or not self._server.started:
            self.stop()
            raise RuntimeError("rehearsal Messages API server did not start")

    def stop(self) -> None:
        """Ask uvicorn to exit, wait for its thread and close the socket (idempotent)."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._socket is not None:
            self._socket.close()
        self._server, self._thread, self._socket = None, None, None

    def __enter__(self) -> RehearsalServer:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def _log(self, request: Request, body: Any, status: int, arrived: float | None = None,
             number: int = 0, fault: Fault | None = None, usage: Mapping[str, Any] | None = None) -> None:
        data = body if isinstance(body, dict) else {}
        tools = data.get("tools")
        record = RequestRecord(
            method=request.method,
            path=request.url.path,
            model=data["model"] if isinstance(data.get("model"), str) else None,
            stream=data.get("stream") is True,
            message_count=next((len(data[k]) for k in ("messages", "input") if isinstance(data.get(k), list)), 0),
            tool_names=tuple(t["name"] for t in (tools if isinstance(tools, list) else [])
                             if isinstance(t, dict) and isinstance(t.get("name"), str)),
            has_x_api_key="x-api-key" in request.headers,
            has_authorization="authorization" in request.headers,
            status=status,
            answered_after_ms=0.0 if arrived is None else (time.monotonic() - arrived) * 1000,
            number=number, fault=None if fault is None else fault.label,
            arrived_at=0.0 if arrived is None else arrived,
            served_input_tokens=int((usage or {}).get("input_tokens", 0)),
            served_output_tokens=int((usage or {}).get("output_tokens", 0)),
        )
        with self._lock:
            self._records.append(record)

    async def _not_found(self, request: Request, exc: Exception) -> Response:
        self._log(request, None, 404)
        message = f"Not found: {request.method} {request.url.path}"
        return JSONResponse(error_body(404, message), status_code=404)

    async def _messages(self, request: Request) -> Response:
        arrived = time.monotonic()
        try:
            body = self._request_view(request, await _read_json(request))
        except ClientDisconnect:
            return Response(status_code=CLIENT_GONE)
        if self.latency_ms:
            await asyncio.sleep(self.latency_ms / 1000)
        number, fault = self._next_fault(request, body)
        if fault is not None and fault.kind != "slow":
            return self._fault_answer(request, body, fault, arrived, number)
        if fault is not None:
            await asyncio.sleep(fault.delay_ms / 1000)
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            self._log(request, body, 400)
            return JSONResponse(error_body(400, "Request body must be a JSON object with a 'model' string."),
                                status_code=400)
        try:
            reply = self._policy(body)
        except ValueError as error:
            self._log(request, body, 400)
            return JSONResponse(error_body(400, str(error)), status_code=400)
        self._log(request, body, 200, arrived, number, fault, reply.usage)
        return self._answer(body, reply)

    def _request_view(self, request: Request, body: Any) -> Any:
        """The decoded body as the policy and the log read it (here the body itself; a subclass whose wire
        names the model in the URL or shapes messages otherwise returns its Messages-shaped view)."""
        return body

    def _next_fault(self, request: Request, body: Any) -> tuple[int, Fault | None]:
        """This request's arrival number and its scheduled fault (``None`` without a schedule)."""
        data = body if isinstance(body, dict) else {}
        messages: list[Any] = next((data[k] for k in ("messages", "input") if isinstance(data.get(k), list)), [])
        session = request.headers.get("x-claude-code-session-id")
        retry = request.headers.get("x-stainless-retry-count", "0") not in ("", "0")
        with self._lock:
            self._count += 1
            number = self._count
            fault = (None if self._faults is None
                     else self._faults.fault_for(number, len(messages), session, retry))
        return number, fault

    def _fault_answer(self, request: Request, body: Any, fault: Fault, arrived: float, number: int) -> Response:
        """The answer of a scheduled fault: an error status (with ``retry-after`` when scheduled), a connection
        reset, or an HTTP 200 stream broken by an ``error`` event."""
        if fault.kind == "reset":
            self._log(request, body, 0, arrived, number, fault)
            _reset_connection(request)
            return Response(status_code=CLIENT_GONE)
        streamed = isinstance(body, dict) and body.get("stream") is True
        if fault.kind == "sse-error" and streamed and isinstance(body.get("model"), str):
            self._log(request, body, 200, arrived, number, fault)
            return self._broken_stream(body)
        status = fault.status or 529
        headers = {} if fault.retry_after_s is None else {"retry-after": str(fault.retry_after_s)}
        self._log(request, body, status, arrived, number, fault)
        return JSONResponse(error_body(status, f"Scripted rehearsal fault (HTTP {status})"), status_code=status,
                            headers=headers)

    def _broken_stream(self, body: dict[str, Any]) -> Response:
        """An HTTP 200 event stream: ``message_start``, then an ``error`` event of type ``overloaded_error``."""
        message_id = f"msg_rehearsal_{uuid.uuid4().hex[:24]}"
        start = sse_events(ScriptedReply(content=[], stop_reason="end_turn",
                                         usage={"input_tokens": 1, "output_tokens": 1}), body["model"], message_id)[0]

        async def stream() -> AsyncIterator[bytes]:
            yield encode_event(*start)
            yield encode_event("error", error_body(529, "Overloaded"))

        return StreamingResponse(stream(), media_type="text/event-stream", headers={"cache-control": "no-cache"})

    def _answer(self, body: dict[str, Any], reply: ScriptedReply) -> Response:
        """The HTTP answer carrying ``reply`` to the validated request ``body``."""
        model, message_id = reply.model or body["model"], f"msg_rehearsal_{uuid.uuid4().hex[:24]}"
        headers = {"request-id": f"req_rehearsal_{uuid.uuid4().hex[:24]}"}
        if body.get("stream") is not True:
            return JSONResponse(message_json(reply, model, message_id), headers=headers)

        async def stream() -> AsyncIterator[bytes]:
            for name, data in sse_events(reply, model, message_id):
                yield encode_event(name, data)

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={**headers, "cache-control": "no-cache"})


def _reset_connection(request: Request) -> None:
    """Abort the request's TCP connection with a reset (SO_LINGER 0), so the client sees no answer byte."""
    cycle = getattr(request.receive, "__self__", None)
    transport = getattr(cycle, "transport", None)
    if transport is None:
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()


async def _read_json(request: Request) -> Any:
    """Return the decoded JSON body, or None when it is not valid UTF-8 JSON.

    Raises:
        ClientDisconnect: the client went away before the whole body arrived.
    """
    try:
        return json.loads(await request.body())
    except (ValueError, UnicodeDecodeError):
        return None


class _FailEverything:
    """ASGI middleware answering every HTTP request with one scripted error status."""

    def __init__(self, app: ASGIApp, *, status: int, log: Callable[[Request, Any, int], None]) -> None:
        self._app = app
        self._status = status
        self._log = log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        request = Request(scope, receive)
        try:
            body = await _read_json(request)
        except ClientDisconnect:
            await Response(status_code=CLIENT_GONE)(scope, receive, send)
            return
        self._log(request, body, self._status)
        message = f"Scripted rehearsal failure (HTTP {self._status})"
        await JSONResponse(error_body(self._status, message), status_code=self._status)(scope, receive, send)
