"""From ``init`` to a rehearsed pilot on Gemini CLI, for servers nobody on the project wrote: the third-party
``@modelcontextprotocol/server-filesystem`` (installed by scripts/setup.sh) and an unannotated stdio server written
with the ``mcp`` SDK whose read needs an id an earlier search returned. The real pinned Gemini CLI under bubblewrap
talks to the scripted Gemini API on 127.0.0.1; the treatment calls succeed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from test_any_server_both_agents_e2e import FILESYSTEM, NOTES_SERVER, _dry_run, _pilot, _settled, repo

__all__ = ["repo"]  # the corpus fixture, shared with the two-agent test

GEMINI = ("--agent", "gemini")


def test_server_filesystem_from_init_to_a_pilot_on_gemini(tmp_path: Path, repo: Path, claude_bin: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    assert FILESYSTEM.exists(), "run scripts/setup.sh: it installs server-filesystem into .tools"
    monkeypatch.setenv("AGENTSTUDY_CONTAINMENT", "bwrap")
    study = _settled(tmp_path / "study", repo, f"{FILESYSTEM} {{root}}", "--probe", "read_text_file",
                     "--probe-arguments", '{"path": "{root}/README.md"}')
    treatment = json.loads(study.read_text(encoding="utf-8"))["arms"]["treatment"]
    assert _dry_run(study, repo, *GEMINI, "--model", "rehearsal-scripted")["mcpProbe"]["probe"]["ok"]
    record = _pilot(study, repo, tmp_path / "gemini.json", claude_bin, *GEMINI)
    assert record["serverOffered"] is True and record["evidence"] == "request"
    assert record["serverCalls"] > 0 and record["serverCallErrors"] < record["serverCalls"], record
    assert set(record["serverCallsByTool"]) == set(treatment["tools"]), record["serverCallsByTool"]


def test_an_unannotated_server_declared_read_only_works_through_gemini(tmp_path: Path, repo: Path, claude_bin: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTSTUDY_CONTAINMENT", "bwrap")
    server = tmp_path / "notes_server.py"
    server.write_text(NOTES_SERVER, encoding="utf-8")
    study = _settled(tmp_path / "study", repo, f"{sys.executable} {server} {{root}}",
                     "--tool", "search_notes", "--tool", "get_note")
    record = _pilot(study, repo, tmp_path / "gemini.json", claude_bin, *GEMINI)
    assert record["serverCallsByTool"] == {"search_notes": 1, "get_note": 1}, record
    assert record["serverCallErrors"] == 0
    ledger = json.loads((tmp_path / "gemini.json").read_text(encoding="utf-8"))
    [treated] = [o for o in ledger["observations"] if o["scenario"] == "doc-bridge-mcp"]
    assert treated["answer"].endswith("(docs/retention.md:3)."), treated["answer"]
