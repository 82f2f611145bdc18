"""A study file's ``design`` section (issue 35): the pre-declared sequential design and the arms' order. Pure.

``design.sequential`` = ``{"maxTasks", "alpha", "futility", "seed"}`` (``seed`` optional): run the
tasks in a seeded random order, task block by task block, and stop as soon as the anytime-valid test
of ``protocol.sequential`` decides. ``design.order`` (issue 41 item 8): ``"counterbalanced"`` (the default, the
seed's rule) or ``"randomized"`` with an optional ``orderSeed`` (``protocol.arm_order``). Documented in
docs/study-file.md.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentstudy.protocol.sequential import SequentialDesign, new_design


class SequentialSettings(BaseModel):
    """``design.sequential``: ``maxTasks`` (1–1000, at most the study's tasks), ``alpha`` in (0, 1) (efficacy at
    an e-value of ``1/alpha``; the test is one-sided in the declared direction of the primary, issue 41 item 7),
    ``futility`` in (0, 1) or ``null``, 0.1 when absent (stop when the e-value, the evidence that the treatment is
    better, falls to it; efficacy out of reach always stops), ``seed`` (optional, 0 to 2^63 - 1: the task order's
    seed; absent: taken from the protocol hash)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, populate_by_name=True)

    max_tasks: int = Field(alias="maxTasks", ge=1, le=1000, description="The most tasks the study runs.")
    alpha: float = Field(gt=0, lt=1, description="Type-I error; efficacy at an e-value of 1/alpha.")
    futility: float | None = Field(
        default=0.1, gt=0, lt=1,
        description="Futility bound: stop when the e-value (evidence of a better treatment) falls to it "
                    "(default 0.1).")
    seed: int | None = Field(default=None, ge=0, le=2**63 - 1, description="Seed of the random task order.")

    @model_validator(mode="after")
    def _reachable(self) -> SequentialSettings:
        self.design()
        return self

    def design(self) -> SequentialDesign:
        """The :class:`~agentstudy.protocol.sequential.SequentialDesign` of a new study (``magnitudeBet``, its bet
        size planned from ``maxTasks`` and ``alpha``; raises ``ValueError`` when efficacy can never be reached within
        ``maxTasks``)."""
        return new_design(self.max_tasks, self.alpha, self.futility)


class StudyDesign(BaseModel):
    """A study file's ``design``: ``sequential`` (:class:`SequentialSettings`; absent: a fixed design), ``order``
    (``counterbalanced``, the default, or ``randomized``; issue 41 item 8) and ``orderSeed`` (0 to 2^63 - 1, only
    with ``randomized``; absent: taken from the protocol hash)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, populate_by_name=True)

    sequential: SequentialSettings | None = None
    order: Literal["counterbalanced", "randomized"] = Field(
        default="counterbalanced", description="The arms' order in each task and repetition.")
    order_seed: int | None = Field(default=None, alias="orderSeed", ge=0, le=2**63 - 1,
                                   description="Seed of the randomised order (randomized only).")

    @model_validator(mode="after")
    def _seed_needs_randomized(self) -> StudyDesign:
        if self.order_seed is not None and self.order != "randomized":
            raise ValueError('design.orderSeed needs design.order "randomized"')
        return self


__all__ = ["SequentialSettings", "StudyDesign"]
