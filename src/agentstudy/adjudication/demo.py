"""``agentstudy demo --adjudicate``: the blind adjudication of the demo's pilot, the real agent, zero spend.

The demo has built the example study under ``directory/study`` and written its ledger; this
adjudicates the ledger's completed observations with the real binary of the demo's agent (Claude Code,
Codex or Gemini CLI; issue 45) against that agent's scripted server running the key-term adjudicator
policy. The companion is written next to the ledger
(``ledger.adjudication.json``). No credential is read; the child gets a dummy token and a
private HOME.
"""

from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path

from agentstudy.adjudication.blinding import new_seed
from agentstudy.adjudication.companion import AdjudicationProgress, AdjudicationSummary, SilentAdjudicationProgress
from agentstudy.adjudication.ledger_view import LedgerError, minimal_view, read_ledger_bytes
from agentstudy.adjudication.run import AdjudicationRefused, AdjudicationRequest, run_adjudication
from agentstudy.agents.registry import DEFAULT_AGENT, agent_cli
from agentstudy.io.claude_cli import project_root
from agentstudy.io.containment import ContainmentMode
from agentstudy.protocol.manifest import load_manifest
from agentstudy.protocol.mcp_spec import McpServerSpec
from agentstudy.rehearsal.adjudicator_policy import adjudicator_reply
from agentstudy.transports.cli import CliSettings

DEMO_ADJUDICATION_CAP_USD = Decimal("1.00")
DEMO_ITEM_BUDGET_USD = Decimal("0.10")
NO_MCP_SERVER = McpServerSpec(name="none", command=("none",))
"""The adjudicator arm never starts an MCP server (``--mcp-config {"mcpServers":{}}``); this only fills the setting."""


def default_companion_path(ledger: Path) -> Path:
    """``ledger.adjudication.json`` for ``ledger.json`` (any other name gets ``.adjudication.json`` appended)."""
    stem = ledger.name[: -len(".json")] if ledger.name.endswith(".json") else ledger.name
    return ledger.with_name(f"{stem}.adjudication.json")


def run_demo_adjudication(
    directory: Path, binary: Path, ledger: Path, progress: AdjudicationProgress | None = None,
    seed: int | None = None, containment: ContainmentMode = "bwrap", cli_version: str | None = None,
    agent: str = DEFAULT_AGENT,
) -> AdjudicationSummary:
    """Adjudicate the demo ledger at zero spend; the companion is ``default_companion_path(ledger)``.

    Args:
        directory: the demo directory (the example study is ``directory/study``).
        binary: the adjudicator agent's executable.
        ledger: the demo's ledger file (read, never modified).
        progress: a watcher (default silent).
        seed: the blinding seed (default fresh, recorded in the companion).
        containment: how the adjudicator attempts are contained (issue 15).
        cli_version: the version ``binary`` must report (default the agent's pin).
        agent: the adjudicator agent (``agents.registry``): its rehearsal model against its own scripted server.

    Raises:
        LedgerError, AdjudicationRefused, OutputPathError: refused before anything was written.
    """
    data, document, kind = read_ledger_bytes(ledger)
    if kind != "minimal-study":
        raise LedgerError("the demo adjudicates minimal-study ledgers only")
    view = minimal_view(ledger, data, document)
    study = directory / "study"
    loaded = load_manifest(study / "manifest.json")
    roots = {name: study / name for name in loaded.manifest.repositories if (study / name).is_dir()}
    if not roots:
        raise AdjudicationRefused(f"no example corpora under {study}")
    chosen = agent_cli(agent)
    with chosen.rehearsal_server(0, policy=adjudicator_reply) as server:
        request = AdjudicationRequest(
            ledger=view,
            loaded=loaded,
            roots=roots,
            output=default_companion_path(ledger),
            settings=CliSettings(
                binary=binary,
                model=chosen.rehearsal_model,
                mcp=NO_MCP_SERVER,
                rehearsal_base_url=server.agent_base_url,
                containment=containment,
                agent=chosen.name,
            ),
            cap_usd=DEMO_ADJUDICATION_CAP_USD,
            item_budget_usd=DEMO_ITEM_BUDGET_USD,
            expected_cli_version=cli_version or chosen.pinned_version,
            seed=new_seed() if seed is None else seed,
            parent_env=dict(os.environ),
            forbidden_output_roots=(project_root(),),
            progress=progress or SilentAdjudicationProgress(),
        )
        return run_adjudication(request)
