"""Issue 16, downstream trust: a minimal-study ledger edited by hand is refused by every reader.

The ledgers are real: the http pilot of the example study run against the rehearsal server (no
binary, no spend), then edited the way a person would (``json`` load, change, dump). Before
deliverable 6 each edit below was reported with exit 0 and nothing flagged, and ``adjudicate``
accepted a duplicated observation or a NaN charge that ``report`` refused.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.protocol.manifest import load_manifest
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.runners.demo import DEMO_CAP_USD, DEMO_MODEL, DEMO_PRICES
from agentstudy.runners.http_request import REHEARSAL_KEY, HttpRunRequest
from agentstudy.runners.minimal_http import run_http_study
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER

Edit = Callable[[dict[str, Any]], None]


def run_http_pilot(directory: Path, fail_with_status: int | None = None) -> tuple[ExampleStudy, Path]:
    """The example pilot over http against the rehearsal server (as ``run_http_demo``); the study and ledger."""
    study = build_example_study(directory / "study")
    output = directory / "ledger.json"
    with RehearsalServer(fail_with_status=fail_with_status) as server:
        run_http_study(HttpRunRequest(
            loaded=load_manifest(study.manifest_path), mode="pilot", roots=study.roots, output=output,
            model=DEMO_MODEL, prices=DEMO_PRICES, cap_usd=DEMO_CAP_USD, api_key=REHEARSAL_KEY,
            base_url=server.base_url, mcp=DEFAULT_MCP_SERVER, rehearsal=True,
        ))
    return study, output


@pytest.fixture(scope="module")
def pilot(tmp_path_factory: pytest.TempPathFactory) -> tuple[ExampleStudy, bytes]:
    study, ledger = run_http_pilot(tmp_path_factory.mktemp("tamper"))
    return study, ledger.read_bytes()


def edited(tmp_path: Path, original: bytes, edit: Edit, name: str = "ledger.json") -> Path:
    """``original`` loaded with ``json``, changed by ``edit`` and dumped back as a person would."""
    document = json.loads(original)
    edit(document)
    path = tmp_path / name
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return path


def _zero_charge(document: dict[str, Any]) -> None:
    document["observations"][0]["chargedUsd"] = 0


def _zero_spent(document: dict[str, Any]) -> None:
    document["budget"]["spent"] = 0.0


def _drop_observation(document: dict[str, Any]) -> None:
    del document["observations"][1]


def _flip_status(document: dict[str, Any]) -> None:
    document["status"] = "blocked"


def _not_rehearsal(document: dict[str, Any]) -> None:
    document["rehearsal"] = False


HAND_EDITS = {
    "a charge zeroed": _zero_charge,
    "spent zeroed": _zero_spent,
    "an observation dropped": _drop_observation,
    "the status flipped": _flip_status,
    "rehearsal set to false": _not_rehearsal,
}


def _report(*args: str) -> Any:
    return CliRunner().invoke(main, ["report", *args])


def test_the_real_ledger_as_written_is_reported(pilot: tuple[ExampleStudy, bytes], tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    path.write_bytes(pilot[1])
    result = _report(str(path))
    assert result.exit_code == 0, result.output
    assert "UNVERIFIED" not in result.output


@pytest.mark.parametrize("edit", list(HAND_EDITS.values()), ids=list(HAND_EDITS))
def test_a_hand_edited_ledger_is_refused_by_report(pilot: tuple[ExampleStudy, bytes], tmp_path: Path,
                                                  edit: Edit) -> None:
    path = edited(tmp_path, pilot[1], edit)
    result = _report(str(path))
    assert result.exit_code == 2, result.output
    [line] = result.output.strip().splitlines()
    assert line.startswith("agentstudy: error: ") and "does not verify" in line
    assert "--allow-unverified" in line


@pytest.mark.parametrize("output_format", ["text", "md", "html"])
def test_allow_unverified_reports_and_every_format_says_so(pilot: tuple[ExampleStudy, bytes], tmp_path: Path,
                                                           output_format: str) -> None:
    path = edited(tmp_path, pilot[1], _not_rehearsal)
    result = _report(str(path), "--allow-unverified", "--format", output_format)
    assert result.exit_code == 0, result.output
    assert "UNVERIFIED" in result.stdout
    assert "observationHash" in result.stdout or "ledgerHash" in result.stdout
    assert "warning: unverified" in result.stderr


def test_rehearsal_numbers_are_never_shown_as_real_money_without_a_warning(
    pilot: tuple[ExampleStudy, bytes], tmp_path: Path
) -> None:
    path = edited(tmp_path, pilot[1], _not_rehearsal)
    assert _report(str(path)).exit_code == 2
    flagged = _report(str(path), "--allow-unverified", "--format", "md")
    assert flagged.exit_code == 0
    assert flagged.stdout.startswith("# UNVERIFIED")


def _adjudicate(study: ExampleStudy, ledger: Path, claude_bin: Path, *extra: str) -> Any:
    roots = [arg for name, root in study.roots.items() for arg in ("--root", f"{name}={root}")]
    return CliRunner().invoke(main, [
        "adjudicate", str(ledger), "--manifest", str(study.manifest_path), *roots, "--rehearsal",
        "--model", DEMO_MODEL, "--budget-usd", "1", "--claude-bin", str(claude_bin), *extra,
    ])


def _duplicate_observation(document: dict[str, Any]) -> None:
    document["observations"].append(dict(document["observations"][0]))


def _nan_charge(document: dict[str, Any]) -> None:
    document["observations"][0]["chargedUsd"] = math.nan


@pytest.mark.parametrize(("edit", "reason"), [(_duplicate_observation, "repository-only repetition 1"),
                                              (_nan_charge, "NaN")], ids=["duplicated observation", "NaN charge"])
def test_adjudicate_refuses_what_report_refuses(pilot: tuple[ExampleStudy, bytes], tmp_path: Path, claude_bin: Path,
                                                edit: Edit, reason: str) -> None:
    study, original = pilot
    path = edited(tmp_path, original, edit)
    assert _report(str(path)).exit_code == 2
    result = _adjudicate(study, path, claude_bin)
    assert result.exit_code == 2, result.output
    assert reason in result.output
    assert not (tmp_path / "ledger.adjudication.json").exists(), "nothing was written"
    # Reading on does not help: neither can be adjudicated, as neither can be reported.
    again = _adjudicate(study, path, claude_bin, "--allow-unverified")
    assert again.exit_code == 2 and reason in again.output
    assert not (tmp_path / "ledger.adjudication.json").exists()


def test_adjudicate_reads_on_with_allow_unverified_and_every_output_says_so(
    pilot: tuple[ExampleStudy, bytes], tmp_path: Path, claude_bin: Path
) -> None:
    study, original = pilot
    path = edited(tmp_path, original, _not_rehearsal)
    result = _adjudicate(study, path, claude_bin, "--allow-unverified")
    assert result.exit_code in (0, 1), result.output
    assert "warning: unverified" in result.stderr and "UNVERIFIED ledger" in result.stderr
    line = json.loads(result.stdout.strip().splitlines()[-1])
    assert any("ledgerHash does not match" in problem for problem in line["ledgerUnverified"])
    companion_path = tmp_path / "ledger.adjudication.json"
    companion = json.loads(companion_path.read_text(encoding="utf-8"))
    assert companion["ledgerUnverified"] == line["ledgerUnverified"]
    assert _report(str(path), "--adjudication", str(companion_path)).exit_code == 2
    joined = _report(str(path), "--adjudication", str(companion_path), "--allow-unverified")
    assert joined.exit_code == 0 and joined.stdout.startswith("UNVERIFIED")


@pytest.mark.parametrize("edit", list(HAND_EDITS.values()), ids=list(HAND_EDITS))
def test_adjudicate_refuses_a_hand_edited_ledger(pilot: tuple[ExampleStudy, bytes], tmp_path: Path,
                                                 claude_bin: Path, edit: Edit) -> None:
    study, original = pilot
    path = edited(tmp_path, original, edit)
    result = _adjudicate(study, path, claude_bin)
    assert result.exit_code == 2, result.output
    assert "does not verify" in result.output
    assert not (tmp_path / "ledger.adjudication.json").exists()


def test_the_ledger_command_verifies_a_minimal_ledger(pilot: tuple[ExampleStudy, bytes], tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    path.write_bytes(pilot[1])
    result = CliRunner().invoke(main, ["ledger", str(path)])
    assert result.exit_code == 0, result.output
    assert "verified" in result.output and "NOT VERIFIED" not in result.output
    as_json = CliRunner().invoke(main, ["ledger", str(path), "--json"])
    assert as_json.exit_code == 0, as_json.output
    summary = json.loads(as_json.stdout)["ledger"]
    assert summary["verified"] is True and summary["problems"] == []
    assert summary["observations"] == 2 and summary["status"] == "awaiting-adjudication"


@pytest.mark.parametrize("edit", list(HAND_EDITS.values()), ids=list(HAND_EDITS))
def test_the_ledger_command_refuses_a_hand_edited_ledger(pilot: tuple[ExampleStudy, bytes], tmp_path: Path,
                                                        edit: Edit) -> None:
    path = edited(tmp_path, pilot[1], edit)
    result = CliRunner().invoke(main, ["ledger", str(path)])
    assert result.exit_code == 2 and "does not verify" in result.output
    read_on = CliRunner().invoke(main, ["ledger", str(path), "--allow-unverified"])
    assert read_on.exit_code == 0, read_on.output
    assert "NOT VERIFIED" in read_on.stdout and "warning: unverified" in read_on.stderr


@pytest.mark.parametrize(("document", "said"), [
    ({"type": "minimal-study-adjudication", "version": 1, "ledgerSha256": "0" * 64}, "an adjudication companion"),
    ({"version": "agentstudy-study-v1", "repetitions": 1, "tasks": []}, "a study file or manifest"),
    ({"version": "minimal-study-v1", "tasks": []}, "a study file or manifest"),
])
def test_ledger_names_the_other_documents_a_user_may_pass_by_mistake(tmp_path: Path, document: dict[str, Any],
                                                                     said: str) -> None:
    path = tmp_path / "not-a-ledger.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    result = CliRunner().invoke(main, ["ledger", str(path)])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and f"is not a ledger: it is {said}" in result.output
