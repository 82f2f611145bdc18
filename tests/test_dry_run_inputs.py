"""Issue 16, deliverable 3: a dry run that passes means the run is not refused for its input.

The dry run checks the prompt after templating against 8 KiB, control characters in questions
and ids, the MCP config (exists, exactly one server, known placeholders) and, for the cli
transport, that ``--claude-bin`` is an absolute executable path; it still starts no process and
opens no socket. The run refuses the same inputs with exit 2 before a ledger exists (they cost a
reservation before).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from agentstudy.cli import main
from agentstudy.protocol.prompt import MAX_PROMPT_BYTES, PROMPT_INSTRUCTION
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study

from fakes import FakeClaude

MODEL = "claude-haiku-5-5"


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> ExampleStudy:
    return build_example_study(tmp_path_factory.mktemp("dry-run") / "study")




def _invoke(args: list[str]) -> Result:
    env = {"AGENTSTUDY_CONTAINMENT": "restricted", "STUDY_BUDGET_USD": None, "STUDY_MODEL": None}
    return CliRunner().invoke(main, args, env=env, catch_exceptions=False)


def _manifest(study: ExampleStudy, directory: Path, edit: Any) -> Path:
    document = json.loads(study.manifest_path.read_text(encoding="utf-8"))
    edit(document)
    path = directory / "manifest.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _question(text: str) -> Any:
    def edit(document: dict[str, Any]) -> None:
        document["tasks"][0]["question"] = text
    return edit


def _task_id(text: str) -> Any:
    def edit(document: dict[str, Any]) -> None:
        document["tasks"][0]["id"] = text
    return edit


def _refused(result: Result, reason: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("agentstudy: error: ") and reason in line, line


def _run(study: ExampleStudy, manifest: Path, output: Path, fake: FakeClaude, *extra: str) -> list[str]:
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    return ["minimal", "--manifest", str(manifest), "--pilot", "--transport", "cli", "--approve-budget", *roots,
            "--output", str(output), "--claude-bin", str(fake.path), "--model", MODEL, "--budget-usd", "1", *extra]


# The first scheduled pilot attempt is task 0's, so every broken input below would reach an attempt.
LONGEST_QUESTION = MAX_PROMPT_BYTES - len(PROMPT_INSTRUCTION.encode("utf-8")) - 1
BROKEN_MANIFESTS = [
    pytest.param(_question("q" * (LONGEST_QUESTION + 1)), "larger than 8192 bytes", id="prompt-8193-bytes"),
    pytest.param(_question("é" * 4500), "larger than 8192 bytes", id="prompt-over-8KiB-in-utf8"),
    pytest.param(_question("Where is\0 the cache?"), "U+0000", id="NUL-in-question"),
    pytest.param(_question("Where is\x1b[2J the cache?"), "U+001B", id="escape-in-question"),
    pytest.param(_question("Where\u2028 is it?"), "U+2028", id="line-separator-in-question"),
    pytest.param(_task_id("lantern\ndiscovery"), "U+000A", id="newline-in-task-id"),
    pytest.param(_task_id("lantern\0discovery"), "U+0000", id="NUL-in-task-id"),
]


@pytest.mark.usefixtures("no_processes_no_sockets")
@pytest.mark.parametrize(("edit", "reason"), BROKEN_MANIFESTS)
def test_the_dry_run_refuses_what_the_run_would(
    tmp_path: Path, study: ExampleStudy, edit: Any, reason: str
) -> None:
    manifest = _manifest(study, tmp_path, edit)
    _refused(_invoke(["minimal", "--dry-run", "--pilot", "--manifest", str(manifest)]), reason)


@pytest.mark.parametrize(("edit", "reason"), BROKEN_MANIFESTS)
def test_the_run_refuses_it_before_any_reservation(
    tmp_path: Path, study: ExampleStudy, fake_claude: FakeClaude, edit: Any, reason: str
) -> None:
    manifest = _manifest(study, tmp_path, edit)
    output = tmp_path / "ledger.json"
    _refused(_invoke(_run(study, manifest, output, fake_claude)), reason)
    assert not output.exists()
    assert fake_claude.calls == []


@pytest.mark.usefixtures("no_processes_no_sockets")
def test_a_prompt_of_exactly_8_kib_and_ordinary_whitespace_pass(tmp_path: Path, study: ExampleStudy) -> None:
    manifest = _manifest(study, tmp_path, _question("q" * LONGEST_QUESTION))
    assert _invoke(["minimal", "--dry-run", "--manifest", str(manifest)]).exit_code == 0
    manifest = _manifest(study, tmp_path, _question("Where is\tthe cache?\nAnd why? 👩‍💻"))
    assert _invoke(["minimal", "--dry-run", "--manifest", str(manifest)]).exit_code == 0


def _mcp_config(directory: Path, servers: dict[str, Any]) -> Path:
    path = directory / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


def _server(*args: str) -> dict[str, Any]:
    return {"command": "/usr/bin/env", "args": list(args)}


@pytest.mark.usefixtures("no_processes_no_sockets")
@pytest.mark.parametrize(("servers", "extra", "reason"), [
    (None, [], "MCP config not found"),
    ({}, [], "exactly one server"),
    ({"a": _server(), "b": _server()}, [], "exactly one server"),
    ({"a": _server("--root", "{roots}")}, [], "unknown placeholders ['{roots}']"),
    ({"a": _server("{ROOT}", "{pin}")}, [], "unknown placeholders ['{ROOT}']"),
    ({"a": _server("x\0y")}, [], "must not contain NUL"),
    ({"a": _server("{root}")}, ["--mcp-probe-arguments", '{"path": "{snapshot}"}'], "unknown placeholders"),
])
def test_the_dry_run_checks_the_mcp_config(
    tmp_path: Path, study: ExampleStudy, servers: dict[str, Any] | None, extra: list[str], reason: str
) -> None:
    config = tmp_path / "absent.json" if servers is None else _mcp_config(tmp_path, servers)
    result = _invoke(["minimal", "--dry-run", "--manifest", str(study.manifest_path), "--mcp-config", str(config),
                      *extra])
    _refused(result, reason)


@pytest.mark.usefixtures("no_processes_no_sockets")
def test_known_placeholders_and_json_text_pass(tmp_path: Path, study: ExampleStudy) -> None:
    server = _server("--root", "{root}", "--pin", "{pin}", "--config={config}", "{git}", "{checkout}",
                     '{"json": "is not a placeholder"}')
    result = _invoke(["minimal", "--dry-run", "--manifest", str(study.manifest_path),
                      "--mcp-config", str(_mcp_config(tmp_path, {"docs": server}))])
    assert result.exit_code == 0, result.output


@pytest.mark.usefixtures("no_processes_no_sockets")
@pytest.mark.parametrize(("binary", "reason"), [
    ("{missing}", "is not an executable file"),
    ("{not-executable}", "is not an executable file"),
    ("{directory}", "is not an executable file"),
    ("no-such-claude-on-path", "is not found on PATH"),
])
def test_the_cli_dry_run_checks_the_binary(
    tmp_path: Path, study: ExampleStudy, binary: str, reason: str
) -> None:
    plain = tmp_path / "claude.txt"
    plain.write_text("not a program\n", encoding="utf-8")
    path = {"{missing}": str(tmp_path / "claude"), "{not-executable}": str(plain),
            "{directory}": str(tmp_path)}.get(binary, binary)
    result = _invoke(["minimal", "--dry-run", "--transport", "cli", "--manifest", str(study.manifest_path),
                      "--claude-bin", path])
    _refused(result, reason)


def test_a_relative_claude_bin_is_made_absolute_for_the_run(
    tmp_path: Path, study: ExampleStudy, fake_claude: FakeClaude, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(fake_claude.path.parent.parent)
    relative = os.path.join(fake_claude.path.parent.name, fake_claude.path.name)
    dry = _invoke(["minimal", "--dry-run", "--transport", "cli", "--manifest", str(study.manifest_path),
                   "--claude-bin", relative])
    assert dry.exit_code == 0, dry.output
    output = tmp_path / "ledger.json"
    args = _run(study, study.manifest_path, output, fake_claude)
    args[args.index("--claude-bin") + 1] = relative
    result = _invoke(args)
    assert result.exit_code == 0, result.output
    ledger = json.loads(output.read_text(encoding="utf-8"))
    assert [o["status"] for o in ledger["observations"]] == ["completed", "completed"]
