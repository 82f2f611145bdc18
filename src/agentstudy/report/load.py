"""Read a minimal-study ledger tolerantly and join its adjudication companion.

Observations are read as JSON objects keyed by the seed's camelCase names, whatever the
transport (``cli`` or ``http``): unknown fields are ignored, a missing or ``null`` number is
missing (never zero), a present number of the wrong type is refused. The companion must be a
valid :class:`~agentstudy.protocol.adjudication.MinimalAdjudication` whose ``ledgerSha256`` is
the SHA-256 of the ledger file's bytes, and whose items point at observations with the same
task and repetition. The ``answer`` field is never read.

:func:`load_study` also verifies the ledger (:mod:`agentstudy.protocol.ledger_integrity`: its
hashes and invariants) and refuses one that does not verify, naming the first problem, unless
``allow_unverified``; the study then carries the problems and every report says so.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

from agentstudy.io.ledger_journal import LedgerJournalError, read_ledger
from agentstudy.pricing.cost import MAX_TOKENS, CacheWrites, CostProblem, ModelTokens
from agentstudy.pricing.sums import sum_usd, usd_from_json
from agentstudy.protocol.analysis import analysis_from_json
from agentstudy.protocol.arm_differences import observed_agent_version
from agentstudy.protocol.arm_names import ledger_arm_labels, ledger_server_name
from agentstudy.protocol.ledger_integrity import parse_and_verify
from agentstudy.protocol.prepare_steps import prepare_line
from agentstudy.protocol.sequential_record import SequentialRecord
from agentstudy.protocol.study_agents import observation_agent
from agentstudy.protocol.treatment import read_treatment
from agentstudy.report.containment import read_containment
from agentstudy.report.infrastructure import read_retries
from agentstudy.report.input_bytes import json_document, read_input
from agentstudy.report.load_adjudication import join_adjudication
from agentstudy.report.model import (
    Attempt,
    NotSupportedYet,
    ReportInputError,
    StoredUsage,
    Study,
)
from agentstudy.report.sequential import sequential_record
from agentstudy.stream.denials import refused_out_of_export_reads

CONTROLLED_LEDGER_TYPE = "controlled-study-observation-ledger"
HEADER_FIELDS = (
    "version", "transport", "model", "mode", "status", "plannedAttempts", "rehearsal", "startedAt", "finishedAt",
    "protocolHash", "manifestSha256", "runnerHash", "engineRevision", "engineBundleHash",
)


def _count(obs: dict[str, Any], key: str, where: str) -> int | None:
    value = obs.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
        raise ReportInputError(f"{where}: {key} is not a whole number in [0, 10**15]")
    return value


def _flag(obs: dict[str, Any], key: str, where: str) -> bool | None:
    value = obs.get(key)
    if value is not None and not isinstance(value, bool):
        raise ReportInputError(f"{where}: {key} is not true or false")
    return value


def _money(block: dict[str, Any], key: str, where: str) -> Decimal | None:
    value = block.get(key)
    if value is None:
        return None
    try:
        return usd_from_json(value, what=f"{where}: {key}")
    except ValueError as error:
        raise ReportInputError(str(error)) from None


def _text(obs: dict[str, Any], key: str, where: str) -> str:
    value = obs.get(key)
    if not isinstance(value, str) or not value:
        raise ReportInputError(f"{where}: {key} is missing or not a non-empty string")
    return value


def _usage_from_basis(basis: Any) -> StoredUsage | None:
    if not isinstance(basis, dict) or not isinstance(basis.get("models"), dict) or not basis["models"]:
        return None
    try:
        totals = {
            str(name): ModelTokens(m["inputTokens"], m["outputTokens"], m["cacheReadInputTokens"],
                                   m["cacheCreationInputTokens"])
            for name, m in basis["models"].items()
        }
        writes = CacheWrites(basis.get("cacheWrite5mTokens", 0), basis.get("cacheWrite1hTokens", 0))
        largest = basis.get("largestPromptTokens")
        prompts = (largest,) if basis.get("tierSource") == "per-message" and isinstance(largest, int) else ()
    except (CostProblem, KeyError, TypeError):
        return None
    return StoredUsage(totals, writes, prompts, "costBasis")


def _stored_usage(obs: dict[str, Any], attempt: dict[str, Any]) -> StoredUsage | None:
    from_basis = _usage_from_basis(obs.get("costBasis"))
    if from_basis is not None:
        return from_basis
    counts = [attempt["input_tokens"], attempt["output_tokens"], attempt["cache_read_tokens"],
              attempt["cache_creation_tokens"]]
    if attempt["transport"] == "http":  # the HTTP transport refuses usage with cache tokens: absent means 0
        counts[2:] = [c if c is not None else 0 for c in counts[2:]]
    if any(c is None for c in counts):
        return None
    try:
        totals = {"recorded": ModelTokens(*[int(c) for c in counts if c is not None])}
    except CostProblem:
        return None
    return StoredUsage(totals, CacheWrites(), (), "token fields")


def _reasons(obs: dict[str, Any], attempt: dict[str, Any]) -> tuple[list[str], list[str]]:
    reasons: list[str] = []
    notes: list[str] = []
    for key, label in (("statusReason", "reason"), ("setupProblem", "setup problem"), ("costProblem", "cost problem")):
        if isinstance(obs.get(key), str) and obs[key]:
            reasons.append(f"{label}: {' '.join(obs[key].split())[:200]}")
    stated = obs.get("statusReason")
    said = stated if isinstance(stated, str) else ""
    derived: list[str] = []  # what older ledgers, without statusReason, say only through these fields
    subtype = obs.get("cliSubtype")
    if isinstance(subtype, str) and subtype != "success":
        derived.append(f"CLI subtype {subtype}")
    if obs.get("isError") is True:
        derived.append("the CLI reported an error")
    exit_code = obs.get("exitCode")
    if isinstance(exit_code, int) and not isinstance(exit_code, bool) and exit_code != 0:
        derived.append(f"exit code {exit_code}")
    reasons += [text for text in derived if text not in said]
    if obs.get("cumulativeCapExceeded") is True:
        reasons.append("cumulative spend passed the cap")
    if attempt["usage_complete"] is False:
        notes.append("usage incomplete: only earlier turns' tokens are known")
    denials = obs.get("permissionDenials")
    if isinstance(denials, list) and denials:
        refused = refused_out_of_export_reads(denials)
        if refused:
            notes.append(f"{refused} refused out-of-export read(s)")
        if len(denials) > refused:
            notes.append(f"{len(denials) - refused} other permission denial(s)")
    errors = obs.get("toolErrorsByName")
    if isinstance(errors, dict) and errors:
        total = sum(v for v in errors.values() if isinstance(v, int) and not isinstance(v, bool))
        notes.append(f"{total} tool error(s)")
    return reasons, notes


def _attempt(index: int, obs: Any, default_transport: str | None, run_agent: str | None = None) -> Attempt:
    where = f"observation {index + 1}"
    if not isinstance(obs, dict):
        raise ReportInputError(f"{where} is not a JSON object")
    repetition = obs.get("repetition")
    if isinstance(repetition, bool) or not isinstance(repetition, int) or repetition < 1:
        raise ReportInputError(f"{where}: repetition is not a whole number >= 1")
    transport = obs.get("transport", default_transport)
    by_name = obs.get("toolCallsByName")
    fields: dict[str, Any] = {
        "transport": transport if isinstance(transport, str) else None,
        "input_tokens": _count(obs, "inputTokens", where),
        "output_tokens": _count(obs, "outputTokens", where),
        "cache_read_tokens": _count(obs, "cacheReadInputTokens", where),
        "cache_creation_tokens": _count(obs, "cacheCreationInputTokens", where),
        "usage_complete": _flag(obs, "usageComplete", where),
    }
    reasons, notes = _reasons(obs, fields)
    return Attempt(
        index=index,
        task_id=_text(obs, "taskId", where),
        scenario=_text(obs, "scenario", where),
        repetition=repetition,
        status=_text(obs, "status", where),
        tool_calls=_count(obs, "toolCalls", where),
        tool_calls_by_name={str(k): v for k, v in by_name.items() if isinstance(v, int) and not isinstance(v, bool)}
        if isinstance(by_name, dict) else {},
        wall_time_ms=_count(obs, "wallTimeMs", where),
        charged_usd=_money(obs, "chargedUsd", where),
        reasons=tuple(reasons),
        notes=tuple(notes),
        usage=_stored_usage(obs, fields),
        containment=read_containment(obs, fields["transport"], where),
        retries=read_retries(obs, where),
        agent=observation_agent(obs) if run_agent is None or "agent" in obs else run_agent,
        treatment=read_treatment(obs.get("treatment")),
        agent_version=observed_agent_version(obs),
        repository=repository if isinstance(repository := obs.get("repository"), str) and repository else None,
        **fields,
    )


def _header(data: dict[str, Any]) -> dict[str, str]:
    header = {key: str(data[key]) for key in HEADER_FIELDS if data.get(key) is not None}
    cli = data.get("cli")
    if isinstance(cli, dict) and isinstance(cli.get("cliVersion"), str):
        header["cliVersion"] = cli["cliVersion"]
    prices = data.get("prices")
    if isinstance(prices, dict) and {"input", "output"} <= prices.keys():
        header["upperPrices"] = f"input {prices['input']}, output {prices['output']} USD per million tokens"
    repositories = data.get("repositories")
    if isinstance(repositories, dict) and repositories:
        header["repositories"] = ", ".join(f"{name}@{str(pin)[:12]}" for name, pin in repositories.items())
    server = data.get("mcpServer")
    prepared = prepare_line(server.get("prepared")) if isinstance(server, dict) else None
    if prepared is not None:
        header["mcpPreparation"] = prepared  # issue 32: the server's preparation steps, one line
    return header


def _open_usd(opened: Any) -> Decimal | None:
    """What the open attempt holds of ``spent``: its reservation plus what its settled calls charged (http)."""
    if not isinstance(opened, dict):
        return None
    reserved = _money(opened, "reservedUsd", "openReservation")
    charged = _money(opened, "chargedUsd", "openReservation")
    return None if reserved is None else sum_usd([reserved, charged or Decimal(0)])


def parse_ledger(data: bytes, file_name: str, document: Any = None) -> Study:
    """Parse a minimal-study ledger's bytes into a :class:`Study` (no adjudication joined); ``document`` is those
    bytes already parsed (strictly, by the verifier), ``None`` to parse them here.

    Raises:
        NotSupportedYet: a controlled-study observation ledger.
        ReportInputError: not JSON, not a minimal-study ledger, a malformed observation, or
            two observations of the same agent, task, scenario and repetition.
    """
    if document is None:
        document = json_document(data, "ledger")
    if not isinstance(document, dict):
        raise ReportInputError("the ledger is not a JSON object")
    if document.get("type") == CONTROLLED_LEDGER_TYPE:
        raise NotSupportedYet("controlled-study ledgers are not supported yet: the report renders "
                              "minimal-study ledgers only (controlled metrics come with a later issue)")
    if "type" in document or not isinstance(document.get("observations"), list):
        raise ReportInputError("not a minimal-study ledger (no observations list, or a foreign type)")
    transport = document.get("transport") if isinstance(document.get("transport"), str) else None
    cli, run_agent = document.get("cli"), None  # a one-agent run of --agent codex names it in cli.agent only
    if isinstance(cli, dict) and isinstance(cli.get("agent"), dict) and isinstance(cli["agent"].get("name"), str):
        run_agent = cli["agent"]["name"]
    attempts = tuple(_attempt(i, obs, transport, run_agent) for i, obs in enumerate(document["observations"]))
    attempts = _sole_repository(attempts, document.get("repositories"))
    seen: set[tuple[str, str, int, str]] = set()
    for attempt in attempts:
        key = (attempt.task_id, attempt.scenario, attempt.repetition, attempt.agent)
        if key in seen:
            whose = f" of {key[3]}" if len({a.agent for a in attempts}) > 1 else ""
            raise ReportInputError(f"the ledger has two observations of {key[0]} {key[1]} repetition {key[2]}{whose}")
        seen.add(key)
    budget: dict[str, Any] = document["budget"] if isinstance(document.get("budget"), dict) else {}
    opened = document.get("openReservation")
    listed = document.get("openReservations")
    if opened is None and isinstance(listed, list) and listed:  # a concurrent run's (issue 19): one sum
        held = [_open_usd(each) for each in listed]
        opened = {"reservedUsd": float(sum_usd([h for h in held if h is not None]))}
    planned = document.get("plannedAttempts")
    mode, status, stop = document.get("mode"), document.get("status"), document.get("stopReason")
    return Study(
        file_name=file_name,
        sha256=hashlib.sha256(data).hexdigest(),
        header=_header(document),
        mode=mode if mode in ("pilot", "full") else None,
        status=status if isinstance(status, str) else None,
        planned=planned if isinstance(planned, int) and not isinstance(planned, bool) else None,
        rehearsal=document.get("rehearsal") is True,
        transport=transport,
        cap_usd=_money(budget, "cap", "budget"),
        spent_usd=_money(budget, "spent", "budget"),
        reserved_usd=_money(budget, "reserved", "budget"),
        measured_usd=_money(budget, "measured", "budget"),
        cumulative_cap_exceeded=_flag(budget, "cumulativeCapExceeded", "budget"),
        stop_reason=" ".join(stop.split())[:300] if isinstance(stop, str) else None,
        open_reservation_usd=_open_usd(opened),
        attempts=attempts,
        arm_labels=ledger_arm_labels(document),
        arm_records=tuple(arm for arm in document.get("arms") or [] if isinstance(arm, dict))
        if isinstance(document.get("arms"), list) else (),
        server_name=ledger_server_name(document),
        full_attempts=_full_attempts(document.get("fullAttempts")),
        reservation_rule=rule if isinstance(rule := budget.get("reservationRule"), str) else None,
        worst_turn_usd=_money(budget, "worstTurnUsd", "budget"),
        largest_overshoot_usd=_money(budget, "largestOvershootUsd", "budget"),
        analysis=analysis_from_json(document.get("analysis")),
        sequential=(record := sequential_record(document.get("sequential"))),
        **_order(document.get("design")),
        sequential_differences=_replayed(record, planned, document["observations"], document.get("continues")),
    )


def _order(design: Any) -> dict[str, Any]:
    """The ``Study`` keywords of the ledger's ``design`` block (issue 41 item 8): ``order`` and ``order_seed``
    (nothing for a ledger without one: counterbalanced)."""
    if not isinstance(design, dict) or design.get("order") != "randomized":
        return {}
    seed = design.get("orderSeed")
    return {"order": "randomized", "order_seed": seed if isinstance(seed, int) else None}


def _replayed(record: SequentialRecord | None, planned: Any, observations: list[Any],
              continues: Any = None) -> tuple[float | None, ...]:
    """The sequential run's task differences as its monitor saw them (``protocol.sequential_plan.replay``, what the
    verifier replays too: a continuation's carried observations first, its plan the chain's, issue 40); ``()`` for
    a fixed design or a block that cannot be replayed."""
    before = continues.get("completedBefore") if isinstance(continues, dict) else None
    if isinstance(planned, int) and isinstance(before, int) and not isinstance(before, bool):
        planned += before
    if record is None or not isinstance(planned, int) or record.max_tasks < 1 or planned % (2 * record.max_tasks):
        return ()
    from agentstudy.protocol.sequential_plan import replay

    try:
        return tuple(replay(record, planned // (2 * record.max_tasks), observations).differences)
    except (ValueError, TypeError):
        return ()


def _sole_repository(attempts: tuple[Attempt, ...], repositories: Any) -> tuple[Attempt, ...]:
    """A ledger pinning exactly one repository: every attempt without a recorded ``repository`` is of it (issue 41)."""
    if not isinstance(repositories, dict) or len(repositories) != 1:
        return attempts
    (name,) = repositories
    return tuple(a if a.repository is not None else replace(a, repository=str(name)) for a in attempts)


def _full_attempts(value: Any) -> int:
    """The ledger's ``fullAttempts`` (issue 18), 36 (the seed's) when absent or not a whole number >= 2."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 2 else 36


def load_study(ledger: Path, adjudication: Path | None = None, *, allow_unverified: bool = False,
               documents: list[Any] | None = None) -> Study:
    """Read and verify ``ledger`` (and join ``adjudication`` when given) from disk.

    A ledger that does not verify is read on only with ``allow_unverified``; its problems are
    then in ``Study.unverified``. ``documents``, when given, receives the ledger's parsed JSON (the
    view and the export read the observations as recorded without parsing the file twice).

    Raises:
        NotSupportedYet, ReportInputError: as :func:`parse_ledger` and :func:`join_adjudication`,
            a file that cannot be read, or (without ``allow_unverified``) a ledger that does not verify.
    """
    try:  # a crashed run's ledger is its last snapshot plus the journal beside it (issue 19)
        data = read_ledger(ledger, read_input(ledger, "ledger")).data
    except LedgerJournalError as error:
        raise ReportInputError(str(error)) from None
    document, verification = parse_and_verify(data)  # first: the one verifier every reader shares (issue 29)
    if not verification.verified and not allow_unverified:
        if isinstance(document, dict) and document.get("type") == CONTROLLED_LEDGER_TYPE:
            parse_ledger(data, ledger.name, document)  # NotSupportedYet names what it is
        raise ReportInputError(f"the ledger {ledger.name} does not verify: {verification.first()}; "
                               f"--allow-unverified reads it anyway")
    study = parse_ledger(data, ledger.name, document)  # parsed once (a 50,000-observation ledger is 219 MB)
    if documents is not None:
        documents.append(document)
    if not verification.verified:
        study = replace(study, unverified=verification.problems)
    if adjudication is None:
        return study
    return join_adjudication(study, read_input(adjudication, "adjudication companion"), adjudication.name)
