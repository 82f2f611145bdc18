"""Fidelity per arm: was each arm's server offered and used? (issue 28 item 1, issue 44 item 3). Pure.

A study of server A against server B, or of one server against its own description rewrite, runs a server
in both arms; a finding needs both delivered. The rule is the treatment's (``protocol.treatment``): an
attempt used its arm's server when at least one of its calls did not error, and an arm with a server was
delivered when at least ``minimum_use`` of its attempts used it. An arm without a server keeps the control's
proof instead (how many of its attempts were offered a server tool: must be none) and is never "not
delivered". The report (every format), the end-of-run summary and ``agentstudy ledger`` count and word each
arm here, so the numbers and the sentences are one.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentstudy.protocol.study_arms import DOC_BRIDGE_MCP, REPOSITORY_ONLY
from agentstudy.protocol.treatment import TreatmentRecord, is_delivered, used_server

ARM_WORDS = {REPOSITORY_ONLY: "control", DOC_BRIDGE_MCP: "treatment"}
"""How the sentences and the JSON name the two arms."""


@dataclass(frozen=True)
class AttemptUse:
    """One attempt's use of its arm's server: ``used`` (a call that did not error), its ``calls`` and
    ``errors`` (counts), ``all_failed`` (at least one call, every one errored) and ``offered`` (a server tool
    was in the agent's tool set)."""

    used: bool
    calls: int
    errors: int
    all_failed: bool
    offered: bool


def record_use(record: TreatmentRecord | None) -> AttemptUse:
    """The :class:`AttemptUse` of an observation's treatment record (``None``: no record, nothing used)."""
    if record is None:
        return AttemptUse(False, 0, 0, False, False)
    return AttemptUse(used_server(record), record.server_calls, record.server_call_errors, record.all_calls_failed,
                      record.server_offered)


@dataclass(frozen=True)
class ArmFidelity:
    """One arm's fidelity (counts of attempts and calls).

    Attributes:
        scenario: the arm's ledger scenario (``repository-only`` or ``doc-bridge-mcp``).
        server: the arm's server name, ``None`` for an arm without one (the repository-only arm).
        attempts: the arm's attempts.
        using: attempts that used the server (at least one call that did not error).
        calls: server calls over every attempt (errored ones included).
        errors: calls that errored or said the server was not ready.
        all_failed: attempts with at least one call, every one errored.
        offered: attempts whose agent was offered a server tool (an arm without a server: must be 0).
        median_calls: the median calls of the attempts that used the server (``None`` when none did).
        minimum_use: the share of attempts that must use the server (the study's ``minimumTreatmentUse``).
    """

    scenario: str
    server: str | None
    attempts: int
    using: int
    calls: int
    errors: int
    all_failed: int
    offered: int
    median_calls: float | None
    minimum_use: float

    @property
    def delivered(self) -> bool | None:
        """Whether the arm's server was delivered (``protocol.treatment.is_delivered``); ``None`` without a server."""
        return None if self.server is None else is_delivered(self.using, self.attempts, self.minimum_use)

    def to_json(self) -> dict[str, Any]:
        """The arm's fidelity as the report's JSON and ``agentstudy ledger --json`` give it (camelCase):
        ``server``, ``attempts``, ``attemptsUsingServer``, ``serverCalls``, ``serverCallErrors``,
        ``attemptsAllCallsFailed``, ``attemptsOffered``, ``delivered`` (``null`` without a server)."""
        return {"server": self.server, "attempts": self.attempts, "attemptsUsingServer": self.using,
                "serverCalls": self.calls, "serverCallErrors": self.errors, "attemptsAllCallsFailed": self.all_failed,
                "attemptsOffered": self.offered, "delivered": self.delivered}


def arm_fidelity(scenario: str, server: str | None, uses: Sequence[AttemptUse], minimum_use: float) -> ArmFidelity:
    """Count one arm's :class:`AttemptUse` (its attempts, in order) into its :class:`ArmFidelity`."""
    used = [use.calls for use in uses if use.used]
    return ArmFidelity(scenario, server, len(uses), len(used), sum(u.calls for u in uses),
                       sum(u.errors for u in uses), sum(1 for u in uses if u.all_failed),
                       sum(1 for u in uses if u.offered), statistics.median(used) if used else None, minimum_use)


def arms_fidelity(observed: Sequence[tuple[str, TreatmentRecord | None]], servers: dict[str, str | None],
                  minimum_use: float) -> tuple[ArmFidelity, ...]:
    """Both arms' fidelity, control first, from ``(scenario, treatment record)`` per observation; ``servers``
    maps a scenario to its arm's server name (an arm missing from it runs none)."""
    return tuple(arm_fidelity(scenario, servers.get(scenario), [record_use(r) for s, r in observed if s == scenario],
                              minimum_use) for scenario in (REPOSITORY_ONLY, DOC_BRIDGE_MCP))


def use_clause(arm: ArmFidelity) -> str:
    """"used in 17 of 18 treatment attempts (median 3 calls; 2 calls errored; 0 attempts where every call
    failed)", the words every arm with a server gets."""
    word = ARM_WORDS.get(arm.scenario, arm.scenario)
    median = (f"median {arm.median_calls:g} calls" if arm.median_calls is not None
              else "no call answered" if arm.errors else "no calls")
    return (f"used in {arm.using} of {arm.attempts} {word} attempts ({median}; {arm.errors} calls errored; "
            f"{arm.all_failed} attempts where every call failed)")


def arm_not_delivered_sentence(arm: ArmFidelity, treatment_server: str) -> str:
    """Why a study whose *control* arm's server was not delivered cannot answer (the treatment's own case has
    ``protocol.treatment.not_delivered_sentence``): the same words in every report format, the summary and the
    ledger command."""
    return (f"This study cannot answer whether {treatment_server} helps against {arm.server}: the control arm's "
            f"server was not delivered ({arm.server} was used in {arm.using} of {arm.attempts} control attempts, "
            f"{arm.calls} calls, {arm.errors} errored; the study requires at least {arm.minimum_use:.0%} in each arm "
            "with a server). No comparison is a finding.")


def control_sentence(arm: ArmFidelity) -> str:
    """The control arm's part of the fidelity line: its own server's use (and, when not delivered, that it was
    not), or the proof that no server tool was offered."""
    if arm.server is not None:
        said = f"The control arm's {arm.server} was {use_clause(arm)}"
        if arm.delivered is False:
            said += f"; NOT delivered (at least {arm.minimum_use:.0%} of the control attempts must use it)"
        return said + "."
    if arm.offered:
        return f"In {arm.offered} control attempts a server tool WAS offered."
    return f"No server tool was offered in any of the {arm.attempts} control attempts." if arm.attempts else ""


__all__ = ["ARM_WORDS", "ArmFidelity", "AttemptUse", "arm_fidelity", "arm_not_delivered_sentence", "arms_fidelity",
           "control_sentence", "record_use", "use_clause"]
