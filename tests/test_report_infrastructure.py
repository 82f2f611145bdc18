"""Retries and infrastructure failures by arm in the report (issue 33 item 6): reading, rows, sentences."""

from __future__ import annotations

import pytest

from agentstudy.protocol.arm_names import arm_label
from agentstudy.report.infrastructure import (
    ArmInfrastructure,
    infrastructure_sentences,
    infrastructure_table_rows,
    read_retries,
)
from agentstudy.report.model import AttemptRetries, ReportInputError


def _arm(scenario: str, retries: int, failures: tuple[tuple[str, int], ...] = ()) -> ArmInfrastructure:
    return ArmInfrastructure(scenario=scenario, label=arm_label(scenario, server="kb"), attempts=4, recorded=4,
                             retries=retries, wait_ms=1500 * retries,
                             failures=failures, wall_ms=40_000, wall_without_wait_ms=40_000 - 1500 * retries)


def test_retry_fields_are_read_and_checked() -> None:
    assert read_retries({"apiRetries": 2, "apiRetryWaitMs": 1700, "failureKind": "overloaded"}, "obs 1") == \
        AttemptRetries(2, 1700, "overloaded")
    assert read_retries({}, "obs 1") == AttemptRetries()
    for bad in ({"apiRetries": -1}, {"apiRetryWaitMs": True}, {"failureKind": 3}):
        with pytest.raises(ReportInputError, match="obs 1"):
            read_retries(bad, "obs 1")


def test_an_imbalance_between_arms_is_flagged_and_balance_is_not() -> None:
    flagged = infrastructure_sentences([_arm("repository-only", 1), _arm("doc-bridge-mcp", 6, (("overloaded", 1),))])
    assert flagged[0].startswith("Imbalance between arms: Repository tools + kb had 6 retries, Repository tools 1")
    assert any("never counted incorrect" in s for s in flagged)
    assert infrastructure_sentences([_arm("repository-only", 3), _arm("doc-bridge-mcp", 4)]) == []


def test_the_table_shows_wall_time_with_and_without_the_retry_wait() -> None:
    [row] = infrastructure_table_rows([_arm("doc-bridge-mcp", 2, (("rate-limited", 1), ("network", 2)))])
    assert row == ("Repository tools + kb", "4", "2", "3.0", "rate-limited 1, network 2", "40.0", "37.0")
