"""The ledger's ``sequential`` block (issue 35): every look of the sequential test and why the study stopped.

``{"looks": [{"tasks", "eValue", "decision"}], "stoppedEarly", "stopReason", "tasksCompleted", "maxTasks"}``
plus what makes the looks reproducible from the observations alone: ``alpha``, ``futility``, ``metric``,
``betterWhen``, ``seed``, ``taskOrder`` (the planned block order) and ``stoppedAt`` (ISO 8601 UTC ms,
when the stop was decided; no attempt is admitted after it) and, after an efficacy stop, ``direction``
(``better`` or ``worse``: which way the treatment differs), and ``taskPool`` (the study's task ids the seed
permuted; absent from older ledgers). Checked by ``protocol.ledger_sequential``.

Issue 41 item 7 adds ``construction`` (``magnitudeBet`` for new studies, ``magnitudeMixture`` in ledgers written
while it was new; absent: the two-sided ``signWeighted`` of older ledgers, which replay with it), ``sidedness``
(``one-sided``/``two-sided``, absent with it) and, with ``magnitudeBet`` only, ``betSize`` (its one bet size, fixed
from the design before any data; replay, verification, continuations and the confidence sequence read it, never
recompute it). Issue 40 adds
``carried`` to a continuation of a sequential study that had not stopped: every observation the chain before it
completed on a planned task, ``{"taskId", "scenario", "value"}`` (the primary's value, ``null`` when missing) in
the chain's order; the monitor replays them before the run's own, so the e-process carries over and the looks
go on numbering from the chain's (the looks listed are all of the study's, the carried ones first).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agentstudy.protocol.sequential import Construction, Decision, Sidedness


class LookRecord(BaseModel):
    """One look: after ``tasks`` completed tasks, the e-value ``eValue`` and the ``decision``."""

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    tasks: int
    e_value: float = Field(alias="eValue")
    decision: Decision


class CarriedObservation(BaseModel):
    """One observation a continuation carries over from its chain: ``taskId``, ``scenario`` and ``value`` (the
    primary metric's, in its unit; ``None`` when the observation has none)."""

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    task_id: str = Field(alias="taskId")
    scenario: str
    value: float | None


class SequentialRecord(BaseModel):
    """The ledger's ``sequential`` block (see the module docstring). ``stopReason`` is ``None`` until a look
    decides (a run blocked or stopped by a signal before that keeps it ``None``)."""

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    looks: list[LookRecord]
    stopped_early: bool = Field(alias="stoppedEarly")
    stop_reason: Literal["efficacy", "futility", "maxTasks"] | None = Field(alias="stopReason")
    tasks_completed: int = Field(alias="tasksCompleted")
    max_tasks: int = Field(alias="maxTasks")
    alpha: float
    futility: float | None
    metric: str
    better_when: Literal["lower", "higher"] = Field(alias="betterWhen")
    seed: int
    task_order: list[str] = Field(alias="taskOrder")
    stopped_at: str | None = Field(alias="stoppedAt")
    direction: Literal["better", "worse"] | None
    """After an ``efficacy`` stop: whether the treatment did better or worse on the metric (``betterWhen``)."""
    task_pool: list[str] | None = Field(default=None, alias="taskPool")
    """Every task id of the study in its file's order: what ``seed`` permuted into ``taskOrder``, so the verifier
    redraws the order (issue 40); absent from older ledgers (serialised only when set)."""
    construction: Construction | None = None
    """The e-process (issue 41 item 7); ``None`` (absent) in older ledgers: ``signWeighted``."""
    sidedness: Sidedness | None = None
    """``one-sided`` (the declared direction only) or ``two-sided``; absent with ``construction``."""
    bet_size: float | None = Field(default=None, alias="betSize")
    """``magnitudeBet``'s bet size (per unit of the standardized difference); absent with the other constructions."""
    carried: list[CarriedObservation] | None = None
    """A continuation's observations carried over from its chain (see the module docstring); absent otherwise."""


__all__ = ["CarriedObservation", "LookRecord", "SequentialRecord"]
