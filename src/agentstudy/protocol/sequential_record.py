"""The ledger's ``sequential`` block (issue 35): every look of the sequential test and why the study stopped.

``{"looks": [{"tasks", "eValue", "decision"}], "stoppedEarly", "stopReason", "tasksCompleted", "maxTasks"}``
plus what makes the looks reproducible from the observations alone: ``alpha``, ``futility``, ``metric``,
``betterWhen``, ``seed``, ``taskOrder`` (the planned block order) and ``stoppedAt`` (ISO 8601 UTC ms,
when the stop was decided; no attempt is admitted after it) and, after an efficacy stop, ``direction``
(``better`` or ``worse``: which way the treatment differs), and ``taskPool`` (the study's task ids the seed
permuted; absent from older ledgers). Checked by ``protocol.ledger_sequential``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agentstudy.protocol.sequential import Decision


class LookRecord(BaseModel):
    """One look: after ``tasks`` completed tasks, the e-value ``eValue`` and the ``decision``."""

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    tasks: int
    e_value: float = Field(alias="eValue")
    decision: Decision


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


__all__ = ["LookRecord", "SequentialRecord"]
