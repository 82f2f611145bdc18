"""Correctness per arm with exact intervals (issue 30, item 4): intention to treat and complete case.

Intention to treat: every attempt the ledger records in an arm counts; an attempt that did not
complete (failed, refused, stopped, over its cap ...) counts as not correct (score 0). A completed
attempt still awaiting its verdict (``pending``) is left out of both views, since it has no
score yet. Complete case: only completed, scored attempts. Each arm's rate is the mean score.

Its interval respects that attempts of one task are not independent (issue 41 item 5): Clopper–Pearson
(1934) at the effective sample size of Korn and Graubard (1998). The rate's variance is the
cluster-robust (ratio-estimator) variance over tasks, ``k/(k-1) sum_i (c_i - p m_i)^2 / n^2`` (``c_i``
the task's summed score, ``m_i`` its attempts, ``n`` all attempts); the effective size is
``p(1-p) / variance``, at most ``n`` (never narrower than independent attempts), and with a rate of 0
or 1 (no variance to estimate) the number of tasks. With one task the attempts are all there is and
the plain Clopper–Pearson interval is shown, said in ``method``.
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
    method: str = ""
    """How the interval was computed, in words (issue 41 item 5)."""


TASK_LEVEL_METHOD = ("Clopper–Pearson at the Korn–Graubard effective sample size over {tasks} task clusters "
                     "(effective n {effective:.3g} of {attempts} attempts)")
ONE_TASK_METHOD = "Clopper–Pearson over the attempts of the one task (no task-level variance to estimate)"


def clopper_pearson(correct: float, attempts: float, alpha: float) -> tuple[float, float]:
    """The exact two-sided ``1 - alpha`` interval of a proportion ``correct / attempts`` (beta quantiles;
    0 and 1 at the boundaries).

    Raises:
        ValueError: ``attempts < 1`` or ``correct`` outside ``[0, attempts]``.
    """
    if attempts <= 0 or not 0 <= correct <= attempts:
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


def effective_size(scores_by_task: list[list[float]]) -> float:
    """The Korn–Graubard effective sample size of a rate over task clusters (module docstring; attempts)."""
    n = sum(len(scores) for scores in scores_by_task)
    k = len(scores_by_task)
    rate = sum(sum(scores) for scores in scores_by_task) / n
    if k < 2:
        return float(n)
    if rate in (0.0, 1.0):
        return float(k)
    variance = k / (k - 1) * sum((sum(sc) - rate * len(sc)) ** 2 for sc in scores_by_task) / n**2
    return float(n) if variance <= 0 else min(float(n), rate * (1 - rate) / variance)


def arm_rate(arm: str, attempts: list[Attempt], alpha: float, *, intention_to_treat: bool) -> ArmRate:
    """``arm``'s correctness rate over ``attempts`` (that arm's), ITT or complete case, with its task-level
    interval (module docstring)."""
    by_task: dict[str, list[float]] = {}
    for attempt in attempts:
        score = itt_score(attempt) if intention_to_treat else (attempt.correctness if attempt.completed else None)
        if score is not None:
            by_task.setdefault(attempt.task_id, []).append(score)
    scores = [s for task in by_task.values() for s in task]
    if not scores:
        return ArmRate(arm, 0.0, 0, None, None, None)
    correct = float(sum(scores))
    rate = correct / len(scores)
    effective = effective_size(list(by_task.values()))
    low, high = clopper_pearson(rate * effective, effective, alpha)
    method = (ONE_TASK_METHOD if len(by_task) < 2 else
              TASK_LEVEL_METHOD.format(tasks=len(by_task), effective=effective, attempts=len(scores)))
    return ArmRate(arm, correct, len(scores), rate, low, high, method)
