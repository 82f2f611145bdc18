"""The declared primary endpoint and the Holm adjustment of the secondary metrics (issue 30, item 1).

The study's :class:`~agentstudy.protocol.analysis.AnalysisPlan` names the primary metric (tested
at ``alpha`` alone; its adjusted p is its raw p) and the secondary ones, whose p-values are
adjusted together by Holm's step-down method (statsmodels ``multipletests(method="holm")``) over
exactly the secondary metrics the report shows with a p-value. A reported metric that the plan
lists as neither is ``exploratory`` and carries no adjusted p.
"""

from __future__ import annotations

from collections.abc import Mapping

PRIMARY = "primary"
SECONDARY = "secondary"
EXPLORATORY = "exploratory"


def holm(p_values: Mapping[str, float]) -> dict[str, float]:
    """Holm-adjusted p-values (key -> adjusted p, at most 1) of the family ``p_values``; ``{}`` for none."""
    if not p_values:
        return {}
    from statsmodels.stats.multitest import multipletests

    keys = list(p_values)
    adjusted = multipletests([p_values[k] for k in keys], method="holm")[1]
    return {key: float(value) for key, value in zip(keys, adjusted, strict=True)}


def roles(reported: tuple[str, ...], primary: str, secondary: tuple[str, ...]) -> dict[str, str]:
    """Each reported metric key's role: ``primary``, ``secondary`` (listed in ``secondary``) or ``exploratory``."""
    return {key: PRIMARY if key == primary else SECONDARY if key in secondary else EXPLORATORY for key in reported}


def adjusted_p(roles_by_key: Mapping[str, str], p_values: Mapping[str, float | None]) -> dict[str, float | None]:
    """Per reported metric the adjusted p: the raw p for the primary, Holm's over the secondaries that have a
    p for a secondary, ``None`` for an exploratory metric or a metric without p."""
    family = {k: p for k, p in p_values.items() if roles_by_key.get(k) == SECONDARY and p is not None}
    adjusted = holm(family)
    result: dict[str, float | None] = {}
    for key, role in roles_by_key.items():
        result[key] = p_values.get(key) if role == PRIMARY else adjusted.get(key)
    return result
