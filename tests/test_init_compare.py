"""``agentstudy init`` drafts a comparison study (issue 44): ``--descriptions FILE`` or ``--compare-mcp-command``.

Real servers (``tests/data/lookup_server.py``, the official SDK over stdio), a real git repository; the draft
loads as a study file whose arms compare what the flags asked for; bad input is one line, exit 2, nothing written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentstudy.protocol.manifest import load_manifest

from checkout_run import run_agentstudy

LOOKUP = Path(__file__).parent / "data" / "lookup_server.py"
COMMAND = f"{sys.executable} {LOOKUP} {{root}}"
REWRITE = "Use this first for every lookup: matches lines against a pattern."


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus") / "repo"
    root.mkdir()
    (root / "README.md").write_text("# Demo\nRetention policies keep data for thirty days.\n", encoding="utf-8")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "corpus"]):
        subprocess.run(["git", "-C", str(root), *argv], check=True, env=env, capture_output=True)
    return root


def _init(directory: Path, repo: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return run_agentstudy("init", str(directory), f"--repo=r={repo}", "--containment", "restricted",
                          "--mcp-command", COMMAND, *flags)


def _arms(directory: Path) -> dict[str, Any]:
    study = directory / "study.json"
    load_manifest(study)  # the draft is a valid study file
    arms: dict[str, Any] = json.loads(study.read_text(encoding="utf-8"))["arms"]
    return arms


def test_descriptions_draft_one_server_against_its_rewrite(tmp_path: Path, repo: Path) -> None:
    overrides = tmp_path / "rewrite.json"
    overrides.write_text(json.dumps({"lookup.grep": REWRITE}), encoding="utf-8")
    done = _init(tmp_path / "study", repo, "--descriptions", str(overrides))
    assert done.returncode == 0, done.stderr
    arms = _arms(tmp_path / "study")
    control, treatment = arms["control"], arms["treatment"]
    assert control["mcpConfig"] == treatment["mcpConfig"] and control["tools"] == treatment["tools"]
    assert "toolDescriptions" not in control and treatment["toolDescriptions"] == {"lookup.grep": REWRITE}
    assert control["id"] != treatment["id"] and "its own descriptions" in control["label"]


def test_compare_mcp_command_drafts_a_second_server_for_the_control(tmp_path: Path, repo: Path) -> None:
    done = _init(tmp_path / "study", repo, "--compare-mcp-command", COMMAND)
    assert done.returncode == 0, done.stderr
    arms = _arms(tmp_path / "study")
    control, treatment = arms["control"], arms["treatment"]
    assert control["mcpConfig"] == treatment["mcpConfig"]  # a version against the next: here the same command
    assert control["tools"] == ["lookup.find_text", "lookup.grep", "lookup.read"]
    assert control["probe"]["tool"] in control["tools"] and control["id"] != treatment["id"]


@pytest.mark.parametrize(("content", "words"), [
    ({"lookup.erase": "x"}, "--descriptions names lookup.erase, a tool the server does not list"),
    ({"lookup.grep": {"description": "x", "inputSchema": {}}}, "only a description can be replaced"),
    ({"lookup.grep": {"annotations": {"readOnlyHint": False}}}, "annotations are the server's"),
    ([], "must be a non-empty JSON object"),
])
def test_bad_descriptions_are_one_line_exit_2_and_write_nothing(tmp_path: Path, repo: Path, content: Any,
                                                                words: str) -> None:
    overrides = tmp_path / "rewrite.json"
    overrides.write_text(json.dumps(content), encoding="utf-8")
    done = _init(tmp_path / "study", repo, "--descriptions", str(overrides))
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and words in done.stderr
    assert not (tmp_path / "study").exists()


def test_the_two_comparisons_exclude_each_other(tmp_path: Path, repo: Path) -> None:
    overrides = tmp_path / "rewrite.json"
    overrides.write_text(json.dumps({"lookup.grep": REWRITE}), encoding="utf-8")
    done = _init(tmp_path / "study", repo, "--descriptions", str(overrides), "--compare-mcp-command", COMMAND)
    assert done.returncode == 2 and "exclude each other" in done.stderr
