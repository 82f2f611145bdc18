"""Property tests of the http agent loop's money (issue 7; digest 2.1 steps 3-7).

For any sequence of provider answers — valid usage with any stop reason and 0 to 22 tool
calls, invalid usage, a non-array content, or a lost response — and any prices and cap:

- every request is sent only after its reservation was persisted;
- the recorded spend equals the measured costs of valid calls plus the full reservations of
  lost or invalid ones, so it is never below the sum of measured costs and never below the
  reservation of a call whose response was lost; it never passes the cap;
- tokens are the sums over valid calls only, and ``usageComplete`` is false exactly when a
  call's usage is missing; tool results sent back are at most 16,000 characters.

The sender and the tools are in-memory stand-ins (the HTTP path is tested in
``tests/test_http_transport.py``); the loop, the pricing and the budget are the real ones.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agentstudy.io.messages_api import MessagesApiError
from agentstudy.pricing.budget import Budget
from agentstudy.pricing.http import CallReservation, CallSettlement, UpperPrices
from agentstudy.transports.http import MAX_TURNS, TOOL_RESULT_LIMIT, agent_loop
from agentstudy.transports.repo_tools import ToolResult

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass(frozen=True)
class Answer:
    """One scripted provider answer: ``lost`` (raise), or a JSON answer with ``usage`` and ``content``."""

    lost: bool
    usage: Any = None
    valid_usage: bool = False
    content: Any = None
    stop: str = "end_turn"


@st.composite
def answers(draw: st.DrawFn) -> Answer:
    kind = draw(st.sampled_from(["lost", "invalid", "not-array", *["valid"] * 8]))
    if kind == "lost":
        return Answer(lost=True)
    calls = draw(st.integers(min_value=0, max_value=22))
    content: Any = [{"type": "text", "text": "t"}] + [
        {"type": "tool_use", "id": f"toolu_{i}", "name": draw(st.sampled_from(["tool", "other"])), "input": {}}
        for i in range(calls)
    ]
    stop = draw(st.sampled_from(["end_turn", "max_tokens", "stop_sequence", *["tool_use"] * 8]))
    usage: Any = {"input_tokens": draw(st.integers(0, 8192)), "output_tokens": draw(st.integers(0, 1024))}
    if kind == "invalid":
        usage = draw(st.sampled_from([
            None,
            {"output_tokens": 1},
            {"input_tokens": -1, "output_tokens": 1},
            {"input_tokens": 1, "output_tokens": 1025},
            {"input_tokens": 1, "output_tokens": 1, "cache_read_input_tokens": 3},
            {"input_tokens": 1, "output_tokens": 1, "cache_creation_input_tokens": 2},
            {"input_tokens": 1.0, "output_tokens": 1},
            {"input_tokens": 10**7, "output_tokens": 1},
        ]))
    if kind == "not-array":
        content = draw(st.sampled_from([None, "text", {"type": "text"}]))
    return Answer(lost=False, usage=usage, valid_usage=kind == "valid", content=content, stop=stop)


@dataclass
class Recorder:
    """The call ledger: notes each persisted reservation and settlement, and the spend at each."""

    events: list[tuple[str, Decimal]] = field(default_factory=list)
    reservations: list[CallReservation] = field(default_factory=list)
    cap: Decimal = Decimal(0)

    def reserved(self, budget: Budget, reservation: CallReservation) -> None:
        assert budget.spent <= budget.cap
        self.events.append(("reserved", budget.spent))
        self.reservations.append(reservation)

    def settled(self, budget: Budget, settlement: CallSettlement) -> None:
        assert budget.spent <= budget.cap
        self.events.append(("settled", budget.spent))


@dataclass
class Sender:
    """Answers from the script; checks the reservation was persisted before each request."""

    script: list[Answer]
    recorder: Recorder
    sent: list[Answer] = field(default_factory=list)
    result_lengths: set[int] = field(default_factory=set)

    def post(self, body: bytes, timeout_s: float, retry_count: int = 0) -> dict[str, Any]:
        assert self.recorder.events and self.recorder.events[-1][0] == "reserved", "reserve, persist, then send"
        assert len(self.recorder.reservations) == len(self.sent) + 1
        assert 0 < timeout_s <= 60
        for message in json.loads(body)["messages"]:
            if message["role"] == "user" and isinstance(message["content"], list):
                self.result_lengths |= {len(b["content"]) for b in message["content"] if not b["is_error"]}
        answer = self.script[len(self.sent)] if len(self.sent) < len(self.script) else Answer(
            lost=False, usage={"input_tokens": 1, "output_tokens": 1}, valid_usage=True, content=[], stop="end_turn")
        self.sent.append(answer)
        if answer.lost:
            raise MessagesApiError("transport")
        document: dict[str, Any] = {"content": answer.content, "stop_reason": answer.stop}
        if answer.usage is not None:
            document["usage"] = answer.usage
        return document


class Tools:
    """One tool ``tool`` whose result is ``size`` characters long."""

    def __init__(self, size: int) -> None:
        self.size = size

    @property
    def definitions(self) -> list[dict[str, Any]]:
        return [{"name": "tool", "description": "d", "input_schema": {"type": "object"}}]

    @property
    def names(self) -> list[str]:
        return ["tool"]

    def call(self, name: str, arguments: Any) -> ToolResult:
        if name != "tool":
            return ToolResult("error", True)
        return ToolResult("x" * self.size, False)

    def mcp_name(self, name: str) -> str | None:
        return None  # a repository tool: no MCP server in this arm


prices_st = st.builds(
    UpperPrices,
    st.decimals(min_value=Decimal("0.01"), max_value=Decimal("20"), places=2),
    st.decimals(min_value=Decimal("0.01"), max_value=Decimal("80"), places=2),
)


@SETTINGS
@given(
    script=st.lists(answers(), max_size=10),
    prices=prices_st,
    cap=st.one_of(st.decimals(min_value=Decimal("0.001"), max_value=Decimal("0.5"), places=4),
                  st.decimals(min_value=Decimal("1"), max_value=Decimal("50"), places=2)),
    spent_before=st.decimals(min_value=Decimal(0), max_value=Decimal("0.01"), places=6),
    result_size=st.sampled_from([0, 10, TOOL_RESULT_LIMIT, TOOL_RESULT_LIMIT + 1, 40_000]),
)
def test_spend_covers_every_measured_cost_and_every_lost_reservation(
    script: list[Answer], prices: UpperPrices, cap: Decimal, spent_before: Decimal, result_size: int
) -> None:
    before = Budget(cap=cap + spent_before, spent=spent_before)
    recorder = Recorder()
    sender = Sender(script, recorder)
    result = agent_loop(sender=sender, tools=Tools(result_size), model="m", prompt="question", prices=prices,
                        budget=before, ledger=recorder, clock=lambda: 0.0)
    event(f"status {result.status}, {result.turns} requests")
    million = Decimal(10**6)
    measured = sum(((Decimal(a.usage["input_tokens"]) * prices.input_usd_per_million
                     + Decimal(a.usage["output_tokens"]) * prices.output_usd_per_million) / million
                    for a in sender.sent if a.valid_usage and isinstance(a.content, list)), Decimal(0))
    kept = [r.usd for r, a in zip(recorder.reservations, sender.sent, strict=True)
            if a.lost or not a.valid_usage or not isinstance(a.content, list)]
    lost = [r.usd for r, a in zip(recorder.reservations, sender.sent, strict=True) if a.lost]
    spent = result.budget.spent - spent_before
    assert spent == measured + sum(kept, Decimal(0))
    assert spent >= measured and all(spent >= reservation for reservation in lost)
    assert result.charged_usd == spent and result.measured_usd == measured
    assert result.budget.spent <= result.budget.cap and result.budget.open_usd == 0
    assert result.usage_complete == (not kept)
    valid = [a for a in sender.sent if a.valid_usage and isinstance(a.content, list)]
    assert result.input_tokens == sum(a.usage["input_tokens"] for a in valid)
    assert result.output_tokens == sum(a.usage["output_tokens"] for a in valid)
    assert result.turns == len(sender.sent) <= MAX_TURNS
    assert sender.result_lengths <= {min(result_size, TOOL_RESULT_LIMIT)}, "results are cut to 16,000 characters"
    assert len(recorder.reservations) == len(sender.sent), "one request per persisted reservation, no other"
    if result.status != "completed":
        assert result.answer == ""
