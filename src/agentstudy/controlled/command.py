"""``run_controlled_command``: one execution, up to the plan's attempts, one observation (seed 004; digest 5.5).

Each attempt is a fresh child (``agentstudy.io.controlled_command.run_controlled_child``) with
its own session id ``<first 32 hex of sha256-normalized-v1({runId, execution})>-<k>`` (k from
1) in ``DOC_BRIDGE_STUDY_SESSION_ID``, the allowlisted environment, the request on stdin, and
the plan's runtime and output bounds. Each attempt has its own ``ControlledAttemptMachine``;
``may_retry`` decides whether another one starts. Only the last attempt is recorded, with
adjudication ``pending`` (the caller applies the rubric). After a stop signal no attempt
starts and an interrupted one is not recorded: ``StopRequested`` is raised instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentstudy.controlled.record import (
    AttemptOutcome,
    Fallbacks,
    classify_attempt,
    context_attribution,
    observation_payload,
)
from agentstudy.fsm.controlled import ControlledAttemptMachine, may_retry
from agentstudy.io.controlled_command import BASE_ENVIRONMENT, ChildFacts, child_environment, run_controlled_child
from agentstudy.io.signals import raise_if_stopped
from agentstudy.protocol.controlled.config import ProviderPricing
from agentstudy.protocol.controlled.contracts import LoadedContract
from agentstudy.protocol.controlled.hashing import sha256_normalized_v1
from agentstudy.protocol.controlled.ledger import Observation, create_observation
from agentstudy.protocol.controlled.plan import ControlledStudyRunPlanV1

SESSION_HEX = 32


def iso_now() -> str:
    """The current UTC time as JavaScript's ``toISOString`` writes it (``2026-08-31T13:44:22.523Z``)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def session_base(run_id: str, execution: Mapping[str, Any]) -> str:
    """The first 32 hex of ``sha256-normalized-v1({runId, execution})``; attempt k uses ``<base>-<k>``."""
    return sha256_normalized_v1({"runId": run_id, "execution": dict(execution)})[:SESSION_HEX]


@dataclass(frozen=True)
class ControlledCommandRequest:
    """One execution to run (digest 5.5 request).

    Attributes:
        plan: the verified plan (run id, hash, budget, model and scenario configs).
        execution: the task execution document (``taskId`` … ``variantId``, optional ``difficulty``).
        command, args: the program and its arguments (never a shell).
        cwd: the child's working directory (the repository root).
        input: the request bytes written to stdin.
        context_bytes: bytes of context attributed to the attempt (the request size).
        env_allowlist: variables copied into the child besides ``PATH``, ``HOME``, ``TMPDIR``.
        max_runtime_ms, max_output_bytes: bounds; ``None`` means the plan's budget.
        context_tokens, context_token_method: given together, or the ``ceil(bytes / 4)`` estimate.
        round_id: the observation's ``round``.
        fallbacks: values recorded when the provider does not report them.
        pricing: the provider's USD rates, for ``agentCostUsd``.
    """

    plan: LoadedContract[ControlledStudyRunPlanV1]
    execution: dict[str, Any]
    command: str
    cwd: Path
    context_bytes: int
    args: tuple[str, ...] = ()
    input: bytes = b""
    env_allowlist: tuple[str, ...] = ()
    max_runtime_ms: int | None = None
    max_output_bytes: int | None = None
    context_tokens: int | None = None
    context_token_method: str | None = None
    round_id: str | None = None
    fallbacks: Fallbacks = field(default_factory=Fallbacks)
    pricing: ProviderPricing | None = None


@dataclass(frozen=True)
class AttemptReport:
    """What a watcher learns of one attempt: its 1-based number, session id, status and error code."""

    number: int
    session_id: str
    status: str
    error_code: str | None


@dataclass(frozen=True)
class CommandRun:
    """The recorded observation (adjudication ``pending``) and every attempt made, in order."""

    observation: Observation
    attempts: tuple[AttemptReport, ...]


def _run_attempt(request: ControlledCommandRequest, session_id: str, environ: Mapping[str, str],
                 forbidden: list[str]) -> tuple[ChildFacts, AttemptOutcome]:
    budget = request.plan.model.budget
    raise_if_stopped()
    facts = run_controlled_child(
        [request.command, *request.args],
        env=child_environment(environ, request.env_allowlist, session_id),
        cwd=request.cwd,
        request=request.input,
        max_runtime_ms=request.max_runtime_ms or budget.max_runtime_ms,
        max_output_bytes=request.max_output_bytes or budget.max_output_bytes,
    )
    raise_if_stopped()
    return facts, classify_attempt(facts, max_tokens=budget.max_tokens, forbidden_values=forbidden)


def run_controlled_command(request: ControlledCommandRequest, *, environ: Mapping[str, str],
                           clock: Callable[[], str] = iso_now,
                           on_attempt: Callable[[AttemptReport], None] | None = None) -> CommandRun:
    """Run one execution with retries and record its last attempt (see the module docstring).

    Args:
        request: what to run.
        environ: the parent environment the allowlist copies from (``os.environ`` in production).
        clock: the ``observedAt`` timestamp source.
        on_attempt: called after each attempt settles (progress; never given any output).

    Returns:
        ``CommandRun`` with the created (hashed) observation.

    Raises:
        ValueError: a context token count without a method (or the reverse), or an execution
            whose model or scenario the plan does not declare — before any child starts.
        StopRequested: a stop signal arrived before or during an attempt (nothing recorded).
    """
    context_attribution(request.context_bytes, request.context_tokens, request.context_token_method)
    plan = request.plan.model
    try:
        plan.model_config_for(request.execution["modelId"])
        plan.scenario_config_for(request.execution["scenarioId"])
    except KeyError as error:
        raise ValueError(f"the plan declares no {error.args[0]!r}") from None
    forbidden = [environ[name] for name in request.env_allowlist
                 if name in environ and name not in BASE_ENVIRONMENT]
    base = session_base(plan.run_id, request.execution)
    reports: list[AttemptReport] = []
    machine: ControlledAttemptMachine | None = None
    last: tuple[ChildFacts, AttemptOutcome] | None = None
    while may_retry(machine, len(reports), plan.budget.max_attempts):
        machine = ControlledAttemptMachine()
        session_id = f"{base}-{len(reports) + 1}"
        machine.start()
        last = _run_attempt(request, session_id, environ, forbidden)
        machine.settle(status=last[1].status, error_code=last[1].error_code)
        reports.append(AttemptReport(len(reports) + 1, session_id, machine.status, machine.error_code))
        if on_attempt is not None:
            on_attempt(reports[-1])
    assert last is not None  # may_retry always allows the first attempt
    facts, outcome = last
    payload = observation_payload(
        plan=request.plan, execution=request.execution, facts=facts, outcome=outcome,
        context_bytes=request.context_bytes, context_tokens=request.context_tokens,
        context_token_method=request.context_token_method, round_id=request.round_id,
        fallbacks=request.fallbacks, pricing=request.pricing, observed_at=clock(),
    )
    return CommandRun(create_observation(payload), tuple(reports))
