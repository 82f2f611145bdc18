"""``agentstudy ledger FILE``: verify and summarise a controlled-study observation ledger (seed 004; digest 5.9)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from agentstudy.commands.contract_files import (
    aligned,
    allow_unverified_option,
    counts,
    emit,
    read_contract,
    table,
    text_or_json,
)
from agentstudy.protocol.controlled.ledger import ControlledStudyObservationLedgerV1
from agentstudy.protocol.controlled.summary import summarize_ledger


@click.command()
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@allow_unverified_option
@text_or_json
def ledger(file: Path, allow_unverified: bool, as_text: bool) -> None:
    """Verify a ledger and summarise it: observations by run, round, status and adjudication.

    The ledger's content hash and every observation's are checked; a mismatch is refused
    (exit 2) unless --allow-unverified, which prints the mismatches as a warning and goes on.
    """
    loaded = read_contract(file, ControlledStudyObservationLedgerV1, allow_unverified=allow_unverified)
    emit(as_text, "ledger", summarize_ledger(loaded), render_ledger)


def render_ledger(summary: dict[str, Any]) -> list[str]:
    """Aligned text lines and a per-run table of ``summarize_ledger``'s output."""
    mismatches = summary["mismatches"]
    nested = [item for item in mismatches if item["path"]]
    top_ok = not any(not item["path"] for item in mismatches)
    span = f", {summary['observedFrom']} … {summary['observedTo']}" if summary["observations"] else ""
    hashes = f"{summary['observations'] - len(nested)} verified"
    if nested:
        hashes += f", {len(nested)} NOT VERIFIED: " + "; ".join(
            f"no. {item['position']} ({item['path']}, observedAt {item['observedAt']})" for item in nested)
    rows = [
        ("Ledger", f"{summary['ledgerVersion']}, {summary['observations']} observations{span}"),
        ("Content hash", f"{summary['contentHash']}  {'verified' if top_ok else 'NOT VERIFIED'}"),
        ("Observation hashes", hashes),
        ("Status", counts(summary["byStatus"])),
        ("Adjudication", counts(summary["byAdjudication"])),
    ]
    lines = aligned(rows)
    runs = summary["runs"]
    if runs:
        lines.append("")
        lines.extend(table(
            ["round", "obs", "runs"],
            [[name, str(count), str(sum(name in run["rounds"] for run in runs))]
             for name, count in summary["byRound"].items()],
            right=frozenset({1, 2}),
        ))
        lines.append("")
        lines.extend(table(
            ["run", "round", "obs", "status", "adjudication"],
            [[run["runId"], ", ".join(run["rounds"]), str(run["observations"]), counts(run["byStatus"]),
              counts(run["byAdjudication"])] for run in runs],
            right=frozenset({2}),
        ))
    return lines
