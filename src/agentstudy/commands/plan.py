"""``agentstudy plan FILE``: verify and describe a controlled-study run plan (seed 004; digest 5.3, 5.4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from agentstudy.commands.common import fail
from agentstudy.commands.contract_files import text_or_json


@click.command()
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--suite", "suite_path", type=click.Path(path_type=Path, dir_okay=False),
              help="The plan's task suite: also check that they match and count the selected executions.")
@text_or_json
def plan(file: Path, suite_path: Path | None, as_text: bool) -> None:
    """Verify a run plan (content hash, formats, sampling rules) and describe it.

    With --suite, the suite is verified too, the plan's taskSuiteHash and its model, scenario
    and task ids must match it, and the executions its sampling selects are counted per
    model×scenario stratum. A plan that verifies is well formed, not yet a baseline.
    """
    from agentstudy.commands.contract_files import emit, read_contract
    from agentstudy.protocol.controlled.plan import ControlledStudyRunPlanV1
    from agentstudy.protocol.controlled.selection import SelectionError, select_for_plan
    from agentstudy.protocol.controlled.suite import StudyTaskSuiteV1
    from agentstudy.protocol.controlled.summary import describe_plan
    loaded = read_contract(file, ControlledStudyRunPlanV1)
    if suite_path is None:
        description = describe_plan(loaded)
    else:
        suite = read_contract(suite_path, StudyTaskSuiteV1)
        try:
            executions = select_for_plan(loaded.model, suite.model, suite.content_hash)
        except SelectionError as error:
            fail(f"{file} does not fit {suite_path}: {error}")
        description = describe_plan(loaded, executions, suite)
    emit(as_text, "plan", description, render_plan)


def _scenario(scenario: dict[str, Any]) -> str:
    agent = f" (agent {scenario['agentId']} {scenario['agentVersion']})" if "agentId" in scenario else ""
    return f"{scenario['id']}{agent}"


def render_plan(plan: dict[str, Any]) -> list[str]:
    """Aligned text lines of ``describe_plan``'s output."""
    from agentstudy.commands.contract_files import aligned, table
    hashes, sampling, budget = plan["hashes"], plan["sampling"], plan["budget"]
    models = table(["", "", "", "", ""], [[m["id"], m["role"], f"{m['provider']} {m['model']}", m["version"],
                                           f"context {m['contextLimit']}"] for m in plan["models"]])[1:]
    strata = sampling["strata"]
    rows: list[tuple[str, str]] = [
        ("Plan", f"{plan['runId']}  (plan {plan['planVersion']}, protocol {plan['protocolVersion']}, "
                 f"doc-bridge {plan['docBridgeVersion']})"),
        ("Content hash", f"{plan['contentHash']}  {'verified' if plan['verified'] else 'NOT VERIFIED'}"),
        ("Protocol hash", hashes["protocolHash"]),
        ("Task suite hash", hashes["taskSuiteHash"]),
        ("Source revision", hashes["sourceRevisionHash"]),
        ("Configuration", hashes["configurationHash"]),
        *((("Models" if index == 0 else ""), line) for index, line in enumerate(models)),
        ("Scenarios", ", ".join(_scenario(item) for item in plan["scenarios"]) + "; network off"),
        ("Tasks", str(plan["taskCount"])),
        ("Sampling", f"{sampling['strategy']}: {sampling['sampleSize']} executions over {strata} model×scenario "
                     f"strata ({sampling['sampleSize'] // strata} each)"),
        ("", "arms: " + " vs ".join(sampling["arms"]) if "arms" in sampling else ""),
        ("Budget", f"{budget['maxTokens']} tokens, {budget['maxRuntimeMs']} ms, {budget['maxOutputBytes']} "
                   f"output bytes per attempt; at most {budget['maxAttempts']} attempt(s)"),
    ]
    rows = [row for row in rows if row != ("", "")]
    selection = plan.get("selection")
    if selection is not None:
        rows.append(("Selection", f"{selection['executions']} executions of {selection['tasks']} tasks "
                                  f"(seed {selection['seed']}); variants: "
                                  + ", ".join(f"{k} {v}" for k, v in selection["byVariant"].items())))
        strata_rows = table(["model", "scenario", "executions"],
                            [[s["modelId"], s["scenarioId"], str(s["executions"])] for s in selection["byStratum"]],
                            right=frozenset({2}))
        rows.extend(("", line) for line in strata_rows)
    return aligned(rows)
