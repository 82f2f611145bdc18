"""Serve the MCP server under study to one agent attempt: started by us in its own world, per connection (issue 39).

The agent's sandbox cannot give a server nested in it a private ``/proc`` (the kernel refuses a
fresh proc mount under the covered one bubblewrap leaves), and a second builder of the server's
binds disagreed with the probe's. So the agent is told to run ``io.server_relay`` (its ``--mcp-config``
/ ``[mcp_servers.NAME]`` command), which connects to a unix socket in a private directory bound
into the agent's sandbox; for each connection ``ServerHost`` starts ``ServerWorld.command`` — the
very command line the preflight's probe runs (``io.mcp_sandbox``) — with the world's environment
and working directory, and copies bytes both ways. What the server sends passes a ``protocol.server_word``
watch (issue 40): a ``tools/list`` answer that breaks the preflight's read-only rule is withheld, the server
ended and the change kept (``ServerHost.changed``). The server's stderr is kept, the last
``SERVER_STDERR_KEPT_BYTES`` of it (tail), for the attempt's evidence.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO

from agentstudy.io.containment import ContainmentError, ContainmentMode, command_paths
from agentstudy.io.mcp_child import seed_state, server_text
from agentstudy.io.scratch import owned_mkdtemp, release
from agentstudy.io.server_binds import own_module_paths
from agentstudy.io.server_world import ServerWorld, server_world
from agentstudy.protocol.mcp_spec import McpServerSpec, ServerPaths
from agentstudy.protocol.server_word import WordWatch

SERVER_STDERR_KEPT_BYTES = 64 * 1024
"""How much of the end of the server's stderr an attempt keeps (bytes)."""
RELAY_MODULE = "agentstudy.io.server_relay"
SOCKET_NAME = "mcp.sock"
SOCKET_PATH_MAX = 100
"""The longest socket path used in place (bytes; the kernel allows 107); a longer one moves to the temp dir."""
POLL_S = 0.1
GRACE_S = 2.0
"""How long a server may take to end after its relay closed, before it is killed (seconds)."""


@dataclass(frozen=True)
class ServerLauncher:
    """What the agent is told to run as the MCP server, and what its sandbox must show for that.

    Attributes:
        argv: ``python -I -m agentstudy.io.server_relay SOCKET``.
        read_only: the interpreter and our package (bound read-only in the agent's sandbox).
        writable: the socket's private directory (bound writable: connecting needs write access).
    """

    argv: list[str]
    read_only: tuple[Path, ...]
    writable: tuple[Path, ...]


class ServerHost:
    """Starts ``world`` under ``containment`` for each connection to ``directory/mcp.sock``, until closed.

    ``directory``: an existing private directory (mode 0700) with a short path (a unix socket's path is at
    most 107 bytes). Use as a context manager; closing ends every server still running (SIGTERM, then
    SIGKILL after ``GRACE_S``). ``stderr`` is the kept tail of every server's stderr, in start order.

    Raises:
        OSError: on enter, the socket cannot be made.
    """

    def __init__(self, world: ServerWorld, containment: ContainmentMode, directory: Path,
                 read_only: tuple[str, ...] = (), open_world: tuple[str, ...] = ()) -> None:
        self._world = world
        self._rule = read_only, open_world
        self.changed: str | None = None
        """The first change of the server's word a ``tools/list`` answer showed (``protocol.server_word``), else
        ``None`` (issue 40)."""
        self._command = world.command(containment)
        self._path = directory / SOCKET_NAME
        self._directory = directory
        self._listener: socket.socket | None = None
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._servers: list[subprocess.Popen[bytes]] = []
        self._lock = threading.Lock()
        self._stderr = bytearray()
        self.starts = 0
        """How many servers were started."""

    def launcher(self) -> ServerLauncher:
        """The relay command for the agent (this interpreter, absolute) and what the agent's sandbox needs for it."""
        argv = [sys.executable, "-I", "-m", RELAY_MODULE, str(self._path)]
        read_only = (*command_paths(sys.executable), *own_module_paths(argv))
        return ServerLauncher(argv, tuple(dict.fromkeys(read_only)), (self._directory,))

    @property
    def stderr(self) -> bytes:
        """The last ``SERVER_STDERR_KEPT_BYTES`` the servers wrote to stderr (raw; redact before showing)."""
        with self._lock:
            return bytes(self._stderr)

    def said(self) -> str:
        """``stderr`` as text with every credential redacted line by line (``io.mcp_child.server_text``: the
        world's secrets and ``token=…``-like values), lines kept."""
        text = self.stderr.decode("utf-8", "replace")
        return "\n".join(server_text(line, self._world.secrets, SERVER_STDERR_KEPT_BYTES)
                         for line in text.splitlines())

    def __enter__(self) -> ServerHost:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(str(self._path))
            listener.listen(8)
        except OSError:
            listener.close()
            raise
        self._listener = listener
        self._spawn(self._accept)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Stop accepting, end every server, join the copying threads (idempotent)."""
        self._stop.set()
        for server in list(self._servers):
            _end(server)
        for thread in list(self._threads):
            thread.join(GRACE_S)
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        self._path.unlink(missing_ok=True)

    def _spawn(self, target: object, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
        self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        listener = self._listener
        assert listener is not None
        while not self._stop.is_set():
            ready, _, _ = select.select([listener], [], [], POLL_S)
            if not ready:
                continue
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            self._serve(connection)

    def _serve(self, connection: socket.socket) -> None:
        world = self._world
        try:
            server = subprocess.Popen(self._command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, env=world.env, cwd=world.cwd,
                                      start_new_session=True)
        except OSError as error:
            self._keep(f"agentstudy: the MCP server could not be started: {error.strerror}\n".encode())
            connection.close()
            return
        self.starts += 1
        self._servers.append(server)
        assert server.stdin is not None and server.stdout is not None and server.stderr is not None
        self._spawn(_pump_in, connection, server.stdin)
        self._spawn(self._pump_out, server, connection, WordWatch(*self._rule))
        self._spawn(self._drain, server.stderr)

    def _pump_out(self, server: subprocess.Popen[bytes], connection: socket.socket, watch: WordWatch) -> None:
        """The server's stdout -> socket through ``watch``; at its end (the server exited, or its word changed and
        it was ended) the socket is closed."""
        stdout = server.stdout
        assert stdout is not None
        try:
            while chunk := stdout.read1(65536):  # type: ignore[attr-defined]
                connection.sendall(watch.feed(chunk))
                if watch.changed is not None:
                    break
            else:
                connection.sendall(watch.flush())
        except OSError:
            pass
        if watch.changed is not None:
            with self._lock:
                self.changed = self.changed or watch.changed
            _end(server)
        with suppress(OSError):
            connection.shutdown(socket.SHUT_RDWR)
        connection.close()

    def _drain(self, stream: IO[bytes]) -> None:
        while chunk := stream.read1(65536):  # type: ignore[attr-defined]
            self._keep(chunk)

    def _keep(self, chunk: bytes) -> None:
        with self._lock:
            self._stderr += chunk
            del self._stderr[:max(0, len(self._stderr) - SERVER_STDERR_KEPT_BYTES)]


def _pump_in(connection: socket.socket, stdin: IO[bytes]) -> None:
    """socket -> the server's stdin; closed at the socket's end (the agent closed its relay)."""
    try:
        while chunk := connection.recv(65536):
            stdin.write(chunk)
            stdin.flush()
    except OSError:
        pass
    with suppress(OSError):
        stdin.close()


def _end(server: subprocess.Popen[bytes]) -> None:
    """End ``server``'s process group: SIGTERM, then SIGKILL after ``GRACE_S``; reaped."""
    if server.poll() is None:
        _signal_group(server.pid, signal.SIGTERM)
        with suppress(subprocess.TimeoutExpired):
            server.wait(GRACE_S)
    _signal_group(server.pid, signal.SIGKILL)
    server.wait()


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _fits(directory: Path) -> bool:
    return len(os.fsencode(directory / SOCKET_NAME)) <= SOCKET_PATH_MAX


def socket_directory(scratch: Path) -> tuple[Path, bool]:
    """A new private directory (mode 0700) for an attempt's socket whose path fits a unix socket's limit:
    ``scratch/mcp-socket`` when it fits, else an owned ``agentstudy-socket-…`` directory in the temp dir, else one
    in ``/tmp`` (a deep TMPDIR). Returns ``(directory, owned)``: an owned one is removed and released by the caller.

    Raises:
        OSError: a directory cannot be made (a full temp dir: the attempt never starts).
    """
    in_place = scratch / "mcp-socket"
    if _fits(in_place):
        in_place.mkdir(mode=0o700)
        return in_place, False
    owned = owned_mkdtemp("socket")
    if _fits(owned):
        return owned, True
    owned.rmdir()
    release(owned)
    return owned_mkdtemp("socket", Path("/tmp")), True  # noqa: S108 -- a new 0700 directory, owned and released


@contextmanager
def attempt_server(spec: McpServerSpec, paths: ServerPaths, containment: ContainmentMode,
                   parent_env: Mapping[str, str], scratch: Path) -> Iterator[ServerHost]:
    """The MCP server of one attempt, served from ``scratch`` (the attempt's private directory): a private HOME
    and TMPDIR (``scratch/server-home``, ``scratch/server-tmp``, mode 0700, seeded with the prepared state
    when ``paths.state`` is set, issue 32), ``io.server_world.server_world`` over them, and a ``ServerHost``
    on a socket in ``scratch/mcp-socket`` (or, when that path is too long, an owned directory in the temp dir, or
    in ``/tmp`` when the temp dir's own path is too long too: :func:`socket_directory`).

    Raises:
        ContainmentError: the world is refused, bubblewrap is missing, or the prepared state cannot be copied.
        OSError: the socket cannot be made.
    """
    home, tmp = scratch / "server-home", scratch / "server-tmp"
    for directory in (home, tmp):
        directory.mkdir(mode=0o700, exist_ok=True)
    try:
        seed_state(paths.state, home, tmp)
    except OSError as error:
        raise ContainmentError(f"the MCP server's prepared state could not be copied: {error}") from None
    world = server_world(spec, paths, home, tmp, parent_env)
    sockets, owned = socket_directory(scratch)
    try:
        with ServerHost(world, containment, sockets, tuple(spec.read_only_tools), tuple(spec.open_world_tools)) as host:
            yield host
    finally:
        if owned:
            (sockets / SOCKET_NAME).unlink(missing_ok=True)
            sockets.rmdir()
            release(sockets)
