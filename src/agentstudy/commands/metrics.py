"""``agentstudy metrics LEDGER``: the controlled-study metrics report (seed 004; digest 5.11).

Exit codes: 0 the report was printed and no comparison regressed (or ``--allow-regressions``);
1 the report was printed and at least one comparison regressed; 2 bad input.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from agentstudy.commands.common import EXIT_BLOCKED, EXIT_OK
from agentstudy.commands.contract_files import allow_unverified_option
from agentstudy.protocol.controlled.metric_scopes import SCOPES

if TYPE_CHECKING:
    from agentstudy.protocol.controlled.observation import ControlledStudyObservationV1 as Obs

DEFAULT_TEXT_SCOPES = ("aggregate", "model", "scenario")


def metrics_report(ledger_path: Path, *, allow_unverified: bool = False, baseline_round: str | None = None,
                   current_round: str | None = None, baseline_run_id: str | None = None,
                   current_run_id: str | None = None) -> dict[str, Any]:
    """Read a ledger (verified, or with a warning under ``allow_unverified``) and compute its report.

    Exits 2 with one line when the ledger cannot be read or does not verify (without
    ``allow_unverified``).
    """
    return metrics_and_observations(ledger_path, allow_unverified=allow_unverified, baseline_round=baseline_round,
                                    current_round=current_round, baseline_run_id=baseline_run_id,
                                    current_run_id=current_run_id)[0]


def metrics_and_observations(ledger_path: Path, *, allow_unverified: bool = False, baseline_round: str | None = None,
                             current_round: str | None = None, baseline_run_id: str | None = None,
                             current_run_id: str | None = None) -> tuple[dict[str, Any], list[Obs]]:
    """:func:`metrics_report` and the ledger's observations it was computed from (for the controlled report).

    Exits 2 as :func:`metrics_report`.
    """
    from agentstudy.commands.contract_files import read_contract
    from agentstudy.controlled.metrics_report import calculate_study_metrics
    from agentstudy.protocol.controlled.ledger import ControlledStudyObservationLedgerV1
    loaded = read_contract(ledger_path, ControlledStudyObservationLedgerV1, allow_unverified=allow_unverified)
    source = {"ledgerContentHash": loaded.content_hash, "verified": loaded.verified,
              "unverifiedObservations": [item.position for item in loaded.mismatches if item.path]}
    observations = list(loaded.model.observations)
    return calculate_study_metrics(observations, baseline_round=baseline_round, current_round=current_round,
                                   baseline_run_id=baseline_run_id, current_run_id=current_run_id,
                                   source=source), observations


def _rate(value: Any) -> str:
    return "—" if value is None else f"{value:.2f}"


def _number(value: Any) -> str:
    if value is None:
        return "—"
    return f"{value:.6f}".rstrip("0").rstrip(".") if isinstance(value, float) else str(value)


def render_metrics(report: dict[str, Any], scopes: tuple[str, ...] = DEFAULT_TEXT_SCOPES) -> list[str]:
    """Text lines: totals, rounds, comparison statuses and regressions, then a table of the chosen scopes."""
    from agentstudy.commands.contract_files import aligned, counts, table
    from agentstudy.controlled.metrics_report import regressions_of
    source = report.get("source", {})
    unverified = source.get("unverifiedObservations", [])
    statuses: dict[str, int] = {}
    for item in report["comparisons"]:
        statuses[item["status"]] = statuses.get(item["status"], 0) + 1
    regressed = [f"{item['scope']} {item['key']}: {', '.join(item['regressions'])}" for item in regressions_of(report)]
    rows = [
        ("Metrics", f"{report['metricsVersion']}: {report['observationCount']} observations, "
                    f"{len(report['runIds'])} run ids, {len(report['rounds'])} rounds"),
        ("Report hash", report["contentHash"]),
        ("Ledger", f"{source.get('ledgerContentHash', '?')}  " + (
            "verified" if source.get("verified", True) else
            f"NOT VERIFIED (observations {', '.join(str(n) for n in unverified)})")),
        ("Status", counts(report["byStatus"])),
        ("Adjudication", counts(report["byAdjudication"])),
        ("Compared", f"baseline {report['baselineRound'] or '—'} vs current {report['currentRound'] or '—'}"),
        ("Comparisons", counts(statuses)),
        *(("Regressed" if index == 0 else "", line) for index, line in enumerate(regressed[:20])),
    ]
    if len(regressed) > 20:
        rows.append(("", f"… and {len(regressed) - 20} more (--json lists all)"))
    lines = aligned(rows)
    header = ["scope", "key", "round", "obs", "done", "adj", "self-succ", "adj-succ", "prov tok", "est tok",
              "p95 ms", "agent USD", "missing"]
    body = []
    for group in report["groups"]:
        if group["scope"] not in scopes:
            continue
        m = group["metrics"]
        body.append([group["scope"], group["key"], group["round"], str(m["observationCount"]),
                     _rate(m["completedRate"]), _rate(m["adjudicatedRate"]), _rate(m["successRate"]),
                     _rate(m["adjudicatedSuccessRate"]), _number(m["providerTokens"]), _number(m["estimatedTokens"]),
                     _number(m["latencyP95Ms"]), _number(m["agentCostUsd"]), str(len(m["missingMetrics"]))])
    if body:
        lines += ["", *table(header, body, right=frozenset(range(3, 13)))]
    lines += ["", *report["limitations"]]
    return lines


@click.command("metrics")
@click.argument("ledger", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--text/--json", "as_text", default=True, show_default=True,
              help="Aligned text for a reader, or the whole content-hashed report as JSON.")
@click.option("--allow-regressions", is_flag=True, help="Exit 0 even when a comparison regressed.")
@allow_unverified_option
@click.option("--baseline-round", help="Round to compare from (default: `baseline`, else the first in order).")
@click.option("--current-round", help="Round to compare to (default: the last other round in order).")
@click.option("--baseline-run-id", help="Within the baseline round, keep only this run id.")
@click.option("--current-run-id", help="Within the current round, keep only this run id.")
@click.option("--scope", "scopes", type=click.Choice(SCOPES), multiple=True,
              help="Scopes shown in the text table (repeatable; default: aggregate, model, scenario).")
def metrics(ledger: Path, as_text: bool, allow_regressions: bool, allow_unverified: bool, baseline_round: str | None,
            current_round: str | None, baseline_run_id: str | None, current_run_id: str | None,
            scopes: tuple[str, ...]) -> None:
    """Compute the metrics of a controlled-study LEDGER by task, repository, category, difficulty,
    model, scenario, replicate and overall, per round, and compare two rounds.

    Rates carry Wilson 95 % intervals; missing values stay missing (missingMetrics). The
    report is content-hashed. Exit 1 when a comparison regressed, unless --allow-regressions.
    """
    from agentstudy.controlled.metrics_report import regressions_of
    from agentstudy.protocol.controlled.hashing import js_json
    report = metrics_report(ledger, allow_unverified=allow_unverified, baseline_round=baseline_round,
                            current_round=current_round, baseline_run_id=baseline_run_id,
                            current_run_id=current_run_id)
    regressed = bool(regressions_of(report))
    if as_text:
        click.echo("\n".join(render_metrics(report, scopes or DEFAULT_TEXT_SCOPES)))
    else:
        click.echo(js_json({"ok": allow_regressions or not regressed, "metrics": report}, indent=2))
    if regressed:
        click.echo(f"agentstudy: {len(regressions_of(report))} comparison(s) regressed"
                   + (" (allowed)" if allow_regressions else ""), err=True)
    sys.exit(EXIT_OK if allow_regressions or not regressed else EXIT_BLOCKED)
