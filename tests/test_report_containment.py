"""Containment by arm in every report format: mechanisms with counts, what was not achieved, refused reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentstudy.report.build import build_report
from agentstudy.report.containment import containment_rows, containment_sentences
from agentstudy.report.demo import write_demo_reports
from agentstudy.report.load import parse_ledger
from agentstudy.report.model import ReportInputError
from test_report_builders import full_study, http_obs, ledger, markdown_tables, write
from test_report_html import Structure

CAPTION = "Containment by arm"
HEADER = ["arm", "attempts", "mechanism", "not achieved", "refused out-of-export reads"]
NETWORK = "the network is not sandboxed"
ABSOLUTE = "Read accepts absolute paths: files outside the export can be read"
RESTRICTED_WARNING = f"Arm Repository tools + doc-bridge was not contained by bubblewrap: {NETWORK}; {ABSOLUTE}."
CONFOUNDED = ("The arms were contained differently (Repository tools: bwrap (18); Repository tools + doc-bridge: "
              "restricted (18)), so the comparison is confounded")
OLD_WARNING = ("Arm Repository tools: containment was not recorded (the ledger predates containment records), "
               "so this report cannot say how its attempts were confined.")


def _denial(tool: str, number: int) -> dict[str, Any]:
    return {"tool_name": tool, "tool_use_id": f"toolu_{tool}_{number}", "tool_input": {"file_path": "/etc/hosts"}}


def _contained(treatment: str = "bwrap") -> list[dict[str, Any]]:
    """36 CLI observations, repository-only in bwrap, doc-bridge-mcp in ``treatment``; denials: repository-only
    2 Read + 1 Grep (and one Bash, not a read), doc-bridge-mcp 1 Glob (and one MCP tool, not a read)."""
    observations = full_study()
    for obs in observations:
        bwrap = obs["scenario"] == "repository-only" or treatment == "bwrap"
        obs["containment"] = "bwrap" if bwrap else treatment
        obs["isolationNotAchieved"] = [NETWORK] if bwrap else [NETWORK, ABSOLUTE]
    baseline = [o for o in observations if o["scenario"] == "repository-only"]
    treated = [o for o in observations if o["scenario"] == "doc-bridge-mcp"]
    baseline[0]["permissionDenials"] = [_denial("Read", 1), _denial("Read", 2), _denial("Bash", 3)]
    baseline[5]["permissionDenials"] = [_denial("Grep", 4)]
    treated[2]["permissionDenials"] = [_denial("Glob", 5), _denial("mcp__doc-bridge__doc_write", 6)]
    return observations


def write_bytes(document: dict[str, Any]) -> bytes:
    return json.dumps(document).encode("utf-8")


def _report(tmp_path: Path, observations: list[dict[str, Any]], output_format: str, **extra: Any) -> str:
    path = tmp_path / "ledger.json"
    write(path, ledger(observations, **extra))
    return build_report(path, output_format=output_format, allow_unverified=True)


def _html_table(page: str) -> list[list[str]]:
    parser = Structure()
    parser.feed(page)
    parser.close()
    assert parser.problems == [] and parser.stack == []
    assert len(parser.ids) == len(set(parser.ids))
    assert parser.captions["containment"] == CAPTION
    return parser.tables["containment"]


def _text_rows(text: str) -> list[list[str]]:
    lines = text.splitlines()
    start = lines.index(CAPTION)
    assert lines[start + 1].split() == ["arm", "attempts", "mechanism", "not", "achieved", "refused",
                                        "out-of-export", "reads"]
    rows = []
    for line in lines[start + 3:]:
        if not line:
            break
        rows.append([cell for cell in line.split("  ") if cell.strip()])
    return [[cell.strip() for cell in row] for row in rows]


BWRAP_ROWS = [
    ["Repository tools", "18", "bwrap (18)", NETWORK, "3"],
    ["Repository tools + doc-bridge", "18", "bwrap (18)", NETWORK, "1"],
]


def test_both_arms_in_bwrap_show_the_table_with_the_read_denials_in_every_format(tmp_path: Path) -> None:
    observations = _contained()
    markdown = _report(tmp_path, observations, "md")
    assert [list(row.values()) for row in markdown_tables(markdown)[CAPTION]] == BWRAP_ROWS
    assert list(markdown_tables(markdown)[CAPTION][0]) == HEADER
    assert _text_rows(_report(tmp_path, observations, "text")) == BWRAP_ROWS
    page = _report(tmp_path, observations, "html")
    assert _html_table(page) == [HEADER, *BWRAP_ROWS]
    for report in (markdown, page):
        assert "not contained by bubblewrap" not in report and "confounded" not in report


def test_the_containment_section_comes_right_after_the_glance_and_about_sections(tmp_path: Path) -> None:
    text = _report(tmp_path, _contained(), "text")
    headings = [line for line, under in zip(text.splitlines(), text.splitlines()[1:], strict=False)
                if under and set(under) == {"-"} and len(under) == len(line)]
    assert headings[:4] == ["Result at a glance", "About this report", "Containment", "Attempts"]
    assert headings[-1] == "Appendix: provenance"


@pytest.mark.parametrize("output_format", ["text", "md", "html"])
def test_an_arm_in_restricted_only_is_named_with_what_was_not_achieved(tmp_path: Path, output_format: str) -> None:
    report = _report(tmp_path, _contained("restricted"), output_format)
    flat = " ".join(report.split())
    if output_format == "md":
        flat = flat.replace("\\", "")
    assert RESTRICTED_WARNING in flat
    assert CONFOUNDED in flat
    assert "Arm Repository tools was not contained" not in flat


def test_the_restricted_arms_row_lists_both_sentences(tmp_path: Path) -> None:
    rows = markdown_tables(_report(tmp_path, _contained("restricted"), "md"))[CAPTION]
    assert rows[1] == {"arm": "Repository tools + doc-bridge", "attempts": "18", "mechanism": "restricted (18)",
                       "not achieved": f"{NETWORK}; {ABSOLUTE}", "refused out-of-export reads": "1"}
    page = _report(tmp_path, _contained("restricted"), "html")
    assert _html_table(page)[2][2:] == ["restricted (18)", f"{NETWORK}; {ABSOLUTE}", "1"]


def test_an_old_ledger_without_containment_says_not_recorded(tmp_path: Path) -> None:
    markdown = _report(tmp_path, full_study(), "md")
    rows = markdown_tables(markdown)[CAPTION]
    assert [list(row.values()) for row in rows] == [
        ["Repository tools", "18", "not recorded (18)", "not recorded", "0"],
        ["Repository tools + doc-bridge", "18", "not recorded (18)", "not recorded", "0"],
    ]
    flat = " ".join(markdown.replace("\\", "").split())
    assert OLD_WARNING in flat
    assert "confounded" not in flat  # neither arm recorded: they do not differ
    assert _html_table(_report(tmp_path, full_study(), "html"))[1][2] == "not recorded (18)"


def test_a_mixed_arm_shows_every_mechanism() -> None:
    observations = _contained()
    treated = [o for o in observations if o["scenario"] == "doc-bridge-mcp"]
    treated[3]["containment"] = "restricted"
    del treated[4]["containment"]
    study = parse_ledger(write_bytes(ledger(observations)), "l.json")
    rows = containment_rows(study.attempts, study.arm_name)
    assert [r.mechanism_cell() for r in rows] == ["bwrap (18)", "bwrap (16), restricted (1), not recorded (1)"]
    sentences = containment_sentences(rows)
    assert sentences[0] == (f"Arm Repository tools + doc-bridge was not contained by bubblewrap in every attempt "
                            f"(bwrap (16), restricted (1), not recorded (1)): {NETWORK}.")
    assert sentences[1].startswith("The arms were contained differently (Repository tools: bwrap (18); "
                                   "Repository tools + doc-bridge: bwrap (16), restricted (1), not recorded (1))")
    assert len(sentences) == 2


def test_http_attempts_show_refused_reads_as_not_applicable(tmp_path: Path) -> None:
    observations = [http_obs("t1", "repository-only", 1), http_obs("t1", "doc-bridge-mcp", 1)]
    for obs in observations:
        obs.update(containment="bwrap", isolationNotAchieved=[])
    rows = markdown_tables(_report(tmp_path, observations, "md", transport="http"))[CAPTION]
    assert [list(row.values()) for row in rows] == [
        ["Repository tools", "1", "bwrap (1)", "none recorded", "n/a"],
        ["Repository tools + doc-bridge", "1", "bwrap (1)", "none recorded", "n/a"],
    ]


def test_the_attempt_notes_tell_refused_reads_from_other_denials(tmp_path: Path) -> None:
    rows = markdown_tables(_report(tmp_path, _contained(), "md"))["Every attempt in execution order (— : not recorded)"]
    notes = [row["notes"] for row in rows if row["notes"]]
    assert notes == ["2 refused out-of-export read(s); 1 other permission denial(s)",  # t1 rep 1, baseline
                     "1 refused out-of-export read(s); 1 other permission denial(s)",  # t1 rep 3, treatment
                     "1 refused out-of-export read(s)"]  # t2 rep 3, baseline


@pytest.mark.parametrize("field, value, message", [
    ("containment", 3, "observation 1: containment is not a non-empty string"),
    ("isolationNotAchieved", "the network", "observation 1: isolationNotAchieved is not a list of strings"),
    ("permissionDenials", {"tool_name": "Read"}, "observation 1: permissionDenials is not a list"),
])
def test_malformed_containment_fields_are_refused(field: str, value: Any, message: str) -> None:
    observations = _contained()
    observations[0][field] = value
    with pytest.raises(ReportInputError, match=message):
        parse_ledger(write_bytes(ledger(observations)), "l.json")


def test_the_demo_reports_carry_the_containment_table(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    write(path, ledger(_contained("restricted")))
    html_path, md_path = write_demo_reports(tmp_path, path, None)
    expected = [BWRAP_ROWS[0],
                ["Repository tools + doc-bridge", "18", "restricted (18)", f"{NETWORK}; {ABSOLUTE}", "1"]]
    assert _html_table(html_path.read_text()) == [HEADER, *expected]
    markdown = md_path.read_text()
    assert [list(row.values()) for row in markdown_tables(markdown)[CAPTION]] == expected
    assert RESTRICTED_WARNING in " ".join(markdown.replace("\\", "").split())
