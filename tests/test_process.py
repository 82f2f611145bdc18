"""Tests for ``agentstudy.io.process.run_bounded``: env allowlist, closed stdin, bounds, group kill."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from dataclasses import fields
from pathlib import Path

import pytest

from agentstudy.io.process import BoundedResult, run_bounded

PY = sys.executable
# Setting LC_ALL stops CPython's PEP 538 locale coercion from adding LC_CTYPE to its own environ.
BASE_ENV = {"LC_ALL": "C.UTF-8"}


def py(code: str) -> list[str]:
    return [PY, "-c", code]


def is_alive(pid: int) -> bool:
    """Whether ``pid`` is a live (non-zombie) process."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


def test_normal_child_exit_code_and_stdout(tmp_path: Path) -> None:
    result = run_bounded(py("import sys; sys.stdout.write('hello out'); sys.exit(7)"), BASE_ENV, tmp_path, 30)
    assert result.started is True
    assert result.exit_code == 7
    assert result.stdout == b"hello out"
    assert result.truncated is False
    assert result.timed_out is False
    assert result.stderr_bytes == 0
    assert result.wall_time_ms >= 0


def test_zero_exit_and_cwd(tmp_path: Path) -> None:
    result = run_bounded(py("import os; print(os.getcwd(), end='')"), BASE_ENV, tmp_path, 30)
    assert result.exit_code == 0
    assert Path(result.stdout.decode()).resolve() == tmp_path.resolve()


def test_env_allowlist_is_the_whole_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTSTUDY_PARENT_ONLY", "leak")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-should-not-leak")
    env = {**BASE_ENV, "AGENTSTUDY_CHILD_VAR": "given"}
    code = "import os, json; print(json.dumps(dict(os.environ)))"
    result = run_bounded(py(code), env, tmp_path, 30)
    assert result.exit_code == 0
    child_env = json.loads(result.stdout)
    assert set(child_env) == set(env)
    assert child_env["AGENTSTUDY_CHILD_VAR"] == "given"
    assert "AGENTSTUDY_PARENT_ONLY" not in child_env
    assert "ANTHROPIC_API_KEY" not in child_env


def test_stdin_is_closed(tmp_path: Path) -> None:
    code = "import sys; data = sys.stdin.buffer.read(); print(len(data))"
    result = run_bounded(py(code), BASE_ENV, tmp_path, 20)
    assert result.timed_out is False
    assert result.exit_code == 0
    assert result.stdout.strip() == b"0"


def test_stdout_truncated_past_limit(tmp_path: Path) -> None:
    code = "import sys; sys.stdout.buffer.write(b'x' * 300000); sys.stdout.flush()"
    result = run_bounded(py(code), BASE_ENV, tmp_path, 30, stdout_limit=1000)
    assert result.truncated is True
    assert len(result.stdout) == 1000
    assert result.stdout == b"x" * 1000
    assert result.exit_code == 0
    assert result.timed_out is False


def test_stdout_exactly_at_limit_is_not_truncated(tmp_path: Path) -> None:
    code = "import sys; sys.stdout.buffer.write(b'y' * 1000)"
    result = run_bounded(py(code), BASE_ENV, tmp_path, 30, stdout_limit=1000)
    assert result.truncated is False
    assert result.stdout == b"y" * 1000


def test_stderr_text_is_never_returned(tmp_path: Path) -> None:
    marker = "STDERR-SECRET-MARKER"
    code = f"import sys; sys.stderr.write({marker!r} * 10); sys.stdout.write('ok')"
    result = run_bounded(py(code), BASE_ENV, tmp_path, 30)
    assert result.stderr_bytes == len(marker) * 10
    assert result.stdout == b"ok"
    assert marker not in repr(result)
    assert {f.name for f in fields(BoundedResult)} == {
        "started",
        "exit_code",
        "stdout",
        "truncated",
        "timed_out",
        "wall_time_ms",
        "stderr_bytes",
        "stopped",
        "stderr_tail",
        "watch_stop",
    }
    assert result.stderr_tail == b""  # kept only when a caller asks (keep_stderr; issue 21)


def test_a_kept_stderr_tail_is_the_last_bytes_only(tmp_path: Path) -> None:
    code = "import sys; sys.stderr.write('x' * 5000 + 'END'); sys.stdout.write('ok')"
    result = run_bounded(py(code), BASE_ENV, tmp_path, 30, keep_stderr=10)
    assert result.stderr_tail == b"xxxxxxxEND"
    assert "xxxxxxxEND" not in repr(result)


def test_a_watch_stops_the_child_and_says_why(tmp_path: Path) -> None:
    code = ("import sys, time\nsys.stdout.write('line one\\n'); sys.stdout.flush()\n"
            "sys.stdout.write('STOP here\\n'); sys.stdout.flush()\ntime.sleep(60)\nsys.stdout.write('never')")
    seen: list[bytes] = []

    def watch(chunk: bytes) -> str | None:
        seen.append(chunk)
        return "limit passed" if b"STOP" in b"".join(seen) else None

    result = run_bounded(py(code), BASE_ENV, tmp_path, 120, watch=watch)
    assert result.watch_stop == "limit passed"
    assert result.exit_code is not None and result.exit_code < 0
    assert b"never" not in result.stdout
    assert result.timed_out is False


def test_large_stderr_does_not_block(tmp_path: Path) -> None:
    code = "import sys; sys.stderr.buffer.write(b'e' * 2_000_000); sys.stdout.write('done')"
    result = run_bounded(py(code), BASE_ENV, tmp_path, 30)
    assert result.timed_out is False
    assert result.stdout == b"done"
    assert result.stderr_bytes == 2_000_000


def spawn_grandchild_code(pid_file: Path, then: str, *, hold_pipes: bool = False) -> str:
    """Child code: start a grandchild sleeping 60 s, record its pid atomically, then run ``then``.

    Unless ``hold_pipes``, the grandchild's stdio is detached from the child's pipes, so only a
    process-group kill (not the end of the child, nor pipe closure) can end it early.
    """
    stdio = "" if hold_pipes else ", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL"
    return (
        "import os, subprocess, sys, time\n"
        f"g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']{stdio})\n"
        f"p = {str(pid_file)!r}\n"
        "open(p + '.tmp', 'w').write(str(g.pid))\n"
        "os.replace(p + '.tmp', p)\n"
        "print('spawned', flush=True)\n"
        f"{then}\n"
    )


def wait_until_dead(pid: int, seconds: float = 5.0) -> bool:
    """Poll (bounded) until ``pid`` is gone; kill it anyway if it is still alive at the end."""
    deadline = time.monotonic() + seconds
    while is_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if is_alive(pid):
        os.kill(pid, 9)
        return False
    return True


def test_timeout_kills_the_grandchild(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    result = run_bounded(py(spawn_grandchild_code(pid_file, "time.sleep(60)")), BASE_ENV, tmp_path, timeout_s=1)
    assert result.started is True
    assert result.timed_out is True
    assert result.exit_code is not None and result.exit_code < 0
    assert result.stdout == b"spawned\n"
    assert pid_file.exists(), "the child never recorded the grandchild's pid"
    pid = int(pid_file.read_text())
    assert pid != os.getpid()
    assert wait_until_dead(pid), f"grandchild {pid} survived the timeout"


def test_normal_exit_also_ends_lingering_group_members(tmp_path: Path) -> None:
    pid_file = tmp_path / "lingering.pid"
    result = run_bounded(py(spawn_grandchild_code(pid_file, "print('bye')")), BASE_ENV, tmp_path, timeout_s=40)
    assert result.timed_out is False
    assert result.exit_code == 0
    assert result.stdout == b"spawned\nbye\n"
    pid = int(pid_file.read_text())
    assert wait_until_dead(pid), f"group member {pid} outlived the child"


def test_timeout_with_grandchild_holding_the_pipes_returns(tmp_path: Path) -> None:
    pid_file = tmp_path / "holder.pid"
    code = spawn_grandchild_code(pid_file, "time.sleep(60)", hold_pipes=True)
    result = run_bounded(py(code), BASE_ENV, tmp_path, timeout_s=1)
    assert result.timed_out is True
    assert result.stdout == b"spawned\n"
    # Had the grandchild kept stdout open, run_bounded could only return when its 60 s sleep ended.
    assert result.wall_time_ms < 30_000
    pid = int(pid_file.read_text())
    assert wait_until_dead(pid), f"grandchild {pid} survived the timeout"


def test_missing_executable_is_not_started(tmp_path: Path) -> None:
    result = run_bounded([str(tmp_path / "no-such-program")], BASE_ENV, tmp_path, 5)
    assert result.started is False
    assert result.exit_code is None
    assert result.stdout == b""
    assert result.timed_out is False
    assert result.truncated is False
    assert result.stderr_bytes == 0


def test_non_executable_file_is_not_started(tmp_path: Path) -> None:
    program = tmp_path / "plain.txt"
    program.write_text("#!/bin/sh\necho hi\n")
    program.chmod(0o644)
    result = run_bounded([str(program)], BASE_ENV, tmp_path, 5)
    assert result.started is False  # exec of a file without any x bit is EACCES, even for root
    assert result.exit_code is None


def test_missing_cwd_is_not_started(tmp_path: Path) -> None:
    result = run_bounded(py("print(1)"), BASE_ENV, tmp_path / "missing", 5)
    assert result.started is False
    assert result.exit_code is None


def test_timeout_bounds_wall_time_even_if_an_escaped_descendant_holds_stdout(tmp_path: Path) -> None:
    """Known bug candidate: a descendant in its own session (outside the killed group) keeps stdout open.

    ``run_bounded`` joins its readers with a 5 s grace each, but then ``process.stdout.close()`` blocks on
    the reader thread's buffer lock until the descendant exits, so the timeout no longer bounds the call.
    """
    pid_file = tmp_path / "escaped.pid"
    child = (
        "import os, subprocess, sys, time\n"
        "g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(18)'], start_new_session=True)\n"
        f"p = {str(pid_file)!r}\n"
        "open(p + '.tmp', 'w').write(str(g.pid))\n"
        "os.replace(p + '.tmp', p)\n"
        "print('spawned', flush=True)\n"
        "time.sleep(60)\n"
    )
    try:
        result = run_bounded(py(child), BASE_ENV, tmp_path, timeout_s=1)
    finally:
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid_file.read_text()), 9)
    assert result.timed_out is True
    assert result.stdout == b"spawned\n"
    # timeout (1 s) + two reader joins (5 s each) + slack; the escaped sleeper would otherwise last 18 s.
    assert result.wall_time_ms < 15_000


def test_child_that_closes_its_pipes_still_runs_to_its_own_exit(tmp_path: Path) -> None:
    marker = tmp_path / "done"
    code = (
        "import os, sys, time\n"
        "os.close(1); os.close(2)\n"
        "time.sleep(0.5)\n"
        f"open({str(marker)!r}, 'w').write('ok')\n"
    )
    result = run_bounded([sys.executable, "-c", code], {"PATH": os.environ["PATH"]}, tmp_path, timeout_s=30)
    assert result.exit_code == 0 and not result.timed_out
    assert marker.read_text() == "ok"
