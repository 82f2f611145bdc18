"""Ledger steps shared by the minimal runner's transports (seed 000 ledger; digest 4.1 and 4.3).

Timestamps, the ``budget`` block from the pricing state, the open-reservation marker, and the
two ways a run closes its ledger: normally (the run machine's final state) or on an error or a
stop signal (``blocked``, with a reason telling the operator to review the budget, or naming
the signal: ``stopped by SIGTERM``). The caller passes a ``save`` function that persists the
ledger document (a checkpoint) and the ``LedgerFile``.

A checkpoint that fails (``CheckpointError``: a full disk, a read-only directory) stops the
run: the ledger is closed ``blocked`` with the failure as its stop reason. If even that write
fails, one smaller write is tried: the last document that reached the disk, closed ``blocked``
with the same reason (its open reservation, if any, stays charged in full). If that fails too,
the ledger on disk is the last good checkpoint and the reason is only on stderr.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentstudy.fsm.run import RunMachine
from agentstudy.io.ledger_journal import JournaledLedger
from agentstudy.io.ledger_store import CheckpointError, LedgerFile
from agentstudy.io.provenance import engine_revision, runner_hash
from agentstudy.io.signals import raise_if_stopped, stop_reason
from agentstudy.pricing.budget import Budget
from agentstudy.pricing.strict_cap import ReservationRule
from agentstudy.pricing.tally import Tally
from agentstudy.pricing.usd_json import optional_usd_number, usd_number
from agentstudy.protocol.arm_order import design_record, order_rule
from agentstudy.protocol.ledger_integrity import seal_ledger
from agentstudy.protocol.manifest import LoadedManifest
from agentstudy.protocol.mcp_spec import McpServerSpec
from agentstudy.protocol.prepare_steps import step_label
from agentstudy.protocol.records import MinimalLedger
from agentstudy.protocol.run_records import AdjudicationDeclaration, ArmRecord, BudgetRecord, OpenReservation
from agentstudy.protocol.schedule import ScheduleEntry
from agentstudy.protocol.study_agents import DEFAULT_AGENT
from agentstudy.protocol.study_arms import ServedArm, arms_record

if TYPE_CHECKING:
    from agentstudy.runners.preflight import McpPreflight

ERROR_STOP_REASON = "the runner stopped on an error; review the budget before any rerun"


def now_iso() -> str:
    """The current UTC time as ISO 8601 with milliseconds and ``Z`` (``2026-10-10T12:00:00.000Z``)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def budget_record(budget: Budget, tally: Tally, rule: ReservationRule | None = None) -> BudgetRecord:
    """The ledger's ``budget`` block: cap, spent (open reservations included), reserved and measured sums (USD).

    With ``rule`` (issue 19) it also records ``reservationRule``, ``worstTurnUsd`` (strict) and
    ``largestOvershootUsd`` (``tally.largest_overshoot``; ``null`` when nothing overshot).
    """
    return BudgetRecord(
        cap=usd_number(budget.cap),
        spent=usd_number(budget.spent),
        reserved=usd_number(tally.reserved),
        measured=usd_number(tally.measured),
        cumulative_cap_exceeded=budget.cap_exceeded,
        reservation_rule=rule.name if rule is not None else None,
        worst_turn_usd=optional_usd_number(rule.worst_turn_usd) if rule is not None else None,
        largest_overshoot_usd=optional_usd_number(tally.largest_overshoot) if rule is not None else None,
    )


def open_reservation(entry: ScheduleEntry, reserved_usd: Decimal, charged_usd: Decimal = Decimal(0)) -> OpenReservation:
    """The marker of an attempt whose reservation is on disk and not yet settled (USD): what is reserved
    now and what its settled calls already charged (http; 0 for cli)."""
    return OpenReservation(
        task_id=entry.task_id, scenario=entry.scenario, repetition=entry.repetition,
        reserved_usd=usd_number(reserved_usd), charged_usd=usd_number(charged_usd),
        agent=entry.agent if entry.agent != DEFAULT_AGENT else None,
    )


def checkpoint_stop_reason(error: CheckpointError) -> str:
    """The stop reason of a run whose checkpoint failed (``error.reason`` is the OS's short text)."""
    return f"a ledger checkpoint failed ({error.reason}); review the budget before any rerun"


SALVAGED_NOTE = "; this is the last checkpoint written before the failure, later state was not saved"


def _save_or_salvage(ledger: MinimalLedger, save: Callable[[MinimalLedger], None],
                     store: LedgerFile | JournaledLedger | None) -> None:
    """``save(ledger)``; if that checkpoint fails, close the last written document the same way.

    Never raises ``CheckpointError`` when ``store`` is given (the caller reports the failure);
    without a store the error propagates.
    """
    try:
        save(ledger)
        return
    except CheckpointError as error:
        if store is None:
            raise
        reason = ledger.stop_reason or checkpoint_stop_reason(error)
    try:
        last = MinimalLedger.model_validate(json.loads(store.last_written))
        last.status, last.finished_at = "blocked", ledger.finished_at
        last.stop_reason = reason + SALVAGED_NOTE
        store.checkpoint(seal_ledger(last.to_json()))
    except (CheckpointError, ValueError):
        pass  # the last good checkpoint stays; the caller prints the reason


def stopped_detail(path: Path) -> str:
    """The operator's line after a stop once the ledger exists: where it is and what it says."""
    return f"the ledger {path} is checkpointed blocked with the signal as its stop reason"


def close_on_error(
    run: RunMachine,
    ledger: MinimalLedger,
    save: Callable[[MinimalLedger], None],
    *,
    store: LedgerFile | JournaledLedger | None = None,
    error: BaseException | None = None,
) -> None:
    """After an unexpected error, a failed checkpoint or a stop signal: block the run (if still running),
    record why, and save.

    After a stop signal the reason names it (``stopped by SIGTERM``, after any reason the run had
    already recorded); a ``CheckpointError`` as ``error`` becomes the stop reason (before any
    earlier one); otherwise an earlier reason is kept, or ``ERROR_STOP_REASON`` is used. With
    ``store``, a failing save falls back to closing the last written document and never raises
    ``CheckpointError``.
    """
    if run.status == "running":
        run.block()
    stopped = stop_reason()
    if stopped is not None:
        if ledger.stop_reason is None or stopped not in ledger.stop_reason:
            ledger.stop_reason = stopped if ledger.stop_reason is None else f"{ledger.stop_reason}; then {stopped}"
    elif isinstance(error, CheckpointError):
        earlier = [ledger.stop_reason] if ledger.stop_reason else []
        ledger.stop_reason = "; ".join([checkpoint_stop_reason(error), *earlier])
    else:
        ledger.stop_reason = ledger.stop_reason or ERROR_STOP_REASON
    ledger.status = "blocked"
    ledger.finished_at = now_iso()
    _save_or_salvage(ledger, save, store)


def close_normally(ledger: MinimalLedger, run: RunMachine, save: Callable[[MinimalLedger], None]) -> None:
    """The final checkpoint of a run whose walk ended: write the status ``run.finish()`` reaches, then finish.

    The machine is still ``running`` while the final document is written, so a stop signal that
    arrived during that write is honoured: the machine is left running and ``StopRequested`` is
    raised (the caller's ``close_on_error`` blocks the run and checkpoints again).

    Raises:
        StopRequested: a stop signal arrived before or during the final checkpoint.
    """
    raise_if_stopped()
    ledger.status = "awaiting-adjudication" if run.every_attempt_completed() else "blocked"
    ledger.finished_at = now_iso()
    save(ledger)
    raise_if_stopped()
    run.finish()


def study_arms(loaded: LoadedManifest, server_name: str, treatment: ServedArm | None = None,
               control: ServedArm | None = None) -> list[ArmRecord] | None:
    """The ledger's ``arms`` for a study file's run (issue 18); ``None`` for a seed manifest (its ledger is unchanged).

    ``server_name`` is the MCP server actually run (a flag may have replaced the study file's); ``treatment`` and
    ``control`` what the run established about each arm's server (issue 44, ``protocol.study_arms.arms_record``).
    """
    if loaded.arms is None:
        return None
    return [ArmRecord.model_validate(arm) for arm in arms_record(loaded.arms, server_name, treatment, control)]


def served_arm(spec: McpServerSpec | None, checked: McpPreflight | None) -> ServedArm | None:
    """An arm's server as the ledger records it (issue 44): ``spec``'s name, command and offered tools with what
    its preflight saw (``checked``: the listing's hash, descriptions and ``serverInfo`` version); ``None`` when the
    arm runs no server."""
    if spec is None:
        return None
    return ServedArm(spec.name, tuple(spec.command), tuple(spec.read_only_tools),
                     dict(checked.descriptions) if checked is not None else {},
                     checked.tools_list_sha256 if checked is not None else None,
                     checked.server_version if checked is not None else None,
                     tuple(f"{step_label(step)} ({step.scope})" for step in spec.prepare))


def study_header(loaded: LoadedManifest, server_name: str, treatment: ServedArm | None = None,
                 control: ServedArm | None = None) -> dict[str, Any]:
    """The ledger fields every transport starts with, as ``MinimalLedger`` keywords: the pins (manifest version,
    protocol and manifest hashes, runner hash, engine revision, repositories), the study file's arms (with each
    arm's server, ``treatment`` and ``control``: :func:`served_arm`; issue 44), full attempts and analysis, the
    empty adjudication declaration, and a randomised order's ``design`` block (seed 000; issues 18, 30, 41)."""
    return {
        "version": loaded.manifest.version, "protocol_hash": loaded.protocol_hash,
        "manifest_sha256": loaded.manifest_sha256, "runner_hash": runner_hash(), "engine_revision": engine_revision(),
        "repositories": dict(loaded.manifest.repositories),
        "arms": study_arms(loaded, server_name, treatment, control),
        "full_attempts": loaded.full_attempts if loaded.arms is not None else None, "analysis": loaded.analysis,
        "adjudication": AdjudicationDeclaration(),
        "design": design_record(order_rule(loaded.manifest, loaded.protocol_hash)),
    }


def summary_names(loaded: LoadedManifest, server_name: str, control_server: str | None = None) -> dict[str, Any]:
    """``summarize``'s study keywords (issue 18): the study's full attempts, and for a study file its arm labels
    (scenario → label) and its declared ``analysis.minimumTreatmentUse`` (issues 28, 30); the server's name for
    every run (the summary names the arms and the server by it; issue 28 item 7); ``control_server``, the control arm's
    own server's name when it has one (its fidelity is judged like the treatment's; issue 44)."""
    names: dict[str, Any] = {"full_attempts": loaded.full_attempts, "server_name": server_name}
    if control_server is not None:
        names["control_server"] = control_server
    if loaded.analysis is not None:
        names["minimum_use"] = loaded.analysis.minimum_treatment_use
    if loaded.arms is not None:
        names["arm_labels"] = loaded.arms.labels()
    return names
