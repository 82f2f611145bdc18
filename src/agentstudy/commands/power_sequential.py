"""``agentstudy power --sequential`` (issue 35): a sequential design's power, tasks and spend, from a ledger."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

import click

from agentstudy.commands.common import fail

if TYPE_CHECKING:
    from agentstudy.protocol.sequential import SequentialDesign


def plan_sequential_power(ledger: Path, adjudication: Path | None, metric_key: str, effect_text: str, alpha: float,
                          futility: float, max_tasks: int | None, repetitions: int | None, *, as_json: bool,
                          allow_unverified: bool, partial_chain: bool = False) -> None:
    """Print the sequential plan (text or one JSON line); exits 2 with one line on bad input, and on a
    continuation without the runs it continues unless ``partial_chain`` (issue 40: then it says so first, and
    in JSON ``chain``).

    The model and the SD are :func:`agentstudy.report.sequential_power.plan_from_ledger`'s. The design simulated is
    the ledger's own (its construction and recorded ``betSize``) when planning its own ``maxTasks`` of a sequential
    ledger, else a new study's (``protocol.sequential.new_design``: ``magnitudeBet``, the bet size planned from the
    maximum tasks and alpha).
    """
    from agentstudy.commands.power_ranged import parse_difference
    from agentstudy.pricing.sums import display_usd
    from agentstudy.pricing.usd_json import usd_number
    from agentstudy.protocol.sequential import LEGACY_CONSTRUCTION, SIDEDNESS, SequentialDesign, new_design
    from agentstudy.report.analysis import analyse, task_values
    from agentstudy.report.chain import chain_json, load_chain, partial_chain_note
    from agentstudy.report.model import NotSupportedYet, ReportInputError
    from agentstudy.report.sequential_power import plan_from_ledger

    effect = parse_difference(effect_text)
    try:
        study = load_chain((ledger,), allow_unverified=allow_unverified,
                           adjudications=(adjudication,) if adjudication is not None else (),
                           partial_chain=partial_chain)
        analysis = analyse(study)
    except NotSupportedYet:
        fail(f"{ledger} is a controlled-study ledger; power planning reads minimal-study ledgers")
    except ReportInputError as error:
        fail(str(error))
    metric = next((m for m in analysis.metrics if m.key == metric_key), None)
    if metric is None:
        fail(f"--metric {metric_key} is not in this report (correctness needs --adjudication)")
    record = study.sequential
    tasks = max_tasks or (record.max_tasks if record is not None else len({a.task_id for a in study.attempts}))
    try:
        design = new_design(tasks, alpha, futility) if record is None or tasks != record.max_tasks else \
            SequentialDesign(max_tasks=tasks, alpha=alpha, futility=futility,
                             construction=record.construction or LEGACY_CONSTRUCTION, bet_size=record.bet_size)
        planned = plan_from_ledger(task_values(study, metric, analysis.repriced),
                                   [a.charged_usd for a in study.attempts if a.charged_usd is not None],
                                   design, effect, repetitions)
    except ValueError as error:
        fail(f"{ledger}: {error}")
    result, source, sd, planned_reps = planned.operating, planned.sd_source, planned.operating.sd, \
        planned.operating.repetitions

    def money(value: Decimal | None) -> float | None:
        return None if value is None else usd_number(value)

    data = {"ledger": str(ledger), "metric": metric.key, "effect": effect, "taskDifferenceSd": sd, "sdSource": source,
            "maxTasks": tasks, "repetitions": planned_reps, "alpha": alpha, "futility": futility,
            "construction": design.construction, "sidedness": SIDEDNESS[design.construction],
            "betSize": design.bet_size,
            "simulations": result.simulations, "power": result.power, "powerMonteCarloSe": result.power_se,
            "expectedTasks": result.expected_tasks, "stopShares": result.stop_shares,
            "expectedUsd": money(result.expected_usd), "fixedDesignPower": result.fixed_power,
            "fixedDesignUsd": money(result.full_usd), "expectedSavedShare": result.saved_share,
            "unverified": list(study.unverified), "chain": chain_json(study.chain_missing)}
    if as_json:
        click.echo(json.dumps(data, separators=(",", ":")))
        return
    spend = ("" if result.expected_usd is None or result.full_usd is None else
             f"; expected spend {display_usd(result.expected_usd)} USD against {display_usd(result.full_usd)} USD")
    if study.chain_missing:
        click.echo(partial_chain_note(study.chain_missing))
    click.echo(f"Sequential design for {metric.label}: at most {tasks} tasks x {planned_reps} repetition(s), alpha "
               f"{alpha:g}, futility {futility:g}, {_test_name(design)}; effect {effect:g} {metric.unit}, "
               f"task-difference SD {sd:.4g} ({source}); {result.simulations} simulated studies (seeded).")
    click.echo(f"  power {result.power:.3f} (Monte Carlo SE {result.power_se:.3f}); expected tasks to the stop "
               f"{result.expected_tasks:.1f} of {tasks} ({result.saved_share:.0%} of the budget saved on average)"
               f"{spend}.")
    click.echo(f"  the fixed design of {tasks} tasks (test of the mean): power {result.fixed_power:.3f}; it always "
               f"runs all {tasks} tasks.")
    click.echo("  exploratory: a planning aid under the planner's normal model of task differences.")


def _test_name(design: SequentialDesign) -> str:
    """The simulated e-process in words: its construction and, for ``magnitudeBet``, its bet size."""
    bet = "" if design.bet_size is None else f" with bet size {design.bet_size:g}"
    return f"{design.construction} e-process{bet}"


__all__ = ["plan_sequential_power"]
