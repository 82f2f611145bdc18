"""One bounded provider child of the controlled study (seed 004 ``runControlledCommand``; digest 5.5, 5.7).

``run_controlled_child`` starts a fresh child per attempt: argv only (never a shell), its own
process group and session, exactly the environment it is given, the request written to stdin
and then closed. It is bounded three ways:

- runtime: at ``max_runtime_ms`` the whole group gets ``SIGTERM``, then ``SIGKILL`` after a
  short grace, grandchildren included;
- stdout: past ``max_output_bytes`` the group is killed the same way and only the first
  ``max_output_bytes`` bytes are kept (in memory, for the caller to parse; never persisted);
- stderr: never kept at all; its bytes are counted and hashed as they stream by.

When the child exits, whatever is left of its group is killed (no orphaned helpers), and a
descendant that escaped the group cannot stretch the call: pipes are read for at most
``DRAIN_GRACE_S`` after the child is gone. This module reports facts only (how the child
ended, sizes, hashes, time); ``agentstudy.controlled.record`` classifies them. After a stop
signal (``io.signals``) the running group is stopped the same way (the caller then raises
``StopRequested`` rather than record the attempt).

``child_environment`` builds the allowlisted environment (``PATH``, ``HOME``, ``TMPDIR`` plus
the named variables, copied when defined, plus the attempt's session id) and
``check_command`` is the command check run before any child starts.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import selectors
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agentstudy.io.signals import stop_signal

SESSION_ENV = "DOC_BRIDGE_STUDY_SESSION_ID"
"""The environment variable that carries an attempt's session id to the provider."""
BASE_ENVIRONMENT = ("PATH", "HOME", "TMPDIR")
"""Variables every provider child receives when the parent defines them."""
TERM_GRACE_S = 0.5
"""Seconds between ``SIGTERM`` and ``SIGKILL`` for a group being stopped."""
DRAIN_GRACE_S = 2.0
"""Seconds the pipes are still read after the child has exited."""
_CHUNK = 65536

EndedBy = Literal["exit", "timeout", "output-limit", "spawn-error"]


@dataclass(frozen=True)
class ChildFacts:
    """What one bounded child did. Nothing here is persisted as is: ``stdout`` is for parsing only.

    Attributes:
        ended_by: ``exit`` (on its own), ``timeout`` or ``output-limit`` (we stopped the group),
            ``spawn-error`` (the program could not be started).
        exit_code: the exit status when the child exited normally, else ``None``.
        signal: the name of the signal that ended the child (``SIGTERM``, ``SIGKILL``, …) or ``None``.
        duration_ms: milliseconds from spawn to the child's end (rounded).
        stdout: at most ``max_output_bytes`` bytes of standard output.
        stdout_bytes_total: every byte the child wrote to stdout, kept or not.
        stdout_hash: SHA-256 hex of ``stdout`` (the recorded bytes).
        stderr_bytes: bytes written to standard error (the text is never kept).
        stderr_hash: SHA-256 hex of everything written to standard error.
        stdin_bytes_written: bytes of the request the child accepted before stdin was closed.
    """

    ended_by: EndedBy
    exit_code: int | None
    signal: str | None
    duration_ms: int
    stdout: bytes
    stdout_bytes_total: int
    stdout_hash: str
    stderr_bytes: int
    stderr_hash: str
    stdin_bytes_written: int


class CommandCheckError(ValueError):
    """A provider or adjudicator command cannot be run (missing, not a file, not executable)."""


def child_environment(parent: Mapping[str, str], allowlist: Sequence[str],
                      session_id: str | None = None) -> dict[str, str]:
    """The complete environment of a provider child.

    ``PATH``, ``HOME``, ``TMPDIR`` and every name of ``allowlist`` are copied from ``parent``
    when defined there; ``DOC_BRIDGE_STUDY_SESSION_ID`` is set to ``session_id`` when given.
    Nothing else is inherited.
    """
    names = dict.fromkeys([*BASE_ENVIRONMENT, *allowlist])
    env = {name: parent[name] for name in names if name in parent}
    if session_id is not None:
        env[SESSION_ENV] = session_id
    return env


def check_command(command: str, base: Path, search_path: str | None) -> Path:
    """Resolve and check a provider command before anything runs (digest 5.7 "Command check").

    A command that contains ``/`` must be an existing, executable regular file; a relative one
    is resolved against ``base`` (the child's working directory). A bare name must be
    executable in some entry of ``search_path`` (the child's ``PATH``).

    Returns:
        The absolute path of the executable.

    Raises:
        CommandCheckError: with a one-line reason (``… not found on PATH``, ``… is not an
            executable file``).
    """
    if "/" not in command:
        found = shutil.which(command, path=search_path if search_path is not None else os.defpath)
        if found is None:
            raise CommandCheckError(f"command {command!r} not found on PATH")
        return Path(found).absolute()
    path = Path(command)
    candidate = path if path.is_absolute() else base / path
    try:
        mode = candidate.stat().st_mode
    except OSError:
        raise CommandCheckError(f"command {command!r} does not exist") from None
    if not stat.S_ISREG(mode) or not os.access(candidate, os.X_OK):
        raise CommandCheckError(f"command {command!r} is not an executable file")
    return candidate.absolute()


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    """``SIGTERM`` the group, give the child ``TERM_GRACE_S`` to go, then ``SIGKILL`` the group."""
    _signal_group(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=TERM_GRACE_S)
    _signal_group(process.pid, signal.SIGKILL)
    process.wait()


def _signal_name(returncode: int | None) -> str | None:
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"SIG{-returncode}"


class _Pump:
    """Feeds stdin and drains stdout/stderr of one child through a selector, within the bounds."""

    def __init__(self, process: subprocess.Popen[bytes], request: bytes, stdout_limit: int) -> None:
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        self.process = process
        self.pending = memoryview(request)
        self.written = 0
        self.stdout_limit = stdout_limit
        self.stdout = bytearray()
        self.stdout_total = 0
        self.stderr_total = 0
        self.stderr_digest = hashlib.sha256()
        self.selector = selectors.DefaultSelector()
        self.streams = {process.stdin.fileno(): process.stdin, process.stdout.fileno(): process.stdout,
                        process.stderr.fileno(): process.stderr}
        for stream in self.streams.values():
            os.set_blocking(stream.fileno(), False)
        if self.pending:
            self.selector.register(process.stdin.fileno(), selectors.EVENT_WRITE, "stdin")
        else:
            process.stdin.close()
        self.selector.register(process.stdout.fileno(), selectors.EVENT_READ, "stdout")
        self.selector.register(process.stderr.fileno(), selectors.EVENT_READ, "stderr")

    @property
    def overflowed(self) -> bool:
        return self.stdout_total > self.stdout_limit

    @property
    def open_streams(self) -> int:
        return len(self.selector.get_map())

    def _close(self, fd: int) -> None:
        self.selector.unregister(fd)
        self.streams[fd].close()

    def step(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for pipe activity and move what is ready."""
        for key, _mask in self.selector.select(timeout=timeout_s):
            if key.data == "stdin":
                self._write(key.fd)
                continue
            try:
                chunk = os.read(key.fd, _CHUNK)
            except BlockingIOError:
                continue
            if not chunk:
                self._close(key.fd)
            elif key.data == "stdout":
                self.stdout_total += len(chunk)
                room = self.stdout_limit - len(self.stdout)
                if room > 0:
                    self.stdout.extend(chunk[:room])
            else:
                self.stderr_total += len(chunk)
                self.stderr_digest.update(chunk)

    def _write(self, fd: int) -> None:
        try:
            sent = os.write(fd, self.pending[:_CHUNK])
        except BlockingIOError:
            return
        except (BrokenPipeError, ConnectionResetError):
            self.pending = self.pending[:0]
            sent = 0
        self.written += sent
        self.pending = self.pending[sent:]
        if not self.pending:
            with contextlib.suppress(BrokenPipeError):
                self._close(fd)

    def close(self) -> None:
        for key in list(self.selector.get_map().values()):
            with contextlib.suppress(BrokenPipeError):
                self._close(key.fd)
        self.selector.close()
        for stream in self.streams.values():
            with contextlib.suppress(BrokenPipeError):
                stream.close()


def run_controlled_child(argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, request: bytes,
                         max_runtime_ms: int, max_output_bytes: int) -> ChildFacts:
    """Run one bounded provider child and report what it did (see the module docstring).

    Args:
        argv: the program (a path — a relative one is resolved against ``cwd`` — or a name looked
            up on the child's ``PATH``) and its arguments, passed unchanged.
        env: the child's complete environment (``child_environment``).
        cwd: the child's working directory (the repository root for a provider).
        request: bytes written to stdin, which is then closed (empty: closed at once).
        max_runtime_ms: wall-clock bound in milliseconds (positive).
        max_output_bytes: stdout bound in bytes (positive).

    Returns:
        ``ChildFacts``; a program that cannot be started gives ``ended_by="spawn-error"``.

    Raises:
        ValueError: for a non-positive bound.
    """
    if max_runtime_ms <= 0 or max_output_bytes <= 0:
        raise ValueError("the runtime and output bounds must be positive")
    start = time.monotonic()
    try:
        process = subprocess.Popen(list(argv), env=dict(env), cwd=cwd, stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except OSError:
        empty = hashlib.sha256(b"").hexdigest()
        return ChildFacts("spawn-error", None, None, round((time.monotonic() - start) * 1000), b"", 0, empty, 0,
                          empty, 0)
    pump = _Pump(process, request, max_output_bytes)
    deadline = start + max_runtime_ms / 1000
    ended_by: EndedBy = "exit"
    exited_at: float | None = None
    try:
        while True:
            now = time.monotonic()
            if exited_at is None and process.poll() is not None:
                exited_at = now
                _signal_group(process.pid, signal.SIGKILL)
            elif exited_at is None and stop_signal() is not None:
                _stop_group(process)
                exited_at = time.monotonic()
            elif exited_at is None and (pump.overflowed or now >= deadline):
                ended_by = "output-limit" if pump.overflowed else "timeout"
                _stop_group(process)
                exited_at = time.monotonic()
            if exited_at is not None and (pump.open_streams == 0 or now - exited_at > DRAIN_GRACE_S):
                break
            if pump.open_streams == 0:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=min(0.05, max(0.0, deadline - now)))
                continue
            pump.step(min(0.05, max(0.0, deadline - now)) if exited_at is None else 0.05)
    finally:
        if process.poll() is None:
            _stop_group(process)
        process.wait()
        _signal_group(process.pid, signal.SIGKILL)
        pump.close()
    ended_at = exited_at if exited_at is not None else time.monotonic()
    if ended_by == "exit" and pump.overflowed:  # it wrote past the bound and exited before we could stop it
        ended_by = "output-limit"
    stdout = bytes(pump.stdout)
    returncode = process.returncode
    return ChildFacts(
        ended_by=ended_by,
        exit_code=returncode if returncode >= 0 else None,
        signal=_signal_name(returncode),
        duration_ms=round((ended_at - start) * 1000),
        stdout=stdout,
        stdout_bytes_total=pump.stdout_total,
        stdout_hash=hashlib.sha256(stdout).hexdigest(),
        stderr_bytes=pump.stderr_total,
        stderr_hash=pump.stderr_digest.hexdigest(),
        stdin_bytes_written=pump.written,
    )
