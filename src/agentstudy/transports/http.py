"""One Messages API attempt (seed 000 ``http``; digest 2.1): a bounded agent loop with a reservation per call.

Per turn: check the five-minute deadline; build ``{model, max_tokens: 1024, temperature: 0,
messages, tools}``; reserve ``(2 x body bytes + 8,192)`` input and 1,024 output tokens at the
upper prices, or stop ``budget-exceeded`` without a request when that does not fit under the
cap; persist the reservation (the :class:`CallLedger` returns only once it is on disk); send.
A lost answer (transport error, timeout, redirect, non-2xx, not JSON) or invalid usage keeps
the reservation charged, sets ``usageComplete`` false and ends ``failed``. Valid usage settles
to the measured cost. ``end_turn`` -> ``completed`` (answer = the text blocks joined by
newlines); ``tool_use`` -> run 1 to 20 calls (deadline checked before each; failed calls are
counted) and send every result, cut to 16,000 characters, in one user message; any other stop
reason -> ``incomplete``; 8 turns without an answer -> ``incomplete``. Settlement of the
attempt's status is the runner's, through the attempt machine.

A refused request (429, 529, another 5xx, 408, 409, a connection that failed before any answer
byte) is sent again within the same reservation, as the SDK does (``transports.api_retry``:
bounded, back-off with jitter, ``retry-after`` honoured, the run's one back-off gate waited on
before every request); the result counts the retries, their wait and the statuses seen, and a
failed attempt names its ``failure_kind`` (issue 33).

A stop signal (``io.signals``) ends the attempt ``failed`` with the signal as its reason
(``stopped by SIGTERM …``): checked before each reservation and each tool call; a request in
flight is interrupted (the request is an ``interruptible`` region) and settled like a lost
answer, its whole reservation kept and ``usageComplete`` false.
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from agentstudy import __version__
from agentstudy.io.containment import NETWORK_NOT_ACHIEVED, ContainmentMode, containment_sentences
from agentstudy.io.export import CorpusBlobs
from agentstudy.io.messages_api import MessagesApiError
from agentstudy.io.signals import StopRequested, interruptible, stop_reason
from agentstudy.pricing.budget import Budget
from agentstudy.pricing.http import (
    DEFAULT_MAX_TOKENS,
    CallReservation,
    CallSettlement,
    UpperPrices,
    call_reservation,
    encode_request_body,
    reserve_call,
    settle_call,
    settle_response,
)
from agentstudy.pricing.tally import Tally
from agentstudy.protocol.arm_servers import arm_server
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP
from agentstudy.protocol.mcp_spec import McpServerSpec, ServerPaths
from agentstudy.protocol.treatment import (
    TREATMENT_LOST,
    ServerCall,
    TreatmentRecord,
    server_lost,
    server_not_ready,
    sha256_text,
    tool_set_sha256,
    treatment_record,
)
from agentstudy.transports.api_retry import (
    DEFAULT_RETRY,
    BackoffGate,
    RetryPolicy,
    RetryTally,
    failure_kind,
    send_with_retries,
)
from agentstudy.transports.http_contract import CallLedger, HttpAttemptResult, HttpStatus, Sender, ToolBox
from agentstudy.transports.http_tools import ToolSetupError, agent_tools

MAX_TURNS = 8
MAX_TOOL_CALLS_PER_TURN = 20
ATTEMPT_DEADLINE_MS = 300_000
REQUEST_TIMEOUT_CAP_MS = 60_000
TOOL_RESULT_LIMIT = 16_000
TEMPERATURE = 0
KNOWN_STOP_REASONS = frozenset({"end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal"})
UNKNOWN_TOOL = "(not offered)"
"""The by-name key of a call to a tool that was not offered (model-chosen names stay out of the ledger)."""
HTTP_AGENT_VERSION = f"agentstudy {__version__}"
"""The agent version an http observation records: the agent is our own loop (issue 28 item 2)."""

TREATMENT_CHECKED = frozenset({"completed", "incomplete"})
"""Statuses of an attempt that ran to its own end, so its treatment is judged (as the cli judges a child that
ended by itself; issue 28)."""


def request_timeout_s(remaining_ms: float) -> float:
    """Per-request timeout: ``max(1, floor(min(60,000, remaining ms)))`` milliseconds, in seconds."""
    return max(1, math.floor(min(REQUEST_TIMEOUT_CAP_MS, remaining_ms))) / 1000


def request_body(model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The request: ``{model, max_tokens: 1024, temperature: 0, messages, tools}`` (no thinking, no server tools)."""
    return {"model": model, "max_tokens": DEFAULT_MAX_TOKENS, "temperature": TEMPERATURE,
            "messages": messages, "tools": tools}


class _Attempt:
    """Running totals of one attempt (money through ``pricing`` only)."""

    def __init__(self, budget: Budget, tools: ToolBox, clock: Callable[[], float], started: float | None,
                 server: str | None = None, lost: str = TREATMENT_LOST) -> None:
        self.budget, self.tools, self.clock, self.server, self.lost_words = budget, tools, clock, server, lost
        self.server_calls: list[ServerCall] = []
        self.models: list[str] = []
        self.first_prompt: int | None = None
        self.exchange: list[bytes] = []
        self.prompt_sha256: str | None = None
        self.spend = Budget(cap=budget.cap)
        self.tally = Tally()
        self.input_tokens = self.output_tokens = self.turns = self.tool_calls = 0
        self.usage_complete = True
        self.by_name: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.started = clock() if started is None else started
        self.retry = RetryTally()
        self.lost: MessagesApiError | None = None

    def log(self, turn: int, key: str, value: Any) -> None:
        """Keep one request, response or loss of ``turn`` for the transcript."""
        line = json.dumps({"turn": turn, key: value}, ensure_ascii=False, default=str)
        self.exchange.append(line.encode("utf-8") + b"\n")

    def elapsed_ms(self) -> float:
        return (self.clock() - self.started) * 1000

    def settle(self, ledger: CallLedger, settlement: CallSettlement, reservation: CallReservation) -> None:
        self.budget = settlement.budget
        self.spend = self.spend.settle(reservation.usd, settlement.charged_usd)
        if settlement.usage is None:
            self.usage_complete = False
        else:
            if self.first_prompt is None:
                self.first_prompt = settlement.usage.input_tokens
            self.input_tokens += settlement.usage.input_tokens
            self.output_tokens += settlement.usage.output_tokens
            self.tally = self.tally.add_measured(settlement.charged_usd, None)
        ledger.settled(self.budget, settlement)

    def treatment(self) -> TreatmentRecord:
        offered = [exact for name in self.tools.names if (exact := self.tools.mcp_name(name)) is not None]
        builtin = [d for d in self.tools.definitions if self.tools.mcp_name(str(d.get("name"))) is None]
        record = treatment_record(server=self.server, offered_server_tools=offered, evidence="request",
                                  calls=self.server_calls, answering_models=self.models,
                                  first_request_input_tokens=self.first_prompt)
        return record.model_copy(update={"prompt_sha256": self.prompt_sha256, "agent_version": HTTP_AGENT_VERSION,
                                         "builtin_tools_sha256": tool_set_sha256(builtin)})

    def result(self, status: HttpStatus, reason: str | None, answer: str = "") -> HttpAttemptResult:
        kind = (failure_kind(self.lost, status == "timed-out") if status in ("failed", "timed-out") else None)
        treatment = self.treatment()
        if status in TREATMENT_CHECKED and self.server is not None and treatment.all_calls_failed:
            status, reason = "invalid-setup", self.lost_words  # the cli rule, in the cli's words
        return HttpAttemptResult(
            api_retries=self.retry.retries, api_retry_wait_ms=self.retry.wait_ms,
            api_retry_statuses=tuple(self.retry.statuses), failure_kind=kind,
            status=status, status_reason=reason, budget=self.budget, input_tokens=self.input_tokens,
            output_tokens=self.output_tokens, usage_complete=self.usage_complete, turns=self.turns,
            tool_calls=self.tool_calls, tool_calls_by_name=dict(self.by_name), tool_errors_by_name=dict(self.errors),
            tools=self.tools.names, reserved_usd=self.tally.reserved, measured_usd=self.tally.measured,
            charged_usd=self.spend.spent, wall_time_ms=round(self.elapsed_ms()),
            answer=answer if status == "completed" else "", treatment=treatment, exchange=b"".join(self.exchange),
        )


def _tool_uses(content: list[Any]) -> list[Mapping[str, Any]] | None:
    """The ``tool_use`` blocks, or ``None`` when one lacks a string ``id`` or ``name``."""
    calls = [b for b in content if isinstance(b, Mapping) and b.get("type") == "tool_use"]
    if any(not isinstance(c.get("id"), str) or not isinstance(c.get("name"), str) for c in calls):
        return None
    return calls


def _answer(content: list[Any]) -> str:
    return "\n".join(str(b["text"]) for b in content
                     if isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str))


def agent_loop(
    *, sender: Sender, tools: ToolBox, model: str, prompt: str, prices: UpperPrices, budget: Budget,
    ledger: CallLedger, clock: Callable[[], float] = time.monotonic, started: float | None = None,
    retry: RetryPolicy = DEFAULT_RETRY, gate: BackoffGate | None = None, server: str | None = None,
    lost: str = TREATMENT_LOST,
) -> HttpAttemptResult:
    """Run the bounded loop of one attempt (digest 2.1) against ``sender`` and return its result.

    ``budget`` is the run's budget before the attempt; the result carries it after. The wall
    time and the deadline run from ``started`` (``clock`` seconds: the attempt's first action,
    before its MCP server starts; issue 17 item 5), or from here when it is not given. ``retry`` bounds
    the retries of a refused request; ``gate`` is the run's one back-off (issue 33). ``server`` names the
    arm's MCP server (``None`` in the control arm): a treatment attempt that ran to its own end
    (``completed`` or ``incomplete``) with every server call errored is ``invalid-setup`` with the cli's
    problem text (``protocol.treatment.TREATMENT_LOST``; issue 28; ``lost``: the arm's words,
    ``protocol.treatment.server_lost``, issue 44).

    Raises:
        OSError: from ``ledger`` when a reservation cannot be persisted (then no request was sent).
    """
    state = _Attempt(budget, tools, clock, started, server, lost)
    state.prompt_sha256 = sha256_text(prompt)
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    definitions = tools.definitions
    offered = set(tools.names)
    for turn in range(1, MAX_TURNS + 1):
        stopped = stop_reason()
        if stopped is not None:
            return state.result("failed", f"{stopped} before turn {turn}")
        if state.elapsed_ms() >= ATTEMPT_DEADLINE_MS:
            return state.result("timed-out", f"the five-minute deadline passed before turn {turn}")
        body = request_body(model, messages, definitions)
        encoded = encode_request_body(body)
        reservation = call_reservation(encoded, DEFAULT_MAX_TOKENS, prices)
        reserved = reserve_call(state.budget, reservation)
        if reserved is None:
            return state.result("budget-exceeded", f"the reservation of turn {turn} does not fit under the cap")
        state.budget, state.spend = reserved, state.spend.reserve(reservation.usd)
        state.tally = state.tally.add_reservation(reservation.usd)
        ledger.reserved(state.budget, reservation)
        state.turns += 1
        state.log(turn, "request", body)
        try:
            with interruptible():
                response = send_with_retries(sender, encoded,
                                             request_timeout_s(ATTEMPT_DEADLINE_MS - state.elapsed_ms()),
                                             state.retry, policy=retry, gate=gate, clock=clock)
        except StopRequested as interrupted:
            state.log(turn, "lost", interrupted.reason)
            state.settle(ledger, settle_call(state.budget, reservation, None, interrupted.reason), reservation)
            return state.result("failed", f"{interrupted.reason} during the request of turn {turn}")
        except MessagesApiError as error:
            state.lost = error
            state.log(turn, "lost", f"{error.kind} {error.status}")
            state.settle(ledger, settle_call(state.budget, reservation, None, "response lost"), reservation)
            status = f" (HTTP {error.status})" if error.status is not None else ""
            return state.result("failed", f"the response of turn {turn} was lost: {error.kind}{status}")
        state.log(turn, "response", response)
        content = response.get("content")
        answered_by = response.get("model")
        if isinstance(answered_by, str) and answered_by not in state.models:
            state.models.append(answered_by)
        if isinstance(content, list):
            settlement = settle_response(state.budget, reservation, response.get("usage"))
        else:
            settlement = settle_call(state.budget, reservation, None, "content is not an array")
        state.settle(ledger, settlement, reservation)
        if settlement.usage is None or not isinstance(content, list):
            return state.result("failed", f"the response of turn {turn} is invalid: {settlement.problem}")
        stop = response.get("stop_reason")
        if stop == "end_turn":
            return state.result("completed", None, _answer(content))
        if stop != "tool_use":
            shown = stop if isinstance(stop, str) and stop in KNOWN_STOP_REASONS else "an unknown value"
            return state.result("incomplete", f"turn {turn} stopped with {shown}")
        calls = _tool_uses(content)
        if calls is None or not 1 <= len(calls) <= MAX_TOOL_CALLS_PER_TURN:
            count = "malformed" if calls is None else str(len(calls))
            return state.result("failed", f"turn {turn} asked for {count} tool calls (1 to 20 allowed)")
        messages.append({"role": "assistant", "content": content})
        results: list[dict[str, Any]] = []
        for call in calls:
            stopped = stop_reason()
            if stopped is not None:
                return state.result("failed", f"{stopped} during the tools of turn {turn}")
            if state.elapsed_ms() >= ATTEMPT_DEADLINE_MS:
                return state.result("timed-out", f"the five-minute deadline passed during the tools of turn {turn}")
            state.tool_calls += 1
            name = str(call["name"])
            key = name if name in offered else UNKNOWN_TOOL
            state.by_name[key] += 1
            outcome = tools.call(name, call.get("input"))
            if outcome.is_error:
                state.errors[key] += 1
            exact = tools.mcp_name(name) if name in offered else None
            if exact is not None:
                state.server_calls.append(ServerCall(exact, outcome.is_error, outcome.server_bytes,
                                                     server_not_ready(str(outcome.content))))
            results.append({"type": "tool_result", "tool_use_id": call["id"],
                            "content": outcome.content[:TOOL_RESULT_LIMIT], "is_error": outcome.is_error})
        messages.append({"role": "user", "content": results})
    return state.result("incomplete", f"no answer after {MAX_TURNS} turns")


@dataclass(frozen=True)
class HttpSettings:
    """Run-wide settings of the http transport: ``model``, upper ``prices``, the MCP server ``mcp``, a ``clock``,
    how the MCP server is contained and the environment its allowlist copies from."""

    model: str
    prices: UpperPrices
    mcp: McpServerSpec
    clock: Callable[[], float] = time.monotonic
    containment: ContainmentMode = "bwrap"
    parent_env: Mapping[str, str] = field(default_factory=dict)
    retry: RetryPolicy = DEFAULT_RETRY
    """How often and how a refused request is sent again (issue 33)."""
    control_mcp: McpServerSpec | None = None
    """The control arm's own server (issue 44); ``None``: the repository-only arm."""

    def arm_mcp(self, scenario: str) -> McpServerSpec | None:
        """The server ``scenario``'s arm runs (``protocol.arm_servers.arm_server``), ``None`` without one."""
        return arm_server(scenario, self.mcp, self.control_mcp)


def run_http_attempt(
    settings: HttpSettings, *, sender: Sender, scenario: str, root: Path, pin: str, prompt: str,
    budget: Budget, ledger: CallLedger, server: ServerPaths | None = None, corpus: CorpusBlobs | None = None,
    gate: BackoffGate | None = None,
) -> HttpAttemptResult:
    """Prepare the tools of ``scenario`` (a fresh MCP server in the MCP arm), run the loop, close the server.

    With ``corpus`` (a body on a Ray worker, issue 20) the repository tools read those blobs, not ``root``.
    ``gate`` is the run's one back-off (issue 33; ``None`` on a Ray worker).

    A setup failure ends the attempt ``failed`` before any request (nothing reserved); so does a
    stop signal received before the tools are prepared, or one that ended the MCP server (the
    reason then names the signal).

    Raises:
        OSError: from ``ledger`` (see :func:`agent_loop`).
    """
    stopped = stop_reason()
    if stopped is not None:
        return _not_started(budget, f"{stopped} before the attempt started", 0)
    started = settings.clock()  # wall time: the attempt's first action, the MCP server's start-up included
    try:
        spec = settings.arm_mcp(scenario)
        with agent_tools(scenario, root, pin, spec or settings.mcp, server, settings.containment,
                         settings.parent_env, corpus, served=spec is not None) as tools:
            return agent_loop(sender=sender, tools=tools, model=settings.model, prompt=prompt,
                              prices=settings.prices, budget=budget, ledger=ledger, clock=settings.clock,
                              started=started, retry=settings.retry, gate=gate,
                              server=spec.name if spec is not None else None, lost=server_lost(scenario))
    except ToolSetupError as error:
        stopped = stop_reason()
        reason = str(error) if stopped is None else f"{stopped} while the tools were prepared"
        return _not_started(budget, reason, round((settings.clock() - started) * 1000))


def _not_started(budget: Budget, reason: str, wall_time_ms: int) -> HttpAttemptResult:
    """An attempt that ended ``failed`` before its first request (nothing reserved, nothing charged), after
    ``wall_time_ms`` spent preparing its tools."""
    return HttpAttemptResult(
        status="failed", status_reason=reason, budget=budget, input_tokens=0, output_tokens=0,
        usage_complete=True, turns=0, tool_calls=0, tool_calls_by_name={}, tool_errors_by_name={}, tools=[],
        reserved_usd=Decimal(0), measured_usd=Decimal(0), charged_usd=Decimal(0), wall_time_ms=wall_time_ms,
        answer="", failure_kind="agent",
    )


HTTP_ISOLATION_ACHIEVED: tuple[str, ...] = (
    "the agent loop runs in agentstudy; its repository tools read only the pinned blobs that pass the export filter",
    "the MCP server (its arm only) is handed a read-only snapshot of the pinned corpus, with an allowlisted "
    "environment and a private HOME and TMPDIR",
)


def http_isolation(containment: ContainmentMode, scenario: str, server_notes: Sequence[str],
                   served: bool | None = None) -> dict[str, Any]:
    """The containment record fields of an http attempt (issue 15): only the MCP server is a child process;
    ``server_notes`` are the arm's server's own ``isolationNotAchieved`` sentences
    (:meth:`~agentstudy.protocol.mcp_spec.McpServerSpec.isolation_notes`), recorded when the arm runs it
    (``served``; default: the treatment's scenario does; issue 44)."""
    contained, missing = containment_sentences(containment)
    achieved = [*HTTP_ISOLATION_ACHIEVED, *(f"MCP server: {line}" for line in contained)]
    not_achieved = [f"MCP server: {line}" for line in (*missing, NETWORK_NOT_ACHIEVED)]
    if scenario == DOC_BRIDGE_MCP if served is None else served:
        not_achieved.extend(server_notes)
    return {"containment": containment, "isolationAchieved": achieved, "isolationNotAchieved": not_achieved}
