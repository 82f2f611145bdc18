"""Locate and probe a coding agent's binary (``--version``), whichever agent it is (issues 15 and 21).

The probe child never sees our environment: it gets ``allowlisted_environment`` of it (no API
key, token or cloud credential) with a private ``HOME`` and ``TMPDIR``, runs in a private
working directory, and all three are removed afterwards. The argv (``version_argv``) and the
environment (``version_environment``) are built by separate pure steps, so a sandbox can wrap
the argv without touching the environment. ``io.claude_cli`` and ``agents.codex`` only say
where their agent is installed and what its version line looks like.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agentstudy.io.containment import ContainmentError, ContainmentMode, SandboxView, command_paths, contain
from agentstudy.io.environment import allowlisted_environment
from agentstudy.io.process import run_bounded
from agentstudy.io.scratch import owned_mkdtemp, release

VERSION_TIMEOUT_S = 10.0
VERSION_OUTPUT_LIMIT = 4096


class AgentBinaryError(RuntimeError):
    """An agent's binary cannot be found, or its version cannot be read or does not match (one line)."""


def project_root() -> Path:
    """The agentstudy checkout this module runs from (``src/agentstudy/io`` -> three levels up)."""
    return Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class BinaryLookup:
    """Where one agent's binary may be (issue 21): its ``label`` for messages (``Claude Code``), the
    override variable ``env_var`` (``AGENTSTUDY_CLAUDE_BIN``), the ``pinned`` install relative to the
    project root (``.tools/...``), the ``path_name`` looked up on ``PATH`` last and the command-line
    ``flag`` an error names (``--claude-bin``)."""

    label: str
    env_var: str
    pinned: Path
    path_name: str
    flag: str


def find_agent_binary(lookup: BinaryLookup, explicit: str | None, environ: Mapping[str, str]) -> Path:
    """Find the binary: ``explicit``, then ``lookup.env_var``, then the pinned install, then ``PATH``.

    The result is always an absolute path to an executable regular file: a relative path is
    made absolute against the current directory now (every attempt runs in another working
    directory), a bare name is looked up on ``PATH``. Nothing is started.

    Raises:
        AgentBinaryError: if none is found, the chosen path holds CR, LF or NUL, is not an
            executable regular file, or a bare name is not on ``PATH``.
    """
    path_list = environ.get("PATH", os.defpath)
    for candidate in (explicit, environ.get(lookup.env_var)):
        if candidate:
            if any(c in candidate for c in "\r\n\0"):
                raise AgentBinaryError(f"the {lookup.label} binary path contains a control character")
            if os.sep not in candidate:
                found = shutil.which(candidate, path=path_list)
                if found is None:
                    raise AgentBinaryError(f"the {lookup.label} binary {candidate!r} is not found on PATH")
                candidate = found
            return _executable(Path(candidate), lookup.label)
    pinned = project_root() / lookup.pinned
    if pinned.exists():
        return _executable(pinned, lookup.label)
    found = shutil.which(lookup.path_name, path=path_list)
    if found:
        return _executable(Path(found), lookup.label)
    raise AgentBinaryError(f"{lookup.label} binary not found: run scripts/setup.sh or pass {lookup.flag}")


def _executable(path: Path, label: str) -> Path:
    """``path`` made absolute (symlinks kept), refused unless it is an executable regular file."""
    absolute = path.absolute()
    try:
        regular = absolute.is_file()
    except OSError as error:  # a name too long, a loop: as missing
        raise AgentBinaryError(f"the {label} binary {path} cannot be used: {error.strerror}") from None
    if not regular or not os.access(absolute, os.X_OK):
        raise AgentBinaryError(f"the {label} binary {absolute} is not an executable file")
    return absolute


def version_argv(binary: Path) -> list[str]:
    """The probe's argv: ``[binary, "--version"]``, a relative path made absolute (the probe runs elsewhere)."""
    name = str(binary)
    return [str(binary.absolute()) if os.sep in name else name, "--version"]


def version_environment(parent: Mapping[str, str], scratch: Path,
                        extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The probe child's complete environment. Pure.

    Args:
        parent: the environment the caller was started with (``os.environ`` in production).
        scratch: the probe's private directory; ``HOME`` is ``scratch/home``, ``TMPDIR`` is
            ``scratch/tmp``.
        extra: the agent's own start-up variables its attempts get too (``AgentCli.start_env``).

    Returns:
        ``allowlisted_environment(parent, home=…, tmpdir=…, extra=extra)``: ``PATH``, identity and locale
        names only, never a provider key or any other secret of ``parent``.
    """
    return allowlisted_environment(parent, home=str(scratch / "home"), tmpdir=str(scratch / "tmp"), extra=extra)


def probe_version(binary: Path, env: Mapping[str, str], containment: ContainmentMode = "bwrap",
                  extra: Mapping[str, str] | None = None) -> str:
    """Run ``binary --version`` and return its first stdout line, trimmed (``2.1.296 (Claude Code)``,
    ``codex-cli 0.171.0``).

    Args:
        binary: the executable.
        env: the parent environment; the child gets only ``version_environment(env, scratch)``
            and runs in ``scratch/work``, where ``scratch`` is a fresh private temporary
            directory removed before returning.
        containment: the run's mechanism; under ``bwrap`` the probe sees only the agent's
            install and its private directories, as an attempt does (issue 15).
        extra: the agent's own start-up variables (``AgentCli.start_env``), set as in its attempts.

    Raises:
        AgentBinaryError: on a start failure, timeout, truncation, non-zero exit or a line that
            is not 1-120 printable ASCII characters.
    """
    scratch = owned_mkdtemp("version")  # swept after a SIGKILL (issue 29)
    try:
        for name in ("home", "tmp", "work"):
            (scratch / name).mkdir()
        child_env = version_environment(env, scratch, extra)
        view = SandboxView(cwd=scratch / "work", read_only=command_paths(str(binary.absolute()), child_env["PATH"]),
                           writable=(scratch / "home", scratch / "tmp", scratch / "work"))
        try:
            argv = contain(containment, view, version_argv(binary))
        except ContainmentError as error:
            raise AgentBinaryError(str(error)) from None
        result = run_bounded(argv, child_env, scratch / "work", VERSION_TIMEOUT_S, stdout_limit=VERSION_OUTPUT_LIMIT)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        release(scratch)
    if not result.started:
        raise AgentBinaryError(f"cannot start {binary}")
    if result.timed_out or result.truncated or result.exit_code != 0:
        raise AgentBinaryError(f"{binary} --version failed")
    lines = result.stdout.decode("utf-8", "replace").splitlines()
    line = lines[0].strip() if lines else ""
    if not (1 <= len(line) <= 120) or not all(32 <= ord(c) < 127 for c in line):
        raise AgentBinaryError(f"{binary} --version printed an unreadable version line")
    return line
