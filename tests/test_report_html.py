"""The HTML report: well-formed (standard html.parser), self-contained, with plots and the Markdown's numbers."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from agentstudy.report.build import build_report
from test_report_builders import ANSWER_MARKER, cli_obs, companion, full_study, ledger, markdown_tables, write

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
REFERENCE = re.compile(r"url\(#([^)]+)\)")


class Structure(HTMLParser):
    """Checks nesting and collects tags, ids, references and every table's cells."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.problems: list[str] = []
        self.tags: dict[str, int] = {}
        self.ids: list[str] = []
        self.references: list[str] = []
        self.attributes: list[tuple[str, str]] = []
        self.tables: dict[str, list[list[str]]] = {}
        self._table: list[list[str]] | None = None
        self._cell: list[str] | None = None
        self._caption: list[str] | None = None
        self.captions: dict[str, str] = {}
        self._table_id = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] = self.tags.get(tag, 0) + 1
        for name, value in attrs:
            self.attributes.append((name, value or ""))
            if name == "id" and value:
                self.ids.append(value)
            if name in ("href", "xlink:href") and value:
                self.references.append(value)
            self.references.extend(f"#{found}" for found in REFERENCE.findall(value or ""))
        if tag == "table":
            self._table, self._table_id = [], dict(attrs).get("id") or ""
        elif tag == "tr" and self._table is not None:
            self._table.append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "caption":
            self._caption = []
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"unexpected </{tag}> with open {self.stack[-3:]}")
            return
        self.stack.pop()
        if tag in ("td", "th") and self._cell is not None and self._table is not None:
            self._table[-1].append("".join(self._cell))
            self._cell = None
        elif tag == "caption" and self._caption is not None:
            self.captions[self._table_id] = "".join(self._caption)
            self._caption = None
        elif tag == "table" and self._table is not None:
            self.tables[self._table_id] = self._table
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._caption is not None:
            self._caption.append(data)


def _parse(text: str) -> Structure:
    parser = Structure()
    parser.feed(text)
    parser.close()
    return parser


def _study(tmp_path: Path) -> tuple[Path, Path]:
    observations = full_study()
    observations[7] = cli_obs(observations[7]["taskId"], observations[7]["scenario"], observations[7]["repetition"],
                              status="budget-exceeded", charged=0.12, cliSubtype="error_max_budget_usd")
    data = write(tmp_path / "ledger.json", ledger(observations, status="blocked"))
    outcomes = {i: ("correct", "partial", "incorrect")[i % 3] for i in range(36) if i != 7}
    companion_path = tmp_path / "companion.json"
    companion_path.write_text(json.dumps(companion(data, outcomes)))
    return tmp_path / "ledger.json", companion_path


@pytest.fixture(scope="module")
def study_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """The blocked, adjudicated study's ledger and companion and its HTML report, built once (read only): the
    structure, the numbers and the determinism tests read the same page."""
    ledger_path, companion_path = _study(tmp_path_factory.mktemp("html"))
    return ledger_path, companion_path, build_report(ledger_path, companion_path, output_format="html",
                                                     allow_unverified=True)


def test_the_page_parses_cleanly_and_is_self_contained(study_page: tuple[Path, Path, str]) -> None:
    page = study_page[2]
    parsed = _parse(page)
    assert parsed.problems == [] and parsed.stack == []
    assert page.startswith("<!DOCTYPE html>")
    assert parsed.tags["html"] == parsed.tags["head"] == parsed.tags["body"] == parsed.tags["title"] == 1
    assert parsed.tags["figure"] == parsed.tags["svg"] == 3
    assert "script" not in parsed.tags and "img" not in parsed.tags and "link" not in parsed.tags
    assert not [name for name, _ in parsed.attributes if name.startswith("on") or name == "src"]
    assert parsed.references and all(ref.startswith("#") for ref in parsed.references)
    assert len(parsed.ids) == len(set(parsed.ids))
    targets = {ref.removeprefix("#") for ref in parsed.references}
    assert targets <= set(parsed.ids)
    assert {"plot-differences", "plot-distributions", "plot-status"} <= set(parsed.ids)
    assert ANSWER_MARKER not in page
    assert len(page.encode()) < 300_000


def test_the_pages_numbers_match_the_markdown(study_page: tuple[Path, Path, str]) -> None:
    ledger_path, companion_path, html = study_page
    page = _parse(html)
    markdown = markdown_tables(build_report(ledger_path, companion_path, output_format="md", allow_unverified=True))
    assert len(page.tables) == len(markdown) >= 9
    for key, rows in page.tables.items():
        header, body = rows[0], rows[1:]
        expected = markdown[page.captions[key]]
        assert [dict(zip(header, row, strict=True)) for row in body] == expected, key
    summary = {row["metric"]: row for row in markdown["Task-level paired differences per metric"]}
    # the budget-exceeded attempt was charged, so it counts under intention to treat (issue 41); the complete
    # case leaves its task with 2 repetitions in one arm; all 6 tasks stay in
    assert summary["input tokens"]["design"] == "6 tasks × 3 repetitions"
    assert summary["input tokens (complete case)"]["design"] == "6 tasks × 2–3 repetitions"


def test_the_page_is_deterministic(study_page: tuple[Path, Path, str]) -> None:
    ledger_path, companion_path, page = study_page  # built earlier by the fixture; built again here
    assert build_report(ledger_path, companion_path, output_format="html", allow_unverified=True) == page


def test_the_status_strip_shows_every_attempt(study_page: tuple[Path, Path, str]) -> None:
    ledger_path = study_page[0]
    page = build_report(ledger_path, output_format="html", allow_unverified=True)
    strip = page[page.index('<figure id="plot-status">'):]
    strip = strip[: strip.index("</figure>")]
    assert "budget-exceeded" in strip and "completed" in strip
    assert strip.count(">R</text>") + strip.count(">D</text>") == 36


def test_a_table_cell_cannot_inject_markup(tmp_path: Path) -> None:
    hostile = cli_obs("t<script>alert(1)</script>", "repository-only", 1, status="invalid-setup", charged=0.1,
                      setupProblem="<img src=x onerror=alert(1)> | *bold*")
    write(tmp_path / "ledger.json", ledger([hostile], status="blocked"))
    page = build_report(tmp_path / "ledger.json", output_format="html", allow_unverified=True)
    parsed = _parse(page)
    assert "script" not in parsed.tags and "img" not in parsed.tags
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    markdown = build_report(tmp_path / "ledger.json", output_format="md", allow_unverified=True)
    rows = markdown_tables(markdown)["Attempts that did not complete (kept, never dropped)"]
    assert rows[0]["reasons"] == "setup problem: <img src=x onerror=alert(1)> | *bold*"
    assert rows[0]["task"] == "t<script>alert(1)</script>"
