"""``agentstudy power LEDGER``: how many tasks x repetitions a study needs, from a ledger's variance (issue 17)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import click

from agentstudy.commands.common import fail
from agentstudy.commands.run_options import partial_chain_option

METRIC_KEYS = ("inputTokens", "outputTokens", "toolCalls", "wallTimeMs", "chargedUsd", "correctness")


def _share(name: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        fail(f"{name} must be a number strictly between 0 and 1, got {raw!r}")
    if not (math.isfinite(value) and 0 < value < 1):
        fail(f"{name} must be a number strictly between 0 and 1, got {raw!r}")
    return value


def _ratio(raw: str, metric: str) -> float:
    from agentstudy.report.analysis import RATIO_METRICS

    if metric not in RATIO_METRICS:
        fail(f"--effect as a ratio is for tokens, wall time and USD, not {metric}: give a difference")
    try:
        value = float(raw.strip()[:-1])
    except ValueError:
        fail(f"--effect as a ratio must be a positive number other than 1 followed by x (e.g. 0.8x), got {raw!r}")
    if not (math.isfinite(value) and value > 0 and value != 1):
        fail(f"--effect as a ratio must be a positive number other than 1 followed by x (e.g. 0.8x), got {raw!r}")
    return value


@click.command()
@click.argument("ledgers", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--metric", type=click.Choice(METRIC_KEYS), help="Plan only this metric (default: every metric).")
@click.option("--effect", help="The smallest effect worth detecting (needs --metric): a paired difference in the "
                               "metric's unit (e.g. 100), or for tokens, wall time and USD a ratio of treatment "
                               "to baseline written with an x (e.g. 0.8x: 20 % less), planned on the log scale "
                               "of the report's ratio.")
@click.option("--alpha", help="Two-sided level (default: the study's alpha for its primary endpoint, Holm's "
                               "strictest level alpha / m for one of m secondary metrics).")
@click.option("--repetitions", type=click.IntRange(1, 100),
              help="Repetitions per task and arm to plan for (with --effect; default: the ledger's).")
@click.option("--power", "target", default="0.8", show_default=True, help="Target power (share 0-1).")
@click.option("--adjudication", "adjudications", multiple=True, type=click.Path(path_type=Path, dir_okay=False),
              help="The adjudication companion (adds correctness; a chain of runs: one per ledger, in the same "
                   "order).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the tables.")
@click.option("--allow-unverified", is_flag=True, help="Plan even when the ledger does not verify (says so).")
@click.option("--sequential", is_flag=True,
              help="Plan a sequential design instead (docs/sequential.md): by simulation, its power, the expected "
                   "tasks and spend to the stop for --effect, beside the fixed design of --max-tasks tasks; the "
                   "ledger's own e-process and bet size at its own maxTasks, else a new study's (one bet size "
                   "planned from the maximum tasks and alpha).")
@click.option("--max-tasks", type=click.IntRange(1, 1000), help="With --sequential: the design's maxTasks "
              "(default: the ledger's own maxTasks, else its number of tasks).")
@click.option("--futility", default="0.1", show_default=True, help="With --sequential: the futility floor.")
@partial_chain_option
def power(ledgers: tuple[Path, ...], metric: str | None, effect: str | None, alpha: str | None, repetitions: int | None,
          target: str, adjudications: tuple[Path, ...], as_json: bool, allow_unverified: bool, sequential: bool,
          max_tasks: int | None, futility: str, partial_chain: bool) -> None:
    """Plan a study's size from a pilot or full minimal-study LEDGER.

    From each metric's variance components (method of moments: the task SD of the true paired
    difference, the repetition SD per arm), simulated studies (1200 per point, seeded) tested with
    the report's task-level test of the mean give the minimum detectable paired difference of the
    ledger's own design (k tasks x r repetitions) at --alpha and --power, and the fewest tasks for
    r = 1, 2, 3, 5 repetitions to detect --effect (default: a difference as large as the observed
    estimate). Without --alpha each metric is planned at its own level: the declared primary at the
    study's alpha, a secondary metric at Holm's strictest level alpha / m. With --metric and --effect
    (the smallest difference worth detecting, or for tokens, wall time and USD a ratio such as 0.8x
    planned on the log scale of the report's ratio; the observed estimate is shown only as a
    reference) it also gives the tasks needed with a range from 90 %
    lower and upper bounds on each variance component, and says when the pilot is too small to
    plan from. Fewer than 2 tasks x 2 repetitions cannot estimate the components: the command says
    what the next pilot must hold. Exit codes: 0 printed; 2 bad input.

    Several ledgers are a chain of runs, oldest first (a run and its --continue-from continuations): each
    must verify and continue the one before; the plan reads the whole study, with correctness when
    --adjudication is given once per ledger in the same order (as `agentstudy adjudicate A.json B.json`
    writes them); --sequential takes one ledger.

    With --sequential: the sequential design's operating characteristics for --effect (required, in
    --metric's unit, default input tokens; --alpha default 0.05): power, expected tasks and USD to the
    stop, and the fixed design of the same maximum size, by simulation under the same variance model.
    """
    from agentstudy.commands.power_ranged import parse_difference, ranged_json, ranged_paragraph, ranged_plan
    from agentstudy.report.analysis import analyse
    from agentstudy.report.chain import chain_json, load_chain, partial_chain_note
    from agentstudy.report.document import Document, Section
    from agentstudy.report.model import NotSupportedYet, ReportInputError
    from agentstudy.report.power_section import arm_pair, plan_json, power_blocks, power_plans, study_alpha
    from agentstudy.report.render import render_text

    power_value = _share("--power", target)
    ledger = ledgers[-1]
    if len(ledgers) > 1 and sequential:
        fail("a chain of runs is planned without --sequential (it takes one ledger)")
    if adjudications and len(adjudications) != len(ledgers):
        fail(f"{len(ledgers)} ledgers take {len(ledgers)} --adjudication companions, one per ledger in the same "
             f"order (got {len(adjudications)})")
    adjudication = adjudications[0] if len(ledgers) == 1 and adjudications else None
    if sequential:
        from agentstudy.commands.power_sequential import plan_sequential_power

        if effect is None:
            fail("--sequential plans for a smallest effect: give --effect X (in --metric's unit)")
        if effect.strip().lower().endswith("x"):
            fail("--sequential plans a difference in --metric's unit, not a ratio: give --effect X without x")
        plan_sequential_power(ledger, adjudication, metric or "inputTokens", effect,
                              _share("--alpha", alpha) if alpha is not None else 0.05,
                              _share("--futility", futility), max_tasks, repetitions, as_json=as_json,
                              allow_unverified=allow_unverified, partial_chain=partial_chain)
        return
    if max_tasks is not None:
        fail("--max-tasks goes with --sequential")
    effect_value: float | None = None
    ratio: float | None = None
    if effect is not None:
        if metric is None:
            fail("--effect is in one metric's unit: give --metric too")
        if effect.strip().lower().endswith("x"):
            ratio = _ratio(effect, metric)
        else:
            effect_value = parse_difference(effect, "a finite non-zero number or a ratio such as 0.8x")
    try:
        study = load_chain(ledgers, allow_unverified=allow_unverified, adjudications=adjudications,
                           partial_chain=partial_chain)
    except NotSupportedYet:
        fail(f"{ledger} is a controlled-study ledger; power planning reads minimal-study ledgers")
    except ReportInputError as error:
        fail(str(error))
    try:
        analysis = analyse(study)
    except ReportInputError as error:  # a ledger of several agents (issue 21): planned one agent at a time
        fail(f"{error}; power planning reads a one-agent ledger")
    if metric is not None and metric not in {m.key for m in analysis.metrics}:
        fail(f"--metric {metric} is not in this report (correctness needs --adjudication)")
    alpha_value = _share("--alpha", alpha) if alpha is not None else study_alpha(analysis, metric)
    plans = power_plans(analysis, metric_key=metric, effect=effect_value,
                        alpha=alpha_value if alpha is not None else None, power=power_value,
                        observed_effect=effect_value is None and ratio is None)
    ranged = None
    if metric is not None and (effect_value is not None or ratio is not None):
        ranged = ranged_plan(analysis, metric, effect_value, repetitions, alpha_value, power_value, ratio=ratio)
    if as_json:
        click.echo(json.dumps({"ledger": " + ".join(map(str, ledgers)), "unverified": list(study.unverified),
                               "chain": chain_json(study.chain_missing),
                               **(ranged_json(ranged) if ranged is not None else {}),
                               "power": [plan_json(p, power_value) for p in plans]},
                              separators=(",", ":")))
        return
    title = (f"Power planning: {study.file_name}" + (" (UNVERIFIED)" if study.unverified else "")
             + (f" ({partial_chain_note(study.chain_missing)})" if study.chain_missing else ""))
    blocks = (*((ranged_paragraph(ranged),) if ranged is not None else ()),
              *power_blocks(plans, power_value, arm_pair(study)))
    section = Section("Design, components and needed designs", blocks)
    click.echo(render_text(Document(title, (section,))), nl=False)

