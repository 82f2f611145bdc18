"""Bounded child processes: argv only, own process group, closed stdin, timeout, output cap.

On timeout the whole process group is killed (grandchildren included); when the child
exits, what is left of its group is killed too (no orphaned MCP servers). Output beyond the
bound is discarded and reported as truncated; stderr is drained and counted, never kept.
A descendant that escaped the group and still holds the pipes cannot stretch the call:
reading stops shortly after the child is gone. After a stop signal (``io.signals``) no child
is started (``started=False``) and a running one has its group terminated (``SIGTERM``, then
``SIGKILL`` after ``KILL_GRACE_S``); the result says ``stopped``.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agentstudy.io.signals import KILL_GRACE_S, stop_signal

STDOUT_LIMIT_BYTES = 4 * 1024 * 1024
"""The seed's stdout bound for a CLI attempt (4 MiB)."""
DRAIN_GRACE_S = 2.0
"""How long pipes are still read after the child has exited."""


@dataclass(frozen=True)
class BoundedResult:
    """What a bounded child did.

    Attributes:
        started: whether the executable could be started at all.
        exit_code: the exit status (negative for a signal), ``None`` if not started.
        stdout: at most ``stdout_limit`` bytes of standard output.
        truncated: standard output went past the bound.
        timed_out: the timeout fired and the group was killed.
        wall_time_ms: milliseconds from spawn to exit (rounded).
        stderr_bytes: bytes the child wrote to standard error (the text is not kept).
        stopped: a stop signal (``io.signals``) arrived before the call returned: the child was not
            started, or was terminated (unless it had already ended on its own).
        stderr_tail: the last ``keep_stderr`` bytes of standard error (empty unless asked for).
        watch_stop: the reason the ``watch`` callback gave when it stopped the child (issue 21), else
            ``None``; the group was then terminated (``SIGTERM``, then ``SIGKILL``).
    """

    started: bool
    exit_code: int | None
    stdout: bytes
    truncated: bool
    timed_out: bool
    wall_time_ms: int
    stderr_bytes: int
    stopped: bool = False
    stderr_tail: bytes = field(default=b"", repr=False)
    watch_stop: str | None = None


def _kill_group(pid: int, sig: signal.Signals = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _terminate_group(process: subprocess.Popen[bytes]) -> None:
    """``SIGTERM`` the group, give it ``KILL_GRACE_S`` seconds, then ``SIGKILL`` it."""
    _kill_group(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=KILL_GRACE_S)
    _kill_group(process.pid)


def run_bounded(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    timeout_s: float,
    stdout_limit: int = STDOUT_LIMIT_BYTES,
    *,
    watch: Callable[[bytes], str | None] | None = None,
    keep_stderr: int = 0,
) -> BoundedResult:
    """Run ``argv`` (never a shell) with exactly ``env``, in ``cwd``, stdin closed.

    Args:
        argv: executable and arguments.
        env: the complete environment of the child (nothing is inherited).
        cwd: working directory.
        timeout_s: wall-clock limit in seconds; on expiry the child's process group is killed.
        stdout_limit: bytes of stdout kept; more is reported as ``truncated``.
        watch: called with every stdout chunk as it arrives (issue 21: the running per-attempt
            limit); a non-``None`` return stops the child at once and is ``watch_stop``.
        keep_stderr: bytes of stderr's tail to keep (``stderr_tail``); 0 keeps none.

    Returns:
        A ``BoundedResult``; a missing or non-executable program gives ``started=False``, and so
        does a stop signal received before the spawn (with ``stopped=True``).
    """
    start = time.monotonic()
    if stop_signal() is not None:
        return BoundedResult(False, None, b"", False, False, 0, 0, stopped=True)
    try:
        process = subprocess.Popen(
            list(argv),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError:
        return BoundedResult(False, None, b"", False, False, round((time.monotonic() - start) * 1000), 0)
    assert process.stdout is not None and process.stderr is not None
    out, err = bytearray(), bytearray()
    watch_stop: str | None = None
    totals = {"stdout": 0, "stderr": 0}
    selector = selectors.DefaultSelector()
    for name, stream in (("stdout", process.stdout), ("stderr", process.stderr)):
        os.set_blocking(stream.fileno(), False)
        selector.register(stream.fileno(), selectors.EVENT_READ, name)
    deadline = start + timeout_s
    timed_out = stopped = False
    exited_at: float | None = None
    try:
        while True:
            now = time.monotonic()
            if exited_at is None and process.poll() is not None:
                exited_at = now
                _kill_group(process.pid)
            if exited_at is None and stop_signal() is not None:
                stopped = True
                _terminate_group(process)
                exited_at = time.monotonic()
            if exited_at is None and now >= deadline:
                timed_out = True
                _kill_group(process.pid)
                process.wait()
                exited_at = time.monotonic()
            if exited_at is not None and (not selector.get_map() or now - exited_at > DRAIN_GRACE_S):
                break
            if not selector.get_map():  # both pipes closed, the child still runs
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=0.05)
                continue
            for key, _mask in selector.select(timeout=0.05):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fd)
                    continue
                totals[key.data] += len(chunk)
                if key.data == "stdout" and len(out) < stdout_limit:
                    out.extend(chunk[: stdout_limit - len(out)])
                if key.data == "stderr" and keep_stderr > 0:
                    err.extend(chunk)
                    del err[: max(0, len(err) - keep_stderr)]
                if key.data == "stdout" and watch is not None and watch_stop is None and exited_at is None:
                    watch_stop = watch(chunk)
                    if watch_stop is not None:
                        _terminate_group(process)
                        exited_at = time.monotonic()
    finally:
        selector.close()
        if process.poll() is None:
            _kill_group(process.pid)
        process.wait()
        _kill_group(process.pid)
        process.stdout.close()
        process.stderr.close()
    return BoundedResult(
        started=True,
        exit_code=process.returncode,
        stdout=bytes(out),
        truncated=totals["stdout"] > stdout_limit,
        timed_out=timed_out,
        wall_time_ms=round((time.monotonic() - start) * 1000),
        stderr_bytes=totals["stderr"],
        stopped=stopped or stop_signal() is not None,
        stderr_tail=bytes(err),
        watch_stop=watch_stop,
    )
