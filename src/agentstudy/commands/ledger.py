"""``agentstudy ledger FILE``: verify and summarise a ledger — a controlled-study observation ledger
(seed 004; digest 5.9) or a minimal-study run ledger (issue 16: ``protocol.ledger_integrity``)."""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import click

from agentstudy.commands.common import fail
from agentstudy.commands.contract_files import allow_unverified_option, text_or_json

OPEN_LISTED = 10
"""Open reservations named one by one in the text summary; more are counted."""


@click.command()
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@allow_unverified_option
@click.option("--rebuilt", is_flag=True,
              help="Print the minimal-study ledger as read (snapshot + journal rebuilt) instead of a summary.")
@click.option("--close", is_flag=True,
              help="Seal a crashed run's ledger (still running, its journal verifying) as crashed: status blocked, "
                   "every observation unchanged, its open reservations counted as spent in full; the journal is "
                   "kept as FILE.journal.closed. Then --continue-from FILE continues it. Only for a run whose "
                   "process is gone.")
@text_or_json
def ledger(file: Path, allow_unverified: bool, rebuilt: bool, close: bool, as_text: bool) -> None:
    """Verify a ledger and summarise it.

    A controlled-study ledger: observations by run, round, status and adjudication; its
    content hash and every observation's are checked.

    A minimal-study ledger (no `type`, a `minimal-study-` or `agentstudy-study-v1` version): transport, status,
    observations by status, the budget; its ledgerHash and every observationHash are checked,
    and the invariants: spent = the observations' charges + the open reservation, each task,
    scenario and repetition once, every amount finite and >= 0, the status consistent with the
    observations and the stop reason, rehearsal with the recorded base URL (loopback http).
    A crashed run leaves its last snapshot and a journal beside it (`FILE.journal`): the journal's
    hash chain is checked (a torn last line is discarded as not yet written, damage before it is
    refused, exit 2; so is a missing or emptied journal) and the ledger is verified as rebuilt;
    --rebuilt prints that ledger. A run that never closed (`running`) is summarised as crashed
    (not closed), with every open reservation: that nothing was written after its last journal
    record cannot be proven.

    A ledger that does not verify is refused (exit 2, the first problem named) unless
    --allow-unverified, which prints the problems as a warning and marks the summary NOT VERIFIED.
    """
    from agentstudy.commands.contract_files import emit, read_contract
    from agentstudy.io.ledger_journal import LedgerJournalError, describe_journal, read_ledger
    from agentstudy.io.transcripts import transcript_problems
    from agentstudy.protocol.controlled.ledger import ControlledStudyObservationLedgerV1
    from agentstudy.protocol.controlled.summary import summarize_ledger
    from agentstudy.protocol.json_input import load_json
    from agentstudy.protocol.ledger_integrity import few_problems, verify_ledger_bytes
    what = _not_a_ledger(file)
    if what is not None:
        fail(f"{file} is not a ledger: it is {what}")
    if close:
        from agentstudy.commands.ledger_close import close_crashed

        close_crashed(file)
        return
    data = _minimal_bytes(file)
    if data is None:
        loaded = read_contract(file, ControlledStudyObservationLedgerV1, allow_unverified=allow_unverified)
        emit(as_text, "ledger", summarize_ledger(loaded), render_ledger)
        return
    try:
        read = read_ledger(file, data)
    except LedgerJournalError as error:
        fail(str(error))
    data = read.data
    verification = verify_ledger_bytes(data)
    if verification.verified:  # the private transcripts beside it (issue 40): mode, no symlinks, each SHA-256
        observations = load_json(data).get("observations") or []
        extra = transcript_problems(file, [o for o in observations if isinstance(o, dict)])
        if extra:
            verification = dataclasses.replace(verification, problems=tuple(extra))
    if not verification.verified:
        strict = not verification.problems[0].startswith("the ledger is not strict JSON")
        if not (allow_unverified and strict):
            hint = "; --allow-unverified reads it anyway" if strict else ""
            fail(f"{file}: does not verify: {verification.first()}{hint}")
        click.echo(f"agentstudy: warning: unverified: {file}: {few_problems(verification.problems)}", err=True)
    if rebuilt:
        click.echo(data.decode("utf-8"), nl=False)
        return
    summary = summarize_minimal(load_json(data), verification.problems)
    summary["journal"] = describe_journal(read.journal) if read.journal is not None else None
    summary["journalRecords"] = read.journal.records if read.journal is not None else 0
    emit(as_text, "ledger", summary, render_minimal)


def _not_a_ledger(path: Path) -> str | None:
    """What the file is when it is one of our other documents a user may pass by mistake (an adjudication
    companion, a study file, a seed manifest), else ``None`` (a ledger, or something the readers refuse)."""
    from agentstudy.commands.contract_files import MAX_CONTRACT_BYTES
    from agentstudy.protocol.json_input import load_json
    from agentstudy.protocol.records import is_minimal_ledger_version
    try:
        if path.stat().st_size > MAX_CONTRACT_BYTES:
            return None
        document = load_json(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict):
        return None
    if document.get("type") == "minimal-study-adjudication":
        return ("an adjudication companion (`agentstudy report LEDGER --adjudication FILE` reads it beside "
                "its ledger)")
    if "observations" not in document and "tasks" in document and is_minimal_ledger_version(
            document.get("version")):
        return "a study file or manifest (`agentstudy study --manifest FILE --dry-run` checks it)"
    return None


_MINIMAL_MARKS = re.compile(rb'"(?:version"\s*:\s*"(?:minimal-study-|agentstudy-study-v1)'
                            rb'|(?:ledgerHash|plannedAttempts|manifestSha256|protocolHash)"\s*:)')
"""What a minimal-study ledger's text holds and a controlled-study ledger's does not: its version, or one of its
header keys (the first is in the first 200 bytes of every minimal ledger)."""
_CONTROLLED_TYPE = re.compile(rb'^\s*\{\s*"type"\s*:\s*"controlled-study-observation-ledger"')
_MINIMAL_KEYS = frozenset({"observations", "budget", "plannedAttempts"})


def _minimal_bytes(path: Path) -> bytes | None:
    """The file's bytes when it holds a minimal-study ledger, well-formed or not; ``None`` for anything else (the
    controlled path). An ill-formed one — its version gone or wrong, a field of the wrong shape, text that is not
    strict JSON (NaN, cut short) — is one too, so its problem is named as a minimal-study ledger's (issue 29),
    never as a controlled-study ledger's."""
    from agentstudy.commands.contract_files import MAX_CONTRACT_BYTES
    from agentstudy.protocol.json_input import load_json
    from agentstudy.protocol.records import is_minimal_ledger_version
    try:
        if path.stat().st_size > MAX_CONTRACT_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    try:
        document = load_json(data)  # bounded (JsonInputError is a ValueError)
    except ValueError:
        return data if _MINIMAL_MARKS.search(data) and not _CONTROLLED_TYPE.search(data) else None
    if not isinstance(document, dict) or "type" in document:
        return None
    is_minimal = is_minimal_ledger_version(document.get("version")) or document.keys() >= _MINIMAL_KEYS
    return data if is_minimal else None


def _usd(value: Any) -> Decimal | None:
    return Decimal(repr(value)) if isinstance(value, int | float) and not isinstance(value, bool) else None


def summarize_minimal(document: dict[str, Any], problems: tuple[str, ...]) -> dict[str, Any]:
    """Summarise a minimal-study ledger (read tolerantly) and the problems its verification found."""
    from agentstudy.pricing.usd_json import usd_number
    from agentstudy.protocol.arm_configurations import (
        configuration_sentences,
        configurations,
        observation_calls,
        observation_first_tokens,
    )
    from agentstudy.protocol.arm_differences import arm_differences, observation_facts
    from agentstudy.protocol.arm_names import arm_label, ledger_arm_labels, ledger_server_name
    from agentstudy.protocol.study_arms import SCENARIOS
    raw = document.get("observations")
    observations = [o for o in raw if isinstance(o, dict)] if isinstance(raw, list) else []
    budget: dict[str, Any] = document["budget"] if isinstance(document.get("budget"), dict) else {}
    opened = document.get("openReservation") if isinstance(document.get("openReservation"), dict) else None
    listed = document.get("openReservations")  # a concurrent run's (issue 19): every one is shown (issue 29)
    open_list = [each for each in listed if isinstance(each, dict)] if isinstance(listed, list) else []
    charges = [_usd(o.get("chargedUsd")) for o in observations]
    block = document.get("http") if document.get("transport") == "http" else document.get("cli")
    agents = Counter(str(o.get("agent", "claude-code")) for o in observations)  # absent: Claude Code's
    labels, server = ledger_arm_labels(document), ledger_server_name(document)
    by_scenario = dict(Counter(str(o.get("scenario")) for o in observations))
    found = configurations(document.get("arms"), observation_calls(observations),
                           observation_first_tokens(observations))
    return {
        "type": "minimal-study-ledger",
        "version": document.get("version"),
        "transport": document.get("transport"),
        "mode": document.get("mode"),
        "status": document.get("status"),
        "stopReason": document.get("stopReason"),
        "rehearsal": document.get("rehearsal"),
        "baseUrl": (block.get("apiBaseUrl") or block.get("baseUrl")) if isinstance(block, dict) else None,
        "plannedAttempts": document.get("plannedAttempts"),
        "observations": len(observations),
        "byStatus": dict(Counter(str(o.get("status")) for o in observations)),
        "byScenario": by_scenario,
        "arms": {scenario: arm_label(scenario, labels, server) for scenario in [*SCENARIOS, *by_scenario]},
        "mcpServer": server,
        "armDifferences": [*configuration_sentences(  # what the compared configurations differ in, first (issue 44)
            found, lambda scenario: arm_label(scenario, labels, server)),
            *arm_differences([observation_facts(o) for o in observations],
                             lambda scenario: arm_label(scenario, labels, server))],
        "fidelity": ledger_fidelity(document, observations, found.servers, server),
        **({"byAgent": dict(agents)} if len(agents) > 1 else {}),  # a several-agent study (issue 21)
        "budget": {key: budget.get(key) for key in ("cap", "spent", "reserved", "measured", "cumulativeCapExceeded")}
        | {key: budget[key] for key in ("reservationRule", "worstTurnUsd", "largestOvershootUsd") if key in budget},
        "chargedUsd": usd_number(sum((c for c in charges if c is not None), Decimal(0))),
        "openReservation": opened,
        "openReservations": open_list,
        "openReservedUsd": usd_number(sum((_usd(each.get(key)) or Decimal(0) for each in
                                           [*([opened] if opened else []), *open_list]
                                           for key in ("reservedUsd", "chargedUsd")), Decimal(0))),
        "ledgerHash": document.get("ledgerHash"),
        "closed": document.get("status") != "running",
        "verified": not problems,
        "problems": list(problems),
    }


def ledger_fidelity(document: dict[str, Any], observations: list[dict[str, Any]], servers: Any,
                    server: str | None) -> dict[str, Any]:
    """Each arm's fidelity (``protocol.arm_fidelity``, the report's rule; issue 44): ``{"control": …, "treatment":
    …}`` (``ArmFidelity.to_json``), the minimum share of attempts from the ledger's ``analysis``, and the sentence of
    an arm whose server was not delivered (``notDelivered``, ``None`` when both were)."""
    from agentstudy.protocol.arm_fidelity import ARM_WORDS, arm_not_delivered_sentence, arms_fidelity
    from agentstudy.protocol.study_arms import DOC_BRIDGE_MCP, REPOSITORY_ONLY
    from agentstudy.protocol.treatment import DEFAULT_MINIMUM_USE, not_delivered_sentence, read_treatment
    analysis = document.get("analysis")
    share = analysis.get("minimumTreatmentUse") if isinstance(analysis, dict) else None
    minimum = float(share) if isinstance(share, int | float) and not isinstance(share, bool) else DEFAULT_MINIMUM_USE
    served = servers.get(REPOSITORY_ONLY) if isinstance(servers, dict) else None
    name = server or "the server"
    control, treatment = arms_fidelity(
        [(str(o.get("scenario")), read_treatment(o.get("treatment"))) for o in observations],
        {DOC_BRIDGE_MCP: name, REPOSITORY_ONLY: str(served["name"]) if isinstance(served, dict) else None}, minimum)
    said = (not_delivered_sentence(name, treatment.using, treatment.attempts, minimum)
            if treatment.attempts and not treatment.delivered
            else arm_not_delivered_sentence(control, name) if control.delivered is False else None)
    return {**{ARM_WORDS[arm.scenario]: arm.to_json() for arm in (control, treatment)}, "notDelivered": said}


def _fidelity_rows(fidelity: dict[str, Any], arm: Any) -> list[tuple[str, str]]:
    """The ``Fidelity`` rows of ``agentstudy ledger``: per arm, its server's use (or that it runs none)."""
    from agentstudy.protocol.study_arms import DOC_BRIDGE_MCP, REPOSITORY_ONLY
    rows: list[tuple[str, str]] = []
    for scenario, key in ((REPOSITORY_ONLY, "control"), (DOC_BRIDGE_MCP, "treatment")):
        each = fidelity.get(key) or {}
        if each.get("server") is None:
            text = (f"no server; a server tool offered in {each.get('attemptsOffered', 0)} of "
                    f"{each.get('attempts', 0)} attempts")
        else:
            delivered = each.get("delivered")
            verdict = "delivered" if delivered is True else "NOT delivered" if delivered is False else "unknown"
            text = (f"{each['server']} used in {each.get('attemptsUsingServer')} of {each.get('attempts')} attempts "
                    f"({each.get('serverCalls')} calls, {each.get('serverCallErrors')} errored, "
                    f"{each.get('attemptsAllCallsFailed')} where every call failed): {verdict}")
        rows.append(("Fidelity" if not rows else "", f"{arm(scenario)}: {text}"))
    if fidelity.get("notDelivered"):
        rows.append(("", str(fidelity["notDelivered"])))
    return rows


def render_minimal(summary: dict[str, Any]) -> list[str]:
    """Aligned text lines of ``summarize_minimal``'s output."""
    from agentstudy.commands.contract_files import aligned, counts
    from agentstudy.commands.view import reservation_rule_text
    budget = summary["budget"]
    held = [*([summary["openReservation"]] if summary["openReservation"] else []), *summary["openReservations"]]
    arms = summary["arms"]
    def arm(scenario: Any) -> str:
        return str(arms.get(scenario, scenario))
    open_text = "; ".join(f"{each.get('taskId')} {arm(each.get('scenario'))} repetition {each.get('repetition')}: "
                          f"reserved {each.get('reservedUsd')}, charged {each.get('chargedUsd', 0)} USD (never settled)"
                          for each in held[:OPEN_LISTED]) or "none"
    if len(held) > OPEN_LISTED:
        open_text += f"; and {len(held) - OPEN_LISTED} more"
    if len(held) > 1:
        open_text = f"{len(held)} open, {summary['openReservedUsd']} USD held: {open_text}"
    rows = [
        ("Ledger", f"{summary['version']}, {summary['transport']}, {summary['mode']}, "
                   f"{summary['observations']} of {summary['plannedAttempts']} planned observations"),
        ("Status", str(summary["status"]) + (f" ({summary['stopReason']})" if summary["stopReason"] else "")
         + ("" if summary["closed"] else " — crashed (not closed)")),
        ("Rehearsal", f"{'yes' if summary['rehearsal'] is True else 'no'} (base URL {summary['baseUrl']})"),
        ("Observations", counts(summary["byStatus"])),
        ("Arms", counts({arms.get(scenario, scenario): n for scenario, n in summary["byScenario"].items()})),
        *([("Arm differences" if number == 0 else "", sentence)
           for number, sentence in enumerate(summary["armDifferences"])]
          or [("Arm differences", "none besides the server (models, agent versions, prompts, built-in tools)")]),
        *_fidelity_rows(summary.get("fidelity") or {}, arm),
        *([("Agents", counts(summary["byAgent"]))] if summary.get("byAgent") else []),
        ("Budget", f"spent {budget['spent']} of a {budget['cap']} USD cap (charges {summary['chargedUsd']}); "
                   f"reserved {budget['reserved']}, measured {budget['measured']}"),
        ("Open reservations" if len(held) > 1 else "Open reservation", open_text),
        *([("Reservation rule", reservation_rule_text(budget))] if budget.get("reservationRule") else []),
        ("Ledger hash", f"{summary['ledgerHash']}  " + ("NOT VERIFIED" if not summary["verified"] else "verified"
                                                        if summary["closed"] else "verified up to its last record")),
    ]
    if summary.get("journal"):
        rows.append(("Journal", f"{summary['journal']}; the hash chain holds"))
    if not summary["closed"]:
        rows.append(("Completeness", f"the run never closed: this is its state up to its last journal record "
                                     f"({summary.get('journalRecords', 0)} records); that nothing was written "
                                     f"after it cannot be proven"))
    if summary["verified"]:
        rows.append(("Checks", "every observationHash matches; the invariants hold"
                     + ("" if summary["closed"] else " (as far as the records go)")))
    else:
        rows.extend((("NOT VERIFIED" if number == 0 else "", problem)
                     for number, problem in enumerate(summary["problems"])))
    return aligned(rows)


def render_ledger(summary: dict[str, Any]) -> list[str]:
    """Aligned text lines and a per-run table of ``summarize_ledger``'s output."""
    from agentstudy.commands.contract_files import aligned, counts, table
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
