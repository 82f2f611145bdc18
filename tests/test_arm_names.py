"""Names and arm differences (issue 28 items 7 and 2): what a reader sees names the arms by their labels and
the server by its name; the scenario ids stay in the ledger and the JSON keys; arms that ran different agent
versions are flagged on the first screen, in JSON and by ``agentstudy ledger``.

Real parts: the bundled example study's demo in rehearsal (our Messages API loop against the scripted server on
127.0.0.1, the bundled MCP server, then a blind adjudication by the real pinned Claude Code), and the real
``report``, ``ledger`` and ``power`` commands. Only the CLI is used, so the same file checks any build.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from agentstudy.cli import main
from agentstudy.protocol.ledger_integrity import seal_ledger
from test_report_builders import markdown_tables

RAW = ("repository-only", "doc-bridge-mcp")
CONTROL, TREATMENT = "Repository tools", "Repository tools + doc-bridge"
PROVENANCE = re.compile(r"\(ledger scenario (repository-only|doc-bridge-mcp)\)")
"""The one place a report may show a scenario id: the provenance row mapping each label to its ledger id."""
FORMATS = ("text", "md", "html", "json")


def agentstudy(*args: str) -> subprocess.CompletedProcess[str]:
    """A real ``agentstudy`` process (the demo: its terminal output is what a user sees)."""
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    return subprocess.run([sys.executable, "-m", "agentstudy", *args], capture_output=True, text=True, env=env,
                          timeout=600, check=False)


def command(*args: str) -> Result:
    """An ``agentstudy`` command run in this process (report, ledger, power read a file: no child needed)."""
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The adjudicated http demo of the example study (its adjudicator the pinned Claude Code the demo finds, as
    for a user): its directory and the run's terminal output (stderr)."""
    directory = tmp_path_factory.mktemp("names") / "demo"
    ran = agentstudy("demo", "--transport", "http", "--adjudicate", "--output-dir", str(directory))
    assert ran.returncode == 0, ran.stderr
    return directory, ran.stderr


def _report(ledger: Path, output_format: str, *extra: str) -> str:
    ran = command("report", str(ledger), "--format", output_format, *extra)
    assert ran.exit_code == 0, ran.output
    return ran.stdout


def _shown(text: str, output_format: str) -> str:
    """What a reader reads of a report: the HTML's text without its tags, the provenance mapping left out."""
    if output_format == "html":
        text = html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<svg.*?</svg>", " ", text, flags=re.S)))
    return PROVENANCE.sub("", text)


def _json_labels(report: dict[str, Any]) -> list[str]:
    """Every caption, header and cell of the JSON report's tables (what a JSON reader shows as labels)."""
    found: list[str] = []
    for table in report["tables"].values():
        found.append(table["caption"])
        found.extend(table["header"])
        found.extend(cell for row in table["rows"] for cell in row)
    return found


def test_every_report_format_names_the_arms_by_their_labels(demo: tuple[Path, str]) -> None:
    directory, _ = demo
    ledger = directory / "ledger.json"
    for output_format in FORMATS:
        text = _report(ledger, output_format, "--adjudication", str(directory / "ledger.adjudication.json"))
        if output_format == "json":
            report = json.loads(text)
            labels = [PROVENANCE.sub("", label) for label in _json_labels(report)]
            assert not [label for label in labels if any(raw in label for raw in RAW)]
            assert f"{TREATMENT} compared with {CONTROL}, task level (exploratory)" in labels
            assert report["arms"] == {"repository-only": CONTROL, "doc-bridge-mcp": TREATMENT}
            assert [a["scenario"] for a in report["attempts"]] == list(RAW)  # the ledger's ids, kept as JSON values
            assert [c["label"] for c in report["containment"]] == [CONTROL, TREATMENT]
            continue
        shown = _shown(text, output_format)
        leaks = [line for line in shown.splitlines() if any(raw in line for raw in RAW)]
        assert not leaks, (output_format, leaks[:3])
        assert f"{TREATMENT} compared with {CONTROL}" in shown
        assert f"Paired differences ({TREATMENT} − {CONTROL})" in shown
        assert "Correctness by arm" in shown
    tables = markdown_tables(_report(ledger, "md", "--adjudication", str(directory / "ledger.adjudication.json")))
    assert [row["arm"] for row in tables["Containment by arm"]] == [CONTROL, TREATMENT]
    attempts = tables["Every attempt in execution order (— : not recorded)"]
    assert [row["arm"] for row in attempts] == [CONTROL, TREATMENT]
    correctness = next(rows for caption, rows in tables.items() if caption.startswith("Correctness by arm"))
    assert [row["arm"] for row in correctness] == [CONTROL, TREATMENT, "all"]
    about = {row["field"]: row["value"] for row in tables["The study and this report's inputs"]}
    assert about["arms"] == (f"{CONTROL} (ledger scenario repository-only); "
                             f"{TREATMENT} (ledger scenario doc-bridge-mcp)")


def test_a_study_files_own_labels_replace_the_defaults(demo: tuple[Path, str], tmp_path: Path) -> None:
    document = json.loads((demo[0] / "ledger.json").read_text(encoding="utf-8"))
    document["arms"] = [{"scenario": "repository-only", "id": "plain", "label": "Plain checkout"},
                        {"scenario": "doc-bridge-mcp", "id": "docs", "label": "Checkout with docs",
                         "mcpServer": "doc-bridge"}]
    ledger = tmp_path / "labelled.json"
    ledger.write_text(json.dumps(seal_ledger(document)), encoding="utf-8")
    for output_format in ("text", "md", "html"):
        shown = _shown(_report(ledger, output_format), output_format)
        assert "Checkout with docs compared with Plain checkout" in shown
        assert not [line for line in shown.splitlines() if any(raw in line for raw in RAW)]
        assert CONTROL not in shown.replace("Plain checkout", "")  # no default label where the study gave one


def test_the_terminal_the_ledger_command_and_power_name_the_arms(demo: tuple[Path, str]) -> None:
    directory, terminal = demo
    assert f"{CONTROL}: 1, {TREATMENT}: 1" in terminal
    assert "doc-bridge used in 1 of 1 treatment attempts" in terminal
    summary = command("ledger", str(directory / "ledger.json"))
    assert summary.exit_code == 0, summary.output
    assert f"{CONTROL} 1, {TREATMENT} 1" in summary.stdout
    assert "none besides the server" in summary.stdout
    power = command("power", str(directory / "ledger.json"))
    assert power.exit_code == 0, power.output
    for text in (terminal, summary.stdout, power.stdout):
        assert not [line for line in text.splitlines() if any(raw in line for raw in RAW)], text
    as_json = json.loads(command("ledger", "--json", str(directory / "ledger.json")).stdout)["ledger"]
    assert as_json["byScenario"] == {"repository-only": 1, "doc-bridge-mcp": 1}  # the ids stay in JSON keys
    assert as_json["arms"] == {"repository-only": CONTROL, "doc-bridge-mcp": TREATMENT}
    assert as_json["armDifferences"] == []


def test_every_observation_records_the_agent_version(demo: tuple[Path, str]) -> None:
    document = json.loads((demo[0] / "ledger.json").read_text(encoding="utf-8"))
    versions = {o["scenario"]: o["treatment"]["agentVersion"] for o in document["observations"]}
    assert versions["repository-only"] == versions["doc-bridge-mcp"]
    assert versions["repository-only"].startswith("agentstudy ")  # the http transport's agent is our own loop


def test_arms_that_ran_different_agent_versions_are_flagged_everywhere(demo: tuple[Path, str],
                                                                        tmp_path: Path) -> None:
    document = json.loads((demo[0] / "ledger.json").read_text(encoding="utf-8"))
    control = next(o for o in document["observations"] if o["scenario"] == "repository-only")
    control["treatment"]["agentVersion"] = "agentstudy 0.0.1-older"
    ledger = tmp_path / "versions.json"
    ledger.write_text(json.dumps(seal_ledger(document)), encoding="utf-8")
    flagged = "The arms ran different agent versions"
    older = f"{CONTROL}: agentstudy 0.0.1-older; {TREATMENT}: agentstudy "
    first_screen = "\n".join(_report(ledger, "md").splitlines()[:30])
    assert flagged in first_screen and older in first_screen
    text = _report(ledger, "text")
    assert flagged in text.split("About this report")[0]
    assert flagged in _shown(_report(ledger, "html"), "html").split("About this report")[0]
    differences = json.loads(_report(ledger, "json"))["treatment"]["armDifferences"]
    assert len(differences) == 1 and differences[0].startswith(flagged) and older in differences[0]
    summary = command("ledger", str(ledger))
    assert summary.exit_code == 0, summary.output
    assert re.search(r"^Arm differences +The arms ran different agent versions", summary.stdout, re.M)
