"""The report builder under random valid ledgers (issue 40 break 12): every format of ``agentstudy report``
answers a sealed, verifying ledger of random size and values — including zero-width intervals (every
difference equal, every value equal) and huge values — without a traceback, and the JSON's intervals contain
their estimates wherever both are given."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from bench.large_ledger import large_ledger, observation
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentstudy.cli import main
from agentstudy.protocol.ledger_integrity import seal_ledger, verify_ledger_bytes

ARMS = ("repository-only", "doc-bridge-mcp")


@st.composite
def ledgers(draw: st.DrawFn) -> dict[str, Any]:
    """A completed ledger: 1-5 tasks x 1-3 repetitions x 2 arms, tokens drawn per task, either all equal, a
    constant difference between the arms, or free."""
    tasks, repetitions = draw(st.integers(1, 5)), draw(st.integers(1, 3))
    shape = draw(st.sampled_from(["equal", "uniform-difference", "free"]))
    big = st.integers(1, 10**9)
    observations = []
    for t in range(tasks):
        base = draw(big)
        for r in range(1, repetitions + 1):
            for a, arm in enumerate(ARMS):
                tokens = {"equal": base, "uniform-difference": base + 7 * a, "free": draw(big)}[shape]
                observations.append(observation(f"t{t}", arm, r, tokens, draw(st.integers(1, 5_000)),
                                                draw(st.integers(0, 30)), draw(st.integers(1, 10**7))))
    document = large_ledger(20)
    document.pop("ledgerHash"), document.pop("hashAlgo")
    spent = float(sum((Decimal(repr(o["chargedUsd"])) for o in observations), Decimal(0)))
    document.update(observations=observations, plannedAttempts=len(observations))
    document["budget"] = {"cap": max(1.0, 2 * spent), "spent": spent, "reserved": 0.1 * len(observations),
                          "measured": spent, "cumulativeCapExceeded": False}
    sealed: dict[str, Any] = seal_ledger(document)
    return sealed


def _contained(node: Any) -> None:
    if isinstance(node, dict):
        low, high, estimate = node.get("ciLow"), node.get("ciHigh"), node.get("estimate")
        if all(isinstance(v, float | int) and math.isfinite(v) for v in (low, high, estimate)):
            assert low <= estimate <= high, node
        for value in node.values():
            _contained(value)
    elif isinstance(node, list):
        for value in node:
            _contained(value)


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(ledgers())
def test_every_format_of_a_random_valid_ledger_is_written(document: dict[str, Any]) -> None:
    data = (json.dumps(document, indent=2) + "\n").encode()
    assert verify_ledger_bytes(data).problems == ()
    with TemporaryDirectory() as directory:
        path = Path(directory) / "ledger.json"
        path.write_bytes(data)
        for output_format in ("text", "md", "html", "json"):
            result = CliRunner().invoke(main, ["report", str(path), "--format", output_format],
                                        catch_exceptions=False)
            assert result.exit_code == 0, result.output
            if output_format == "json":
                _contained(json.loads(result.stdout)["metrics"])
