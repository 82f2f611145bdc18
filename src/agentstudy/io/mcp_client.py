"""Talk to the MCP server under study through the official ``mcp`` client SDK (stdio).

Used before any reservation: list the server's live tools (``tools/list``) with their safety
annotations, let the caller vet them, then call the freshness probe (``tools/call``), so that
the deny list comes from what the server really exposes, a tool that is not read-only is
refused before anything is called, and a broken server refuses the run with nothing charged.
The server runs in a private environment (``io.mcp_child``); what it said explains a failure:
its stderr tail, a protocol error's message, or a failed probe's ``isError`` text, always
through ``io.mcp_child.server_text`` (one line, at most 2 KiB, secrets redacted; issue 18).

The probe runs in a process of its own (``io.mcp_probe_child``, issue 42): the SDK's import, about a second of
CPU, stays out of the run's process, whose first ledger byte comes that much sooner. The server it starts is the
same contained command as before; the listing comes back to be vetted here, and the server's words are made
safe here, where the secrets are.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentstudy.io.environment import allowlisted_environment
from agentstudy.io.mcp_child import McpChild, server_text, stderr_tail
from agentstudy.io.mcp_sdk import leaf_error, load_mcp_sdk
from agentstudy.protocol.read_only import ToolHints
from agentstudy.protocol.server_words import with_cause

__all__ = [
    "MCP_PROBE_TIMEOUT_S", "PROBE_IDLE_S", "ListingCheck", "McpListing", "McpProbe", "McpProbeError", "ProbeProcesses",
    "failure_text", "failure_words", "leaf_error", "load_mcp_sdk", "probe_mcp_server", "process_probe_processes",
]

MCP_PROBE_TIMEOUT_S = 30.0
"""Seconds the probe (start, list, call) may take in its process before it is refused."""


class McpProbeError(RuntimeError):
    """The MCP server could not be started, listed or probed."""


@dataclass(frozen=True)
class McpListing:
    """The live ``tools/list``: ``tools`` (names as listed, e.g. ``doc.search``) and each one's ``hints``."""

    tools: tuple[str, ...]
    hints: Mapping[str, ToolHints]


@dataclass(frozen=True)
class McpProbe:
    """What the server showed: its tool names, their annotations, and whether the probe call succeeded.

    Attributes:
        tools: the listed names, in the server's order.
        hints: ``{name: ToolHints(readOnlyHint, destructiveHint)}`` for every listed tool.
        probe_ok: ``False`` when the probe answered ``isError``; ``True`` also when no probe was asked.
        probe_error: the failed probe's own text (``server_text``: one line, bounded, secrets
            redacted); ``""`` when it succeeded.
        annotations: every listed tool's annotations as sent, camelCase keys
            (``{"readOnlyHint": True, "title": "…"}``; ``{}`` when none).
        listing_sha256: SHA-256 of the whole ``tools/list`` as the client saw it (every tool's name, description,
            input schema and annotations; ``protocol.treatment.tool_set_sha256``; issue 44); ``""`` when unknown.
        descriptions: every listed tool's description as the client saw it (issue 44).
        server_version: ``serverInfo.version`` of the server's ``initialize`` answer (issue 44); ``None`` when
            it sent none.
    """

    tools: tuple[str, ...]
    hints: Mapping[str, ToolHints]
    probe_ok: bool
    probe_error: str = ""
    annotations: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    listing_sha256: str = ""
    descriptions: Mapping[str, str] = field(default_factory=dict)
    server_version: str | None = None


ListingCheck = Callable[[McpListing], object]
"""Vets a listing before the probe is called; raises to refuse it."""


def _server_name(command: str, args: Sequence[str]) -> str:
    """The server's own command: the one after bwrap's ``--`` when it runs contained."""
    return args[list(args).index("--") + 1] if Path(command).name == "bwrap" and "--" in args else command


def failure_text(raised: BaseException, child: McpChild) -> str:
    """Why a server could not be started or probed, safe to show: the first real error's class and
    message, then the server's last stderr output when it wrote any (both through ``server_text``:
    one line, bounded, secrets redacted; issue 18 item 5)."""
    error = leaf_error(raised)
    return failure_words(error.__class__.__name__, str(error), child)


def failure_words(kind: str, message: str, child: McpChild) -> str:
    """:func:`failure_text` of an error known by its class name ``kind`` and raw ``message`` (the probe's
    process reports them so)."""
    said = server_text(stderr_tail(child.stderr_path), child.secrets)
    own = server_text(message, child.secrets, limit=500)
    text = kind + (f": {own}" if own else "") + (f" (server stderr: {said})" if said else "")
    return with_cause(text, f"{own}\n{said}")


PROBE_MODULE = "agentstudy.io.mcp_probe_child"
"""The probe's own process (``python -I -m``; :mod:`agentstudy.io.mcp_probe_child`)."""
PROBE_GRACE_S = 30.0
"""Seconds past ``MCP_PROBE_TIMEOUT_S`` the probe's process is given before it is killed."""


def _hints_of(raw: Mapping[str, Any]) -> dict[str, ToolHints]:
    return {name: ToolHints(*values) for name, values in raw.items()}


def _probe_from(raw: Mapping[str, Any], secrets: Sequence[str]) -> McpProbe:
    """The :class:`McpProbe` of the probe process's answer; the server's own text made safe here."""
    return McpProbe(tuple(raw["tools"]), _hints_of(raw["hints"]), bool(raw["probeOk"]),
                    server_text(raw["probeError"], secrets) if raw["probeError"] else "",
                    {name: dict(value) for name, value in raw["annotations"].items()}, raw["listingSha256"],
                    dict(raw["descriptions"]), raw["serverVersion"])


class _ProbeProcess:
    """One probe process (``io.mcp_probe_child``) and the file its own stderr goes to."""

    def __init__(self, own_env: Mapping[str, str]) -> None:
        self.own_env = dict(own_env)
        self.idle_timer: threading.Timer | None = None
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 -- kept open with the process, closed by close()
        try:
            self.process = subprocess.Popen([sys.executable, "-I", "-m", PROBE_MODULE], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=self.stderr, env=self.own_env, cwd="/",
                                            text=True, encoding="utf-8")
        except BaseException:
            self.stderr.close()
            raise

    def last_words(self) -> str:
        """The last line the process wrote on its own stderr ("" when none)."""
        self.stderr.seek(0)
        return (self.stderr.read().decode("utf-8", "replace").strip().splitlines() or [""])[-1]

    def stop_idle_timer(self) -> None:
        """Cancel the timer that would end this process once idle (nothing when none runs)."""
        if self.idle_timer is not None:
            self.idle_timer.cancel()
            self.idle_timer = None

    def close(self, kill: bool = False) -> None:
        """End the process (its stdin closed: it ends; ``kill``: at once) and reap it."""
        self.stop_idle_timer()
        if kill:
            self.process.kill()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()
        try:
            self.process.wait(timeout=PROBE_GRACE_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.stderr.close()


def _own_environment() -> dict[str, str]:
    """The probe process's own environment: ours allowlisted (no key, token or credential), a HOME that does not
    exist; the server it starts gets its own complete environment with each request."""
    return allowlisted_environment(os.environ, home="/nonexistent", tmpdir=tempfile.gettempdir())


class ProbeProcesses:
    """A set of probe processes: a probe takes an idle one (started with the same environment of its own) or starts
    one, and gives it back after a whole answer, so probes in turn import the SDK once (at most one process per
    probe running at once). Use as a context manager: leaving it ends every process.

    Args:
        idle_s: when set, an idle process ends after ``idle_s`` seconds unused (the process-wide set of
            :func:`process_probe_processes`); ``None``: idle processes live until the set is left.
    """

    def __init__(self, idle_s: float | None = None) -> None:
        self._lock = threading.Lock()
        self._idle: list[_ProbeProcess] = []
        self._closed = False
        self._idle_s = idle_s

    def take(self) -> _ProbeProcess:
        """An idle probe process of our current environment, or a new one.

        Raises:
            OSError: a new process could not start.
        """
        own_env = _own_environment()
        with self._lock:
            dead = [process for process in self._idle if process.process.poll() is not None]
            found = next((process for process in self._idle if process not in dead and process.own_env == own_env),
                         None)
            self._idle = [process for process in self._idle if process not in dead and process is not found]
        for process in dead:  # ended meanwhile (a signal to its process group): reaped, never reused
            process.close()
        if found is None:
            return _ProbeProcess(own_env)
        found.stop_idle_timer()
        return found

    def give(self, process: _ProbeProcess) -> None:
        """Keep ``process`` for the next probe (ended instead once the set is closed)."""
        with self._lock:
            if not self._closed:
                self._idle.append(process)
                if self._idle_s is not None:
                    process.idle_timer = threading.Timer(self._idle_s, self._expire, (process,))
                    process.idle_timer.daemon = True
                    process.idle_timer.start()
                return
        process.close()

    def _expire(self, process: _ProbeProcess) -> None:
        """End ``process`` if it is still idle (its idle time ran out)."""
        with self._lock:
            if process not in self._idle:
                return
            self._idle.remove(process)
        process.close()

    def end_idle(self) -> None:
        """End every idle process now; the set stays open (a later probe starts a new one)."""
        self._end_idle(closing=False)

    def close(self) -> None:
        """End every idle process; a process given back later is ended at once."""
        self._end_idle(closing=True)

    def _end_idle(self, closing: bool) -> None:
        with self._lock:
            self._closed = self._closed or closing
            idle, self._idle = self._idle, []
        for process in idle:
            process.close()

    def __enter__(self) -> ProbeProcesses:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


PROBE_IDLE_S = 30.0
"""Seconds an idle probe process of :func:`process_probe_processes` is kept for a later preflight of the process."""

_PROCESS_WIDE: list[ProbeProcesses] = []
_PROCESS_WIDE_LOCK = threading.Lock()


def process_probe_processes() -> ProbeProcesses:
    """This process's probe processes, shared by all its preflights (issue 42 item 7): a process that runs several
    studies (a host of in-process commands, a continuation chain) imports the SDK in one probe process, not one per
    preflight. An idle one ends after ``PROBE_IDLE_S`` seconds or when this interpreter exits."""
    with _PROCESS_WIDE_LOCK:
        if not _PROCESS_WIDE:
            shared = ProbeProcesses(idle_s=PROBE_IDLE_S)
            atexit.register(shared.close)
            _PROCESS_WIDE.append(shared)
        return _PROCESS_WIDE[0]


def _exchange(process: subprocess.Popen[str], request: Mapping[str, Any], check: ListingCheck | None,
              ) -> tuple[dict[str, Any], BaseException | None]:
    """Send ``request``, answer the listing with ``check``'s verdict, return the last line and what ``check`` raised.

    Raises:
        RuntimeError: the probe process ended without an answer.
    """
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(request) + "\n")
    process.stdin.flush()
    refused: BaseException | None = None
    while True:
        line = process.stdout.readline()
        if not line:
            raise RuntimeError("the probe process ended without an answer")
        message: dict[str, Any] = json.loads(line)
        if "listing" not in message:
            return message, refused
        listing = message["listing"]
        try:
            if check is not None:
                check(McpListing(tuple(listing["tools"]), _hints_of(listing["hints"])))
        except Exception as error:  # re-raised unchanged once the server has stopped
            refused = error
        process.stdin.write(json.dumps({"go": refused is None}) + "\n")
        process.stdin.flush()


def probe_mcp_server(
    command: str,
    args: Sequence[str],
    child: McpChild,
    probe_tool: str | None = None,
    probe_arguments: Mapping[str, Any] | None = None,
    check: ListingCheck | None = None,
    cwd: Path | None = None,
    processes: ProbeProcesses | None = None,
) -> McpProbe:
    """Start ``command args…`` over stdio, list its tools, vet them with ``check``, then call ``probe_tool``.

    The server runs with exactly ``child.env`` (an allowlisted environment with a private
    ``HOME``/``TMPDIR``, ``io.mcp_child``) in ``cwd``; its stderr goes to ``child.stderr_path``.
    ``command`` is usually the bubblewrap command line of ``io.mcp_sandbox.contained_server``.

    Args:
        check: called with the listing after ``tools/list``; whatever it raises is re-raised
            unchanged after the server stopped, and the probe is never called.
        processes: the preflight's probe processes to take one from and give it back to; without it a probe
            process is started for this probe alone and ended before this returns.

    Raises:
        McpProbeError: on any start, protocol or timeout failure (one line: the error's own
            message, then the server's last stderr output when it wrote any, both through
            ``server_text``).
        Exception: whatever ``check`` raised.
    """
    request = {"command": command, "args": list(args), "env": child.env, "cwd": None if cwd is None else str(cwd),
               "stderrPath": str(child.stderr_path), "probeTool": probe_tool,
               "probeArguments": dict(probe_arguments or {}), "check": check is not None,
               "timeoutS": MCP_PROBE_TIMEOUT_S}
    with contextlib.ExitStack() as stack:
        pool = processes if processes is not None else stack.enter_context(ProbeProcesses())
        try:
            worker = pool.take()
        except OSError as error:
            raise McpProbeError(f"MCP server {_server_name(command, args)} could not be probed: the probe process "
                                f"could not start: {error.strerror or error}") from None
        timer = threading.Timer(MCP_PROBE_TIMEOUT_S + PROBE_GRACE_S, worker.process.kill)
        timer.start()
        try:
            outcome, refused = _exchange(worker.process, request, check)
        except (OSError, ValueError, RuntimeError) as error:
            timer.cancel()
            said = worker.last_words()
            worker.close(kill=True)
            outcome, refused = {"error": {"kind": type(error).__name__, "message": f"{error} {said}".strip()}}, None
        except BaseException:
            timer.cancel()
            worker.close(kill=True)
            raise
        else:
            timer.cancel()
            pool.give(worker)
    if refused is not None:
        raise refused
    if "error" in outcome:
        raise McpProbeError(f"MCP server {_server_name(command, args)} could not be probed: "
                            f"{failure_words(outcome['error']['kind'], outcome['error']['message'], child)}")
    if "probe" not in outcome:
        raise McpProbeError(f"MCP server {_server_name(command, args)} could not be probed: the probe gave no answer")
    return _probe_from(outcome["probe"], child.secrets)
