"""The adjudication run's money, stop rules, refusals and strict output (fake claude for failure paths,
the real binary against the rehearsal server for invalid output)."""

from __future__ import annotations

import hashlib
import json
import stat
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentstudy.adjudication.run import AdjudicationRefused, run_adjudication
from agentstudy.cli import main
from agentstudy.io.ledger_store import OutputPathError
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study
from agentstudy.rehearsal.messages_server import RehearsalServer
from test_adjudication_support import (
    PLANTED_KEY,
    fake_adjudicator_events,
    observation,
    request_for,
    text_reply,
    valid_judgement,
    write_ledger,
)

from fakes import FakeClaude

ANSWER = "Deadlines use time.monotonic (src/lantern/cache.py:29); prototypes used time.time (docs/design.md:99)."


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> ExampleStudy:
    return build_example_study(tmp_path_factory.mktemp("adjudication-study"))


@pytest.fixture
def ledger(tmp_path: Path, study: ExampleStudy) -> Path:
    return write_ledger(tmp_path / "ledger.json", study, [
        observation("lantern-discovery", "repository-only", ANSWER),
        observation("lantern-discovery", "doc-bridge-mcp", ANSWER + " Found via mcp__doc-bridge__doc_search."),
        observation("lantern-architecture", "repository-only", "", status="invalid-setup"),
    ], status="blocked")


def _companion(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def test_an_item_that_does_not_fit_is_refused_and_nothing_runs(
    tmp_path: Path, study: ExampleStudy, ledger: Path, fake_claude: FakeClaude
) -> None:
    before = ledger.read_bytes()
    output = tmp_path / "companion.json"
    summary = run_adjudication(request_for(ledger, study, fake_claude.path, output, cap="0.05", item="0.10",
                                           containment="restricted"))
    assert fake_claude.records == [], "no adjudicator was started"
    companion = _companion(output)
    assert stat.S_IMODE(output.stat().st_mode) == 0o600
    assert summary.status == companion["status"] == "awaiting-adjudication"
    assert companion["stopReason"] == "the per-item limit does not fit under the remaining adjudication cap"
    assert [i["status"] for i in companion["items"]] == ["pending", "pending"]
    assert all(i["pendingReason"].startswith("not adjudicated: the per-item limit does not fit")
               for i in companion["items"])
    assert all(i["chargedUsd"] == 0 and i["attemptStatus"] is None for i in companion["items"])
    assert companion["budget"] == {"cap": 0.05, "spent": 0.0, "reserved": 0.0, "measured": 0.0,
                                   "cumulativeCapExceeded": False}
    assert companion["missing"] == [{"observationIndex": 2, "taskId": "lantern-architecture", "repetition": 1,
                                     "status": "invalid-setup"}]
    assert ledger.read_bytes() == before
    assert companion["ledgerSha256"] == hashlib.sha256(before).hexdigest()


def test_the_cap_admits_the_first_item_and_refuses_the_second(
    tmp_path: Path, study: ExampleStudy, ledger: Path, fake_claude: FakeClaude
) -> None:
    fake_claude.behave(mode="events", events=fake_adjudicator_events(valid_judgement(4), cost=0.05))
    output = tmp_path / "companion.json"
    summary = run_adjudication(request_for(ledger, study, fake_claude.path, output, cap="0.12", item="0.10",
                                           containment="restricted"))
    assert len(fake_claude.records) == 1
    first, second = _companion(output)["items"]
    assert (first["status"], first["rubric"], first["score"]) == ("scored", "correct", 1.0)
    assert (first["reservedUsd"], first["chargedUsd"], first["attemptStatus"]) == (0.1, 0.05, "completed")
    assert [v["verdict"] for v in first["verdicts"]] == ["supported"] * 4
    assert first["verdicts"][0]["proposition"].startswith("Deadlines come from time.monotonic()")
    assert first["method"] == "agent" and first["humanReview"] is False
    assert second["status"] == "pending" and second["attemptStatus"] is None
    assert second["pendingReason"].startswith("not adjudicated: the per-item limit does not fit")
    companion = _companion(output)
    assert companion["budget"] == {"cap": 0.12, "spent": 0.05, "reserved": 0.1, "measured": 0.05,
                                   "cumulativeCapExceeded": False}
    assert companion["openReservation"] is None
    assert summary.status == "awaiting-adjudication"
    assert summary.line["scored"] == 1 and summary.line["pending"] == 1 and summary.line["missing"] == 1


def test_a_failed_adjudicator_stops_the_run_and_keeps_its_reservation(
    tmp_path: Path, study: ExampleStudy, ledger: Path, fake_claude: FakeClaude
) -> None:
    fake_claude.behave(mode="exit", exitCode=1)
    output = tmp_path / "companion.json"
    run_adjudication(request_for(ledger, study, fake_claude.path, output, containment="restricted"))
    assert len(fake_claude.records) == 1
    assert not fake_claude.records[0]["apiKeyPresent"]
    first, second = _companion(output)["items"]
    assert (first["status"], first["attemptStatus"], first["chargedUsd"]) == ("pending", "failed", 0.1)
    assert first["pendingReason"] == "the adjudicator attempt ended failed"
    assert first["score"] is None and first["rubric"] is None
    assert second["pendingReason"] == "not adjudicated: item 1 of 2: the adjudicator attempt ended failed"
    assert _companion(output)["budget"]["spent"] == 0.1


def test_the_adjudicator_runs_without_mcp_in_a_read_only_export(
    tmp_path: Path, study: ExampleStudy, ledger: Path, fake_claude: FakeClaude
) -> None:
    fake_claude.behave(mode="events", events=fake_adjudicator_events(valid_judgement(4, "missing")))
    run_adjudication(request_for(ledger, study, fake_claude.path, tmp_path / "companion.json",
                                 containment="restricted"))
    for record in fake_claude.records:
        argv = record["argv"]
        assert argv[argv.index("--mcp-config") + 1] == '{"mcpServers":{}}'
        assert argv[argv.index("--allowedTools") + 1] == "Read,Grep,Glob"
        assert not any("mcp__" in arg or "doc-bridge" in arg for arg in argv[:-1])
        assert not record["cwdWritable"] and "src/lantern/cache.py" in record["cwdFiles"]
        assert ".git" not in " ".join(record["cwdFiles"])
        assert "mcp__" not in argv[-1] and "doc-bridge" not in argv[-1]
    prompts = sorted(record["argv"][-1] for record in fake_claude.records)
    assert sum("Found via [redacted]." in prompt for prompt in prompts) == 1
    items = _companion(tmp_path / "companion.json")["items"]
    assert [i["rubric"] for i in items] == ["incomplete", "incomplete"]
    assert [i["score"] for i in items] == [0.0, 0.0]
    assert all(i["citations"] == {"total": 2, "valid": 1, "failures": [
        {"citation": "docs/design.md:99", "problem": "line out of range (the file has 42 lines)"}]} for i in items)


def test_invalid_adjudicator_json_leaves_the_item_pending(
    tmp_path: Path, study: ExampleStudy, ledger: Path, claude_bin: Path
) -> None:
    output = tmp_path / "companion.json"
    with RehearsalServer(policy=text_reply("The answer looks right to me: correct.")) as server:
        summary = run_adjudication(request_for(ledger, study, claude_bin, output, base_url=server.base_url))
    companion = _companion(output)
    assert summary.status == companion["status"] == "awaiting-adjudication"
    for item in companion["items"]:
        assert item["attemptStatus"] == "completed", "the attempt itself was fine"
        assert item["status"] == "pending" and item["score"] is None and item["verdicts"] == []
        assert item["pendingReason"].startswith("invalid adjudicator output: the reply is not a JSON object")
        assert 0 < item["chargedUsd"] < 0.1 and item["inputTokens"] > 0
    assert companion["stopReason"] is None, "an invalid reply does not stop the run"


def test_a_wrong_verdict_count_leaves_the_item_pending(
    tmp_path: Path, study: ExampleStudy, ledger: Path, claude_bin: Path
) -> None:
    output = tmp_path / "companion.json"
    with RehearsalServer(policy=text_reply("```json\n" + valid_judgement(3) + "\n```")) as server:
        run_adjudication(request_for(ledger, study, claude_bin, output, base_url=server.base_url))
    for item in _companion(output)["items"]:
        assert item["pendingReason"] == "invalid adjudicator output: verdicts must be a list of exactly 4 entries"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"status": "running"}, "not finished"),
        ({"manifestSha256": "0" * 64}, "not the one the run used"),
        ({"observations": [observation("no-such-task", "repository-only", "x")]}, "absent from the manifest"),
    ],
)
def test_ledgers_that_cannot_be_adjudicated_are_refused(
    tmp_path: Path, study: ExampleStudy, ledger: Path, fake_claude: FakeClaude, change: dict[str, Any], message: str
) -> None:
    document = json.loads(ledger.read_text(encoding="utf-8"))
    document.update(change)
    ledger.write_text(json.dumps(document), encoding="utf-8")
    output = tmp_path / "companion.json"
    with pytest.raises(AdjudicationRefused, match=message):
        run_adjudication(request_for(ledger, study, fake_claude.path, output, containment="restricted"))
    assert not output.exists() and fake_claude.calls == []


def test_inputs_that_cannot_be_used_are_refused_before_anything_is_written(
    tmp_path: Path, study: ExampleStudy, ledger: Path, fake_claude: FakeClaude
) -> None:
    output = tmp_path / "companion.json"
    with pytest.raises(AdjudicationRefused, match="missing --root lantern-cache"):
        run_adjudication(request_for(ledger, study, fake_claude.path, output, roots={}, containment="restricted"))
    request = request_for(ledger, study, fake_claude.path, output, containment="restricted")
    with pytest.raises(AdjudicationRefused, match="has no price"):
        run_adjudication(replace(request, settings=replace(request.settings, model="claude-unknown-1")))
    fake_claude.behave(version="2.1.1 (Claude Code)")
    with pytest.raises(AdjudicationRefused, match=r"not the expected 2\.1\.296"):
        run_adjudication(request)
    assert not output.exists() and fake_claude.records == []
    fake_claude.behave(mode="ok")
    probes = len(fake_claude.calls)
    output.write_text("existing", encoding="utf-8")
    with pytest.raises(OutputPathError, match="already exists"):
        run_adjudication(request)
    assert output.read_text(encoding="utf-8") == "existing"
    inside = study.roots["lantern-cache"] / "companion.json"
    with pytest.raises(OutputPathError, match="outside"):
        run_adjudication(request_for(ledger, study, fake_claude.path, inside, containment="restricted"))
    assert not inside.exists() and len(fake_claude.calls) == probes, "not even the version probe ran"


def _invoke(args: list[str], env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(main, ["adjudicate", *args], env={"ANTHROPIC_API_KEY": PLANTED_KEY, **(env or {})})


def test_the_command_refuses_what_it_cannot_do(tmp_path: Path, study: ExampleStudy, ledger: Path) -> None:
    controlled = Path(__file__).resolve().parents[2] / "shared/reference/original-artifacts/observation-ledger-v1.json"
    manifest = str(study.manifest_path)
    result = _invoke([str(controlled), "--manifest", manifest])
    assert result.exit_code == 2 and "needs SUITE, --adjudicator FILE and --output FILE" in result.output
    result = _invoke([str(ledger), "--manifest", manifest, "--transport", "http"])
    assert result.exit_code == 2 and "http adjudicator is not implemented yet" in result.output
    result = _invoke([str(ledger), "--manifest", manifest, "--model", "claude-haiku-5-5", "--budget-usd", "1"])
    assert result.exit_code == 2 and "--approve-budget is required" in result.output
    result = _invoke([str(ledger), "--manifest", manifest, "--approve-budget", "--budget-usd", "1"],
                     env={"ADJUDICATOR_MODEL": ""})
    assert result.exit_code == 2 and "adjudicator model is required" in result.output
    result = _invoke([str(ledger), "--manifest", manifest, "--approve-budget", "--model", "claude-haiku-5-5"],
                     env={"ADJUDICATOR_BUDGET_USD": "0"})
    assert result.exit_code == 2 and "above zero" in result.output
    result = _invoke([str(tmp_path / "nope.json"), "--manifest", manifest])
    assert result.exit_code == 2 and "ledger not found" in result.output
    assert not (tmp_path / "ledger.adjudication.json").exists()


def test_the_command_exits_1_when_items_stay_pending(
    tmp_path: Path, study: ExampleStudy, ledger: Path, fake_claude: FakeClaude
) -> None:
    root = f"lantern-cache={study.roots['lantern-cache']}"
    result = _invoke([str(ledger), "--manifest", str(study.manifest_path), "--root", root, "--approve-budget",
                      "--claude-bin", str(fake_claude.path), "--seed", "5", "--allow-unverified"],
                     env={"ADJUDICATOR_MODEL": "claude-haiku-5-5", "ADJUDICATOR_BUDGET_USD": "1"})
    assert result.exit_code == 1, result.output
    line = json.loads(result.stdout.strip().splitlines()[-1])
    assert line["status"] == "awaiting-adjudication" and line["pending"] == 2 and line["humanReview"] is False
    companion = _companion(tmp_path / "ledger.adjudication.json")
    assert companion["blinding"]["seed"] == 5
    assert ANSWER not in result.output and PLANTED_KEY not in result.output
    assert not any(record["apiKeyPresent"] for record in fake_claude.records)
