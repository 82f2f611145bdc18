"""Run the real pinned Codex CLI once against the scripted Responses API server (issue 21).

The shared step of ``scripts/capture_codex_transcripts.py`` and the real-binary tests: a private
working tree under ``scratch`` (a ``repo`` to run in, ``home``, ``tmp`` and a ``CODEX_HOME`` with
the generated ``config.toml``), the allowlisted environment with the rehearsal provider's dummy
key, stdin closed, and ``codex exec --json`` with :func:`~agentstudy.transports.codex_args.codex_arguments`.
It is not the study transport: no bubblewrap here (a later runner wraps the same argv), and the
scratch directory must not lie under a temporary directory — Codex 0.171.0 refuses to create its
``codex-linux-sandbox`` helper alias in a ``CODEX_HOME`` below one, and every shell command then
fails (measured, docs/codex.md).
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentstudy.protocol.fault_schedule import FaultSchedule
from agentstudy.rehearsal.messages_server import RequestRecord
from agentstudy.rehearsal.policy import ScriptedReply
from agentstudy.rehearsal.responses_server import (
    REHEARSAL_KEY,
    REHEARSAL_KEY_ENV,
    ResponsesRehearsalServer,
    responses_policy,
)
from agentstudy.transports.codex_args import (
    REHEARSAL_MODEL,
    CodexMcpServer,
    RehearsalProvider,
    codex_arguments,
    codex_environment,
    config_toml,
)

__all__ = ["CodexRun", "run_codex_rehearsal"]


@dataclass(frozen=True)
class CodexRun:
    """One finished run: ``stdout`` (the JSONL stream), ``stderr``, ``exit_code``, the server's
    ``requests`` and ``paths`` (machine path -> placeholder, for sanitising what was captured)."""

    stdout: str
    stderr: str
    exit_code: int
    requests: tuple[RequestRecord, ...]
    paths: Mapping[str, str]


def run_codex_rehearsal(codex: Path, *, scratch: Path, files: Mapping[str, str], prompt: str,
                        parent_env: Mapping[str, str],
                        mcp: Callable[[Path], CodexMcpServer | None] = lambda _repo: None,
                        policy: Callable[[Mapping[str, Any]], ScriptedReply] = responses_policy,
                        fail_with_status: int | None = None, timeout_s: float = 180.0,
                        faults: FaultSchedule | None = None, max_retries: int | None = None) -> CodexRun:
    """Run ``codex`` once in a fresh tree under ``scratch`` holding ``files`` (relative path -> text).

    ``mcp`` builds the treatment arm's server from the repository path (None: control arm);
    ``policy``, ``fail_with_status`` and ``faults`` go to the :class:`ResponsesRehearsalServer`;
    ``max_retries`` bounds Codex's own retries (issue 33);
    ``timeout_s`` is in seconds. ``parent_env`` is filtered by the allowlist (its
    ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY`` never reach the child).

    Raises:
        subprocess.TimeoutExpired: the run took longer than ``timeout_s``.
        OSError: ``codex`` cannot be started.
    """
    scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="codex-run-", dir=scratch) as tmp:
        base = Path(tmp)
        repo, home, codex_home, tmpdir = base / "repo", base / "home", base / "codex-home", base / "tmp"
        for directory in (repo, home, codex_home, tmpdir):
            directory.mkdir()
        for relative, text in files.items():
            (repo / relative).parent.mkdir(parents=True, exist_ok=True)
            (repo / relative).write_text(text, encoding="utf-8")
        server = ResponsesRehearsalServer(policy=policy, fail_with_status=fail_with_status, faults=faults)
        with server:
            provider = RehearsalProvider(server.provider_base_url, REHEARSAL_KEY_ENV, max_retries=max_retries)
            (codex_home / "config.toml").write_text(config_toml(model=REHEARSAL_MODEL, provider=provider,
                                                                mcp=mcp(repo)), encoding="utf-8")
            env = codex_environment(parent_env, home=str(home), tmpdir=str(tmpdir), codex_home=str(codex_home),
                                    provider_key=(REHEARSAL_KEY_ENV, REHEARSAL_KEY))
            done = subprocess.run([str(codex), *codex_arguments(export_dir=str(repo), prompt=prompt)],
                                  stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env,
                                  timeout=timeout_s, check=False)
            requests = server.requests
        paths = {str(repo): "<repo>", str(home): "<home>", str(codex_home): "<codex-home>", str(base): "<tmp>"}
        return CodexRun(done.stdout, done.stderr, done.returncode, requests, paths)
