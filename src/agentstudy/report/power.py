"""Power planning for a paired study, by simulation with the report's task-level test (issue 17, item 3; issue 41).

The model. A study has ``k`` tasks and ``r`` repetitions per task and arm. Task ``i``'s true paired
difference ``d_i`` (``doc-bridge-mcp - repository-only``, in the metric's unit) is drawn from
``N(delta, sigma_task^2)``; each repetition of arm ``a`` on task ``i`` is drawn from ``N(mu_ia,
sigma_a^2)`` with ``mu_it - mu_ib = d_i``. The analysis (item 1) takes, per task, each arm's mean over
its repetitions and their difference ``D_i``, which is therefore ``N(delta, sigma_task^2 +
(sigma_b^2 + sigma_t^2) / r)``; the study is simulated by drawing the ``D_i`` directly from that
distribution (the same distribution as drawing every repetition), and tested with the report's test of
the mean at ``alpha`` (:func:`study_rejects`: :func:`agentstudy.report.mean_test.mean_test_rejects`, the
same flipped sets, resamples and thresholds as the report's :func:`~agentstudy.report.mean_test.mean_test`,
for all simulated studies at once): the two-sided sign-flip test, exact over all ``2^k`` sign vectors for
``k <= 16``, above that a seeded Monte Carlo, and from 10 tasks also the skewness-corrected bootstrap-t,
rejecting when both parts do (``p < alpha``, the report's decision). The planner's Monte Carlo counts are
smaller than the report's (:data:`~agentstudy.report.mean_test.PLANNER_FLIPS`,
:data:`~agentstudy.report.mean_test.PLANNER_RESAMPLES`; their rejection rate is measured against the
report's, docs/benchmarks.md). From :data:`NORMAL_MIN_TASKS` tasks on the normal approximation of the
sign-flip part stands for the test (so a 50,000-observation ledger plans in linear time). Power is the share
of :data:`SIMULATIONS` simulated studies that reject (Monte Carlo SE at most 1.44 points; labelled Monte
Carlo error wherever shown: the simulation's error only). The test is scale-free, so only ``delta / sd``
matters. Each point ``(k, r)`` of a curve or search draws from its own independent stream
(:func:`point_stream`: ``numpy.random.SeedSequence(seed, spawn_key=(k, r))``, the stream
``SeedSequence(seed).spawn`` would give that point), so one unlucky stream cannot bias a whole curve; within
a point the search over ``delta`` reuses that point's standard-normal draws (common random numbers), so the
simulated power never falls as ``delta`` grows and the minimum-detectable bisection is monotone.

With ``k`` tasks the smallest two-sided sign-flip p is ``2 / 2^k``, so below
:func:`smallest_tasks` (6 at ``alpha`` 0.05) no difference is ever detectable; this module says so
instead of searching. Variance components come from :func:`estimate_components` (method of moments,
documented there). Everything is an exploratory planning aid in binary floating point.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import stats as scipy_stats

from agentstudy.report.inference import TaskValues, task_effects
from agentstudy.report.mean_test import mean_test_rejects

SEED = 20261017
SIMULATIONS = 1200
"""Simulated studies per power estimate: the Monte Carlo SE is at most sqrt(0.25 / 1200) = 1.44 points."""
EXACT_MAX_TASKS = 16
MONTE_CARLO_SIGNS = 1999
MAX_TASKS = 400
NORMAL_MIN_TASKS = 101
"""From this many tasks on, the simulated test is the normal approximation of the sign-flip part's null
(linear in ``k``; the Monte Carlo over sign vectors and resamples costs ``k x M`` per study: issue 29, scale)."""
"""The largest number of tasks the needed-design search tries."""
PLAN_REPETITIONS = (1, 2, 3, 5)
_CHUNK_CELLS = 4_000_000
_TIE = 1e-9


class PilotTooSmall(ValueError):
    """The ledger holds too few tasks or repetitions with values to estimate the variance components.

    The message says what the pilot held and what the next one must hold (at least 2 tasks x 2
    repetitions, ``--pilot-tasks 2 --pilot-repetitions 2``).
    """


@dataclass(frozen=True)
class Components:
    """Variance components of one metric's paired differences (squared metric unit).

    ``tasks`` (k) tasks with values in both arms, ``repetitions`` (r) the median over those tasks of the
    smaller arm's number of repetitions; ``task_variance`` is sigma_task^2 of the true task difference,
    ``baseline_variance`` / ``treatment_variance`` the pooled within-task repetition variance per arm;
    ``observed_variance`` the sample variance of the k observed task differences.
    """

    tasks: int
    repetitions: int
    task_variance: float
    baseline_variance: float
    treatment_variance: float
    observed_variance: float

    def difference_sd(self, repetitions: int) -> float:
        """The SD of one task's observed difference with ``repetitions`` per arm (metric unit)."""
        return math.sqrt(self.task_variance + (self.baseline_variance + self.treatment_variance) / repetitions)


@dataclass(frozen=True)
class PowerEstimate:
    """Simulated power (share 0-1) of ``tasks`` x ``repetitions`` at ``effect`` and its Monte Carlo SE."""

    tasks: int
    repetitions: int
    effect: float
    power: float
    mc_se: float
    simulations: int


@dataclass(frozen=True)
class Detectable:
    """The minimum detectable paired difference (metric unit, ``None`` with ``note`` when there is none)
    of ``tasks`` x ``repetitions`` at ``alpha`` and ``power``, with the simulated power there."""

    tasks: int
    repetitions: int
    difference: float | None
    estimate: PowerEstimate | None
    note: str | None


@dataclass(frozen=True)
class NeededDesign:
    """The smallest number of tasks with ``repetitions`` per arm that reaches the target power at
    ``effect`` (``tasks`` ``None`` with ``note`` when none up to :data:`MAX_TASKS` does)."""

    repetitions: int
    effect: float
    tasks: int | None
    estimate: PowerEstimate | None
    note: str | None


def smallest_tasks(alpha: float) -> int:
    """The fewest tasks whose smallest two-sided sign-flip p, ``2 / 2^k``, is at most ``alpha``.

    Raises:
        ValueError: ``alpha`` not in (0, 1).
    """
    if not 0 < alpha < 1:
        raise ValueError("alpha must lie strictly between 0 and 1")
    k = 1
    while 2.0 / 2.0**k > alpha * (1 + _TIE):
        k += 1
    return k


def exact_variance(values: Sequence[float]) -> float:
    """The sample variance of two or more finite floats, exactly ``statistics.variance(values)``: the exact
    rational ``(n Σx² − (Σx)²) / (n (n − 1))`` rounded once to the nearest float, in integers on a common
    power-of-two scale (no ``Fraction`` per value: a 50,000-observation plan pools 25,000 arms, issue 29)."""
    ratios = [value.as_integer_ratio() for value in values]
    scale = max(denominator for _, denominator in ratios)  # every denominator is a power of two
    scaled = [numerator * (scale // denominator) for numerator, denominator in ratios]
    n = len(scaled)
    total = sum(scaled)
    return (n * sum(x * x for x in scaled) - total * total) / (n * (n - 1) * scale * scale)


def _pooled(groups: Sequence[Sequence[float]]) -> tuple[float, int]:
    sums = sum((len(g) - 1) * exact_variance(g) for g in groups if len(g) >= 2)
    df = sum(len(g) - 1 for g in groups if len(g) >= 2)
    return (sums / df if df else math.nan), df


def _too_small(k: int) -> PilotTooSmall:
    return PilotTooSmall(
        f"too few tasks to estimate the variance of the task differences: {k} task{'s' if k != 1 else ''} with "
        "values in both arms; the next pilot must hold at least 2 tasks (agentstudy study --pilot "
        "--pilot-tasks 2)")


def estimate_components(values: TaskValues) -> Components:
    """Method-of-moments variance components from ``values`` (task id -> (baseline repetition values,
    treatment repetition values), :data:`report.inference.TaskValues`; tasks without both arms left out).

    Within-task variance per arm is pooled over tasks (degrees of freedom ``n - 1`` each);
    ``task_variance = max(0, var(D) - mean_i(sigma_b^2 / n_bi + sigma_t^2 / n_ti))`` where ``var(D)``
    is the sample variance of the observed task differences (clipped at zero, as moments can undershoot).

    With one repetition (median of the smaller arm's count below 2, or no task with 2 values in an arm) the
    repetition noise cannot be told from the task variance: the components are ``repetitions`` 1 with the whole
    variance of the task differences as ``task_variance`` and no repetition variance, which plans a study of one
    repetition exactly (issue 41 item 6).

    Raises:
        PilotTooSmall: fewer than 2 tasks with values in both arms (the only "too small").
        ValueError: a non-finite value.
    """
    effects = task_effects(values)
    included = {e.task_id for e in effects}
    arms = [(list(map(float, b)), list(map(float, a))) for t, (b, a) in values.items() if t in included]
    k = len(effects)
    r = int(statistics.median(min(e.baseline_n, e.treatment_n) for e in effects)) if effects else 0
    base_var, base_df = _pooled([b for b, _ in arms])
    treat_var, treat_df = _pooled([a for _, a in arms])
    if k < 2:
        raise _too_small(k)
    observed = statistics.variance([e.difference for e in effects])
    if r < 2 or base_df == 0 or treat_df == 0:  # one repetition (issue 41 item 6): the differences' variance is all
        return Components(k, 1, observed, 0.0, 0.0, observed)  # there is, so the plan is for one repetition
    noise = statistics.fmean(base_var / e.baseline_n + treat_var / e.treatment_n for e in effects)
    return Components(k, r, max(0.0, observed - noise), base_var, treat_var, observed)


def _signs(k: int, seed: int) -> tuple[np.ndarray, bool]:
    """Sign vectors as a (k, M) matrix and whether they are the exact (half) enumeration."""
    if k <= EXACT_MAX_TASKS:
        grid = ((np.arange(2 ** (k - 1))[:, None] >> np.arange(k - 1)) & 1).astype(float)
        half = np.hstack([np.ones((grid.shape[0], 1)), 1.0 - 2.0 * grid])
        return half.T, True
    rng = np.random.default_rng([seed, k, 1])
    return rng.choice(np.array([-1.0, 1.0]), size=(k, MONTE_CARLO_SIGNS)), False


def sign_flip_rejects(differences: np.ndarray, alpha: float, *, seed: int = SEED) -> np.ndarray:
    """Whether the two-sided sign-flip test alone (the report's test before issue 41; the benches' fixed-design
    reference, not the planner's test) rejects at ``alpha``, for each row of ``differences``
    (shape (studies, k), k task differences per simulated study): a boolean array of shape (studies,).

    Exact for ``k <= 16`` (the half enumeration with the first sign fixed is enough: ``s`` and ``-s``
    give the same ``|mean|``), else a seeded Monte Carlo over :data:`MONTE_CARLO_SIGNS` sign vectors, and
    from :data:`NORMAL_MIN_TASKS` tasks on the normal approximation of the null (linear in ``k``).
    """
    studies, k = differences.shape
    if k >= NORMAL_MIN_TASKS:
        return _normal_rejects(differences, alpha)
    signs, exact = _signs(k, seed)
    observed = np.abs(differences.sum(axis=1))
    hits = np.empty(studies)
    step = max(1, _CHUNK_CELLS // signs.shape[1])
    for start in range(0, studies, step):
        block = np.abs(differences[start:start + step] @ signs)
        limit = observed[start:start + step, None] * (1 - _TIE) - _TIE
        hits[start:start + step] = (block >= limit).sum(axis=1)
    p = hits / signs.shape[1] if exact else (1 + hits) / (1 + signs.shape[1])
    rejected: np.ndarray = p <= alpha * (1 + _TIE)
    return rejected


def point_stream(seed: int, tasks: int, repetitions: int) -> np.random.Generator:
    """The independent random stream of one design point (``tasks`` x ``repetitions``) under ``seed``: the child
    ``SeedSequence(seed, spawn_key=(tasks, repetitions))``, independent of every other point's."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(tasks, repetitions)))


@lru_cache(maxsize=4)
def _draws(k: int, r: int, seed: int, simulations: int) -> np.ndarray:
    """The standard normal draws of one design point, read-only and kept for the point's next effect (a search
    simulates one point at many effects: regenerating them was most of a large plan's time, issue 29)."""
    draws = point_stream(seed, k, r).standard_normal((simulations, k))
    draws.flags.writeable = False
    return draws


def _normal_rejects(differences: np.ndarray, alpha: float) -> np.ndarray:
    """The sign-flip test by the normal approximation of its null: given the data, ``sum(s_i d_i)`` over
    random signs has mean 0 and variance ``sum(d_i^2)``, so ``p = 2 * (1 - Phi(|sum d| / sqrt(sum d^2)))``."""
    total = np.abs(differences.sum(axis=1))
    spread = np.sqrt(np.square(differences).sum(axis=1))
    z = np.divide(total, spread, out=np.zeros_like(total), where=spread > 0)
    rejected: np.ndarray = 2.0 * scipy_stats.norm.sf(z) <= alpha * (1 + _TIE)
    return rejected


def study_rejects(differences: np.ndarray, alpha: float, *, seed: int = SEED) -> np.ndarray:
    """Whether the report's task-level test rejects at ``alpha`` for each row of ``differences`` (studies x k task
    differences): :func:`agentstudy.report.mean_test.mean_test_rejects` (the sign-flip test and, from 10 tasks, the
    bootstrap-t; :data:`~agentstudy.report.mean_test.PLANNER_RESAMPLES` resamples,
    :data:`~agentstudy.report.mean_test.PLANNER_FLIPS` sign vectors), and from :data:`NORMAL_MIN_TASKS` tasks on the
    normal approximation of the sign-flip part alone (:func:`_normal_rejects`; at that size the sign-flip part's p
    is the larger wherever either could reject: its statistic ``sum d / sqrt(sum d^2)`` is below ``|t|`` once
    ``|t| > 1``, and the bootstrap-t of near-normal differences is close to the normal reference). Boolean, one
    entry per study."""
    if differences.shape[1] >= NORMAL_MIN_TASKS:
        return _normal_rejects(differences, alpha)
    return mean_test_rejects(differences, alpha, seed=seed)


def simulate_power(effect: float, sd: float, tasks: int, repetitions: int, alpha: float, *,
                   seed: int = SEED, simulations: int = SIMULATIONS) -> PowerEstimate:
    """Simulated power of ``tasks`` x ``repetitions`` at true mean difference ``effect`` (metric unit),
    ``sd`` being the SD of one task's observed difference at that ``repetitions``
    (:meth:`Components.difference_sd`). Seeded: the same arguments give the same estimate; each
    ``(tasks, repetitions)`` point has its own stream (:func:`point_stream`), shared across ``effect``.

    Raises:
        ValueError: ``tasks`` < 1, ``sd`` < 0 or non-finite input.
    """
    if tasks < 1 or not (math.isfinite(effect) and math.isfinite(sd)) or sd < 0:
        raise ValueError("need at least one task and a finite effect and SD >= 0")
    if sd == 0:
        data = np.full((1, tasks), effect)
        share = float(study_rejects(data, alpha, seed=seed)[0]) if effect != 0 else 0.0
        return PowerEstimate(tasks, repetitions, effect, share, 0.0, simulations)
    data = effect / sd + _draws(tasks, repetitions, seed, simulations)
    share = float(study_rejects(data, alpha, seed=seed).mean())
    return PowerEstimate(tasks, repetitions, effect, share, math.sqrt(share * (1 - share) / simulations), simulations)


def _unreachable(tasks: int, alpha: float) -> str:
    return (f"no difference is detectable with {tasks} task{'s' if tasks != 1 else ''}: the smallest two-sided "
            f"sign-flip p is 2/2^{tasks} = {2 / 2**tasks:.4g} > alpha {alpha:g}; at least "
            f"{smallest_tasks(alpha)} tasks are needed")


def minimum_detectable(components: Components, alpha: float, power: float, *, tasks: int | None = None,
                       repetitions: int | None = None, seed: int = SEED) -> Detectable:
    """The smallest positive difference (metric unit, to 1 % of the task-difference SD) whose simulated
    power at ``tasks`` x ``repetitions`` (default: the components' own design) reaches ``power``.

    Raises:
        ValueError: ``power`` not in (0, 1) or ``alpha`` not in (0, 1).
    """
    if not 0 < power < 1:
        raise ValueError("power must lie strictly between 0 and 1")
    k = components.tasks if tasks is None else tasks
    r = components.repetitions if repetitions is None else repetitions
    if k < smallest_tasks(alpha):
        return Detectable(k, r, None, None, _unreachable(k, alpha))
    sd = components.difference_sd(r)
    if sd == 0:
        return Detectable(k, r, 0.0, None, "every task difference is identical: any non-zero difference is detected")
    low, high = 0.0, 1.0
    while simulate_power(high * sd, sd, k, r, alpha, seed=seed).power < power:
        low, high = high, high * 2
    while high - low > 0.01:
        middle = (low + high) / 2
        if simulate_power(middle * sd, sd, k, r, alpha, seed=seed).power >= power:
            high = middle
        else:
            low = middle
    return Detectable(k, r, high * sd, simulate_power(high * sd, sd, k, r, alpha, seed=seed), None)


def _guess(standardised: float, alpha: float, power: float) -> int:
    z = float(scipy_stats.norm.ppf(1 - alpha / 2) + scipy_stats.norm.ppf(power))
    return math.ceil((z / standardised) ** 2) + 1


def needed_tasks(components: Components, effect: float, repetitions: int, alpha: float, power: float, *,
                 seed: int = SEED) -> NeededDesign:
    """The smallest ``k`` (from :func:`smallest_tasks` to :data:`MAX_TASKS`) whose simulated power with
    ``repetitions`` per arm at ``effect`` (metric unit, sign ignored) reaches ``power``; searched from a
    normal-approximation guess, stepping down while the power holds and up while it falls short.

    Raises:
        ValueError: ``effect`` zero or non-finite, ``repetitions`` < 1.
    """
    if not math.isfinite(effect) or effect == 0 or repetitions < 1:
        raise ValueError("the effect must be a finite non-zero difference and repetitions at least 1")
    effect = abs(effect)
    sd = components.difference_sd(repetitions)
    floor = smallest_tasks(alpha)
    def reaches(k: int) -> PowerEstimate | None:
        estimate = simulate_power(effect, sd, k, repetitions, alpha, seed=seed)
        return estimate if estimate.power >= power else None
    k = floor if sd == 0 else min(MAX_TASKS, max(floor, _guess(effect / sd, alpha, power)))
    found = reaches(k)
    if found is not None:
        while k > floor and (lower := reaches(k - 1)) is not None:
            k, found = k - 1, lower
        return NeededDesign(repetitions, effect, k, found, None)
    while k < MAX_TASKS:
        k += 1
        if (found := reaches(k)) is not None:
            return NeededDesign(repetitions, effect, k, found, None)
    return NeededDesign(repetitions, effect, None, None, f"more than {MAX_TASKS} tasks")


def needed_designs(components: Components, effect: float, alpha: float, power: float, *, seed: int = SEED,
                   repetitions: Sequence[int] = PLAN_REPETITIONS) -> tuple[NeededDesign, ...]:
    """:func:`needed_tasks` for each of ``repetitions`` (default 1, 2, 3, 5)."""
    return tuple(needed_tasks(components, effect, r, alpha, power, seed=seed) for r in repetitions)
