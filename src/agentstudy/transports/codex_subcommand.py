"""One short ``codex`` subcommand (``features list``, ``mcp get NAME --json``) run against a given ``config.toml``:
a private ``CODEX_HOME`` holding that text, a private HOME and TMPDIR under ``home_root`` (owner-marked, swept
after a SIGKILL; issue 29), contained like an attempt with the allowlisted environment, bounded in time and
output (issues 21 and 32). What the subcommand prints is its caller's to read.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from agentstudy.io.agent_binary import AgentBinaryError
from agentstudy.io.containment import ContainmentError, ContainmentMode, SandboxView, command_paths, contain
from agentstudy.io.process import run_bounded
from agentstudy.io.scratch import owned_mkdtemp, release
from agentstudy.transports.codex import SANDBOX_UID
from agentstudy.transports.codex_args import codex_environment

SUBCOMMAND_TIMEOUT_S = 30.0
SUBCOMMAND_OUTPUT_LIMIT = 256 * 1024  # bytes


def run_codex_subcommand(binary: Path, containment: ContainmentMode, config_text: str, arguments: Sequence[str],
                         parent_env: Mapping[str, str], home_root: Path, prefix: str) -> str:
    """Run ``binary *arguments`` with ``config_text`` as its ``config.toml``; its stdout as text (UTF-8, errors
    replaced). The scratch directories (``prefix-*`` under ``home_root``) are removed afterwards.

    Raises:
        AgentBinaryError: the sandbox could not be built, or the child did not start, failed, timed out
            (:data:`SUBCOMMAND_TIMEOUT_S` seconds) or printed more than :data:`SUBCOMMAND_OUTPUT_LIMIT` bytes.
    """
    scratch = owned_mkdtemp(prefix, home_root)
    try:
        home, tmp, codex_home = scratch / "home", scratch / "tmp", scratch / "codex-home"
        for directory in (home, tmp, codex_home):
            directory.mkdir(mode=0o700)
        (codex_home / "config.toml").write_text(config_text, encoding="utf-8")
        env = codex_environment(parent_env, home=str(home), tmpdir=str(tmp), codex_home=str(codex_home))
        view = SandboxView(cwd=tmp, read_only=command_paths(str(binary), env.get("PATH")),
                           writable=(home, tmp, codex_home), uid=SANDBOX_UID)
        try:
            argv = contain(containment, view, [str(binary), *arguments])
        except ContainmentError as error:
            raise AgentBinaryError(str(error)) from None
        result = run_bounded(argv, env, tmp, SUBCOMMAND_TIMEOUT_S, SUBCOMMAND_OUTPUT_LIMIT)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        release(scratch)
    if not result.started or result.timed_out or result.truncated or result.exit_code != 0:
        raise AgentBinaryError(f"{binary} {' '.join(arguments)} failed (exit {result.exit_code})")
    return result.stdout.decode("utf-8", "replace")
