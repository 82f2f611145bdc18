"""Report sections about correctness, per-scenario distributions, usage, spend and extrapolation.

USD sums, multiples, means and medians go through ``pricing.sums`` (exact ``Decimal``). A pilot
shows two extrapolations side by side: charged spend x 36 / its planned attempts (x 18 for 2; not an
upper bound) and the dearest attempt x 36 (a pessimistic figure).
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from decimal import Decimal

from agentstudy.pricing import sums
from agentstudy.protocol.records import NEVER_STARTED
from agentstudy.report import fmt
from agentstudy.report.analysis import CHARGED, INPUT, OUTPUT, TOOLS, WALL, Analysis, Metric, Number, scenario_values
from agentstudy.report.document import Block, Bullets, Paragraph, Section, Table
from agentstudy.report.model import SCENARIOS, Attempt
from agentstudy.report.sentences import ADJUDICATED_SENTENCE, NOT_ADJUDICATED_SENTENCE, REDUCTION_SENTENCE

FULL_ATTEMPTS = 36
PILOT_ATTEMPTS = 2
RUBRICS = ("correct", "partial", "incorrect", "incomplete")


def _scenarios(attempts: Sequence[Attempt]) -> list[str]:
    extra = sorted({a.scenario for a in attempts} - set(SCENARIOS))
    return [*SCENARIOS, *extra]


def correctness_section(analysis: Analysis) -> Section:
    """Counts of each rubric outcome, pending and missing per scenario, and the mean score of scored attempts."""
    study = analysis.study
    if study.adjudication is None:
        return Section("Correctness", (Paragraph(NOT_ADJUDICATED_SENTENCE),))
    rows = []
    groups = [(s, [a for a in study.attempts if a.scenario == s]) for s in _scenarios(study.attempts)]
    for name, attempts in [*groups, ("all", list(study.attempts))]:
        rubric = Counter(a.rubric for a in attempts if a.adjudication == "scored")
        scores = [a.correctness for a in attempts if a.correctness is not None]
        mean = f"{statistics.fmean(scores):.3f} (n = {len(scores)})" if scores else f"{fmt.MISSING} (n = 0)"
        rows.append((study.arm_name(name) if name != "all" else name, str(len(attempts)),
                     *(str(rubric[r]) for r in RUBRICS),
                     str(sum(a.adjudication == "pending" for a in attempts)),
                     str(sum(a.adjudication == "missing" for a in attempts)), mean))
    table = Table("correctness", "Correctness by arm (rubric: correct 1, partial 0.5, incorrect 0, incomplete 0)",
                  ("arm", "attempts", *RUBRICS, "pending", "missing (did not complete)", "mean score"),
                  tuple(rows), frozenset(range(1, 9)))
    blocks: list[Block] = [table, Paragraph(ADJUDICATED_SENTENCE + " " + REDUCTION_SENTENCE)]
    if study.adjudication.status != "adjudicated":
        blocks.append(Paragraph(f"The adjudication is {study.adjudication.status}, not finished: "
                                "correctness is partial."))
    return Section("Correctness", tuple(blocks))


def _describe(values: Sequence[Number], kind: str) -> tuple[str, str, str, str]:
    if not values:
        return (fmt.MISSING,) * 4
    if kind == "usd":
        money = [v for v in values if isinstance(v, Decimal)]
        return (fmt.usd(min(money)), fmt.usd(sums.median_usd(money)), fmt.usd(sums.mean_usd(money)),
                fmt.usd(max(money)))
    numbers = [float(v) for v in values]
    low, high = min(values), max(values)
    ends = (str(low), str(high)) if kind == "count" else (fmt.plain(float(low), kind), fmt.plain(float(high), kind))
    return (ends[0], fmt.plain(float(statistics.median(numbers)), kind), fmt.plain(statistics.fmean(numbers), kind),
            ends[1])


def distribution_section(analysis: Analysis) -> Section:
    """Token, tool, time and charge distributions per arm, and tool calls by name."""
    metrics: list[Metric] = [INPUT, OUTPUT, TOOLS, WALL, CHARGED]
    name = analysis.study.arm_name
    rows = []
    for metric in metrics:
        for scenario, values in scenario_values(analysis, metric).items():
            rows.append((metric.label, name(scenario), str(len(values)), *_describe(values, metric.kind)))
    table = Table("distributions", "Per arm, over completed attempts with the value recorded",
                  ("metric", "arm", "n", "min", "median", "mean", "max"), tuple(rows), frozenset(range(2, 7)))
    by_name: Counter[tuple[str, str]] = Counter()
    for attempt in analysis.study.attempts:
        for tool, calls in attempt.tool_calls_by_name.items():
            by_name[(attempt.scenario, tool)] += calls
    tools = Table("tools-by-name", "Tool calls by name, all attempts",
                  ("arm", "tool", "calls"),
                  tuple((name(s), t, str(n)) for (s, t), n in sorted(by_name.items())), frozenset({2}))
    return Section("Distributions per arm", (table, tools))


def _token_total(attempts: Sequence[Attempt], field: str) -> str:
    values = [getattr(a, field) for a in attempts]
    known = [v for v in values if v is not None]
    unknown = len(values) - len(known)
    return f"{sum(known)}" + (f" ({unknown} not recorded)" if unknown else "")


def _usd_total(amounts: Sequence[Decimal | None]) -> tuple[Decimal, int]:
    known = [a for a in amounts if a is not None]
    return sums.sum_usd(known), len(amounts) - len(known)


def _usd_cell(total: Decimal, unknown: int) -> str:
    return fmt.usd(total) + (f" ({unknown} not recorded)" if unknown else "")


def _usage_table(analysis: Analysis) -> Table:
    study = analysis.study
    header = ["arm", "attempts", "input tokens", "output tokens", "cache read tokens", "cache write tokens",
              "charged USD"]
    if analysis.prices is not None:
        header.append("re-priced USD")
    rows = []
    groups = [(s, [a for a in study.attempts if a.scenario == s]) for s in _scenarios(study.attempts)]
    for name, attempts in [*groups, ("all", list(study.attempts))]:
        row = [study.arm_name(name) if name != "all" else name, str(len(attempts))] + [
            _token_total(attempts, f) for f in ("input_tokens", "output_tokens", "cache_read_tokens",
                                                "cache_creation_tokens")]
        row.append(_usd_cell(*_usd_total([a.charged_usd for a in attempts])))
        if analysis.prices is not None:
            cell = _usd_cell(*_usd_total([analysis.repriced[a.index].usd for a in attempts]))
            lower = sum(analysis.repriced[a.index].lower_bound for a in attempts)
            row.append(cell + (f" (includes {lower} lower bound(s))" if lower else ""))
        rows.append(tuple(row))
    return Table("usage", "Priced usage and spend, all attempts (tokens as recorded, incomplete usage included)",
                 tuple(header), tuple(rows), frozenset(range(1, len(header))))


RULE_NOTES = {
    "limit": "limit: each attempt reserved its per-attempt limit; one turn may overshoot it",
    "limit-plus-worst-turn": "limit-plus-worst-turn (--strict-cap): the limit plus this worst-case turn; "
                             "spent <= cap at any concurrency",
    "per-call-ceiling": "per-call-ceiling: every request reserved its ceiling first; no overshoot possible",
}
"""How the budget table explains each ``budget.reservationRule`` (issue 19)."""


def charged_not_spent(attempts: Sequence[Attempt]) -> tuple[int, Decimal]:
    """The attempts that never started an agent process (``statusReason`` ``never started: …``; issue 40) and
    what they were charged (USD): the seed's conservative rule keeps a failure's reservation, none of it spent."""
    mark = f"reason: {NEVER_STARTED}"
    unstarted = [a for a in attempts if any(reason.startswith(mark) for reason in a.reasons)]
    return len(unstarted), sum((a.charged_usd or Decimal(0) for a in unstarted), Decimal(0))


def _budget_table(analysis: Analysis) -> Table:
    study = analysis.study
    charged, unknown = _usd_total([a.charged_usd for a in study.attempts])
    share = sums.percent_of(study.spent_usd, study.cap_usd) if study.spent_usd is not None and study.cap_usd else None
    rows = [
        ("cap", fmt.usd(study.cap_usd), "the run's cumulative cap"),
        ("spent", fmt.usd(study.spent_usd),
         f"{share} % of the cap" if share is not None else "share of the cap not computable"),
        ("reserved", fmt.usd(study.reserved_usd), "sum of every reservation made"),
        ("measured", fmt.usd(study.measured_usd), "sum of valid measured costs"),
        ("charged, sum of attempts", _usd_cell(charged, unknown), "failed attempts keep at least their reservation"),
        ("open reservation", fmt.usd(study.open_reservation_usd), "never settled; stays charged"),
    ]
    unstarted, not_spent = charged_not_spent(study.attempts)
    if unstarted:
        rows.append(("charged, not spent", fmt.usd(not_spent),
                     f"{unstarted} attempt(s) never started an agent process; a failure keeps its reservation"))
    exceeded = {True: "yes", False: "no", None: fmt.MISSING}[study.cumulative_cap_exceeded]
    rows.append(("cumulative cap exceeded", exceeded, ""))
    if study.reservation_rule is not None:
        rows.append(("reservation rule", fmt.usd(study.worst_turn_usd) if study.worst_turn_usd is not None else "",
                     RULE_NOTES.get(study.reservation_rule, study.reservation_rule)))
        rows.append(("largest overshoot", fmt.usd(study.largest_overshoot_usd or Decimal(0)),
                     "most an attempt's measured cost went above its per-attempt limit"
                     if study.largest_overshoot_usd is not None else "no attempt cost more than its limit"))
    if study.adjudication is not None:
        rows.append(("adjudication spent", fmt.usd(study.adjudication.spent_usd),
                     f"of its own cap {fmt.usd(study.adjudication.cap_usd)} USD"))
    return Table("budget", "Spend against the cap (USD)", ("item", "USD", "note"), tuple(rows), frozenset({1}))


def _extrapolations(analysis: Analysis) -> list[Block]:
    study = analysis.study
    if study.mode != "pilot":
        text = "A full run: no extrapolation." if study.mode == "full" else "The run's mode is not recorded."
        return [Paragraph(text)]
    complete = all(a.usage_complete is not False for a in study.attempts)
    applicable = study.status == "awaiting-adjudication" and complete
    full, pilot = study.full_attempts, study.planned or PILOT_ATTEMPTS  # the study's own factor (issue 18)
    factor = sums.exact_factor(full, pilot)  # 36 / 8 = 4.5 for a larger pilot (issue 17); None if not exact
    applicable = applicable and factor is not None
    why = ("not applicable: the pilot did not end awaiting-adjudication with complete usage" if not applicable
           else f"{full} attempts / {pilot} pilot attempts; not an upper bound")
    spent = study.spent_usd if study.spent_usd is not None else _usd_total([a.charged_usd for a in study.attempts])[0]
    shown = format(factor.normalize(), "f") if factor is not None else "?"
    rows = [(f"full run, charged spend × {shown}",
             fmt.usd(sums.scaled(spent, full, pilot)) if applicable else fmt.MISSING, why)]
    rows.append(_dearest_row("pessimistic, dearest attempt's charge", [a.charged_usd for a in study.attempts], full))
    if analysis.prices is not None:
        repriced = [analysis.repriced[a.index].usd for a in study.attempts]
        total, unknown = _usd_total(repriced)
        ok = applicable and not unknown
        rows.append((f"re-priced full run, re-priced total × {shown}",
                     fmt.usd(sums.scaled(total, full, pilot)) if ok else fmt.MISSING,
                     f"as {analysis.prices.price_as}; not an upper bound" if ok else
                     "not applicable: an attempt could not be re-priced or the pilot did not complete"))
        rows.append(_dearest_row("re-priced pessimistic, dearest attempt re-priced", repriced, full))
    table = Table("extrapolation", "What the full study might cost, from this pilot (USD)",
                  ("figure", "USD", "basis"), tuple(rows), frozenset({1}))
    return [table, Paragraph(f"The × {shown} figure scales the pilot's spend and is not an upper bound; the "
                             f"dearest attempt × {full} is a pessimistic figure beside it, still not a "
                             "guarantee.")]


def _dearest_row(label: str, amounts: Sequence[Decimal | None], full: int = FULL_ATTEMPTS) -> tuple[str, str, str]:
    top = sums.dearest(a for a in amounts if a is not None)
    if top is None:
        return (f"{label} × {full}", fmt.MISSING, "no attempt has a figure")
    return (f"{label} × {full}", fmt.usd(sums.times(top, full)),
            f"the dearest attempt ({fmt.usd(top)} USD) × {full} attempts; pessimistic")


def _repricing(analysis: Analysis) -> list[Block]:
    prices = analysis.prices
    if prices is None:
        return []
    price = prices.price
    tiers = "; ".join(f"tier {i + 1}: input {t.input}, output {t.output}" for i, t in enumerate(price.tiers))
    rows = (("price as", prices.price_as), ("source", price.source),
            ("tiers (USD per million tokens)", tiers),
            ("tier threshold", f"largest prompt above {price.tier_threshold_tokens} tokens" if len(price.tiers) > 1
             else "one tier"))
    notes = Bullets((
        "Each attempt's recorded usage is priced again with the project's pricing module; the charged column is "
        "what the run actually charged (failed attempts keep at least their reservation).",
        "Usage from a CLI cost basis is repriced exactly (per-message tier choice, cache-write TTL split); usage "
        "from token fields alone (HTTP) picks the tier by the aggregate prompt, which can only overstate it.",
        "Attempts with incomplete usage are lower bounds; attempts without recorded usage cannot be re-priced.",
    ))
    return [Table("repricing", "The --prices table", ("field", "value"), rows), notes]


def money_section(analysis: Analysis) -> Section:
    """Usage per scenario, spend against the cap, the pilot's extrapolations and the re-pricing table."""
    blocks: list[Block] = [_usage_table(analysis), _budget_table(analysis)]
    blocks.extend(_extrapolations(analysis))
    blocks.extend(_repricing(analysis))
    return Section("Usage and spend", tuple(blocks))
