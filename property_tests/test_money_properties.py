"""Property tests of the money parser (issue 16, deliverable 2): ``pricing.money_input.parse_usd_input``.

Whatever text an operator types, an accepted amount is finite, above zero, never rounds to
zero in the ledger's double, serialises to standard JSON, and round-trips exactly (through its
own text, through the ledger's JSON number and through the ledger writer).
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentstudy.io.ledger_store import LedgerFile
from agentstudy.pricing.money_input import INPUT_DECIMALS, MAX_INPUT_USD, MoneyInputError, parse_usd_input

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])

NUMBERISH = st.text(alphabet="0123456789.eE+-_ ,٠١٢٣٤٥٦٧٨٩０１\t\nxINFinfa", max_size=24)
"""Texts close to a number: digits of several scripts, signs, exponents, separators, spaces."""

FLOAT_TEXTS = st.floats(allow_nan=True, allow_infinity=True).map(repr)
"""How a float prints (``1e+309`` is ``inf``, ``5e-324``, ``nan``)."""

DECIMAL_TEXTS = st.decimals(allow_nan=True, allow_infinity=True).map(str)
"""How a Decimal prints (``1E+309``, ``-0``, ``sNaN``, ``1E-7``)."""

PLAIN = st.builds(
    lambda units, places: format(Decimal(units).scaleb(-places), "f"),
    st.integers(min_value=1, max_value=10**15),
    st.integers(min_value=0, max_value=INPUT_DECIMALS),
)
"""Plain decimals that are mostly valid (some are above the bound)."""


def _accepted(raw: str) -> Decimal | None:
    try:
        return parse_usd_input(raw, what="amount")
    except MoneyInputError as error:
        assert "\n" not in str(error) and str(error).startswith("amount ")
        return None


def _holds(value: Decimal) -> None:
    assert value.is_finite() and 0 < value <= MAX_INPUT_USD
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int) and exponent >= -INPUT_DECIMALS
    number = float(value)
    assert math.isfinite(number) and number > 0, "never rounds to zero or overflows in the ledger's double"
    text = json.dumps({"cap": number}, allow_nan=False)  # raises on a non-finite number
    assert Decimal(repr(json.loads(text)["cap"])) == value, "the ledger's JSON number is exactly the amount"
    assert parse_usd_input(format(value, "f"), what="amount") == value, "its own text reads back the same"


@SETTINGS
@given(raw=st.one_of(NUMBERISH, FLOAT_TEXTS, DECIMAL_TEXTS, PLAIN, st.text(max_size=12)))
@example(raw="1e309")
@example(raw="1_0")
@example(raw="١")
@example(raw="0.000000001")
@example(raw="999999.999999999")
@example(raw="1000000")
def test_an_accepted_amount_is_finite_positive_and_exact(raw: str) -> None:
    value = _accepted(raw)
    if value is not None:
        assert raw.isascii() and raw.strip() == raw and "_" not in raw and "e" not in raw.lower()
        _holds(value)


@SETTINGS
@given(value=st.decimals(min_value=Decimal("1e-9"), max_value=MAX_INPUT_USD, places=INPUT_DECIMALS,
                         allow_nan=False, allow_infinity=False))
def test_every_amount_in_range_is_accepted_and_round_trips(value: Decimal) -> None:
    parsed = parse_usd_input(format(value, "f"), what="amount")
    assert parsed == value
    _holds(parsed)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(raw=st.one_of(PLAIN, FLOAT_TEXTS))
def test_the_ledger_writer_stores_an_accepted_amount_exactly(tmp_path: Path, raw: str) -> None:
    value = _accepted(raw)
    if value is None:
        return
    path = tmp_path / f"ledger-{abs(hash(raw))}.json"
    LedgerFile(path, {"budget": {"cap": float(value)}})
    stored = json.loads(path.read_text(encoding="utf-8"), parse_float=Decimal,
                        parse_constant=lambda name: pytest.fail(f"{name} written"))
    assert stored["budget"]["cap"] == value, "the written JSON number is exactly the amount"
    path.unlink()
