"""Issue 18: ``agentstudy minimal``/``agentstudy study`` read study files; flags override them; ledgers name the arms.

Dry runs of study files of any size count tasks x repetitions x 2 attempts; the seed manifest
keeps its protocol hash and its 36/2 counts; bad study files are one line and exit 2; an MCP
flag typed on the command line replaces the study file's value and a default one does not; a
real http rehearsal from the bundled example study file writes a ledger that carries the arm
labels and the server's name, verifies with ``agentstudy ledger`` and reports the labels.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from agentstudy.cli import main
from agentstudy.protocol.manifest import load_manifest
from agentstudy.protocol.schedule import build_schedule
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study

from study_files import EXAMPLE_STUDY, SEED_PROTOCOL_HASH, study_document

PLANTED_KEY = "sk-ant-planted-study-key-0123456789"


def _invoke(args: list[str], env: dict[str, str | None] | None = None) -> Result:
    base: dict[str, str | None] = {"ANTHROPIC_API_KEY": None, "STUDY_INPUT_USD_PER_MILLION": None,
                                   "STUDY_OUTPUT_USD_PER_MILLION": None}
    return CliRunner().invoke(main, args, env={**base, **(env or {})}, catch_exceptions=False)


def _write(tmp_path: Path, document: dict[str, Any], name: str = "study.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return path


def _dry_run(path: Path, *extra: str, command: str = "study") -> dict[str, Any]:
    result = _invoke([command, "--manifest", str(path), "--dry-run", *extra])
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def test_seed_manifest_dry_runs_to_36_and_2_with_its_hash(
    original_manifest: Path, no_processes_no_sockets: None
) -> None:
    full = _dry_run(original_manifest, command="minimal")
    pilot = _dry_run(original_manifest, "--pilot", command="minimal")
    assert (full["attempts"], pilot["attempts"]) == (36, 2)
    assert full["protocolHash"] == pilot["protocolHash"] == SEED_PROTOCOL_HASH
    assert "arms" not in full  # a seed manifest names no arms
    assert full["mcpServer"]["name"] == "doc-bridge"


def test_example_study_file_dry_runs_to_36_and_2(no_processes_no_sockets: None) -> None:
    full = _dry_run(EXAMPLE_STUDY, command="minimal")
    assert (full["attempts"], _dry_run(EXAMPLE_STUDY, "--pilot")["attempts"]) == (36, 2)
    assert full["scenarios"] == {"repository-only": 18, "doc-bridge-mcp": 18}
    assert [arm["label"] for arm in full["arms"]] == ["Repository tools only", "Repository tools + doc-bridge MCP"]
    assert full["arms"][1]["mcpServer"] == "doc-bridge"


@pytest.mark.parametrize(
    ("repositories", "repetitions", "attempts"),
    [({"solo": 1}, 1, 2), ({"big": 10}, 5, 100), ({"a": 7, "b": 7, "c": 7}, 3, 126)],
    ids=["1x1", "10x5", "3repos-x7"],
)
def test_study_files_dry_run_with_their_counts_and_counterbalanced_order(
    tmp_path: Path, repositories: dict[str, int], repetitions: int, attempts: int, no_processes_no_sockets: None
) -> None:
    path = _write(tmp_path, study_document(repositories, repetitions))
    report = _dry_run(path)
    assert report["attempts"] == attempts
    assert report["scenarios"] == {"repository-only": attempts // 2, "doc-bridge-mcp": attempts // 2}
    assert _dry_run(path, "--pilot")["attempts"] == 2
    schedule = build_schedule(load_manifest(path).manifest, "full")  # the schedule the run would follow
    for index, entry in enumerate(schedule[::2]):
        t, r = index // repetitions, entry.repetition - 1
        first = "repository-only" if (t + r) % 2 == 0 else "doc-bridge-mcp"
        assert entry.scenario == first and schedule[2 * index + 1].scenario != first


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda d: d.update(repetitions=0), "repetitions"),
        (lambda d: d["arms"]["treatment"].update(tools=["kb.read"]), "arms.treatment.probe.tool"),
        (lambda d: d["arms"]["treatment"].update(mcpConfig={"mcpServers": {"a": {"command": "x"},
                                                                          "b": {"command": "y"}}}),
         "exactly one server"),
        (lambda d: d["arms"].update(extra={"id": "x", "label": "y"}), "extra"),
        (lambda d: d["tasks"][0].update(id="bad\u0000id"), "control character"),
    ],
)
def test_bad_study_files_exit_2_with_one_line_and_write_nothing(
    tmp_path: Path, change: Any, reason: str
) -> None:
    document = study_document({"solo": 1}, 1)
    change(document)
    path = _write(tmp_path, document)
    output = tmp_path / "ledger.json"
    result = _invoke(["study", "--manifest", str(path), "--pilot", "--rehearsal", "--output", str(output),
                      "--model", "claude-haiku-5-5", "--budget-usd", "1"])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and reason in lines[0] and "study file" in lines[0]
    assert not output.exists()


def test_not_json_study_file_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "study.json"
    path.write_text('{"version": "agentstudy-study-v1", ', encoding="utf-8")
    result = _invoke(["study", "--manifest", str(path), "--dry-run"])
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "not valid JSON" in result.stderr


def test_the_study_file_gives_the_mcp_defaults_and_typed_flags_override_them(
    tmp_path: Path, no_processes_no_sockets: None
) -> None:
    path = _write(tmp_path, study_document({"solo": 1}, 1))
    from_file = _dry_run(path)
    assert from_file["mcpServer"] == {"name": "kb", "tools": ["kb.search", "kb.read"], "probe": "kb.search",
                                      "probeArguments": {"query": "the"}}
    assert from_file["arms"][1]["mcpServer"] == "kb"
    # a flag typed with its default value still overrides (the source is the command line)
    overridden = _dry_run(path, "--mcp-tools", "kb.read", "--mcp-probe", "kb.read",
                          "--mcp-probe-arguments", '{"path": "{root}/README.md"}')
    assert overridden["mcpServer"] == {"name": "kb", "tools": ["kb.read"], "probe": "kb.read",
                                       "probeArguments": {"path": "{root}/README.md"}}
    other = _write(tmp_path, {"mcpServers": {"other-kb": {"command": "/usr/bin/other", "args": ["{root}"]}}},
                   "other.json")
    replaced = _dry_run(path, "--mcp-config", str(other))
    assert replaced["mcpServer"]["name"] == "other-kb" and replaced["arms"][1]["mcpServer"] == "other-kb"
    assert replaced["mcpServer"]["tools"] == ["kb.search", "kb.read"]  # the file's tools stay
    refused = _invoke(["study", "--manifest", str(path), "--dry-run", "--mcp-probe", "doc.search"])
    assert refused.exit_code == 2
    assert refused.stderr.strip().endswith("--mcp-probe doc.search is not one of --mcp-tools (kb.search,kb.read)")


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> ExampleStudy:
    return build_example_study(tmp_path_factory.mktemp("study-command") / "study")


@pytest.fixture(scope="module")
def rehearsal(example: ExampleStudy, tmp_path_factory: pytest.TempPathFactory) -> tuple[Result, Path]:
    """One free http rehearsal pilot of the bundled example study file: the command's result and its ledger."""
    output = tmp_path_factory.mktemp("study-rehearsal") / "ledger.json"
    roots = [f"--root={name}={path}" for name, path in example.roots.items()]
    result = _invoke(["study", "--manifest", str(EXAMPLE_STUDY), "--pilot", "--transport", "http", *roots,
                      "--output", str(output), "--model", "claude-haiku-5-5", "--budget-usd", "1", "--rehearsal",
                      "--input-usd-per-million", "0.5", "--output-usd-per-million", "2.5"],
                     {"ANTHROPIC_API_KEY": PLANTED_KEY, "COLUMNS": "240"})
    return result, output


def test_a_rehearsal_from_the_example_study_file_names_arms_and_server(rehearsal: tuple[Result, Path]) -> None:
    result, output = rehearsal
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["status"] == "awaiting-adjudication" and summary["byStatus"] == {"completed": 2}
    assert summary["armLabels"] == {"repository-only": "Repository tools only",
                                    "doc-bridge-mcp": "Repository tools + doc-bridge MCP"}
    assert summary["mcpServer"] == "doc-bridge" and summary["fullRunFactor"] == "18"
    assert "Repository tools + doc-bridge MCP: 1" in result.stderr and "doc-bridge-mcp" not in result.stderr
    ledger = json.loads(output.read_text(encoding="utf-8"))
    assert ledger["version"] == "agentstudy-study-v1"
    assert ledger["protocolHash"] == load_manifest(EXAMPLE_STUDY).protocol_hash
    assert ledger["arms"] == [
        {"scenario": "repository-only", "id": "repository-only", "label": "Repository tools only"},
        {"scenario": "doc-bridge-mcp", "id": "doc-bridge-mcp", "label": "Repository tools + doc-bridge MCP",
         "mcpServer": "doc-bridge"},
    ]
    assert {o["scenario"] for o in ledger["observations"]} == {"repository-only", "doc-bridge-mcp"}
    assert ledger["fullAttempts"] == 36 and ledger["plannedAttempts"] == 2
    verified = _invoke(["ledger", str(output), "--json"])
    assert verified.exit_code == 0, verified.output
    report = _invoke(["report", str(output)])
    assert report.exit_code == 0, report.output
    assert "Repository tools + doc-bridge MCP" in report.stdout and "doc-bridge" in report.stdout
    assert PLANTED_KEY not in result.output + output.read_text(encoding="utf-8")
    html = _invoke(["report", str(output), "--format", "html"])
    assert html.exit_code == 0, html.output
    plots = html.stdout[html.stdout.index('id="plot-'):]
    assert "R = Repository tools only, D = Repository tools + doc-bridge MCP" in plots  # the plots use the labels
    assert "favours Repository tools" in plots and "favours doc-bridge-mcp" not in plots


def test_a_ledger_whose_arms_were_edited_does_not_verify(rehearsal: tuple[Result, Path], tmp_path: Path) -> None:
    from agentstudy.protocol.ledger_integrity import seal_ledger

    output = rehearsal[1]
    ledger = json.loads(output.read_text(encoding="utf-8"))
    ledger["arms"][1]["label"] = "Something else"
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(ledger), encoding="utf-8")
    assert _invoke(["ledger", str(edited)]).exit_code == 2  # the ledger hash covers the arms
    ledger["arms"][1]["mcpServer"] = "not-the-server"
    resealed = tmp_path / "resealed.json"
    resealed.write_text(json.dumps(seal_ledger(ledger)), encoding="utf-8")
    refused = _invoke(["ledger", str(resealed)])
    assert refused.exit_code == 2 and "arms: the treatment arm names server" in refused.stderr


def test_a_study_file_ledger_is_adjudicated_and_reported_with_its_labels(
    rehearsal: tuple[Result, Path], example: ExampleStudy, claude_bin: Path
) -> None:
    output = rehearsal[1]
    roots = [f"--root={name}={path}" for name, path in example.roots.items()]
    result = _invoke(["adjudicate", str(output), "--manifest", str(EXAMPLE_STUDY), *roots, "--rehearsal",
                      "--claude-bin", str(claude_bin)],
                     {"ADJUDICATOR_MODEL": "claude-haiku-5-5", "ADJUDICATOR_BUDGET_USD": "1"})
    assert result.exit_code == 0, result.output
    line = json.loads(result.stdout.strip().splitlines()[-1])
    assert (line["status"], line["items"], line["scored"]) == ("adjudicated", 2, 2)
    companion = json.loads(Path(line["companion"]).read_text(encoding="utf-8"))
    scrubbed = companion["blinding"]["scrubbedTerms"]  # the arms' human labels are blinded too (issue 18)
    assert "Repository tools only" in scrubbed and "Repository tools + doc-bridge MCP" in scrubbed
    report = _invoke(["report", str(output), "--adjudication", line["companion"], "--format", "md"])
    assert report.exit_code == 0, report.output
    assert ("Repository tools only (ledger scenario repository-only); Repository tools + doc-bridge MCP (ledger "
            "scenario doc-bridge-mcp)") in report.stdout  # the provenance maps each label to its ledger id
    glance = report.stdout.split("## ")[1]  # the first section names the arms by their labels
    assert glance.startswith("Result at a glance")
    assert "Repository tools + doc-bridge MCP compared with Repository tools only" in glance
    assert "repository-only" not in glance and "doc-bridge-mcp" not in glance
    assert "per task with Repository tools + doc-bridge MCP" in glance


def test_the_report_extrapolates_a_pilot_by_the_study_s_own_factor(
    rehearsal: tuple[Result, Path], tmp_path: Path
) -> None:
    from agentstudy.protocol.ledger_integrity import seal_ledger

    ledger = json.loads(rehearsal[1].read_text(encoding="utf-8"))
    assert "charged spend × 18" in _invoke(["report", str(rehearsal[1])]).stdout
    ledger["fullAttempts"] = 100  # as a 10-task x 5-repetition study's pilot would record
    bigger = tmp_path / "bigger.json"
    bigger.write_text(json.dumps(seal_ledger(ledger)), encoding="utf-8")
    report = _invoke(["report", str(bigger)])
    assert report.exit_code == 0, report.output
    assert "charged spend × 50" in report.stdout and "100 attempts / 2 pilot attempts" in report.stdout
    assert "× 36" not in report.stdout and "dearest attempt's charge × 100" in report.stdout
    ledger["fullAttempts"] = 1
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps(seal_ledger(ledger)), encoding="utf-8")
    refused = _invoke(["ledger", str(wrong)])
    assert refused.exit_code == 2 and "fullAttempts 1 does not fit 2 planned attempts" in refused.stderr


def test_a_declared_analysis_is_recorded_in_the_ledger_and_leads_the_report(
    example: ExampleStudy, tmp_path: Path
) -> None:
    """A study file's ``analysis`` section travels through a real rehearsal run into the ledger (which still
    verifies) and the report reads its primary endpoint from there (issue 30)."""
    document = json.loads(EXAMPLE_STUDY.read_text(encoding="utf-8"))
    document["analysis"] = {"primary": {"metric": "inputTokens", "betterWhen": "lower"}, "alpha": 0.1,
                            "minimumTreatmentUse": 0.25}
    manifest = tmp_path / "study.json"
    manifest.write_text(json.dumps(document), encoding="utf-8")
    output = tmp_path / "ledger.json"
    roots = [f"--root={name}={path}" for name, path in example.roots.items()]
    result = _invoke(["study", "--manifest", str(manifest), "--pilot", "--transport", "http", *roots,
                      "--output", str(output), "--model", "claude-haiku-5-5", "--budget-usd", "1", "--rehearsal",
                      "--input-usd-per-million", "0.5", "--output-usd-per-million", "2.5"],
                     {"ANTHROPIC_API_KEY": PLANTED_KEY, "COLUMNS": "240"})
    assert result.exit_code == 0, result.output
    ledger = json.loads(output.read_text(encoding="utf-8"))
    assert ledger["analysis"] == {"primary": {"metric": "inputTokens", "betterWhen": "lower"}, "alpha": 0.1,
                                  "minimumTreatmentUse": 0.25}
    assert _invoke(["ledger", str(output), "--json"]).exit_code == 0
    report = _invoke(["report", str(output), "--format", "json"])
    assert report.exit_code == 0, report.output
    data = json.loads(report.stdout)
    assert data["primary"] == {"metric": "inputTokens", "betterWhen": "lower", "alpha": 0.1}
    assert data["analysis"]["declared"] is True and data["analysis"]["minimumTreatmentUse"] == 0.25
    assert data["metrics"][0]["metric"] == "inputTokens" and data["metrics"][0]["role"] == "primary"
