"""Repositories as clusters of tasks (issue 41, item 1): the scope of the answer, per-repository estimates, a
test of heterogeneity across repositories and, with enough repositories, the repository-level test.

Tasks of one repository share its code, documentation and the server's coverage of it, so their effects are
not independent draws from "tasks in general". With fewer than ``analysis.minRepositories`` repositories
(default 6) the report's answer holds for the tasks of these repositories only (scope ``tasks``); from that
many on the primary is also tested over the per-repository mean task differences (scope ``repositories``),
and that test answers the question. Pure numpy (imported by the computing path only):

* per repository: the mean of its task differences and the sign-flip p over them
  (:mod:`agentstudy.report.inversion`);
* heterogeneity (≥ 2 repositories): a permutation test of the between-repository sum of squares of the task
  differences, ``sum_g n_g (mean_g - mean)^2`` (equivalent to the one-way ANOVA F under permutation, since
  the total sum of squares is fixed), permuting the repository labels over the tasks; seeded Monte Carlo of
  :data:`HETEROGENEITY_DRAWS` permutations, ``p = (1 + #{SS* >= SS}) / (draws + 1)``;
* repository level: the sign-flip test over the per-repository means and its inverted interval (Fisher's
  test with the repository as the unit).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from agentstudy.protocol.analysis import DEFAULT_MIN_REPOSITORIES
from agentstudy.report.inference import TaskEffect
from agentstudy.report.inversion import inverted_interval, p_at, sign_flip_null

HETEROGENEITY_DRAWS = 9_999
HETEROGENEITY_METHOD = ("permutation test of the between-repository sum of squares of the task differences "
                        f"(repository labels permuted over tasks; seeded Monte Carlo, {HETEROGENEITY_DRAWS} draws)")
SCOPE_TASKS = "tasks"
SCOPE_REPOSITORIES = "repositories"


@dataclass(frozen=True)
class InferenceScope:
    """What the answer generalises to: ``scope`` (``tasks`` or ``repositories``), ``repositories`` (how many the
    study's tasks come from; ``None`` when the ledger does not record a task's repository) and
    ``min_repositories`` (``analysis.minRepositories``); ``names`` the repositories in order of appearance."""

    scope: str
    repositories: int | None
    min_repositories: int
    names: tuple[str, ...] = ()


UNKNOWN_SCOPE = InferenceScope(SCOPE_TASKS, None, DEFAULT_MIN_REPOSITORIES)
"""The scope of an analysis built without its repositories."""


@dataclass(frozen=True)
class RepositoryEstimate:
    """One repository's mean task difference (metric unit) over ``tasks`` tasks and its sign-flip ``p_value``."""

    repository: str
    estimate: float
    tasks: int
    p_value: float


@dataclass(frozen=True)
class RepositoryLevel:
    """The repository-level test: the mean over ``repositories`` of their mean task differences (metric unit),
    the sign-flip p over those means and the inverted interval (``None`` ends when unbounded)."""

    estimate: float
    p_value: float
    ci_low: float | None
    ci_high: float | None
    repositories: int


@dataclass(frozen=True)
class RepositoryView:
    """One metric's repositories: ``by_repository`` (in order of appearance), ``heterogeneity_p`` (``None`` below
    2 repositories) and ``level`` (``None`` unless the scope is ``repositories``)."""

    by_repository: tuple[RepositoryEstimate, ...]
    heterogeneity_p: float | None
    level: RepositoryLevel | None


def task_repositories(pairs: Sequence[tuple[str, str | None]]) -> dict[str, str] | None:
    """Task id -> repository from ``(task id, repository)`` pairs (attempts); ``None`` when any task's repository
    is unknown (``None``)."""
    found: dict[str, str] = {}
    for task_id, repository in pairs:
        if repository is None:
            return None
        found.setdefault(task_id, repository)
    return found


def inference_scope(repository_of: Mapping[str, str] | None, min_repositories: int) -> InferenceScope:
    """The scope of the answer (see the module docstring)."""
    if repository_of is None:
        return InferenceScope(SCOPE_TASKS, None, min_repositories)
    names = tuple(dict.fromkeys(repository_of.values()))
    scope = SCOPE_REPOSITORIES if len(names) >= min_repositories else SCOPE_TASKS
    return InferenceScope(scope, len(names), min_repositories, names)


def _groups(effects: Sequence[TaskEffect], repository_of: Mapping[str, str]) -> dict[str, list[float]]:
    groups: dict[str, list[float]] = {}
    for effect in effects:
        groups.setdefault(repository_of[effect.task_id], []).append(effect.difference)
    return groups


def heterogeneity_p(groups: Mapping[str, Sequence[float]], *, seed: int, draws: int = HETEROGENEITY_DRAWS) -> float:
    """The permutation p of "the task differences do not depend on the repository" (module docstring).

    Raises:
        ValueError: fewer than 2 groups.
    """
    if len(groups) < 2:
        raise ValueError("heterogeneity needs at least two repositories")
    values = np.concatenate([np.asarray(v, dtype=float) for v in groups.values()])
    codes = np.concatenate([np.full(len(v), g) for g, v in enumerate(groups.values())])
    sizes = np.bincount(codes).astype(float)
    scale = max(1.0, float(np.max(np.abs(values))))
    tolerance = 1e-9 * scale * scale * values.size

    def between(labels: np.ndarray) -> np.ndarray:  # (n, k) label rows -> (n,) sums of squares
        sums = np.stack([(values * (labels == g)).sum(axis=1) for g in range(sizes.size)], axis=1)
        return np.asarray((sums**2 / sizes).sum(axis=1))

    observed = float(between(codes[None, :])[0])
    rng = np.random.default_rng(seed)
    batch = max(1, min(draws, 4_000_000 // max(1, values.size * sizes.size)))
    hits, remaining = 0, draws
    while remaining > 0:
        size = min(batch, remaining)
        labels = rng.permuted(np.tile(codes, (size, 1)), axis=1)
        hits += int(np.count_nonzero(between(labels) >= observed - tolerance))
        remaining -= size
    return (1 + hits) / (draws + 1)


def repository_view(effects: Sequence[TaskEffect], repository_of: Mapping[str, str] | None, scope: InferenceScope,
                    *, seed: int, alpha: float) -> RepositoryView | None:
    """One metric's :class:`RepositoryView`; ``None`` when no task has both arms or repositories are unknown."""
    if repository_of is None or not effects:
        return None
    groups = _groups(effects, repository_of)
    by_repository = tuple(
        RepositoryEstimate(name, math.fsum(d) / len(d), len(d), p_at(sign_flip_null(d, seed=seed), 0.0))
        for name, d in groups.items())
    het = heterogeneity_p(groups, seed=seed) if len(groups) >= 2 else None
    level = None
    if scope.scope == SCOPE_REPOSITORIES and len(groups) >= 2:
        means = [r.estimate for r in by_repository]
        null = sign_flip_null(means, seed=seed)
        low, high = inverted_interval(null, alpha)
        level = RepositoryLevel(math.fsum(means) / len(means), p_at(null, 0.0), low, high, len(means))
    return RepositoryView(by_repository, het, level)


def scope_sentence(scope: InferenceScope) -> str:
    """What the answer generalises to, in words (the verdict's closing clause)."""
    if scope.repositories is None:
        return ("it holds for these tasks only (the ledger does not record the tasks' repositories; "
                "report --manifest names them)")
    names = ", ".join(scope.names)
    if scope.scope == SCOPE_TASKS:
        return (f"it holds for tasks of {names} only ({scope.repositories} of the {scope.min_repositories} "
                "repositories a repository-level test needs)")
    return f"tested across {scope.repositories} repositories ({names}), the repository as the unit"


def repository_rows(metric_label: str, kind_format: Callable[[float | None], str],
                    view: RepositoryView) -> list[tuple[str, ...]]:
    """The per-repository table's rows of one metric: each repository's estimate, tasks and p, then the
    heterogeneity p and the repository-level test when present (``kind_format`` writes a value in its unit)."""
    rows: list[tuple[str, ...]] = [
        (metric_label, r.repository, kind_format(r.estimate), str(r.tasks), f"{r.p_value:.3g}")
        for r in view.by_repository]
    if view.heterogeneity_p is not None:
        rows.append((metric_label, "heterogeneity across repositories", "—", "—", f"{view.heterogeneity_p:.3g}"))
    if view.level is not None:
        level = view.level
        interval = ("unbounded" if level.ci_low is None or level.ci_high is None
                    else f"[{kind_format(level.ci_low)}, {kind_format(level.ci_high)}]")
        rows.append((metric_label, f"repository level ({level.repositories} repositories) {interval}",
                     kind_format(level.estimate), "—", f"{level.p_value:.3g}"))
    return rows
