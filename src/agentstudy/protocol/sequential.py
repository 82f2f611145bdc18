"""The anytime-valid sequential test of a paired study (issues 35, 41 item 7): e-processes on task differences. Pure.

Three constructions, named in the ledger's ``sequential.construction`` so that every ledger replays with its own:

- ``magnitudeBet`` (issue 41, new studies): one-sided in the declared direction of the primary, the null
  "the treatment is not better" (its sign-flip form: each task's arms are interchangeable); one bet size fixed
  from the planned horizon and recorded as ``betSize`` (``protocol.sequential_bet``), betting only that the
  treatment does better. "Worse" is never an efficacy stop; evidence against "better" stops for futility.
- ``magnitudeMixture`` (ledgers written while it was the new studies' construction): one-sided like it, the
  bet-size mixture of ``protocol.sequential_magnitude`` on the standardized differences.
- ``signWeighted`` (issue 35, ledgers written before issue 41, which record no construction): two-sided, below.

The unit is the task: its difference is the treatment arm's mean minus the control arm's mean of
the primary metric over the task's repetitions (``doc-bridge-mcp - repository-only``). Under the
sign-flip null (no effect: the two arms' values of a task are exchangeable) the sign of a non-zero
task difference is a fair coin, independent of its size and of every earlier task, whatever the
metric's distribution. The test bets on that sign:

- the *signal* of task ``i`` is ``X_i = s_i * w_i``: ``s_i`` is +1 when the treatment did better
  (``betterWhen``: a lower or a higher value), -1 when worse, 0 for a tie or a missing difference;
  ``w_i = min(1, |d_i| / m_i)`` weighs it by its size, ``m_i`` the mean size of the earlier
  non-zero differences (``w_1 = 1``): bounded by 1, and a function of the size only, which the
  null leaves independent of the sign;
- the *bet* ``lambda_i`` is chosen from earlier tasks only (predictable), the aGRAPA plug-in
  ``(PRIOR_MEAN + sum X_j) / (PRIOR_SQUARE + sum X_j^2)`` over ``j < i``, clipped to
  ``[0, LAMBDA_MAX]``;
- one side's wealth after ``n`` tasks is ``E+_n = prod (1 + lambda_i X_i)``, never below
  ``(1 - LAMBDA_MAX)^n > 0``; the other side, ``E-``, bets the same way on the reversed signs (evidence
  that the treatment does worse).

The e-value is their average ``E = (E+ + E-) / 2``: the question is whether the arms differ, and an
answer in either direction is an answer (the direction is the larger side). Given the past and
``|d_i|``, ``E[1 + lambda_i X_i] = 1`` under the null for both sides, so ``E`` is a test martingale
and, by Ville's inequality, ``P(E_n >= 1/alpha for some n) <= alpha``: valid under any stopping rule,
continuous monitoring included.

Decisions at each look (:func:`decisions`), in this order: ``efficacy`` when ``E >= 1/alpha``;
``futility`` when ``E <= futility`` (the pre-declared floor; ``futility`` may be ``None``) or when
``1/alpha`` is out of reach (``E * (1 + LAMBDA_MAX)^(maxTasks - n) < 1/alpha``: even the largest
bets won on every remaining task could not reach it); ``maxTasks`` when ``n`` is ``maxTasks``;
otherwise ``continue``. Stopping for futility never rejects, so the type-I error stays at most
``alpha``.

Everything is vectorised over leading axes (numpy) so the simulations of ``bench/`` and
``agentstudy power --sequential`` use exactly the code the runners use.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from agentstudy.protocol.sequential_bet import bet_e_process, planned_bet_size
from agentstudy.protocol.sequential_magnitude import magnitude_e_process, oriented

if TYPE_CHECKING:  # numpy loads when a test is computed, not with every study file (issue 42)
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

BetterWhen = Literal["lower", "higher"]
Construction = Literal["signWeighted", "magnitudeMixture", "magnitudeBet"]
Sidedness = Literal["two-sided", "one-sided"]
LEGACY_CONSTRUCTION: Construction = "signWeighted"
"""The construction of ledgers that record none (issue 35): two-sided, sign-weighted."""
CONSTRUCTION: Construction = "magnitudeBet"
"""The construction of every new sequential study (issue 41 item 7): one-sided, magnitude-aware, one bet size."""
SIDEDNESS: dict[Construction, Sidedness] = {"signWeighted": "two-sided", "magnitudeMixture": "one-sided",
                                            "magnitudeBet": "one-sided"}
"""Each construction's sidedness (recorded beside it in the ledger)."""
Decision = Literal["continue", "efficacy", "futility", "maxTasks"]
StopReason = Literal["efficacy", "futility", "maxTasks"]
DECISIONS: tuple[Decision, ...] = ("continue", "efficacy", "futility", "maxTasks")
"""Decision codes of the vectorised functions are indices into this tuple."""

LAMBDA_MAX = 0.8
"""The largest bet (a fraction of the current wealth): one lost task costs at most 80 % of it."""
PRIOR_MEAN = 0.5
"""The bet's pseudo-observation numerator: the first bet is ``PRIOR_MEAN / PRIOR_SQUARE`` = 0.5."""
PRIOR_SQUARE = 1.0
"""The bet's pseudo-observation denominator."""
FEWEST_LIMIT = 65_536
""":func:`fewest_tasks` looks this far at most."""


@dataclass(frozen=True)
class SequentialDesign:
    """A pre-declared sequential design (``design.sequential`` of a study file).

    Attributes:
        max_tasks: the most tasks the study runs (>= 1).
        alpha: the type-I error, in (0, 1); efficacy is declared at ``E >= 1/alpha``.
        futility: the e-value floor in (0, 1) (stop when ``E <= futility``), or ``None`` for none (the
            out-of-reach rule always applies).
        construction: the e-process (:data:`Construction`); the default is the legacy one, so a design replayed
            from a ledger that records none is what it ran with. New studies use :func:`new_design`.
        bet_size: ``magnitudeBet``'s bet size (per unit of the standardized difference; the ledger's ``betSize``),
            required with it and ``None`` with the other constructions.

    Raises:
        ValueError: a value out of range, or a bet size missing for ``magnitudeBet`` or given for another.
    """

    max_tasks: int
    alpha: float
    futility: float | None = 0.1
    construction: Construction = LEGACY_CONSTRUCTION
    bet_size: float | None = None

    def __post_init__(self) -> None:
        if self.max_tasks < 1:
            raise ValueError(f"maxTasks must be at least 1, got {self.max_tasks}")
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must be between 0 and 1, got {self.alpha}")
        if self.futility is not None and not 0 < self.futility < 1:
            raise ValueError(f"futility must be between 0 and 1, got {self.futility}")
        if (self.bet_size is None) == (self.construction == "magnitudeBet"):
            raise ValueError("betSize is required with the magnitudeBet construction, and only with it")
        if self.bet_size is not None and not (math.isfinite(self.bet_size) and self.bet_size > 0):
            raise ValueError(f"betSize must be a positive number, got {self.bet_size}")
        fewest = fewest_tasks(self.alpha, self.construction, self.bet_size)
        if self.max_tasks < fewest:
            raise ValueError(f"maxTasks {self.max_tasks} can never reach an e-value of {self.threshold:g} "
                             f"(alpha {self.alpha:g}); it needs at least {fewest} tasks")

    @property
    def threshold(self) -> float:
        """The efficacy bound ``1/alpha`` (e.g. 20 for alpha 0.05)."""
        return 1.0 / self.alpha


def new_design(max_tasks: int, alpha: float, futility: float | None) -> SequentialDesign:
    """The design of a new sequential study: :data:`CONSTRUCTION` with its bet size planned from ``max_tasks`` and
    ``alpha`` (``protocol.sequential_bet.planned_bet_size``), fixed before any data.

    Raises:
        ValueError: as :class:`SequentialDesign`.
    """
    if max_tasks < 1 or not 0 < alpha < 1:
        SequentialDesign(max_tasks=max_tasks, alpha=alpha)  # raises the design's own one-line error
    if max_tasks < fewest_tasks(alpha, CONSTRUCTION, planned_bet_size(max_tasks, alpha)):
        # the bet size grows as maxTasks shrinks: the fewest maxTasks whose own planned bet can reach 1/alpha
        fewest = next(n for n in range(max_tasks + 1, FEWEST_LIMIT)
                      if n >= fewest_tasks(alpha, CONSTRUCTION, planned_bet_size(n, alpha)))
        raise ValueError(f"maxTasks {max_tasks} can never reach an e-value of {1 / alpha:g} (alpha {alpha:g}); "
                         f"it needs at least {fewest} tasks")
    return SequentialDesign(max_tasks=max_tasks, alpha=alpha, futility=futility, construction=CONSTRUCTION,
                            bet_size=planned_bet_size(max_tasks, alpha))


def fewest_tasks(alpha: float, construction: Construction = LEGACY_CONSTRUCTION, bet_size: float | None = None) -> int:
    """The fewest tasks after which ``E >= 1/alpha`` is reached when every difference is the same and better:
    7 for alpha 0.05 and 10 for 0.01 with the older constructions; with ``magnitudeBet`` it depends on
    ``bet_size`` (7 at 20 tasks' planned bet).

    Raises:
        ValueError: alpha not in (0, 1), or not reached within :data:`FEWEST_LIMIT` tasks (a tiny bet size).
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    import numpy as np

    length = 16
    while True:  # the e-values of a prefix do not depend on what follows: one path, doubled until it crosses
        crossed = e_values(np.ones(length), "higher", construction, bet_size)[0] >= 1.0 / alpha
        if crossed.any():
            return int(crossed.argmax()) + 1
        if length >= FEWEST_LIMIT:
            raise ValueError(f"an e-value of {1.0 / alpha:g} is not reached within {FEWEST_LIMIT} tasks")
        length *= 2


@dataclass(frozen=True)
class Look:
    """One look, after ``tasks`` completed tasks: the e-value then, the ``decision`` taken and the direction the
    evidence points to (``better``: the side betting that the treatment does better is the larger)."""

    tasks: int
    e_value: float
    decision: Decision
    direction: Literal["better", "worse"] = "better"


def signals(turned: NDArray[np.float64]) -> NDArray[np.float64]:
    """``X_i = sign(d_i) * min(1, |d_i| / m_i)`` along the last axis (see the module docstring); 0 for a
    tie or a NaN. ``m_i`` is the mean size of the earlier non-zero, non-missing differences (``w = 1``
    when there is none)."""
    import numpy as np

    present = np.isfinite(turned) & (turned != 0)
    sizes = np.where(present, np.abs(np.nan_to_num(turned)), 0.0)
    earlier_sum = np.cumsum(sizes, axis=-1) - sizes
    earlier_count = np.cumsum(present, axis=-1) - present
    with np.errstate(divide="ignore", invalid="ignore"):
        weights = np.where(earlier_count > 0, np.minimum(1.0, sizes * earlier_count / earlier_sum), 1.0)
    weights = np.where(present, weights, 0.0)
    return np.sign(np.where(present, turned, 0.0)) * weights


def bets(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """The predictable bets ``lambda_i`` from the signals before ``i`` (last axis), in ``[0, LAMBDA_MAX]``."""
    import numpy as np

    before = np.cumsum(x, axis=-1) - x
    before_square = np.cumsum(x * x, axis=-1) - x * x
    return np.clip((PRIOR_MEAN + before) / (PRIOR_SQUARE + before_square), 0.0, LAMBDA_MAX).astype(np.float64)


def one_side(differences: ArrayLike, better_when: BetterWhen) -> NDArray[np.float64]:
    """One side's wealth ``E+_1 .. E+_n`` after each task (same shape as ``differences``, last axis the tasks in
    the order they completed): evidence that the treatment does better on the metric."""
    import numpy as np

    x = signals(oriented(differences, better_when))
    return np.cumprod(1.0 + bets(x) * x, axis=-1).astype(np.float64)


def sides(differences: ArrayLike, better_when: BetterWhen) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(E+, E-)``: the wealth betting that the treatment does better, and the one betting that it does worse."""
    return one_side(differences, better_when), one_side(differences, "higher" if better_when == "lower" else "lower")


def e_process(differences: ArrayLike, better_when: BetterWhen) -> NDArray[np.float64]:
    """The e-values ``E_1 .. E_n`` after each task: ``(E+ + E-) / 2`` (see the module docstring)."""
    import numpy as np

    better, worse = sides(differences, better_when)
    return ((better + worse) / 2.0).astype(np.float64)


def e_values(differences: ArrayLike, better_when: BetterWhen, construction: Construction,
             bet_size: float | None = None) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """The e-values ``E_1 .. E_n`` of ``construction`` (with ``bet_size`` for ``magnitudeBet``) after each task
    (last axis) and, per look, whether the evidence points to "better" (always, one-sided; the larger side,
    two-sided).

    Raises:
        ValueError: ``magnitudeBet`` without a positive ``bet_size``.
    """
    import numpy as np

    if construction == "magnitudeBet":
        if bet_size is None:
            raise ValueError("the magnitudeBet construction needs its bet size")
        e = bet_e_process(differences, better_when, bet_size)
        return e, np.ones(e.shape, dtype=np.bool_)
    if construction == "magnitudeMixture":
        e = magnitude_e_process(differences, better_when, two_sided=False)
        return e, np.ones(e.shape, dtype=np.bool_)
    better, worse = sides(differences, better_when)
    return ((better + worse) / 2.0).astype(np.float64), better >= worse


def growth(construction: Construction) -> float:
    """The most one task can multiply ``construction``'s e-value by (``1 + LAMBDA_MAX``; below 2 for the
    mixture and for ``magnitudeBet``, whose every bet ``tanh(c |z|)`` is under 1): the out-of-reach futility rule's
    bound."""
    return 1.0 + LAMBDA_MAX if construction == "signWeighted" else 2.0


def decisions(e: NDArray[np.float64], design: SequentialDesign) -> NDArray[np.int8]:
    """The decision code (index into :data:`DECISIONS`) at every look (last axis: after 1, 2, … tasks; at most
    ``design.max_tasks`` looks), ignoring earlier stops (:func:`first_stop` finds the first)."""
    import numpy as np

    n = e.shape[-1]
    if n > design.max_tasks:
        raise ValueError(f"{n} looks for a design of at most {design.max_tasks} tasks")
    tasks = np.arange(1, n + 1)
    remaining = design.max_tasks - tasks
    threshold = design.threshold
    codes = np.zeros(e.shape, dtype=np.int8)
    codes = np.where(tasks == design.max_tasks, DECISIONS.index("maxTasks"), codes)
    # Out of reach: compared in logs, with a small margin so that a path that could reach it exactly is kept.
    reach = np.log(np.maximum(e, 1e-300)) + remaining * math.log(growth(design.construction))
    futile = reach < math.log(threshold) - 1e-9
    if design.futility is not None:
        futile = futile | (e <= design.futility)
    codes = np.where(futile, DECISIONS.index("futility"), codes)
    codes = np.where(e >= threshold, DECISIONS.index("efficacy"), codes)
    return codes.astype(np.int8)


def first_stop(codes: NDArray[np.int8]) -> tuple[NDArray[np.int64], NDArray[np.int8]]:
    """Per leading index, the number of tasks at the first look that is not ``continue`` (0 when every
    look continues) and its decision code."""
    import numpy as np

    stopping = codes != 0
    any_stop = stopping.any(axis=-1)
    first = np.argmax(stopping, axis=-1)
    tasks = np.where(any_stop, first + 1, 0).astype(np.int64)
    code = np.take_along_axis(codes, first[..., None], axis=-1)[..., 0]
    return tasks, np.where(any_stop, code, 0).astype(np.int8)


def looks(differences: Sequence[float | None], design: SequentialDesign, better_when: BetterWhen) -> tuple[Look, ...]:
    """The looks of a study whose completed tasks had ``differences`` (in completion order; ``None`` for a
    task whose difference is missing), up to and including the first that stops (none after it).

    Raises:
        ValueError: more differences than ``design.max_tasks``.
    """
    if not differences:
        return ()
    import numpy as np

    values = np.array([math.nan if d is None else float(d) for d in differences], dtype=np.float64)
    e, better = e_values(values, better_when, design.construction, design.bet_size)
    codes = decisions(e, design)
    found: list[Look] = []
    for index, code in enumerate(codes):
        direction: Literal["better", "worse"] = "better" if better[index] else "worse"
        found.append(Look(index + 1, float(e[index]), DECISIONS[int(code)], direction))
        if code != 0:
            break
    return tuple(found)


__all__ = [
    "CONSTRUCTION",
    "DECISIONS",
    "LAMBDA_MAX",
    "LEGACY_CONSTRUCTION",
    "SIDEDNESS",
    "BetterWhen",
    "Construction",
    "Decision",
    "Look",
    "SequentialDesign",
    "Sidedness",
    "StopReason",
    "bets",
    "decisions",
    "e_process",
    "e_values",
    "fewest_tasks",
    "first_stop",
    "growth",
    "looks",
    "new_design",
    "one_side",
    "oriented",
    "sides",
    "signals",
]
