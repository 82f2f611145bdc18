"""Retries and infrastructure failures by arm (issue 33 item 6): what the API refused, and what it cost in time.

Shapes:

* in: the observation's ``apiRetries`` and ``apiRetryWaitMs`` (non-negative integers, absent in
  ledgers written before they were recorded), ``apiRetryStatuses`` (list of HTTP statuses or
  ``network``) and ``failureKind`` (``rate-limited``, ``overloaded``, ``server-error``,
  ``network``, ``timeout``, ``agent``); read by :func:`read_retries` into :class:`AttemptRetries`;
* out: one :class:`ArmInfrastructure` per scenario with attempts (``repository-only`` first), from
  :func:`infrastructure_rows`; :func:`infrastructure_sentences` flags an imbalance between arms.

Retry wait is not agent time: each row gives the arm's wall time with and without it. An
infrastructure failure (any ``failureKind`` but ``agent``) is an attempt without an answer, never an
incorrect one: it is not adjudicated, so the per-protocol view leaves it out. Pure: no IO, no clock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentstudy.protocol.arm_names import arm_label
from agentstudy.report.model import SCENARIOS, Attempt, AttemptRetries, ReportInputError

INFRASTRUCTURE_KINDS = ("rate-limited", "overloaded", "server-error", "network", "timeout")
"""The ``failureKind`` values that name the infrastructure, not the agent."""
IMBALANCE_RATIO = 2
"""An arm with at least twice the other's retries (and at least 2) is flagged."""


def _count(obs: Mapping[str, Any], key: str, where: str) -> int | None:
    value = obs.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ReportInputError(f"{where}: {key} is not a non-negative integer")
    return value


def read_retries(obs: Mapping[str, Any], where: str) -> AttemptRetries:
    """The retry fields of one observation (``where`` names it in errors).

    Raises:
        ReportInputError: ``apiRetries`` / ``apiRetryWaitMs`` present but not a non-negative integer, or
            ``failureKind`` present but not a string.
    """
    kind = obs.get("failureKind")
    if kind is not None and not isinstance(kind, str):
        raise ReportInputError(f"{where}: failureKind is not a string")
    return AttemptRetries(_count(obs, "apiRetries", where), _count(obs, "apiRetryWaitMs", where), kind)


@dataclass(frozen=True)
class ArmInfrastructure:
    """One arm: ``attempts``; ``recorded`` (attempts that record retries); ``retries`` and ``wait_ms`` summed;
    ``failures`` (``failureKind`` -> attempts, infrastructure kinds only); ``wall_ms`` (sum of the attempts'
    wall time) and ``wall_without_wait_ms`` (the same less each attempt's retry wait)."""

    scenario: str
    label: str
    attempts: int
    recorded: int
    retries: int
    wait_ms: int
    failures: tuple[tuple[str, int], ...]
    wall_ms: int
    wall_without_wait_ms: int

    @property
    def infrastructure_failures(self) -> int:
        """Attempts that failed for the infrastructure's sake."""
        return sum(count for _, count in self.failures)

    def failures_cell(self) -> str:
        """``overloaded 1, network 2`` or ``none``."""
        return ", ".join(f"{kind} {count}" for kind, count in self.failures) or "none"


def infrastructure_rows(attempts: Sequence[Attempt], name: Callable[[str], str] = arm_label) -> list[ArmInfrastructure]:
    """One row per scenario with attempts (``SCENARIOS`` order first, others by first appearance), labelled by
    ``name`` (``Study.arm_name``; the default labels without one)."""
    order = [s for s in SCENARIOS if any(a.scenario == s for a in attempts)]
    order += [s for s in dict.fromkeys(a.scenario for a in attempts) if s not in order]
    rows: list[ArmInfrastructure] = []
    for scenario in order:
        mine = [a for a in attempts if a.scenario == scenario]
        kinds: Counter[str] = Counter(a.retries.failure_kind for a in mine
                                      if a.retries.failure_kind in INFRASTRUCTURE_KINDS)
        wall = sum(a.wall_time_ms or 0 for a in mine)
        without = sum(max((a.wall_time_ms or 0) - (a.retries.wait_ms or 0), 0) for a in mine)
        rows.append(ArmInfrastructure(
            scenario=scenario, label=name(scenario), attempts=len(mine),
            recorded=sum(a.retries.retries is not None for a in mine),
            retries=sum(a.retries.retries or 0 for a in mine), wait_ms=sum(a.retries.wait_ms or 0 for a in mine),
            failures=tuple((k, kinds[k]) for k in INFRASTRUCTURE_KINDS if kinds[k]),
            wall_ms=wall, wall_without_wait_ms=without))
    return rows


def any_recorded(rows: Sequence[ArmInfrastructure]) -> bool:
    """Whether any attempt records its retries (ledgers before issue 33 do not: no section then)."""
    return any(row.recorded for row in rows)


def infrastructure_sentences(rows: Sequence[ArmInfrastructure]) -> list[str]:
    """What a reader must know: an imbalance of retries or infrastructure failures between arms, and that
    infrastructure failures are neither answers nor incorrect ones."""
    sentences: list[str] = []
    if len(rows) >= 2:
        measures: tuple[tuple[str, Callable[[ArmInfrastructure], int]], ...] = (
            ("retries", lambda r: r.retries), ("infrastructure failures", lambda r: r.infrastructure_failures))
        for label, value in measures:
            ranked = sorted(rows, key=value, reverse=True)
            high, low = ranked[0], ranked[-1]
            if value(high) >= 2 and value(high) >= IMBALANCE_RATIO * value(low):
                sentences.append(f"Imbalance between arms: {high.label} had {value(high)} {label}, "
                                 f"{low.label} {value(low)}; the API treated the arms differently, so time "
                                 "and completion rates are not comparable without care.")
    if any(row.infrastructure_failures for row in rows):
        sentences.append("An attempt that failed for the infrastructure (rate-limited, overloaded, server-error, "
                         "network, timeout) has no answer: it is not adjudicated and never counted incorrect.")
    return sentences


def infrastructure_table_rows(rows: Sequence[ArmInfrastructure]) -> tuple[tuple[str, ...], ...]:
    """The report table's rows: arm, attempts, retries, retry wait (s), infrastructure failures, wall time (s)
    with and without the retry wait."""
    return tuple((r.label, str(r.attempts), str(r.retries), f"{r.wait_ms / 1000:.1f}", r.failures_cell(),
                  f"{r.wall_ms / 1000:.1f}", f"{r.wall_without_wait_ms / 1000:.1f}") for r in rows)
