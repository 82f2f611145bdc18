"""Property of the Codex tier rule (issue 21 item 4): pricing a thread's *total* usage at the tier of its total
input is never below what OpenAI bills for the thread's requests one by one (each at the tier of its own
prompt), for every split of the thread into requests; and it equals the bill when the thread is one request."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentstudy.pricing.openai import OpenAiUsage, openai_cost, openai_price

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MODEL = "gpt-5.5"  # tiered in genai-prices' snapshot: 5 / 0.5 / 30, above 272,000 input tokens 10 / 1 / 45


@st.composite
def requests(draw: st.DrawFn) -> OpenAiUsage:
    """One Responses API request's usage (tokens), prompts around the 272,000 threshold."""
    input_tokens = draw(st.integers(0, 400_000))
    output_tokens = draw(st.integers(0, 50_000))
    return OpenAiUsage(input_tokens, draw(st.integers(0, input_tokens)), 0, output_tokens,
                       draw(st.integers(0, output_tokens)))


def _total(parts: list[OpenAiUsage]) -> OpenAiUsage:
    return OpenAiUsage(*(sum(getattr(p, name) for p in parts) for name in (
        "input_tokens", "cached_input_tokens", "cache_write_input_tokens", "output_tokens",
        "reasoning_output_tokens")))


def _billed(part: OpenAiUsage) -> Decimal:
    """OpenAI's bill for one request, written out apart from ``openai_cost``: its own prompt picks the tier."""
    base, long_context = openai_price(MODEL).tiers
    rates = long_context if part.input_tokens > 272_000 else base
    return ((part.input_tokens - part.cached_input_tokens) * rates.input + part.cached_input_tokens
            * rates.cached_input + part.output_tokens * rates.output) / 1_000_000


@SETTINGS
@given(parts=st.lists(requests(), min_size=1, max_size=6))
def test_the_thread_total_is_never_priced_below_the_requests_bill(parts: list[OpenAiUsage]) -> None:
    assert openai_price(MODEL).thresholds == (272_000,)
    bill = sum((_billed(part) for part in parts), Decimal(0))
    charged = openai_cost(MODEL, _total(parts)).usd
    assert charged >= bill
    if len(parts) == 1:
        assert charged == bill
