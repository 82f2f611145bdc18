"""Issue 16, deliverable 2: no ledger can hold a non-finite number; the writer refuses to serialise one."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from agentstudy.io.ledger_store import LedgerFile


def _document(**budget: Any) -> dict[str, Any]:
    return {"version": "minimal-study-v1", "status": "running", "budget": {"cap": 1.0, "spent": 0.0, **budget},
            "observations": [{"answer": "NaN and Infinity are words here", "chargedUsd": 0.1}]}


@pytest.mark.parametrize("bad", [float("inf"), float("-inf"), float("nan"), Decimal("Infinity"), Decimal("NaN")])
def test_creating_a_ledger_with_a_non_finite_number_writes_nothing(tmp_path: Path, bad: Any) -> None:
    path = tmp_path / "ledger.json"
    with pytest.raises(ValueError, match=r"non-finite number at \$\.budget\.cap"):
        LedgerFile(path, _document(cap=bad))
    assert not path.exists()
    assert list(tmp_path.iterdir()) == []


def test_a_checkpoint_with_a_non_finite_number_keeps_the_last_ledger(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    store = LedgerFile(path, _document())
    good = path.read_bytes()
    document = _document()
    document["observations"].append({"chargedUsd": float("nan")})
    with pytest.raises(ValueError, match=r"\$\.observations\[1\]\.chargedUsd"):
        store.checkpoint(document)
    assert path.read_bytes() == good
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger.json"], "no temporary file is left"


def test_the_words_nan_and_infinity_in_text_are_written(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    LedgerFile(path, _document(spent=0.25))
    stored = json.loads(path.read_text(encoding="utf-8"), parse_constant=lambda name: pytest.fail(name))
    assert stored["observations"][0]["answer"] == "NaN and Infinity are words here"
    assert stored["budget"]["spent"] == 0.25
