"""Property tests of exact USD at the JSON edge (issue 17 item 8): ``pricing.usd_json``.

Any ``Decimal`` USD amount with at most 9 decimals (and at most 1,000,000 USD, the money
inputs' range) comes back as the same ``Decimal`` through every writer: the stdout summary
line, the ledger writer (pydantic-core) with its hashes, the controlled contracts' JavaScript
JSON, and the transcript command's record; every view of the spend prints the same digits.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentstudy.io.ledger_store import LedgerFile
from agentstudy.pricing.budget import Budget
from agentstudy.pricing.sums import display_usd, usd_from_json
from agentstudy.pricing.tally import Tally
from agentstudy.pricing.usd_json import optional_usd_number, usd_number
from agentstudy.protocol.controlled.hashing import js_json
from agentstudy.protocol.ledger_integrity import seal_ledger
from agentstudy.protocol.ledger_invariants import spent_matches
from agentstudy.runners.ledger_steps import budget_record
from agentstudy.runners.summary import summarize
from agentstudy.transports.cli_evaluation import reported_cost

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

AMOUNTS = st.integers(min_value=0, max_value=10**15).flatmap(
    lambda units: st.integers(min_value=0, max_value=9).map(lambda places: Decimal(units).scaleb(-places))
).filter(lambda amount: amount <= 1_000_000)
"""USD amounts of at most 9 decimals and at most 1,000,000 USD (every money input, every charge of one)."""


def _back(number: object) -> Decimal:
    return usd_from_json(number)


@SETTINGS
@given(AMOUNTS)
@example(Decimal("0.0345927"))
@example(Decimal("999999.999999999"))
@example(Decimal("0.000000001"))
@example(Decimal("1000000"))
def test_every_writer_round_trips_the_amount_exactly(tmp_path: Path, amount: Decimal) -> None:
    number = usd_number(amount)
    assert json.loads(json.dumps(number), parse_float=Decimal, parse_int=Decimal) == amount
    assert _back(json.loads(json.dumps(number))) == amount
    assert _back(json.loads(js_json({"usd": number}))["usd"]) == amount
    # The summary's JSON line (stdout): spent and cap.
    line = summarize("blocked", "full", 1, [], Budget(cap=max(amount, Decimal(1)), spent=amount),
                     tmp_path / "ledger.json").line
    assert _back(json.loads(json.dumps(line))["spentUsd"]) == amount
    # The ledger writer (pydantic-core), sealed: the budget block reads back exactly and still verifies.
    record = budget_record(Budget(cap=Decimal(1_000_000), spent=amount), Tally(amount, amount))
    document = seal_ledger({"budget": record.model_dump(by_alias=True), "observations": []})
    path = tmp_path / f"ledger-{len(list(tmp_path.iterdir()))}.json"
    LedgerFile(path, document)
    written = json.loads(path.read_text(encoding="utf-8"))["budget"]
    assert [_back(written[key]) for key in ("spent", "reserved", "measured")] == [amount] * 3
    assert spent_matches(written["spent"], [written["measured"]])
    # The text itself is the amount, read as a decimal (no float on the way back).
    assert json.loads(json.dumps(number), parse_float=Decimal, parse_int=Decimal) == amount


@SETTINGS
@given(st.lists(AMOUNTS, min_size=1, max_size=36))
def test_the_views_of_a_spend_agree_to_the_last_printed_digit(charges: list[Decimal]) -> None:
    spent = sum(charges, Decimal(0))
    line_value = json.loads(json.dumps({"spentUsd": usd_number(spent)}))["spentUsd"]
    written = [json.loads(json.dumps(usd_number(c))) for c in charges]
    # The charges as a reader sums them (exactly, from the written numbers) equal the written spend ...
    assert sum((_back(w) for w in written), Decimal(0)) == spent
    # ... and every view rounds the same way (the progress line and table print display_usd of the same Decimal).
    assert display_usd(_back(line_value)) == display_usd(spent)


@pytest.mark.parametrize(("reported", "expected"), [
    (0.0013654000000000001, Decimal("0.0013654")),  # measured: Claude Code's JavaScript sum
    (0.0012016000000000002, Decimal("0.0012016")),
    (0.1 + 0.2, Decimal("0.3")),
    (0.00088, Decimal("0.00088")),
    (3, Decimal(3)),
])
def test_the_clis_float_total_is_read_without_its_noise(reported: float, expected: Decimal) -> None:
    assert reported_cost({"total_cost_usd": reported}) == expected
    assert json.dumps(optional_usd_number(reported_cost({"total_cost_usd": reported}))) == json.dumps(
        usd_number(expected))


def test_a_float_or_a_non_finite_amount_is_refused() -> None:
    for bad in (0.5, Decimal("NaN"), Decimal("Infinity")):
        with pytest.raises(ValueError, match="finite Decimal"):
            usd_number(bad)  # type: ignore[arg-type]
