"""Correctness per arm with exact intervals (issue 30, item 4): intention to treat and complete case.

Intention to treat: every attempt the ledger records in an arm counts; an attempt that did not
complete (failed, refused, stopped, over its cap ...) counts as not correct (score 0). A completed
attempt still awaiting its verdict (``pending``) is left out of both views, since it has no
score yet. Complete case: only completed, scored attempts. Each arm's rate is the mean score; its
interval is Clopper–Pearson (scipy's beta quantiles), exact for 0/1 scores and, for partial
scores, the same formula applied to the summed score.
"""

from __future__ import annotations

from dataclasses import dataclass

from scipy import stats as scipy_stats

from agentstudy.report.model import Attempt

ITT = "intention to treat"
COMPLETE_CASE = "complete case"


@dataclass(frozen=True)
class ArmRate:
    """One arm's correctness: ``correct`` (summed score), ``attempts`` counted, ``rate`` = correct / attempts
    (``None`` with no attempt) and its Clopper–Pearson ``ci_low``/``ci_high`` at the report's alpha."""

    arm: str
    correct: float
    attempts: int
    rate: float | None
    ci_low: float | None
    ci_high: float | None


def clopper_pearson(correct: float, attempts: int, alpha: float) -> tuple[float, float]:
    """The exact two-sided ``1 - alpha`` interval of a proportion ``correct / attempts`` (beta quantiles;
    0 and 1 at the boundaries).

    Raises:
        ValueError: ``attempts < 1`` or ``correct`` outside ``[0, attempts]``.
    """
    if attempts < 1 or not 0 <= correct <= attempts:
        raise ValueError("a rate needs at least one attempt and a count within it")
    low = 0.0 if correct == 0 else float(scipy_stats.beta.ppf(alpha / 2, correct, attempts - correct + 1))
    high = 1.0 if correct == attempts else float(scipy_stats.beta.ppf(1 - alpha / 2, correct + 1, attempts - correct))
    return low, high


def itt_score(attempt: Attempt) -> float | None:
    """The attempt's correctness under intention to treat: its score, 0 when it did not complete, ``None``
    when it completed but has no score (pending or not adjudicated)."""
    if not attempt.completed:
        return 0.0
    return attempt.correctness


def arm_rate(arm: str, attempts: list[Attempt], alpha: float, *, intention_to_treat: bool) -> ArmRate:
    """``arm``'s correctness rate over ``attempts`` (that arm's), ITT or complete case."""
    scores = [s for s in ((itt_score(a) if intention_to_treat else (a.correctness if a.completed else None))
                          for a in attempts) if s is not None]
    if not scores:
        return ArmRate(arm, 0.0, 0, None, None, None)
    correct = float(sum(scores))
    low, high = clopper_pearson(correct, len(scores), alpha)
    return ArmRate(arm, correct, len(scores), correct / len(scores), low, high)
