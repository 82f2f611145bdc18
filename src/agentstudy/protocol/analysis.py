"""The study file's ``analysis`` section: the declared primary endpoint and its siblings. Pure.

A study declares before it runs which metric answers its question (``primary``, with the direction
that counts as better), which others it reports as secondary (Holm-adjusted), the two-sided
``alpha`` of every test and interval, and ``minimumTreatmentUse``: the share of treatment attempts
that must call the MCP server under study before the report warns that the treatment was not
delivered. A seed manifest (no ``analysis``) and a study file without it get :data:`DEFAULT_ANALYSIS`.
Documented in docs/study-file.md; statistics in docs/statistics.md.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

METRIC_KEYS = ("inputTokens", "outputTokens", "toolCalls", "wallTimeMs", "chargedUsd", "repricedUsd",
               "correctness")
"""Every metric a report can test, in report order (camelCase, as in ``report --format json``)."""

DEFAULT_ALPHA = 0.05
DEFAULT_MINIMUM_TREATMENT_USE = 0.5
DEFAULT_MIN_REPOSITORIES = 6
"""With fewer repositories than this the answer holds for the tasks of these repositories only (issue 41)."""


class PrimaryEndpoint(BaseModel):
    """``analysis.primary``: ``metric`` (one of :data:`METRIC_KEYS`) and ``betterWhen`` (``higher`` or ``lower``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, populate_by_name=True)

    metric: Literal["inputTokens", "outputTokens", "toolCalls", "wallTimeMs", "chargedUsd", "repricedUsd",
                    "correctness"] = Field(description="The metric that answers the study's question.")
    better_when: Literal["higher", "lower"] = Field(
        alias="betterWhen", description="Which direction of the treatment − control difference is better.")


class AnalysisPlan(BaseModel):
    """The ``analysis`` section (all fields optional; defaults below).

    ``primary`` defaults to ``{"metric": "correctness", "betterWhen": "higher"}``; ``secondary`` (a
    list of distinct metric keys, not the primary) defaults to every other reported metric;
    ``alpha`` (two-sided, in (0, 0.5]) to 0.05; ``minimumTreatmentUse`` (a fraction in [0, 1]) to 0.5;
    ``minRepositories`` (issue 41; at least 2) to 6; ``minimumEffect`` (``{metric: value}``, the smallest effect
    worth detecting in the metric's unit) to none.

    Raises (as pydantic ``ValidationError`` on load): an unknown key or metric, the primary listed
    as secondary, a repeated secondary, alpha or minimumTreatmentUse out of range.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, populate_by_name=True)

    primary: PrimaryEndpoint = Field(
        default=PrimaryEndpoint(metric="correctness", better_when="higher"),
        description="The primary endpoint; default correctness, higher is better.")
    secondary: list[Literal["inputTokens", "outputTokens", "toolCalls", "wallTimeMs", "chargedUsd", "repricedUsd",
                            "correctness"]] | None = Field(
        default=None, description="Secondary metrics (Holm-adjusted); absent: every other reported metric.")
    alpha: float = Field(default=DEFAULT_ALPHA, gt=0.0, le=0.5,
                         description="Two-sided significance level of every test and interval.")
    minimum_treatment_use: float = Field(
        default=DEFAULT_MINIMUM_TREATMENT_USE, ge=0.0, le=1.0, alias="minimumTreatmentUse",
        description="Share of treatment attempts that must call the MCP server under study (else a warning).")
    min_repositories: int | None = Field(
        default=None, ge=2, alias="minRepositories",
        description="From this many repositories on (default 6) the primary is also tested at the repository level.")
    minimum_effect: dict[Literal["inputTokens", "outputTokens", "toolCalls", "wallTimeMs", "chargedUsd",
                                 "repricedUsd", "correctness"], float] | None = Field(
        default=None, alias="minimumEffect",
        description="The smallest effect worth detecting per metric, in the metric's unit (what power plans at).")

    @property
    def repositories_needed(self) -> int:
        """``minRepositories`` or its default (:data:`DEFAULT_MIN_REPOSITORIES`)."""
        return DEFAULT_MIN_REPOSITORIES if self.min_repositories is None else self.min_repositories

    @model_validator(mode="after")
    def _check(self) -> AnalysisPlan:
        if self.secondary is not None:
            if len(set(self.secondary)) != len(self.secondary):
                raise ValueError("analysis.secondary lists a metric twice")
            if self.primary.metric in self.secondary:
                raise ValueError(f"analysis.secondary lists the primary metric {self.primary.metric!r}")
        return self

    def secondary_of(self, reported: tuple[str, ...]) -> tuple[str, ...]:
        """The secondary metrics among ``reported`` metric keys (report order): the declared ones, or every
        reported metric but the primary when none are declared."""
        if self.secondary is None:
            return tuple(key for key in reported if key != self.primary.metric)
        return tuple(key for key in reported if key in self.secondary)

    def to_json(self) -> dict[str, object]:
        """The section as JSON (camelCase, defaults filled in)."""
        return {"primary": {"metric": self.primary.metric, "betterWhen": self.primary.better_when},
                **({"secondary": list(self.secondary)} if self.secondary is not None else {}),
                "alpha": self.alpha, "minimumTreatmentUse": self.minimum_treatment_use,
                "minRepositories": self.repositories_needed,
                **({"minimumEffect": dict(self.minimum_effect)} if self.minimum_effect is not None else {})}


DEFAULT_ANALYSIS = AnalysisPlan()
"""What a seed manifest or a study file without ``analysis`` gets."""


def analysis_from_json(value: object) -> AnalysisPlan | None:
    """A ledger's recorded ``analysis`` block read tolerantly: the plan, or ``None`` when absent or invalid
    (the report then states that it used the defaults)."""
    if not isinstance(value, dict):
        return None
    try:
        return AnalysisPlan.model_validate(value)
    except ValueError:
        return None
