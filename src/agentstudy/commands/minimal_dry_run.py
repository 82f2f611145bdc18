"""``agentstudy minimal --dry-run [--probe]``: validate a study's input and print what a run would do (seed 000).

Nothing is reserved, no ledger is written and, without ``--probe``, no process is started and no
socket opened; with ``--probe`` the MCP arm's server is started once per checkout, in its sandbox,
as the run's preflight does (``runners.server_probe``). Bad input exits 2 with one line.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from agentstudy.commands.common import check_new_output, fail

if TYPE_CHECKING:
    from agentstudy.agents.base import AgentCli
    from agentstudy.io.containment import ContainmentMode
    from agentstudy.protocol.manifest import LoadedManifest
    from agentstudy.protocol.mcp_spec import McpServerSpec
    from agentstudy.protocol.schedule import Mode, ScheduleEntry
    from agentstudy.protocol.sequential_plan import SequentialPlan

__all__ = ["DryRunRequest", "print_dry_run"]


@dataclass(frozen=True)
class DryRunRequest:
    """What ``--dry-run`` checks: the loaded study, its selected ``schedule``, the MCP ``spec``, the
    transport and agent, the money flags as given (``money``: budget, per-attempt limit, input and
    output USD per million; each ``None`` when not given), the output path and ``--root`` checkouts,
    and whether to ``probe`` the MCP server under ``containment``."""

    loaded: LoadedManifest
    mode: Mode
    schedule: tuple[ScheduleEntry, ...]
    spec: McpServerSpec
    transport: str
    agent: AgentCli
    agent_explicit: str | None
    model: str | None
    money: tuple[str | None, str, str | None, str | None]
    rehearsal: bool
    concurrency: int
    strict_cap: bool
    output: Path | None
    roots: dict[str, Path]
    probe: bool
    containment: ContainmentMode
    sequential: SequentialPlan | None = None
    """A sequential design's plan (issue 35): the dry run prints it (``sequential``)."""
    control: McpServerSpec | None = None
    """The control arm's own server (issue 44): the dry run names it in ``arms``."""


def print_dry_run(request: DryRunRequest) -> None:
    """Check every flag that is given and print the plan as one JSON line on stdout.

    The line holds ``protocolHash``, ``mode``, ``attempts``, ``scenarios`` (attempts per arm),
    ``transport`` (and ``agent`` for cli), ``repositoriesChecked``, ``networkCalls`` and
    ``claudeProcesses`` (both 0), ``budget`` (the reservation rule, USD), ``mcpServer`` and, for a
    study file, ``arms``; with ``probe`` also ``mcpProbe`` (the live tools, also printed on stderr).
    Exits 2 with one line on bad input (``commands.common.fail``).
    """
    from agentstudy.commands.agent_options import agent_binary, require_agent_price
    from agentstudy.commands.minimal_inputs import money_flags, require_model, reservation_rule, rule_json
    from agentstudy.io.claude_cli import project_root
    from agentstudy.protocol.study_arms import ServedArm, arms_record
    from agentstudy.runners.preflight import PreflightError, check_corpus_roots
    loaded, transport, model = request.loaded, request.transport, request.model
    if transport == "cli":
        agent_binary(request.agent, request.agent_explicit)
    if model is not None:
        require_model(model)
        if transport == "cli":
            require_agent_price(request.agent, model, f"--model {model.strip()}")
    budget_usd, attempt_budget_usd, input_usd, output_usd = request.money
    given = money_flags(loaded, request.mode, transport, model, budget_usd, attempt_budget_usd, input_usd,
                        output_usd, required=False, rehearsal=request.rehearsal, concurrency=request.concurrency)
    rule = reservation_rule(transport, model.strip() if model else None, given, strict=request.strict_cap)
    if request.output is not None:
        check_new_output("--output", request.output, (*request.roots.values(), project_root()))
    try:
        checked = check_corpus_roots(loaded.manifest, request.roots)
    except PreflightError as error:
        fail(str(error))
    schedule, spec = request.schedule, request.spec
    report: dict[str, Any] = {
        "protocolHash": loaded.protocol_hash,
        "mode": request.mode,
        "attempts": len(schedule),
        "scenarios": {s: sum(e.scenario == s for e in schedule) for s in loaded.manifest.scenarios},
        "transport": transport,
        **({"agent": request.agent.name} if transport == "cli" else {}),
        "repositoriesChecked": checked,
        "networkCalls": 0,
        "claudeProcesses": 0,
        "budget": rule_json(rule),
    }
    report["mcpServer"] = {"name": spec.name, "tools": list(spec.read_only_tools), "probe": spec.probe_tool,
                           "probeArguments": dict(spec.probe_arguments)}
    if loaded.arms is not None:
        control = request.control
        report["arms"] = arms_record(loaded.arms, spec.name, control=None if control is None else ServedArm(
            control.name, tuple(control.command), tuple(control.read_only_tools)))
    plan = request.sequential
    if plan is not None:
        from agentstudy.protocol.sequential import SIDEDNESS

        report["sequential"] = {"maxTasks": plan.design.max_tasks, "alpha": plan.design.alpha,
                                "futility": plan.design.futility, "metric": plan.metric,
                                "betterWhen": plan.better_when, "seed": plan.seed, "taskOrder": list(plan.task_order),
                                "construction": plan.design.construction,
                                "sidedness": SIDEDNESS[plan.design.construction], "betSize": plan.design.bet_size}
    if request.probe:
        report["mcpProbe"] = _probe(request)
    click.echo(json.dumps(report, separators=(",", ":")))


def _probe(request: DryRunRequest) -> dict[str, Any]:
    """``--dry-run --probe``: the server's tools (printed on stderr); exit 2 with the server's own words on failure."""
    from agentstudy.commands.agent_options import agent_binary
    from agentstudy.commands.view import print_server_tools
    from agentstudy.io.agent_binary import AgentBinaryError
    from agentstudy.runners.preflight import PreflightError
    from agentstudy.runners.server_probe import probe_servers
    try:
        server = probe_servers(request.spec, request.loaded.manifest, request.schedule, request.roots,
                               request.containment, os.environ, request.control)
    except PreflightError as error:
        fail(f"MCP probe failed, nothing reserved or written: {error}")
    print_server_tools(server)
    if request.transport == "cli":
        annotations = {str(tool["name"]): tool["annotations"] for tool in server["tools"]}
        try:
            problems = request.agent.tool_set_problems(agent_binary(request.agent, request.agent_explicit),
                                                       request.containment, request.spec, annotations, os.environ)
        except AgentBinaryError as error:
            fail(f"{request.agent.label} could not check the MCP tools, nothing reserved or written: {error}")
        if problems:
            fail(f"{request.agent.label} would deny {len(problems)} MCP tool(s) at run time, nothing reserved or "
                 f"written: {'; '.join(problems)}")
        server["agentCheck"] = {"agent": request.agent.name, "denied": []}
    return server
