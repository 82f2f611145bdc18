"""Properties of the paired report (hypothesis): statistics against independent computations, shift
and sign symmetry of the seeded bootstrap, and random ledgers whose reports keep every attempt, count
pairs as the rules say, never print an answer and carry the same cells in Markdown and HTML."""

from __future__ import annotations

import hashlib
import html
import json
import statistics
from html.parser import HTMLParser
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentstudy.report.analysis import analyse
from agentstudy.report.content import build_document
from agentstudy.report.load import parse_ledger
from agentstudy.report.render import render_html, render_markdown, render_text
from agentstudy.report.stats import paired_summary

ANSWER = "SECRET-ANSWER-d41d8"
STATUSES = ("completed", "completed", "completed", "failed", "timed-out", "invalid-setup")
differences = st.lists(st.integers(min_value=-10**6, max_value=10**6), min_size=2, max_size=30)


@given(differences)
@settings(max_examples=60, deadline=None)
def test_summary_matches_independent_computation(values: list[int]) -> None:
    summary = paired_summary(values)
    assert summary.n == len(values)
    assert summary.mean == pytest.approx(statistics.fmean(values))
    assert summary.median == pytest.approx(statistics.median(values))
    assert summary.ci_low is not None and summary.ci_high is not None
    assert min(values) <= summary.ci_low <= summary.ci_high <= max(values)


@given(differences, st.integers(min_value=-10**5, max_value=10**5))
@settings(max_examples=40, deadline=None)
def test_shifting_every_difference_shifts_the_interval(values: list[int], shift: int) -> None:
    base, moved = paired_summary(values), paired_summary([v + shift for v in values])
    assert base.ci_low is not None and base.ci_high is not None
    assert moved.ci_low == pytest.approx(base.ci_low + shift, abs=1e-6)
    assert moved.ci_high == pytest.approx(base.ci_high + shift, abs=1e-6)
    assert moved.median == pytest.approx((base.median or 0) + shift)


@given(differences)
@settings(max_examples=40, deadline=None)
def test_negating_mirrors_the_summary(values: list[int]) -> None:
    base, mirrored = paired_summary(values), paired_summary([-v for v in values])
    assert mirrored.mean == pytest.approx(-(base.mean or 0))
    assert base.ci_low is not None and base.ci_high is not None
    assert mirrored.ci_low == pytest.approx(-base.ci_high, abs=1e-6)
    assert mirrored.ci_high == pytest.approx(-base.ci_low, abs=1e-6)


def _observation(task: str, scenario: str, rep: int, status: str, tokens: int, tools: int, charged: int,
                 missing_charge: bool) -> dict[str, Any]:
    obs: dict[str, Any] = {"taskId": task, "scenario": scenario, "repetition": rep, "transport": "http",
                           "inputTokens": tokens, "outputTokens": tokens // 10, "usageComplete": status == "completed",
                           "toolCalls": tools, "toolCallsByName": {"read_file": tools}, "wallTimeMs": 1000 + tokens,
                           "status": status, "answer": ANSWER}
    if not missing_charge:
        obs["chargedUsd"] = charged / 10**6
    return obs


pair_specs = st.lists(
    st.tuples(st.sampled_from(STATUSES), st.sampled_from(STATUSES), st.integers(0, 50_000), st.integers(0, 50_000),
              st.integers(0, 9), st.integers(0, 9), st.integers(0, 5000), st.integers(0, 5000), st.booleans()),
    min_size=1, max_size=8,
)


def _ledger(specs: list[tuple[Any, ...]]) -> bytes:
    observations = []
    for k, (rs, ds, rt, dt, rtools, dtools, rc, dc, missing) in enumerate(specs):
        task, rep = f"task-{k // 3}", k % 3 + 1
        observations.append(_observation(task, "repository-only", rep, rs, rt, rtools, rc, False))
        observations.append(_observation(task, "doc-bridge-mcp", rep, ds, dt, dtools, dc, missing))
    document = {"version": "minimal-study-v1", "transport": "http", "mode": "full", "status": "blocked",
                "plannedAttempts": 36, "budget": {"cap": 10.0, "spent": 0.5}, "observations": observations,
                "rehearsal": False}
    return json.dumps(document).encode()


class _Tables(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.cells: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.cells.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.cells[-1].append(html.unescape("".join(self._cell)))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _markdown_rows(text: str) -> list[list[str]]:
    rows = []
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| ---"):
            cells, current, escaped = [], "", False
            for ch in line[2:-2]:
                if escaped:
                    current, escaped = current + ch, False
                elif ch == "\\":
                    escaped = True
                elif ch == "|":
                    cells.append(current.strip())
                    current = ""
                else:
                    current += ch
            rows.append([*cells, current.strip()])
    return rows


@given(pair_specs)
@settings(max_examples=60, deadline=None)
def test_random_ledgers_keep_every_attempt_and_count_pairs_by_the_rules(specs: list[tuple[Any, ...]]) -> None:
    data = _ledger(specs)
    study = parse_ledger(data, "ledger.json")
    assert study.sha256 == hashlib.sha256(data).hexdigest()
    analysis = analyse(study, resamples=500)
    document = build_document(analysis)
    markdown, text, page = render_markdown(document), render_text(document), render_html(document)
    for rendering in (markdown, text, page):
        assert ANSWER not in rendering
    results = {r.metric.key: r for r in analysis.results}
    # per task (k // 3): each arm's values under the two rules (docs/statistics.md). Intention to treat: an
    # attempt counts when it completed or was charged more than 0 USD, whatever its status, with the value it
    # recorded (a missing charge has no USD value and is no charge). Complete case: completed attempts only.
    for itt in (True, False):
        tokens: dict[int, tuple[list[int], list[int]]] = {}
        charged: dict[int, tuple[list[int], list[int]]] = {}
        for k, (rs, ds, rt, dt, _, _, rc, dc, missing) in enumerate(specs):
            arms = ((rs, rt, rc), (ds, dt, None if missing else dc))
            for table in (tokens, charged):
                for values, (status, spent_tokens, charge) in zip(table.setdefault(k // 3, ([], [])), arms,
                                                                  strict=True):
                    counts = status == "completed" or (itt and charge is not None and charge > 0)
                    value = spent_tokens if table is tokens else charge
                    if counts and value is not None:
                        values.append(value)
        token_diffs = [statistics.fmean(t) - statistics.fmean(b) for b, t in tokens.values() if b and t]
        charged_diffs = [statistics.fmean(t) - statistics.fmean(b) for b, t in charged.values() if b and t]
        token_summary = results["inputTokens"].task_level if itt else results["inputTokens"].complete_case
        charged_summary = results["chargedUsd"].task_level if itt else results["chargedUsd"].complete_case
        assert token_summary is not None and charged_summary is not None
        assert token_summary.tasks == len(token_diffs)
        assert charged_summary.tasks == len(charged_diffs)
        if token_diffs:
            assert token_summary.estimate == pytest.approx(statistics.fmean(token_diffs))
        if charged_diffs:
            assert charged_summary.estimate == pytest.approx(statistics.fmean(charged_diffs) / 10**6, abs=1e-12)
    attempts = next(t for t in document.tables() if t.key == "attempts")
    assert len(attempts.rows) == 2 * len(specs)
    failed = sum((s[0] != "completed") + (s[1] != "completed") for s in specs)
    not_completed = [t for t in document.tables() if t.key == "not-completed"]
    assert (len(not_completed[0].rows) if not_completed else 0) == failed
    parser = _Tables()
    parser.feed(page)
    assert parser.cells == _markdown_rows(markdown)
