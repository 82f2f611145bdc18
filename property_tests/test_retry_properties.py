"""Retries and fault schedules under random inputs (issue 33): the SDK's delay stays in its bounds, a schedule
replays exactly with its seed, and a request-number rule hits exactly its requests."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agentstudy.protocol.fault_schedule import parse_fault_schedule
from agentstudy.transports.api_retry import RetryPolicy, retry_delay_s

draws = st.floats(min_value=0.0, max_value=0.999999)


@given(st.integers(min_value=0, max_value=20), draws,
       st.one_of(st.none(), st.floats(min_value=-5, max_value=120, allow_nan=False)))
def test_the_delay_is_the_honoured_retry_after_or_a_jittered_capped_exponential(
        retries_done: int, draw: float, retry_after: float | None) -> None:
    policy = RetryPolicy()
    delay = retry_delay_s(policy, retries_done, retry_after, draw)
    if retry_after is not None and 0 <= retry_after <= 60:
        assert delay == retry_after
    else:
        base = min(policy.initial_delay_s * 2 ** retries_done, policy.max_delay_s)
        assert 0.75 * base <= delay <= base


@given(st.integers(min_value=0, max_value=100), st.integers(min_value=0, max_value=2**31),
       st.lists(st.integers(min_value=1, max_value=3), min_size=1, max_size=60))
def test_a_seeded_rate_replays_and_a_number_rule_hits_only_its_request(
        percent: int, seed: int, message_counts: list[int]) -> None:
    spec = f"5:500,{percent}%:429,seed={seed}"

    def labels() -> list[str | None]:
        schedule = parse_fault_schedule(spec)
        return [None if (f := schedule.fault_for(n, c)) is None else f.label
                for n, c in enumerate(message_counts, start=1)]

    first = labels()
    assert first == labels()
    for number, label in enumerate(first, start=1):
        if number == 5:
            assert label == "500"
        else:
            assert label in (None, "429")
            if percent == 0:
                assert label is None
            if percent == 100:
                assert label == "429"
