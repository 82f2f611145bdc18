"""Ledger creation and checkpoints on real full, read-only and unwritable filesystems (issue 16, deliverable 5).

A creation that fails leaves no file behind and the command exits 2 with one line; a
checkpoint that fails mid-run leaves the last good ledger, the run exits 1 with the reason on
stderr, and the reason reaches the ledger's ``stopReason`` whenever a later (smaller) write
still fits. The filesystems are real: a small tmpfs mounted in ``tmp_path`` (``tests/tmpfs.py``),
filled to ENOSPC, remounted read-only, or a ``chattr +i`` directory.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from agentstudy.adjudication.run import run_adjudication
from agentstudy.io import ledger_store
from agentstudy.io.ledger_journal import read_ledger
from agentstudy.pricing.http import UpperPrices
from agentstudy.protocol.manifest import load_manifest
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.rehearsal.policy import ScriptedReply, next_reply
from agentstudy.runners.http_request import REHEARSAL_KEY, HttpRunRequest
from agentstudy.runners.minimal_http import run_http_study
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER
from test_adjudication_support import fake_adjudicator_events, observation, request_for, valid_judgement, write_ledger
from tmpfs import fill, remount_read_only, small_tmpfs

from checkout_run import run_agentstudy
from fakes import FakeClaude
from inprocess_cli import invoke_agentstudy
from one_corpus import one_corpus

FIRST: dict[str, Any] = {"status": "running", "observations": []}
NO_SPACE = os.strerror(28)  # "No space left on device"


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs in ``tmp_path/disk``."""
    with small_tmpfs(tmp_path / "disk", "64k") as directory:
        yield directory


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> ExampleStudy:
    """The example study's checkouts, built once: every run only reads them (it exports its own copy)."""
    return build_example_study(tmp_path_factory.mktemp("full-disk") / "study")


@pytest.fixture(scope="module")
def pilot(study: ExampleStudy) -> ExampleStudy:
    """The study file narrowed to the first corpus (``tests/one_corpus.py``): the command's pilot, one task, with a
    preflight of one MCP server."""
    return one_corpus(study)


def _names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def _minimal_arguments(study: ExampleStudy, fake: FakeClaude, output: Path) -> list[str]:
    return ["minimal", "--manifest", str(study.manifest_path), "--pilot", "--transport", "cli", "--approve-budget",
            *(f"--root={name}={path}" for name, path in study.roots.items()), "--output", str(output),
            "--claude-bin", str(fake.path), "--model", "claude-haiku-5-5", "--budget-usd", "1"]


def _minimal_cli(study: ExampleStudy, fake: FakeClaude, output: Path) -> subprocess.CompletedProcess[str]:
    """The pilot as a real process: its whole stderr (every child's too) is what the tests read."""
    return run_agentstudy(*_minimal_arguments(study, fake, output))


# Creation ---------------------------------------------------------------------------------------


def test_creation_on_a_full_disk_leaves_no_file(disk: Path) -> None:
    fill(disk)
    with pytest.raises(ledger_store.OutputPathError, match=f"cannot create the ledger .*: {NO_SPACE}"):
        ledger_store.LedgerFile(disk / "ledger.json", FIRST)
    assert _names(disk) == ["filler"], "no 0-byte ledger, no temporary file"


def test_creation_on_a_read_only_filesystem_leaves_no_file(disk: Path) -> None:
    remount_read_only(disk)
    with pytest.raises(ledger_store.OutputPathError, match="Read-only file system"):
        ledger_store.LedgerFile(disk / "ledger.json", FIRST)
    assert _names(disk) == []


def test_creation_in_an_immutable_directory_leaves_no_file(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    subprocess.run(["chattr", "+i", str(locked)], check=True)
    try:
        with pytest.raises(ledger_store.OutputPathError, match="cannot create the ledger"):
            ledger_store.LedgerFile(locked / "ledger.json", FIRST)
        assert _names(locked) == []
    finally:
        subprocess.run(["chattr", "-i", str(locked)], check=True)


def test_a_controlled_ledger_created_on_a_full_disk_leaves_no_file(disk: Path) -> None:
    from agentstudy.controlled.ledger_file import LedgerFileError, create_ledger_file
    from agentstudy.protocol.controlled.ledger import empty_ledger

    fill(disk)
    with pytest.raises(LedgerFileError, match=NO_SPACE):
        create_ledger_file(disk / "ledger.json", empty_ledger())
    assert _names(disk) == ["filler"]


def test_a_run_whose_ledger_cannot_be_created_exits_2_and_leaves_nothing(
    disk: Path, pilot: ExampleStudy, fake_claude: FakeClaude
) -> None:
    """The break: a full disk at ledger creation left a 0-byte ``ledger.json`` that blocked the path."""
    fill(disk)
    output = disk / "ledger.json"
    result = _minimal_cli(pilot, fake_claude, output)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        f"agentstudy: error: run refused, nothing reserved: cannot create the ledger {output}: {NO_SPACE}"
    ]
    assert _names(disk) == ["filler"]
    assert fake_claude.records == [], "no attempt was started"
    (disk / "filler").unlink()
    # only the exit code matters here: in this process
    assert invoke_agentstudy(*_minimal_arguments(pilot, fake_claude, output)).returncode == 0, \
        "the path is free for the next run"


# Checkpoints ------------------------------------------------------------------------------------


def test_a_failed_checkpoint_keeps_the_last_good_ledger_and_no_temporary(disk: Path) -> None:
    path = disk / "ledger.json"
    store = ledger_store.LedgerFile(path, FIRST)
    good = path.read_bytes()
    filler = fill(disk)
    with pytest.raises(ledger_store.CheckpointError) as caught:
        store.checkpoint({"status": "running", "observations": ["x" * 20_000]})
    assert caught.value.reason == NO_SPACE and str(caught.value) == f"cannot write the ledger {path}: {NO_SPACE}"
    assert path.read_bytes() == good == store.last_written
    assert _names(disk) == ["filler", "ledger.json"]
    filler.unlink()
    store.checkpoint({"status": "blocked", "observations": []})
    assert json.loads(path.read_text(encoding="utf-8"))["status"] == "blocked"
    assert store.last_written == path.read_bytes()


def test_a_full_disk_mid_run_records_the_reason_when_a_smaller_write_still_fits(
    tmp_path: Path, pilot: ExampleStudy, fake_claude: FakeClaude
) -> None:
    """The break: a full disk mid-run left the ledger ``running`` with no stop reason.

    The first attempt answers 64 KiB, so its observation cannot fit on a 48 KiB disk: that
    checkpoint fails, so does the blocked close of the same state, and the last good ledger
    (the attempt's reservation on disk) is closed ``blocked`` with the reason instead.
    """
    from agentstudy.runners.ledger_steps import SALVAGED_NOTE  # here: the module's base lacks it

    fake_claude.behave(mode="ok", answer="A" * 65536)
    with small_tmpfs(tmp_path / "disk", "48k") as disk:
        output = disk / "ledger.json"
        result = _minimal_cli(pilot, fake_claude, output)
        names = _names(disk)
        ledger = json.loads(output.read_text(encoding="utf-8"))
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    [line] = result.stderr.strip().splitlines()
    assert f"cannot write the ledger {output}: {NO_SPACE}" in line and "last one written" in line
    assert names == ["ledger.json"], "no temporary file is left"
    assert ledger["status"] == "blocked"
    assert ledger["stopReason"].startswith(f"a ledger checkpoint failed ({NO_SPACE})")
    assert ledger["stopReason"].endswith(SALVAGED_NOTE)
    assert ledger["observations"] == []
    assert ledger["openReservation"]["reservedUsd"] == 0.1
    assert ledger["budget"]["spent"] == 0.1, "the unrecorded attempt stays charged its full reservation"
    assert len(fake_claude.records) == 1, "the run stopped at the failed checkpoint"


def test_a_full_disk_mid_run_with_no_room_at_all_keeps_the_last_good_ledger(
    tmp_path: Path, pilot: ExampleStudy, fake_claude: FakeClaude
) -> None:
    """The attempt itself fills the disk: no later write fits, the ledger is the reservation checkpoint."""
    with small_tmpfs(tmp_path / "disk", "64k") as disk:
        fake_claude.behave(mode="ok", fillDirectory=str(disk))
        output = disk / "ledger.json"
        result = _minimal_cli(pilot, fake_claude, output)
        names = _names(disk)
        ledger = json.loads(read_ledger(output, output.read_bytes()).data)
    assert result.returncode == 1, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert f"cannot write the ledger {output}: {NO_SPACE}" in line
    assert names == ["filler", "ledger.json", "ledger.json.journal"], "the last snapshot and its journal"
    assert ledger["status"] == "running" and "stopReason" not in ledger, "the last good checkpoint, intact"
    assert ledger["openReservation"]["reservedUsd"] == 0.1 and ledger["budget"]["spent"] == 0.1
    assert len(fake_claude.records) == 1


def _http_request(study: ExampleStudy, output: Path, base_url: str) -> HttpRunRequest:
    return HttpRunRequest(
        loaded=load_manifest(study.manifest_path), mode="pilot", roots=study.roots, output=output,
        model="claude-haiku-5-5", prices=UpperPrices(Decimal("0.50"), Decimal("2.50")), cap_usd=Decimal("1"),
        api_key=REHEARSAL_KEY, base_url=base_url, mcp=DEFAULT_MCP_SERVER, rehearsal=True,
        containment="restricted", parent_env=dict(os.environ),
    )


def test_http_a_full_disk_mid_run_records_the_reason_when_a_smaller_write_still_fits(
    tmp_path: Path, pilot: ExampleStudy
) -> None:
    def long_answer(body: Mapping[str, Any]) -> ScriptedReply:
        return ScriptedReply([{"type": "text", "text": "A" * 65536}], "end_turn",
                             {"input_tokens": 100, "output_tokens": 10})

    with small_tmpfs(tmp_path / "disk", "48k") as disk, RehearsalServer(policy=long_answer) as server:
        output = disk / "ledger.json"
        with pytest.raises(ledger_store.CheckpointError, match=NO_SPACE):
            run_http_study(_http_request(pilot, output, server.base_url))
        names = _names(disk)
        ledger = json.loads(output.read_text(encoding="utf-8"))
    assert names == ["ledger.json"]
    assert ledger["status"] == "blocked"
    assert ledger["stopReason"].startswith(f"a ledger checkpoint failed ({NO_SPACE})")
    assert ledger["observations"] == [] and "openReservation" in ledger
    assert ledger["budget"]["spent"] >= ledger["openReservation"]["reservedUsd"]


def test_http_a_full_disk_mid_run_keeps_the_last_good_ledger_and_exits_1(
    tmp_path: Path, pilot: ExampleStudy, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentstudy.commands.minimal_outcome import run_and_summarise

    with small_tmpfs(tmp_path / "disk", "64k") as disk:
        output = disk / "ledger.json"

        def fill_then_answer(body: Mapping[str, Any]) -> ScriptedReply:
            fill(disk)
            return next_reply(body)

        with RehearsalServer(policy=fill_then_answer) as server, pytest.raises(SystemExit) as exited:
            run_and_summarise(lambda: run_http_study(_http_request(pilot, output, server.base_url)))
        names = _names(disk)
        ledger = json.loads(read_ledger(output, output.read_bytes()).data)
    assert exited.value.code == 1
    [line] = capsys.readouterr().err.strip().splitlines()
    assert f"cannot write the ledger {output}: {NO_SPACE}" in line
    assert names == ["filler", "ledger.json", "ledger.json.journal"]
    assert ledger["status"] == "running" and "stopReason" not in ledger
    # Journal lines are small: a few more calls may still fit after the fill; whatever the last durable
    # record, the open attempt's money (a call's reservation or its settled charges) is on disk.
    opened = ledger["openReservation"]
    assert opened["reservedUsd"] + opened["chargedUsd"] > 0 and ledger["budget"]["spent"] > 0


def test_an_adjudication_companion_on_a_disk_filled_mid_run_keeps_its_last_good_state(
    tmp_path: Path, study: ExampleStudy, fake_claude: FakeClaude
) -> None:
    answer = "Deadlines use time.monotonic (src/lantern/cache.py:29)."
    ledger = write_ledger(tmp_path / "ledger.json", study, [
        observation("lantern-discovery", "repository-only", answer),
        observation("lantern-discovery", "doc-bridge-mcp", answer),
    ], status="blocked")
    with small_tmpfs(tmp_path / "disk", "64k") as disk:
        fake_claude.behave(mode="events", events=fake_adjudicator_events(valid_judgement(4)), fillDirectory=str(disk))
        output = disk / "companion.json"
        request = request_for(ledger, study, fake_claude.path, output)
        request = replace(request, settings=replace(request.settings, containment="restricted"))
        with pytest.raises(ledger_store.CheckpointError, match=NO_SPACE):
            run_adjudication(request)
        names = _names(disk)
        companion = json.loads(output.read_text(encoding="utf-8"))
    assert names == ["companion.json", "filler"]
    assert companion["status"] == "running" and companion["openReservation"]["reservedUsd"] == 0.1
    assert companion["budget"]["spent"] == 0.1
    assert len(fake_claude.records) == 1
