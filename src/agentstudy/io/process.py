"""Bounded child processes: argv only, own process group, closed stdin, timeout, output cap.

On timeout the whole process group is killed (grandchildren included). Output beyond the
bound is discarded and reported as truncated; stderr is drained and bounded too, and only
its byte count is returned, never its text.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

STDOUT_LIMIT_BYTES = 4 * 1024 * 1024
"""The seed's stdout bound for a CLI attempt (4 MiB)."""
STDERR_LIMIT_BYTES = 256 * 1024


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
    """

    started: bool
    exit_code: int | None
    stdout: bytes
    truncated: bool
    timed_out: bool
    wall_time_ms: int
    stderr_bytes: int


def _drain(stream: IO[bytes], limit: int, sink: bytearray, flags: dict[str, int]) -> None:
    while True:
        chunk = stream.read(65536)
        if not chunk:
            return
        flags["total"] += len(chunk)
        room = limit - len(sink)
        if room > 0:
            sink.extend(chunk[:room])


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def run_bounded(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    timeout_s: float,
    stdout_limit: int = STDOUT_LIMIT_BYTES,
) -> BoundedResult:
    """Run ``argv`` (never a shell) with exactly ``env``, in ``cwd``, stdin closed.

    Args:
        argv: executable and arguments.
        env: the complete environment of the child (nothing is inherited).
        cwd: working directory.
        timeout_s: wall-clock limit in seconds; on expiry the child's process group is killed.
        stdout_limit: bytes of stdout kept; more is reported as ``truncated``.

    Returns:
        A ``BoundedResult``; a missing or non-executable program gives ``started=False``.
    """
    start = time.monotonic()
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
    out_flags, err_flags = {"total": 0}, {"total": 0}
    readers = [
        threading.Thread(target=_drain, args=(process.stdout, stdout_limit, out, out_flags), daemon=True),
        threading.Thread(target=_drain, args=(process.stderr, 0, err, err_flags), daemon=True),
    ]
    for reader in readers:
        reader.start()
    timed_out = False
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        # The group may hold grandchildren (an MCP server) that keep pipes open: end them all.
        _kill_group(process)
        process.wait()
    for reader in readers:
        reader.join(timeout=5)
    process.stdout.close()
    process.stderr.close()
    return BoundedResult(
        started=True,
        exit_code=process.returncode,
        stdout=bytes(out),
        truncated=out_flags["total"] > stdout_limit,
        timed_out=timed_out,
        wall_time_ms=round((time.monotonic() - start) * 1000),
        stderr_bytes=err_flags["total"],
    )
