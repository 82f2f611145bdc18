"""``codex features list`` under a run's configuration, read once per run for the ledger (issue 21 item 2).

Codex 0.171.0 turns many features on by default; the generated ``config.toml`` switches off those
outside read-only repository work (``transports.codex_args.DISABLED_FEATURES``). What stays on is
recorded: the pinned binary runs ``features list`` with a private ``CODEX_HOME`` holding the
control arm's configuration (the treatment arm's differs only by its MCP table), contained and
with the allowlisted environment like an attempt.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from agentstudy.io.agent_binary import AgentBinaryError
from agentstudy.transports.cli import CliSettings
from agentstudy.transports.codex import provider_for
from agentstudy.transports.codex_args import config_toml
from agentstudy.transports.codex_subcommand import run_codex_subcommand


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
    text = config_toml(model=settings.model, provider=provider_for(settings), mcp=None)
    return parse_features(run_codex_subcommand(settings.binary, settings.containment, text, ("features", "list"),
                                               parent_env, home_root, "codex-features"))
