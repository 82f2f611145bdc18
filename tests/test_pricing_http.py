"""The HTTP transport's per-call reservation, usage validation and release (digest 2.1 steps 3, 5-7)."""

from __future__ import annotations

from decimal import Decimal as D
from typing import Any

import pytest

from agentstudy.pricing.budget import Budget
from agentstudy.pricing.http import (
    CallUsage,
    UpperPrices,
    UsageProblem,
    call_reservation,
    encode_request_body,
    input_ceiling,
    measured_cost,
    reserve_call,
    settle_call,
    settle_response,
    validate_usage,
)

PRICES = UpperPrices(D("0.50"), D("2.50"))


def test_reservation_hand_computed() -> None:
    # 10,000 body bytes -> ceiling 2 x 10,000 + 8,192 = 28,192 input tokens.
    # (28,192 x 0.50 + 1,024 x 2.50) / 1e6 = (14,096 + 2,560) / 1e6 = 0.016656 USD.
    reservation = call_reservation(10_000, 1024, PRICES)
    assert reservation.input_ceiling == 28_192
    assert reservation.max_output_tokens == 1024
    assert reservation.usd == D("0.016656")


def test_reservation_is_exact_not_rounded() -> None:
    # 1 byte: (8,194 x 0.3 + 1 x 0.7) / 1e6 = 2,458.9 / 1e6.
    assert call_reservation(1, 1, UpperPrices(D("0.3"), D("0.7"))).usd == D("0.0024589")


def test_body_bytes_are_utf8_of_the_compact_json() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "é"}]}
    encoded = encode_request_body(body)
    assert encoded == '{"model":"m","messages":[{"role":"user","content":"é"}]}'.encode()
    assert len(encoded) == 57  # 56 characters; "é" is two UTF-8 bytes
    assert call_reservation(encoded, 1024, PRICES).input_ceiling == 2 * 57 + 8192
    with pytest.raises(ValueError):
        encode_request_body({"temperature": float("nan")})


def test_refused_when_it_does_not_fit_and_no_request_is_made() -> None:
    reservation = call_reservation(10_000, 1024, PRICES)
    assert reserve_call(Budget(D("0.016655")), reservation) is None
    budget = reserve_call(Budget(D("0.016656")), reservation)
    assert budget is not None and budget.spent == D("0.016656")


def test_valid_usage_releases_the_unused_part() -> None:
    reservation = call_reservation(10_000, 1024, PRICES)
    budget = reserve_call(Budget(D("1")), reservation)
    assert budget is not None
    settled = settle_response(budget, reservation, {"input_tokens": 9_000, "output_tokens": 300})
    # 9,000 x 0.5 + 300 x 2.5 = 4,500 + 750 -> 0.00525 USD; released 0.016656 - 0.00525.
    assert settled.charged_usd == D("0.00525")
    assert settled.released_usd == D("0.011406")
    assert settled.budget.spent == D("0.00525")
    assert settled.budget.open_usd == 0
    assert settled.usage == CallUsage(9_000, 300)
    assert settled.usage_complete and settled.problem is None


def test_lost_response_keeps_the_reservation() -> None:
    reservation = call_reservation(100, 1024, PRICES)
    budget = reserve_call(Budget(D("1")), reservation)
    assert budget is not None
    settled = settle_call(budget, reservation, None)
    assert settled.charged_usd == reservation.usd == settled.budget.spent
    assert settled.released_usd == 0
    assert not settled.usage_complete


RESERVATION = call_reservation(100, 1024, PRICES)  # ceiling 8,392


@pytest.mark.parametrize(
    "usage",
    [
        None,
        [],
        {},
        {"input_tokens": 10},
        {"output_tokens": 10},
        {"input_tokens": -1, "output_tokens": 0},
        {"input_tokens": 8_393, "output_tokens": 0},
        {"input_tokens": 0, "output_tokens": 1_025},
        {"input_tokens": 1.0, "output_tokens": 0},
        {"input_tokens": True, "output_tokens": 0},
        {"input_tokens": "5", "output_tokens": 0},
        {"input_tokens": 1, "output_tokens": 1, "cache_read_input_tokens": 1},
        {"input_tokens": 1, "output_tokens": 1, "cache_creation_input_tokens": 5},
        {"input_tokens": 1, "output_tokens": 1, "cache_creation_input_tokens": None},
        {"input_tokens": 1, "output_tokens": 1, "cache_read_input_tokens": False},
    ],
)
def test_invalid_usage_keeps_the_reservation(usage: Any) -> None:
    with pytest.raises(UsageProblem):
        validate_usage(usage, RESERVATION)
    budget = reserve_call(Budget(D("1")), RESERVATION)
    assert budget is not None
    settled = settle_response(budget, RESERVATION, usage)
    assert settled.charged_usd == RESERVATION.usd
    assert settled.budget.spent == RESERVATION.usd
    assert settled.problem is not None and not settled.usage_complete


@pytest.mark.parametrize(
    "usage",
    [
        {"input_tokens": 0, "output_tokens": 0},
        {"input_tokens": 8_392, "output_tokens": 1_024},
        {"input_tokens": 5, "output_tokens": 5, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
        {"input_tokens": 5, "output_tokens": 5, "service_tier": "standard"},
    ],
)
def test_valid_usage_at_the_bounds(usage: dict[str, Any]) -> None:
    parsed = validate_usage(usage, RESERVATION)
    assert measured_cost(parsed, PRICES) <= RESERVATION.usd


def test_measured_at_the_ceilings_equals_the_reservation() -> None:
    assert measured_cost(CallUsage(8_392, 1_024), PRICES) == RESERVATION.usd


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        UpperPrices(D("0"), D("1"))
    with pytest.raises(ValueError):
        UpperPrices(D("1"), D("NaN"))
    with pytest.raises(ValueError):
        call_reservation(10, 0, PRICES)
    with pytest.raises(ValueError):
        input_ceiling(-1)
    with pytest.raises(ValueError, match="not open"):
        settle_call(Budget(D("1")), RESERVATION, None)
