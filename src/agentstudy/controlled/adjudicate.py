"""Independent adjudication of a controlled-study ledger (seed 004; digest 5.10 "Independent").

The adjudicator is a separate process, started fresh for each selected observation, in an
empty private working directory created for it (it sees no repository and no path), with
``PATH``, ``HOME``, ``TMPDIR`` and its allowlist only, the suite's ``maxRuntimeMsPerTask`` and
its own ``maxOutputBytes``. Its stdin is ``requests.adjudicator_request`` (no paths, prompts,
raw output or credentials). Outcomes:

- the child could not start or exited non-zero → ``unavailable``; timed out → ``timed-out``;
  stdout over its bound → ``budget-exceeded``; stdout not JSON → ``invalid-output``; all of
  them, and a verdict that breaks the output schema, leave the observation ``pending`` with
  the adjudicator's actor and method and a reason naming what happened — never a success;
- a valid verdict → ``automated`` with actor, method ``independent-rubric-v1``, the provider
  config's ``configurationHash``, outcome, confidence, reason codes and token label.

Measurements always gain ``adjudicatorLatencyMs``; a valid verdict adds its measurements,
``adjudicatorInputTokens``/``adjudicatorOutputTokens``, ``adjudicatorTokenCostUnits``
(provider-labelled tokens) and ``adjudicatorCostUsd`` (pricing); a verdict's own measurements
are added but never replace one the observation already holds (ours; the original let them
overwrite, so an adjudicator could have rewritten the agent's cost). Selection walks the ledger
in order: other run ids, the first ``offset`` matching observations and those after ``limit``
pass through unchanged. The input ledger is never written: the caller persists the result. A
stop signal (``io.signals``) ends the walk with ``StopRequested``: no adjudicator starts after
it and an interrupted one's verdict is not recorded.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentstudy.controlled.ledger_file import replace_observation
from agentstudy.controlled.outputs import PROVIDER_LABEL, OutputError, parse_adjudicator_output, parse_json_object
from agentstudy.controlled.remote import AdjudicatorJob, WorkerDiedError, awaited
from agentstudy.controlled.requests import adjudicator_request, request_bytes
from agentstudy.io.controlled_command import (
    BASE_ENVIRONMENT,
    ChildFacts,
    CommandCheckError,
    check_command,
)
from agentstudy.io.signals import StopRequested, raise_if_stopped, stop_signal, terminate_children
from agentstudy.pricing.usd_json import usd_number
from agentstudy.protocol.controlled.config import AdjudicatorCli, StudyProviderCliConfigV1
from agentstudy.protocol.controlled.contracts import LoadedContract
from agentstudy.protocol.controlled.hashing import CONTENT_HASH_ALGO_KEY, CONTENT_HASH_KEY
from agentstudy.protocol.controlled.ledger import Ledger, create_observation
from agentstudy.protocol.controlled.suite import StudyTaskSuiteV1
from agentstudy.runners.executor import AttemptExecutor, WorkerDied
from agentstudy.runners.ordered_flights import Flight, drive_in_order

ADJUDICATION_METHOD = "independent-rubric-v1"
SUCCESS_REASON = "Independent adjudicator judged the anonymised, bounded candidate record against the task rubric."


class AdjudicationInputError(ValueError):
    """The adjudication cannot start: no adjudicator, a bad selection, a missing task, an oversized
    request, or a command that cannot run (nothing was started)."""


@dataclass(frozen=True)
class Selection:
    """Which observations to adjudicate: ``run_id`` (all when ``None``), skip ``offset``, at most ``limit``."""

    run_id: str | None = None
    offset: int = 0
    limit: int | None = None


@dataclass(frozen=True)
class Verdict:
    """One adjudication attempt as a watcher sees it: ledger index, task id, result and adjudication status."""

    index: int
    task_id: str
    result: str
    status: str


def selected_indexes(ledger: Ledger, selection: Selection) -> list[int]:
    """Ledger indexes to adjudicate, in ledger order (digest 5.10 selection).

    Raises:
        AdjudicationInputError: a negative offset or a limit below 1.
    """
    if selection.offset < 0 or (selection.limit is not None and selection.limit < 1):
        raise AdjudicationInputError("--offset must be 0 or more and --limit 1 or more")
    matching = [index for index, item in enumerate(ledger.model.observations)
                if selection.run_id is None or item.run_id == selection.run_id]
    chosen = matching[selection.offset:]
    return chosen if selection.limit is None else chosen[: selection.limit]


def _prepare(ledger: Ledger, suite: LoadedContract[StudyTaskSuiteV1], adjudicator: AdjudicatorCli,
             indexes: list[int]) -> dict[int, bytes]:
    tasks = {document["id"]: document for document in suite.document["tasks"]}
    requests: dict[int, bytes] = {}
    for index in indexes:
        observation = ledger.model.observations[index]
        task = tasks.get(observation.task.task_id)
        if task is None:
            raise AdjudicationInputError(f"observation {index + 1}: the suite has no task "
                                         f"{observation.task.task_id!r}")
        document = ledger.document["observations"][index]
        data = request_bytes(adjudicator_request(task, observation, document.get("measurements")))
        if len(data) > adjudicator.max_input_bytes:
            raise AdjudicationInputError(f"observation {index + 1}: the request is {len(data)} bytes, above the "
                                         f"adjudicator's maxInputBytes {adjudicator.max_input_bytes}")
        requests[index] = data
    return requests


def _judged(document: dict[str, Any], adjudicator: AdjudicatorCli, config_hash: str, stdout: bytes,
            result: str, latency_ms: int, forbidden: list[str]) -> dict[str, Any]:
    payload = {key: value for key, value in document.items() if key not in (CONTENT_HASH_KEY, CONTENT_HASH_ALGO_KEY)}
    measurements: dict[str, Any] = {**payload.get("measurements", {}), "adjudicatorLatencyMs": latency_ms}
    payload["measurements"] = measurements
    pending = {"status": "pending", "actor": adjudicator.id, "method": ADJUDICATION_METHOD}
    if result != "completed":
        payload["adjudication"] = {**pending, "reason": f"Independent adjudicator {result}; the observation "
                                                        f"stays pending."}
        return payload
    try:
        answer = parse_json_object(stdout)
        verdict = parse_adjudicator_output(answer, forbidden)
    except OutputError:
        payload["adjudication"] = {**pending, "reason": "Independent adjudicator returned invalid output; the "
                                                        "observation stays pending."}
        return payload
    for name, value in answer.get("measurements", {}).items():
        measurements.setdefault(name, value)  # the provider's record is evidence: never overwritten
    for key, count in (("adjudicatorInputTokens", verdict.input_tokens),
                       ("adjudicatorOutputTokens", verdict.output_tokens)):
        if count is not None:
            measurements[key] = count
    if verdict.token_method == PROVIDER_LABEL and None not in (verdict.input_tokens, verdict.output_tokens):
        measurements["adjudicatorTokenCostUnits"] = (verdict.input_tokens or 0) + (verdict.output_tokens or 0)
    if adjudicator.pricing is not None:
        cost = adjudicator.pricing.cost_usd(verdict.input_tokens, verdict.output_tokens,
                                            (verdict.measurements or {}).get("cachedInputTokens"))
        if cost is not None:
            measurements["adjudicatorCostUsd"] = usd_number(cost)
    adjudication: dict[str, Any] = {"status": "automated", "actor": adjudicator.id, "method": ADJUDICATION_METHOD,
                                    "configurationHash": config_hash, "outcome": verdict.outcome,
                                    "confidence": answer["confidence"], "reasonCodes": answer["reasonCodes"]}
    if verdict.token_method is not None:
        adjudication["tokenMethod"] = verdict.token_method
    adjudication["reason"] = SUCCESS_REASON
    payload["adjudication"] = adjudication
    return payload


def _result(ended_by: str, exit_code: int | None, stdout: bytes) -> str:
    if ended_by == "spawn-error" or (ended_by == "exit" and exit_code != 0):
        return "unavailable"
    if ended_by == "timeout":
        return "timed-out"
    if ended_by == "output-limit":
        return "budget-exceeded"
    try:
        parse_json_object(stdout)
    except OutputError:
        return "invalid-output"
    return "completed"


@dataclass(frozen=True)
class PreparedAdjudication:
    """Everything checked before the first adjudicator starts: the inputs, the resolved command,
    the selected ledger indexes and their request bytes, and the values never to be recorded."""

    ledger: Ledger
    suite: LoadedContract[StudyTaskSuiteV1]
    config_hash: str
    adjudicator: AdjudicatorCli
    command: str
    requests: dict[int, bytes]
    forbidden: list[str]


def prepare_adjudication(ledger: Ledger, suite: LoadedContract[StudyTaskSuiteV1],
                         config: LoadedContract[StudyProviderCliConfigV1], selection: Selection, *,
                         environ: Mapping[str, str], base: Path) -> PreparedAdjudication:
    """Check everything before any adjudicator starts.

    Args:
        ledger: the verified input ledger. suite: its verified task suite.
        config: the verified provider config; it must declare ``adjudicator``.
        selection: which observations (see ``Selection``).
        environ: the parent environment (``PATH`` and the allowlist).
        base: the folder a relative adjudicator command is resolved against.

    Raises:
        AdjudicationInputError: no adjudicator, a bad selection, a missing task, an oversized
            request or a command that cannot run.
        ContentHashError: an unverified ledger.
    """
    ledger.require_verified()
    adjudicator = config.model.adjudicator
    if adjudicator is None:
        raise AdjudicationInputError("the provider config declares no adjudicator")
    requests = _prepare(ledger, suite, adjudicator, selected_indexes(ledger, selection))
    try:
        command = str(check_command(adjudicator.command, base, environ.get("PATH")))
    except CommandCheckError as error:
        raise AdjudicationInputError(f"adjudicator: {error}") from None
    forbidden = [environ[name] for name in adjudicator.env_allowlist
                 if name in environ and name not in BASE_ENVIRONMENT]
    return PreparedAdjudication(ledger, suite, config.content_hash, adjudicator, command, requests, forbidden)


def _child(prepared: PreparedAdjudication, request: bytes) -> AdjudicatorJob:
    """The adjudicator child of one observation (a ``WorkerJob``: it runs here or on a Ray worker, issue 20)."""
    adjudicator = prepared.adjudicator
    return AdjudicatorJob(prepared.command, tuple(adjudicator.args), tuple(adjudicator.env_allowlist), request,
                          prepared.suite.model.max_runtime_ms_per_task, adjudicator.max_output_bytes)


def _judge(prepared: PreparedAdjudication, index: int, facts: ChildFacts) -> tuple[str, dict[str, Any]]:
    """The judged payload of observation ``index`` from its adjudicator child's facts (pure; in the driver)."""
    result = _result(facts.ended_by, facts.exit_code, facts.stdout)
    return result, _judged(prepared.ledger.document["observations"][index], prepared.adjudicator,
                           prepared.config_hash, facts.stdout, result, facts.duration_ms, prepared.forbidden)


def _judge_one(prepared: PreparedAdjudication, index: int, request: bytes,
               environ: Mapping[str, str]) -> tuple[str, dict[str, Any]]:
    """One adjudicator child and its judged payload (pure but for the child); runs in a worker when concurrent."""
    facts = _child(prepared, request).run_with(environ)
    raise_if_stopped()
    return _judge(prepared, index, facts)


def adjudicate_ledger(prepared: PreparedAdjudication, *, environ: Mapping[str, str],
                      on_verdict: Callable[[Verdict, Ledger], None] | None = None, concurrency: int = 1,
                      executor: AttemptExecutor | None = None) -> Ledger:
    """Adjudicate the prepared observations in ledger order; return the new ledger (the input is unchanged).

    Args:
        prepared: from ``prepare_adjudication``.
        environ: the parent environment the allowlist copies from.
        on_verdict: called after each observation with its verdict and the ledger so far (to
            persist and show progress), in ledger order.
        concurrency: adjudicators run at once (issue 19; ``runners.ordered_flights``): started in
            ledger order, their verdicts applied in that order by the calling thread, so the
            result is the same as with 1. After a stop signal none starts; a running one that
            still finished is applied, an interrupted one is not.
        executor: where the children run (``controlled.remote``, issue 20); ``None`` runs them
            here. The child's facts come back and are judged here; a dead worker's observation
            stays as it was, admission stops, and ``WorkerDiedError`` ends the adjudication.

    Raises:
        StopRequested: a stop signal arrived (every verdict before it went to ``on_verdict``).
        WorkerDiedError: a Ray worker died under an adjudicator (every verdict before went out).
    """
    state = {"ledger": prepared.ledger}
    interrupted: list[StopRequested] = []
    died: list[str] = []
    death = threading.Event()

    def admit(_: int, index: int) -> Callable[[], tuple[str, dict[str, Any]]] | None:
        if stop_signal() is not None or death.is_set():
            return None
        request = prepared.requests[index]
        if executor is not None:
            return lambda: _judge(prepared, index, awaited(executor, _child(prepared, request), death))
        return lambda: _judge_one(prepared, index, request, environ)

    def record(flight: Flight[int, tuple[str, dict[str, Any]]]) -> None:
        try:
            result, payload = flight.future.result()
        except StopRequested as stop:
            interrupted.append(stop)
            return
        except WorkerDied as dead:
            died.append(f"observation {flight.item + 1}: the Ray worker of its adjudicator died ({dead}); it is "
                        "left as it was and was not run again")
            return
        index = flight.item
        state["ledger"] = replace_observation(state["ledger"], index, create_observation(payload))
        if on_verdict is not None:
            observation = state["ledger"].model.observations[index]
            on_verdict(Verdict(index, observation.task.task_id, result, observation.adjudication.status),
                       state["ledger"])

    def abort() -> None:
        if stop_signal() is None:
            terminate_children()

    drive_in_order(list(prepared.requests), concurrency=concurrency, admit=admit, record=record, abort=abort,
                   thread_name_prefix="adjudicator")
    if interrupted:
        raise interrupted[0]
    raise_if_stopped()
    if died:
        raise WorkerDiedError(died[0])
    return state["ledger"]
