"""Containment by arm: how each scenario's attempts were confined, what was not achieved, refused reads.

Issue 15: every report states, per arm, the containment mechanism(s) its observations record,
the union of their ``isolationNotAchieved`` sentences and how many reads outside the export the
agent's file tools refused. Shapes:

* in: the observation's ``containment`` (``"bwrap"`` | ``"restricted"`` | ``null``/absent),
  ``isolationNotAchieved`` (list of strings | ``null``/absent) and, for CLI observations,
  ``permissionDenials`` (list of ``{tool_name, tool_use_id, tool_input}``); read by
  :func:`read_containment` into an :class:`~agentstudy.report.model.AttemptContainment`;
* out: one :class:`ArmContainment` per scenario with attempts, ``repository-only`` and
  ``doc-bridge-mcp`` first (any other scenario after them, by first appearance), from
  :func:`containment_rows`; :func:`containment_sentences` says what a reader must know.

Everything here is pure: no IO, no clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentstudy.protocol.arm_names import arm_label
from agentstudy.report.model import SCENARIOS, Attempt, AttemptContainment, ReportInputError
from agentstudy.stream.denials import refused_out_of_export_reads

BWRAP = "bwrap"
NOT_RECORDED = "not recorded"
NOT_APPLICABLE = "n/a"
_ORDER = {BWRAP: 0, "restricted": 1}
SENTENCE_LIMIT = 300

LEGEND = (
    "bwrap: the attempt's child ran in bubblewrap namespaces that saw only the export, the agent's install, "
    "the MCP server's needs and the system runtime (read-only), with a private HOME and TMPDIR, plus Claude "
    "Code's --restricted file-tool confinement; restricted: only --restricted. A refused out-of-export read "
    "is a Read, Grep or Glob call the CLI refused (a permission denial); n/a: the HTTP transport's repository "
    "tools read pinned git blobs only and record no denials."
)


def _sentences(obs: Mapping[str, Any], where: str) -> tuple[str, ...] | None:
    value = obs.get("isolationNotAchieved")
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ReportInputError(f"{where}: isolationNotAchieved is not a list of strings")
    return tuple(" ".join(item.split())[:SENTENCE_LIMIT] for item in value if item.strip())


def read_containment(obs: Mapping[str, Any], transport: str | None, where: str) -> AttemptContainment:
    """The containment fields of one observation (``where`` names it in errors).

    Raises:
        ReportInputError: ``containment`` is present but not a non-empty string,
            ``isolationNotAchieved`` not a list of strings, or ``permissionDenials`` not a list.
    """
    mechanism = obs.get("containment")
    if mechanism is not None and (not isinstance(mechanism, str) or not mechanism.strip()):
        raise ReportInputError(f"{where}: containment is not a non-empty string")
    denials = obs.get("permissionDenials")
    if denials is not None and not isinstance(denials, list):
        raise ReportInputError(f"{where}: permissionDenials is not a list")
    http = transport == "http"
    refused = refused_out_of_export_reads(denials) if denials is not None and not http else None
    return AttemptContainment(" ".join(mechanism.split()) if mechanism else None, _sentences(obs, where),
                              refused, not http)


@dataclass(frozen=True)
class ArmContainment:
    """One arm's containment over its attempts.

    ``mechanisms``: ``(mechanism, attempts)`` pairs, ``bwrap`` first, then ``restricted``, other
    recorded names alphabetically, ``None`` (not recorded) last. ``not_achieved``: the union of
    the attempts' sentences, first-seen order, no duplicates (``None`` when no attempt recorded
    any list). ``refused_reads``: the sum over attempts that record denials (``None`` when none
    does); ``unrecorded_reads``: attempts where it applies but is not recorded; ``applicable``:
    ``False`` when every attempt is HTTP.
    """

    scenario: str
    label: str
    attempts: int
    mechanisms: tuple[tuple[str | None, int], ...]
    not_achieved: tuple[str, ...] | None
    refused_reads: int | None
    unrecorded_reads: int
    applicable: bool

    @property
    def bubblewrapped(self) -> bool:
        """Whether every attempt of the arm records ``bwrap``."""
        return [name for name, _ in self.mechanisms] == [BWRAP]

    @property
    def recorded(self) -> bool:
        """Whether any attempt of the arm records a mechanism."""
        return any(name is not None for name, _ in self.mechanisms)

    def mechanism_cell(self) -> str:
        """``bwrap (18)``; ``bwrap (10), restricted (8)``; ``not recorded (18)``."""
        return ", ".join(f"{name or NOT_RECORDED} ({count})" for name, count in self.mechanisms)

    def not_achieved_cell(self) -> str:
        """The not-achieved sentences joined by ``; `` (``none recorded`` for an empty list)."""
        if self.not_achieved is None:
            return NOT_RECORDED
        return "; ".join(self.not_achieved) or "none recorded"

    def refused_cell(self) -> str:
        """``3``; ``3 (2 attempts not recorded)``; ``not recorded``; ``n/a`` (HTTP)."""
        if not self.applicable:
            return NOT_APPLICABLE
        if self.refused_reads is None:
            return NOT_RECORDED
        if self.unrecorded_reads:
            return f"{self.refused_reads} ({self.unrecorded_reads} attempts not recorded)"
        return str(self.refused_reads)


def _mechanism_key(item: tuple[str | None, int]) -> tuple[int, str]:
    name = item[0]
    return (3, "") if name is None else (_ORDER.get(name, 2), name)


def _arm(scenario: str, label: str, attempts: Sequence[Attempt]) -> ArmContainment:
    counts: dict[str | None, int] = {}
    sentences: dict[str, None] = {}
    any_list = False
    refused: int | None = None
    unrecorded = 0
    for attempt in attempts:
        found = attempt.containment
        counts[found.mechanism] = counts.get(found.mechanism, 0) + 1
        if found.not_achieved is not None:
            any_list = True
            sentences.update(dict.fromkeys(found.not_achieved))
        if found.refused_reads is not None:
            refused = (refused or 0) + found.refused_reads
        elif found.applicable:
            unrecorded += 1
    return ArmContainment(
        scenario=scenario,
        label=label,
        attempts=len(attempts),
        mechanisms=tuple(sorted(counts.items(), key=_mechanism_key)),
        not_achieved=tuple(sentences) if any_list else None,
        refused_reads=refused,
        unrecorded_reads=unrecorded,
        applicable=any(a.containment.applicable for a in attempts),
    )


def containment_rows(attempts: Sequence[Attempt], name: Callable[[str], str] = arm_label) -> tuple[ArmContainment, ...]:
    """One row per arm with attempts: ``repository-only``, ``doc-bridge-mcp``, then others by first appearance;
    ``name`` gives each row's label (``Study.arm_name``; the default labels without one)."""
    order = [s for s in SCENARIOS if any(a.scenario == s for a in attempts)]
    order += list(dict.fromkeys(a.scenario for a in attempts if a.scenario not in SCENARIOS))
    return tuple(_arm(s, name(s), [a for a in attempts if a.scenario == s]) for s in order)


def _warning(row: ArmContainment) -> str | None:
    if row.bubblewrapped:
        return None
    if not row.recorded:
        return (f"Arm {row.label}: containment was not recorded (the ledger predates containment records), "
                "so this report cannot say how its attempts were confined.")
    mixed = f" in every attempt ({row.mechanism_cell()})" if len(row.mechanisms) > 1 else ""
    missing = "; ".join(row.not_achieved) if row.not_achieved else "what was not achieved is not recorded"
    return f"Arm {row.label} was not contained by bubblewrap{mixed}: {missing}."


def containment_sentences(rows: Sequence[ArmContainment]) -> tuple[str, ...]:
    """A warning per arm not contained by bubblewrap in every attempt (or not recorded), and one when
    the arms were contained differently (the comparison is then confounded)."""
    sentences = [warning for warning in map(_warning, rows) if warning is not None]
    if len({tuple(name for name, _ in row.mechanisms) for row in rows}) > 1:
        arms = "; ".join(f"{row.label}: {row.mechanism_cell()}" for row in rows)
        sentences.append(f"The arms were contained differently ({arms}), so the comparison is confounded: a "
                         "difference between them may come from their containment, not from the MCP server.")
    return tuple(sentences)
