"""The starlette application and server of ``agentstudy view`` (issue 43 item 1).

Served by uvicorn on a socket bound to 127.0.0.1 only (a random port unless one is given). Every request
must carry the view's random token (``?token=``) and come from 127.0.0.1, else 403. The study is read again
only when a ledger, its journal or a companion changed (size or modification time), so a page polled every
half second costs a few ``stat`` calls. ``/state?after=N`` waits up to a second for the settled count to
differ from N (so the page is at most about a second and a half behind a running ledger).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import signal
import socket
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from agentstudy.io.ledger_store import journal_path
from agentstudy.io.transcripts import TranscriptError, open_transcript
from agentstudy.report.observed import ObservedAttempt, ObservedStudy, attempt_steps, load_observed
from agentstudy.web.first_screen import linked_report
from agentstudy.web.pair_page import Side, pair_page, sides_for
from agentstudy.web.study_page import ViewOptions, live_state, study_page

LOOPBACK = "127.0.0.1"
WAIT_S = 1.0
STEP_S = 0.1
STDERR_FIELDS = ("serverStderrFile", "serverStderrSha256")
"""Where an observation names the server's kept stderr (a file in the private transcripts directory)."""


@dataclass
class StudySource:
    """The study as last read, read again when one of its files changed; thread-safe.

    The report's first screen (``first_screen``: ``ObservedStudy -> str``, the report's own statistics, seconds
    on a large ledger) is computed in a background thread after each new reading, so a page never waits for
    it: pages show the newest one computed, with the number of attempts it covers.
    """

    ledgers: Sequence[Path]
    adjudications: Sequence[Path] = ()
    first_screen: Any = None
    partial_chain: bool = False
    _stamp: tuple[Any, ...] | None = None
    _study: ObservedStudy | None = None
    _screen: tuple[int, str] | None = None
    _wanted: ObservedStudy | None = None
    _worker: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _files(self) -> list[Path]:
        return [*self.ledgers, *(journal_path(p) for p in self.ledgers), *self.adjudications]

    def _stat(self) -> tuple[Any, ...]:
        stamps: list[Any] = []
        for path in self._files():
            try:
                info = path.stat()
                stamps.append((info.st_size, info.st_mtime_ns))
            except OSError:
                stamps.append(None)
        return tuple(stamps)

    def current(self) -> ObservedStudy:
        """The study, read again if a file changed (the first screen is then recomputed in the background).

        Raises:
            ReportInputError: the ledgers cannot be read (the last good reading is kept if there was one).
        """
        with self._lock:
            stamp = self._stat()
            if self._study is not None and stamp == self._stamp:
                return self._study
            try:
                study = load_observed(self.ledgers, self.adjudications, allow_unverified=True,
                                      partial_chain=self.partial_chain)
            except Exception:
                if self._study is None:
                    raise
                return self._study  # a ledger between two writes: the last good reading
            self._study, self._stamp, self._wanted = study, stamp, study
            if self.first_screen is not None and (self._worker is None or not self._worker.is_alive()):
                self._worker = threading.Thread(target=self._compute, name="first-screen", daemon=True)
                self._worker.start()
            return study

    def _compute(self) -> None:
        while True:
            with self._lock:
                study, self._wanted = self._wanted, None
            if study is None:
                return
            try:
                html_text = self.first_screen(study)
            except Exception as error:  # a page must still be served; it says why
                html_text = f"<p>The report's first screen cannot be drawn: {type(error).__name__}</p>"
            with self._lock:
                self._screen = (len(study.study.attempts), html_text)

    def screen(self, wait_s: float = 0.0) -> str:
        """The newest first screen computed (waiting up to ``wait_s`` for one), with the attempts it covers."""
        worker = self._worker
        if self._screen is None and worker is not None and wait_s > 0:
            worker.join(wait_s)
        with self._lock:
            if self._screen is None:
                return "<p>The report's first screen is being computed; reload in a moment.</p>"
            settled, text = self._screen
            current = len(self._study.study.attempts) if self._study is not None else settled
        note = "" if settled == current else f"<p><i>As of {settled} settled attempts (being updated).</i></p>"
        return note + text


def _stderr(item: ObservedAttempt) -> str | None:
    name, sha = (item.observation.get(key) for key in STDERR_FIELDS)
    if not isinstance(name, str):
        return None
    try:
        return open_transcript(item.run.path, name, sha if isinstance(sha, str) else None).decode("utf-8", "replace")
    except TranscriptError as error:
        return f"(the server's stderr cannot be shown: {error})"


def build_app(source: StudySource, options: ViewOptions) -> Starlette:
    """The application: ``/`` the study page, ``/report`` the whole report, ``/state`` its live state, ``/pair``
    a pair, ``/text`` a step's whole text; every route refuses (403) a request without the token or from another
    address."""

    def allowed(request: Request) -> bool:
        client = request.client.host if request.client else ""
        return client == LOOPBACK and secrets.compare_digest(request.query_params.get("token", ""), options.token)

    async def home(request: Request) -> Response:
        study = await asyncio.to_thread(source.current)
        return HTMLResponse(study_page(study, options, source.screen()))

    async def state(request: Request) -> Response:
        after = request.query_params.get("after")
        study = await asyncio.to_thread(source.current)
        waited = 0.0
        while after is not None and str(len(study.study.attempts)) == after and waited < WAIT_S:
            await asyncio.sleep(STEP_S)
            waited += STEP_S
            study = await asyncio.to_thread(source.current)
            if study.last_header.get("status") != "running":
                break
        return JSONResponse(live_state(study, options))

    def pair_of(request: Request) -> tuple[ObservedStudy, str, int, str, list[Side]] | None:
        query = request.query_params
        task, agent, repetition = query.get("task", ""), query.get("agent", ""), query.get("repetition", "")
        if not repetition.isdigit():
            return None
        study = source.current()
        sides = sides_for(study, options, task, int(repetition), agent, attempt_steps, _stderr)
        if all(side.item is None for side in sides):
            return None
        return study, task, int(repetition), agent, sides

    async def pair(request: Request) -> Response:
        found = await asyncio.to_thread(pair_of, request)
        if found is None:
            return PlainTextResponse("no such pair", status_code=404)
        study, task, repetition, agent, sides = found
        return HTMLResponse(pair_page(study, options, task, repetition, agent, sides))

    async def text(request: Request) -> Response:
        found = await asyncio.to_thread(pair_of, request)
        side, step = request.query_params.get("side", ""), request.query_params.get("step", "")
        if found is None or side not in ("0", "1") or not step.isdigit():
            return PlainTextResponse("no such step", status_code=404)
        steps = found[4][int(side)].steps or ()
        if int(step) >= len(steps):
            return PlainTextResponse("no such step", status_code=404)
        chosen = steps[int(step)]
        whole = chosen.text if chosen.kind != "call" else json.dumps(dict(chosen.arguments), ensure_ascii=False,
                                                                      indent=1, default=str)
        return PlainTextResponse(whole)

    def guarded(endpoint: Any) -> Any:
        async def checked(request: Request) -> Response:
            if not allowed(request):
                return PlainTextResponse("forbidden: this view needs its token", status_code=403)
            response: Response = await endpoint(request)
            response.headers["Cache-Control"] = "no-store"
            response.headers["Referrer-Policy"] = "no-referrer"
            return response

        return checked

    async def refused(request: Request) -> Response:
        return PlainTextResponse("forbidden: this view needs its token", status_code=403)

    async def report(request: Request) -> Response:
        if options.blind:  # the report names the arms
            return PlainTextResponse("no report in a blind view", status_code=404)
        study = await asyncio.to_thread(source.current)
        return HTMLResponse(await asyncio.to_thread(linked_report, study, options))

    routes = [Route("/", guarded(home)), Route("/report", guarded(report)), Route("/state", guarded(state)),
              Route("/pair", guarded(pair)),
              Route("/text", guarded(text)), Route("/{rest:path}", refused)]
    app = Starlette(routes=routes)
    return app


def bind_loopback(port: int) -> socket.socket:
    """A listening TCP socket on 127.0.0.1:``port`` (0: a free port the kernel picks).

    Raises:
        OSError: the port is taken or cannot be bound.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((LOOPBACK, port))
        sock.listen(64)
    except OSError:
        sock.close()
        raise
    return sock


def serve(app: Starlette, sock: socket.socket) -> None:
    """Serve ``app`` on ``sock`` until SIGINT or SIGTERM, then stop gracefully and return (the view's normal end:
    the command exits 0). Must run in the main thread (it installs the two signal handlers)."""
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:  # ours below: a stop is the normal end, not re-raised
            yield

    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = Server(config)

    def stop(signum: int, frame: Any) -> None:
        server.should_exit = True

    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.run(sockets=[sock])
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        sock.close()


__all__ = ["LOOPBACK", "StudySource", "bind_loopback", "build_app", "serve"]
