"""The report's content on hand-built ledgers: hand-computed paired differences, blocked attempts, pilots."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from agentstudy.report.build import build_report
from agentstudy.report.sentences import (
    ADJUDICATED_SENTENCE,
    NOT_ADJUDICATED_SENTENCE,
    REDUCTION_SENTENCE,
    SMALL_SAMPLE_SENTENCE,
)
from test_report_builders import (
    ANSWER_MARKER,
    TASKS,
    cli_obs,
    companion,
    full_study,
    http_obs,
    ledger,
    markdown_tables,
    write,
)

SUMMARY = "Task-level paired differences per metric"
INTERVAL = "95 % interval (inverted test of the mean)"
PER_TASK = ("Per task: mean of Repository tools + doc-bridge − mean of Repository tools over repetitions "
            "(— : not in both arms for that metric)")
VARIANCE = "Variance components per metric (method of moments)"
PAIRS = ("Per task and repetition, descriptive only: Repository tools + doc-bridge − Repository tools (negative: the "
         "Repository tools + doc-bridge attempt used less; repetition numbers pair attempts arbitrarily, so no "
         "statistic uses these pairs)")
NOT_COMPLETED = "Attempts that did not complete (kept, never dropped)"
EXTRAPOLATION = "What the full study might cost, from this pilot (USD)"
INPUT_DIFFS = [-400, -300, -300, -200, -200, -200, -100, -100, 0, 0, 100, 100, 200, 300, 400, 500, -1000, -800]
D_TOOLS = [2, 3, 4, 5, 6] * 3 + [2, 3, 4]


def _full_rows() -> list[tuple[int, int, int, int, float, float]]:
    return [(5000, 5000 + d, 5, t, 0.002, 0.0015) for d, t in zip(INPUT_DIFFS, D_TOOLS, strict=True)]


def _summary(markdown: str) -> dict[str, dict[str, str]]:
    return {row["metric"]: row for row in markdown_tables(markdown)[SUMMARY]}


def _exact_sign_flip(differences: list[float]) -> float:
    """The two-sided sign-flip p by brute force over every sign vector (independent of scipy)."""
    observed = abs(sum(differences))
    flips = list(itertools.product((1, -1), repeat=len(differences)))
    extreme = sum(1 for signs in flips if abs(sum(s * d for s, d in zip(signs, differences, strict=True)))
                  >= observed - 1e-9)
    return extreme / len(flips)


def test_task_level_estimates_equal_the_hand_values(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    write(path, ledger(full_study(_full_rows())))
    markdown = build_report(path, output_format="md")
    summary = _summary(markdown)
    # input: task means of the three pair differences; their mean is -2000 / 18 = -111.1 as well.
    task_input = [sum(INPUT_DIFFS[3 * t:3 * t + 3]) / 3 for t in range(6)]
    assert (summary["input tokens"]["design"], summary["input tokens"]["mean task Δ"]) == \
        ("6 tasks × 3 repetitions", "-111.1")
    assert summary["input tokens"]["p (test of the mean)"] == f"{_exact_sign_flip(task_input):.3f}"
    assert summary["input tokens"]["smallest attainable p"] == "0.0312"
    # tool calls: task differences -2, -2/3, -1, -4/3, 0, -2 -> -7/6.
    assert summary["tool calls"]["mean task Δ"] == "-1.2"
    # six equal task differences: the interval is that point, said so (issue 41), never a bare [x, x]
    assert summary["charged USD"]["mean task Δ"] == "-0.000500"
    assert summary["charged USD"][INTERVAL].startswith("-0.000500 (a single point: all 6 task differences are equal")
    # every charged difference is negative: two-sided p = 2/64.
    assert summary["charged USD"]["p (test of the mean)"] == "0.031"
    assert (summary["wall time"]["mean task Δ"], summary["output tokens"]["mean task Δ"]) == ("-500.0", "0.0")
    assert summary["output tokens"]["p (test of the mean)"] == "1.000"
    low, high = summary["input tokens"][INTERVAL].strip("[]").split(", ")
    assert float(low) < -111.1 < float(high)
    per_task = {row["task"]: row for row in markdown_tables(markdown)[PER_TASK]}
    assert [float(per_task[t]["Δ input tokens"]) for t in TASKS] == [round(d, 1) for d in task_input]
    variance = {row["metric"]: row for row in markdown_tables(markdown)[VARIANCE]}
    assert variance["input tokens"]["method"].startswith(("random-intercept model", "method of moments"))
    assert variance["output tokens"]["ICC"] == "—"
    pairs = markdown_tables(markdown)[PAIRS]
    assert len(pairs) == 18
    assert [int(row["Δ input tokens"]) for row in pairs] == INPUT_DIFFS
    assert "seed 20261011" in markdown
    assert "Wilcoxon" not in markdown


def test_correctness_differences_and_distribution(tmp_path: Path) -> None:
    observations = full_study()
    data = write(tmp_path / "ledger.json", ledger(observations))
    index = {(o["taskId"], o["repetition"], o["scenario"]): i for i, o in enumerate(observations)}
    outcomes: dict[int, str | None] = {
        index[(TASKS[0], 1, "doc-bridge-mcp")]: "correct", index[(TASKS[0], 1, "repository-only")]: "incorrect",
        index[(TASKS[0], 2, "doc-bridge-mcp")]: "partial", index[(TASKS[0], 2, "repository-only")]: "incomplete",
        index[(TASKS[0], 3, "doc-bridge-mcp")]: "partial", index[(TASKS[0], 3, "repository-only")]: "partial",
        index[(TASKS[1], 1, "doc-bridge-mcp")]: None,
    }
    companion_path = tmp_path / "ledger.json.adjudication.json"
    companion_path.write_text(json.dumps(companion(data, outcomes)))
    markdown = build_report(tmp_path / "ledger.json", companion_path, output_format="md")
    correctness = _summary(markdown)["correctness (intention to treat)"]
    # one task in both arms: proportions 2/3 and 1/6 over its 3 repetitions, difference 0.5; one task
    # leaves the interval and p not computable.
    assert (correctness["design"], correctness["mean task Δ"]) == ("1 task × 3 repetitions", "+0.500")
    assert correctness[INTERVAL] == "not computable with 1 task (needs at least 2)"
    table = {row["arm"]: row for row in markdown_tables(markdown)[
        "Correctness by arm (rubric: correct 1, partial 0.5, incorrect 0, incomplete 0)"]}
    assert [table["Repository tools + doc-bridge"][k]
            for k in ("correct", "partial", "incorrect", "incomplete", "pending")] == ["1", "2", "0", "0", "15"]
    assert table["Repository tools"]["mean score"] == "0.167 (n = 3)"
    assert ADJUDICATED_SENTENCE in markdown
    assert ANSWER_MARKER not in markdown


def _blocked_ledger(tmp_path: Path) -> Path:
    observations = full_study()[:4]
    observations.append(cli_obs(TASKS[2], "repository-only", 1, status="invalid-setup", charged=0.1,
                                setupProblem="tool Bash outside the allowed set", exitCode=1))
    path = tmp_path / "ledger.json"
    write(path, ledger(observations, status="blocked", planned=36, stopReason="attempt 5 ended invalid-setup"))
    return path


@pytest.mark.parametrize("output_format", ["text", "md", "html"])
def test_a_ledger_with_blocked_attempts_lists_them(tmp_path: Path, output_format: str) -> None:
    report = build_report(_blocked_ledger(tmp_path), output_format=output_format)
    assert "tool Bash outside the allowed set" in report
    assert "31 of 36 planned attempts were not run." in report
    assert "The run ended blocked: attempt 5 ended invalid-setup." in report
    assert "all metrics: Repository tools invalid-setup; Repository tools + doc-bridge not observed" in report


def test_blocked_attempts_are_rows_of_their_own_table(tmp_path: Path) -> None:
    markdown = build_report(_blocked_ledger(tmp_path), output_format="md")
    rows = markdown_tables(markdown)[NOT_COMPLETED]
    assert rows == [{"#": "5", "task": TASKS[2], "rep": "1", "arm": "Repository tools", "status": "invalid-setup",
                     "charged USD": "0.100000",
                     "reasons": "setup problem: tool Bash outside the allowed set; exit code 1"}]
    attempts = markdown_tables(markdown)["Every attempt in execution order (— : not recorded)"]
    assert [row["status"] for row in attempts] == ["completed"] * 4 + ["invalid-setup"]
    # the blocked attempt's task has no value in one arm: 1 task (2 repetitions) enters the statistics.
    assert _summary(markdown)["input tokens"]["design"] == "1 task × 2 repetitions"


def _pilot(tmp_path: Path, status: str = "awaiting-adjudication", second: str = "completed") -> Path:
    observations = [cli_obs(TASKS[0], "repository-only", 1, input_tokens=13366, charged=0.0014036),
                    cli_obs(TASKS[0], "doc-bridge-mcp", 1, input_tokens=14444, status=second, charged=0.0015189)]
    path = tmp_path / "ledger.json"
    write(path, ledger(observations, mode="pilot", status=status, planned=2, cap=1.0, rehearsal=True))
    return path


def test_a_pilot_shows_both_extrapolations(tmp_path: Path) -> None:
    markdown = build_report(_pilot(tmp_path), output_format="md", allow_unverified=True)
    rows = {row["figure"]: row for row in markdown_tables(markdown)[EXTRAPOLATION]}
    # spent 0.0029225 x 18 = 0.052605; dearest 0.0015189 x 36 = 0.0546804
    assert rows["full run, charged spend × 18"]["USD"] == "0.052605"
    assert "not an upper bound" in rows["full run, charged spend × 18"]["basis"]
    assert rows["pessimistic, dearest attempt's charge × 36"]["USD"] == "0.054680"
    assert "0.001519 USD" in rows["pessimistic, dearest attempt's charge × 36"]["basis"]
    summary = _summary(markdown)
    assert (summary["input tokens"]["design"], summary["input tokens"]["mean task Δ"]) == \
        ("1 task × 1 repetition", "+1078.0")
    assert summary["input tokens"][INTERVAL] == "not computable with 1 task (needs at least 2)"
    assert summary["input tokens"]["p (test of the mean)"] == "not computable with 1 task (needs at least 2)"
    assert "This ledger is a rehearsal" in markdown


def test_a_blocked_pilot_has_no_x18_but_keeps_the_pessimistic_figure(tmp_path: Path) -> None:
    markdown = build_report(_pilot(tmp_path, status="blocked", second="failed"), output_format="md",
                            allow_unverified=True)
    rows = {row["figure"]: row for row in markdown_tables(markdown)[EXTRAPOLATION]}
    assert rows["full run, charged spend × 18"]["USD"] == "—"
    assert rows["full run, charged spend × 18"]["basis"].startswith("not applicable")
    assert rows["pessimistic, dearest attempt's charge × 36"]["USD"] == "0.054680"
    # the failed attempt was charged, so it counts under intention to treat (issue 41); complete case drops it
    assert _summary(markdown)["input tokens"]["design"] == "1 task × 1 repetition"
    assert _summary(markdown)["input tokens (complete case)"]["design"] == "0 tasks × 0 repetitions"
    assert _summary(markdown)["input tokens (complete case)"]["mean task Δ"] == "no task has values in both arms"


@pytest.mark.parametrize("output_format", ["text", "md", "html"])
def test_fixed_sentences_and_no_answer_text(tmp_path: Path, output_format: str) -> None:
    data = write(tmp_path / "ledger.json", ledger(full_study()))
    bare = build_report(tmp_path / "ledger.json", output_format=output_format)
    companion_path = tmp_path / "companion.json"
    companion_path.write_text(json.dumps(companion(data, {0: "correct", 1: "partial", 2: None})))
    judged = build_report(tmp_path / "ledger.json", companion_path, output_format=output_format)
    for sentence in (REDUCTION_SENTENCE, SMALL_SAMPLE_SENTENCE):
        assert sentence in bare and sentence in judged
    assert NOT_ADJUDICATED_SENTENCE in bare and ADJUDICATED_SENTENCE in judged
    assert "exploratory" in bare
    assert ANSWER_MARKER not in bare and ANSWER_MARKER not in judged


def test_http_observations_without_a_charge_stay_missing_never_zero(tmp_path: Path) -> None:
    observations = [http_obs(TASKS[0], "repository-only", 1, input_tokens=3000, charged=0.002),
                    http_obs(TASKS[0], "doc-bridge-mcp", 1, input_tokens=2500),
                    http_obs(TASKS[0], "repository-only", 2, input_tokens=3100, usage_complete=False,
                             status="incomplete") | {"statusReason": "the turn limit was reached"},
                    http_obs(TASKS[0], "doc-bridge-mcp", 2, input_tokens=2400)]
    path = tmp_path / "ledger.json"
    write(path, ledger(observations, transport="http", prices={"input": 1.0, "output": 5.0}))
    markdown = build_report(path, output_format="md", allow_unverified=True)
    assert "| upperPrices | input 1.0, output 5.0 USD per million tokens |" in markdown
    failed = markdown_tables(markdown)["Attempts that did not complete (kept, never dropped)"]
    assert failed[0]["reasons"] == ("reason: the turn limit was reached; "
                                    "usage incomplete: only earlier turns' tokens are known")
    attempts = markdown_tables(markdown)["Every attempt in execution order (— : not recorded)"]
    assert [row["charged USD"] for row in attempts] == ["0.002000", "—", "—", "—"]
    pairs = markdown_tables(markdown)[PAIRS]
    assert pairs[0]["Δ input tokens"] == "-500" and pairs[0]["Δ charged USD"] == "—"
    assert pairs[0]["left out"] == "charged USD: Repository tools + doc-bridge charged USD not recorded"
    assert pairs[1]["left out"].startswith("all metrics: Repository tools incomplete")
    usage = {row["arm"]: row for row in markdown_tables(markdown)[
        "Priced usage and spend, all attempts (tokens as recorded, incomplete usage included)"]}
    assert usage["all"]["charged USD"] == "0.002000 (3 not recorded)"
    assert usage["all"]["input tokens"] == "11000"
