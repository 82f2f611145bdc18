"""Issue 16, deliverable 2: the money parser's rules (``pricing.money_input``), pure.

The commands that read money are run for real in ``test_money_inputs.py``.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from agentstudy.pricing.money_input import (
    INPUT_DECIMALS,
    MAX_INPUT_USD,
    MoneyInputError,
    check_attempt_limit,
    check_cap_fits_call,
    parse_usd_input,
)

HOSTILE = ["1e309", "1E3", "1_0", "١", "٠.١", "１", " 1", "1 ", "+1", "-1", "0", "0.0", "NaN", "Infinity", "inf",
           ".5", "5.", "05", "1,5", "0x10", "1.0000000001", "1000000.000000001", "1000001", "", "\t1", "1\n"]


@pytest.mark.parametrize(("raw", "value"), [
    ("0.10", Decimal("0.10")), ("1", Decimal(1)), ("12.5", Decimal("12.5")), ("0.000000001", Decimal("1e-9")),
    ("1000000", MAX_INPUT_USD), ("1000000.000000000", MAX_INPUT_USD), ("999999.999999999", Decimal("999999.999999999")),
])
def test_plain_decimals_are_read_exactly(raw: str, value: Decimal) -> None:
    parsed = parse_usd_input(raw, what="--budget-usd")
    assert parsed == value and format(parsed, "f") == raw
    assert Decimal(repr(float(parsed))) == parsed, "the ledger's double keeps it exactly"


@pytest.mark.parametrize("raw", HOSTILE)
def test_anything_else_is_refused_in_one_line(raw: str) -> None:
    with pytest.raises(MoneyInputError) as caught:
        parse_usd_input(raw, what="--budget-usd")
    message = str(caught.value)
    assert "--budget-usd" in message and "\n" not in message


def test_more_decimals_than_the_ledger_keeps_are_refused_not_rounded() -> None:
    assert parse_usd_input("0." + "0" * (INPUT_DECIMALS - 1) + "1", what="x") == Decimal("1e-9")
    with pytest.raises(MoneyInputError, match="more than 9 decimals"):
        parse_usd_input("0.1000000000", what="x")


def test_a_limit_must_reserve_a_micro_usd_and_fit_under_the_cap() -> None:
    assert check_attempt_limit(Decimal("0.1234567"), Decimal(1), limit_what="l", cap_what="c") == Decimal("0.123456")
    assert check_attempt_limit(Decimal("0.10"), Decimal("0.10"), limit_what="l", cap_what="c") == Decimal("0.1")
    with pytest.raises(MoneyInputError, match=r"at least 0\.000001"):
        check_attempt_limit(Decimal("0.0000001"), Decimal(1), limit_what="l", cap_what="c")
    with pytest.raises(MoneyInputError, match="above c"):
        check_attempt_limit(Decimal("0.10"), Decimal("0.09"), limit_what="l", cap_what="c")
    with pytest.raises(MoneyInputError, match="cannot hold"):
        check_cap_fits_call(Decimal("0.01"), Decimal("0.010001"), cap_what="c")
    check_cap_fits_call(Decimal("0.01"), Decimal("0.01"), cap_what="c")
