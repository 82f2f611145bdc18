"""``codex features list`` under a run's configuration, read once per run for the ledger (issue 21 item 2).

Codex 0.171.0 turns many features on by default; the generated ``config.toml`` switches off those
outside read-only repository work (``transports.codex_args.DISABLED_FEATURES``). What stays on is
recorded: the pinned binary runs ``features list`` with a private ``CODEX_HOME`` holding the
control arm's configuration (the treatment arm's differs only by its MCP table), contained and
with the allowlisted environment like an attempt.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

from agentstudy.io.agent_binary import AgentBinaryError
from agentstudy.io.containment import ContainmentError, SandboxView, command_paths, contain
from agentstudy.io.process import run_bounded
from agentstudy.io.scratch import owned_mkdtemp, release
from agentstudy.transports.cli import CliSettings
from agentstudy.transports.codex import SANDBOX_UID, provider_for
from agentstudy.transports.codex_args import codex_environment, config_toml

FEATURES_TIMEOUT_S = 30.0
FEATURES_OUTPUT_LIMIT = 256 * 1024


def parse_features(text: str) -> dict[str, bool]:
    """``codex features list`` output (``NAME  STAGE...  true|false`` per line) -> name -> enabled.

    Raises:
        AgentBinaryError: a line that does not end in ``true`` or ``false``, or no line at all.
    """
    features: dict[str, bool] = {}
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if len(words) < 2 or words[-1] not in ("true", "false"):
            raise AgentBinaryError(f"codex features list printed an unreadable line {line[:80]!r}")
        features[words[0]] = words[-1] == "true"
    if not features:
        raise AgentBinaryError("codex features list printed nothing")
    return features


def codex_features(settings: CliSettings, parent_env: Mapping[str, str], home_root: Path) -> dict[str, bool]:
    """Run ``codex features list`` once with the run's control-arm ``config.toml`` (``settings.model``,
    the rehearsal or gateway provider) in a private ``CODEX_HOME`` under ``home_root`` (not a temp dir).

    Raises:
        AgentBinaryError: the child could not start, failed, timed out or printed an unreadable list.
    """
    scratch = owned_mkdtemp("codex-features", home_root)  # swept after a SIGKILL (issue 29)
    try:
        home, tmp, codex_home = scratch / "home", scratch / "tmp", scratch / "codex-home"
        for directory in (home, tmp, codex_home):
            directory.mkdir(mode=0o700)
        (codex_home / "config.toml").write_text(
            config_toml(model=settings.model, provider=provider_for(settings), mcp=None), encoding="utf-8")
        env = codex_environment(parent_env, home=str(home), tmpdir=str(tmp), codex_home=str(codex_home))
        view = SandboxView(cwd=tmp, read_only=command_paths(str(settings.binary), env.get("PATH")),
                           writable=(home, tmp, codex_home), uid=SANDBOX_UID)
        try:
            argv = contain(settings.containment, view, [str(settings.binary), "features", "list"])
        except ContainmentError as error:
            raise AgentBinaryError(str(error)) from None
        result = run_bounded(argv, env, tmp, FEATURES_TIMEOUT_S, FEATURES_OUTPUT_LIMIT)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        release(scratch)
    if not result.started or result.timed_out or result.truncated or result.exit_code != 0:
        raise AgentBinaryError(f"{settings.binary} features list failed (exit {result.exit_code})")
    return parse_features(result.stdout.decode("utf-8", "replace"))
