"""Treatment fidelity end to end: was the server delivered and used, or can the study not answer?

Real parts throughout: the bundled example study in git repositories, the bundled MCP server
through the official SDK, the real pinned Claude Code binary (cli) or our own Messages API loop
(http) against a scripted server on 127.0.0.1, the real report, and a real headless Chromium
for the HTML report's first screen.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import stat
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from agentstudy.cli import main
from agentstudy.io.chromium import rendered_dom, screenshot
from agentstudy.protocol.treatment import TREATMENT_LOST
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.rehearsal.policy import ScriptedReply
from agentstudy.stream.transcript import parse_transcript

SCREEN = (1280, 900)
USAGE = {"input_tokens": 1200, "output_tokens": 30, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
HTTP_PRICES = ("--input-usd-per-million", "0.5", "--output-usd-per-million", "2.5")


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> ExampleStudy:
    return build_example_study(tmp_path_factory.mktemp("fidelity") / "study")


def _tool_names(body: Mapping[str, Any]) -> list[str]:
    tools = body.get("tools")
    return [str(t.get("name")) for t in tools if isinstance(t, Mapping)] if isinstance(tools, list) else []


def _turn(body: Mapping[str, Any]) -> int:
    messages = body.get("messages")
    return 1 + sum(1 for m in messages if isinstance(m, Mapping) and m.get("role") == "assistant") \
        if isinstance(messages, list) else 1


def _answer(model: str | None = None) -> ScriptedReply:
    return ScriptedReply([{"type": "text", "text": "The answer, from memory."}], "end_turn", dict(USAGE), model)


def answers_at_once(body: Mapping[str, Any]) -> ScriptedReply:
    """A model that never calls a tool: the server is offered but never used."""
    return _answer()


def every_server_call_errors(body: Mapping[str, Any]) -> ScriptedReply:
    """A model that calls ``doc_get`` for a file the server does not serve (an ``isError`` result), then answers."""
    getter = next((name for name in _tool_names(body) if name.endswith("doc_get")), None)
    if getter is None or _turn(body) > 1:
        return _answer()
    return ScriptedReply([{"type": "tool_use", "id": "toolu_missing_1", "name": getter,
                           "input": {"path": "no/such/file.md"}}], "tool_use", dict(USAGE))


def control_answers_as_another_model(body: Mapping[str, Any]) -> ScriptedReply:
    """A scripted server that answers the control arm (no server tool offered) as another model."""
    offered = any(name.startswith("doc_") or name.startswith("mcp__") for name in _tool_names(body))
    return _answer(None if offered else "claude-other-model-1")


def _run(args: list[str], env: Mapping[str, str | None] | None = None) -> Result:
    base: dict[str, str | None] = {"ANTHROPIC_API_KEY": None, "STUDY_INPUT_USD_PER_MILLION": None,
                                   "STUDY_OUTPUT_USD_PER_MILLION": None}
    return CliRunner().invoke(main, args, env={**base, **(env or {})}, catch_exceptions=False)


def _study_args(study: ExampleStudy, ledger: Path, *extra: str) -> list[str]:
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    return ["minimal", "--manifest", str(study.manifest_path), "--pilot", *roots, "--model", "claude-haiku-4-5",
            "--budget-usd", "1", "--output", str(ledger), *extra]


def _by_arm(ledger: Path) -> dict[str, dict[str, Any]]:
    data = json.loads(ledger.read_text(encoding="utf-8"))
    return {o["scenario"]: o for o in data["observations"]}


def _report(ledger: Path, output_format: str) -> str:
    result = _run(["report", str(ledger), "--format", output_format])
    assert result.exit_code == 0, result.output
    return result.stdout


def _png_size(png: Path) -> tuple[int, int]:
    width, height = struct.unpack(">II", png.read_bytes()[16:24])
    return width, height


WARNING_BOX = """<script>
(function () {
  var box = document.querySelector(".warning").getBoundingClientRect();
  document.documentElement.setAttribute("data-box", JSON.stringify({top: box.top, bottom: box.bottom,
    text: document.querySelector(".warning").textContent}));
})();
</script>"""


def test_a_server_offered_but_never_called_is_not_delivered_on_every_screen(
        study: ExampleStudy, tmp_path: Path, claude_bin: Path) -> None:
    ledger = tmp_path / "ledger.json"
    with RehearsalServer(policy=answers_at_once) as gateway:
        result = _run(_study_args(study, ledger, "--transport", "cli", "--approve-budget", "--claude-bin",
                                  str(claude_bin), "--cli-base-url", gateway.base_url),
                      {"AGENTSTUDY_GATEWAY_TOKEN": "gw-token-0123456789abcdef", "HOME": str(tmp_path / "home")})
    assert result.exit_code == 0, result.output
    arms = _by_arm(ledger)
    treated, control = arms["doc-bridge-mcp"]["treatment"], arms["repository-only"]["treatment"]
    assert treated["serverOffered"] is True and treated["evidence"] == "init"
    assert set(treated["offeredServerTools"]) >= {"doc_search", "doc_get"}
    assert treated["serverCalls"] == 0 and treated["serverCallsByTool"] == {} and treated["resultBytes"] == 0
    assert control["serverOffered"] is False and control["offeredServerTools"] == [] and control["server"] is None
    assert treated["answeringModels"] == control["answeringModels"] == ["claude-haiku-4-5"]
    assert treated["promptSha256"] == control["promptSha256"] and len(treated["promptSha256"]) == 64
    assert treated["builtinToolsSha256"] == control["builtinToolsSha256"] is not None
    assert _run(["ledger", str(ledger)]).exit_code == 0  # the record is covered by the ledger's hashes

    reports = {output_format: _report(ledger, output_format) for output_format in ("text", "md", "html", "json")}
    report = json.loads(reports["json"])
    assert report["treatment"]["delivered"] is False
    assert report["treatment"]["treatmentAttempts"] == 1 and report["treatment"]["attemptsUsingServer"] == 0
    assert report["treatment"]["serverCalls"] == 0
    assert "cannot answer whether doc-bridge helps" in report["verdict"]

    first_lines = "\n".join(reports["md"].splitlines()[:30])
    assert "**WARNING:**" in first_lines and "treatment was not delivered" in first_lines
    assert "compared with" not in first_lines  # no comparison table shown as a finding
    text = reports["text"]
    assert "!!!!" in text.split("Result at a glance")[1][:600]

    page = tmp_path / "report.html"
    page.write_text(reports["html"], encoding="utf-8")
    png = screenshot(page, tmp_path / "first-screen.png", window=SCREEN)
    assert _png_size(png) == SCREEN
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", WARNING_BOX + "</body>"), encoding="utf-8")
    found = re.search(r'data-box="([^"]*)"', rendered_dom(probe, window=SCREEN))
    assert found
    box = json.loads(html.unescape(found.group(1)))
    assert 0 <= box["top"] < box["bottom"] <= SCREEN[1], box  # the whole warning is on the first screen
    assert "treatment was not delivered" in box["text"]

    assert "treatment not delivered" in result.stderr and "cannot answer" in result.stderr
    line = json.loads(result.stdout.strip().splitlines()[-1])
    assert line["treatment"]["delivered"] is False and "warning" in line["treatment"]
    _check_transcripts(ledger, result, list(reports.values()))


def _check_transcripts(ledger: Path, run: Result, reports: list[str]) -> None:
    """Present, 0700/0600, hashes verify, `agentstudy transcript --ledger` shows one, no report or summary holds
    their text."""
    directory = ledger.with_name(ledger.name + ".transcripts")
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    data = json.loads(ledger.read_text(encoding="utf-8"))
    assert data["transcripts"] is True
    for obs in data["observations"]:
        kept = directory / obs["transcriptFile"]
        assert stat.S_IMODE(kept.stat().st_mode) == 0o600
        assert hashlib.sha256(kept.read_bytes()).hexdigest() == obs["transcriptSha256"]
        shown = _run(["transcript", "--ledger", str(ledger), "--task", obs["taskId"], "--arm", obs["scenario"],
                      "--repetition", str(obs["repetition"])])
        assert shown.exit_code == 0, shown.output
        assert shown.stdout_bytes == kept.read_bytes() and shown.stdout_bytes
        first = json.loads(kept.read_bytes().splitlines()[0])
        marker = json.dumps(first, ensure_ascii=False, separators=(",", ":"))[:60]
        for text in [*reports, run.stdout, run.stderr]:
            assert marker not in text and obs["transcriptFile"] not in text
    assert sorted(p.name for p in directory.iterdir()) == sorted(o["transcriptFile"] for o in data["observations"])


def test_http_treatment_whose_every_server_call_errors_is_invalid_setup_in_the_cli_words(
        study: ExampleStudy, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.json"
    with RehearsalServer(policy=every_server_call_errors) as server:
        result = _run(_study_args(study, ledger, "--transport", "http", "--approve-budget", "--api-base-url",
                                  server.base_url, *HTTP_PRICES), {"ANTHROPIC_API_KEY": "sk-ant-test-key-0123456789"})
    arms = _by_arm(ledger)
    treated = arms["doc-bridge-mcp"]
    assert treated["status"] == "invalid-setup", treated
    assert treated["statusReason"] == TREATMENT_LOST == "every MCP tool call returned an error (treatment lost)"
    assert treated["treatment"]["allCallsFailed"] is True
    assert treated["treatment"]["serverCalls"] == treated["treatment"]["serverCallErrors"] == 1
    assert treated["treatment"]["serverCallsByTool"] == {"doc.get": 1}
    assert result.exit_code == 1  # invalid-setup stops the http run, as it stops the cli one
    report = json.loads(_report(ledger, "json"))
    assert report["treatment"]["attemptsAllCallsFailed"] == 1 and report["treatment"]["delivered"] is False
    kept = (ledger.with_name("ledger.json.transcripts") / treated["transcriptFile"]).read_text(encoding="utf-8")
    lines = [json.loads(line) for line in kept.splitlines()]
    assert [next(k for k in line if k != "turn") for line in lines] == ["request", "response", "request",
                                                                          "response"]
    assert "sk-ant-test-key-0123456789" not in kept
    assert "verified" in _run(["ledger", str(ledger)]).output


def test_no_transcripts_keeps_none_and_the_ledger_says_so(study: ExampleStudy, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.json"
    result = _run(_study_args(study, ledger, "--transport", "http", "--rehearsal", "--no-transcripts", *HTTP_PRICES))
    assert result.exit_code == 0, result.output
    data = json.loads(ledger.read_text(encoding="utf-8"))
    assert data["transcripts"] is False and not ledger.with_name("ledger.json.transcripts").exists()
    assert all("transcriptFile" not in o for o in data["observations"])
    shown = _run(["transcript", "--ledger", str(ledger), "--task", data["observations"][0]["taskId"], "--arm",
                  "repository-only", "--repetition", "1"])
    assert shown.exit_code == 2 and "kept no transcripts" in shown.stderr


def test_the_bundled_example_in_rehearsal_delivers_the_treatment_as_its_transcripts_show(tmp_path: Path) -> None:
    directory = tmp_path / "demo"
    result = _run(["demo", "--output-dir", str(directory)])
    assert result.exit_code == 0, result.output
    ledger = directory / "ledger.json"
    report = json.loads(_report(ledger, "json"))
    treatment = report["treatment"]
    assert treatment["delivered"] is True and treatment["toolDefinitionTokens"] > 0
    data = json.loads(ledger.read_text(encoding="utf-8"))
    calls = errors = using = 0
    for obs in data["observations"]:
        stream = parse_transcript((ledger.with_name("ledger.json.transcripts") / obs["transcriptFile"])
                                  .read_text(encoding="utf-8").split("\n"))
        if obs["scenario"] != "doc-bridge-mcp":
            assert not any(u.name.startswith("mcp__") for u in stream.tool_uses.values())
            continue
        ids = [i for i, u in stream.tool_uses.items() if u.name.startswith("mcp__doc-bridge__")]
        calls += len(ids)
        errors += sum(1 for i in ids if i in stream.tool_errors)
        using += any(i not in stream.tool_errors for i in ids)
    assert (treatment["serverCalls"], treatment["serverCallErrors"], treatment["attemptsUsingServer"]) == \
        (calls, errors, using)
    assert calls > 0


def test_arms_answered_by_different_models_are_flagged_in_the_ledger_and_on_the_first_screen(
        study: ExampleStudy, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.json"
    with RehearsalServer(policy=control_answers_as_another_model) as server:
        result = _run(_study_args(study, ledger, "--transport", "http", "--approve-budget", "--api-base-url",
                                  server.base_url, *HTTP_PRICES), {"ANTHROPIC_API_KEY": "sk-ant-test-key-0123456789"})
    assert result.exit_code == 0, result.output
    arms = _by_arm(ledger)
    assert arms["repository-only"]["treatment"]["answeringModels"] == ["claude-other-model-1"]
    assert arms["doc-bridge-mcp"]["treatment"]["answeringModels"] == ["claude-haiku-4-5"]
    glance = _report(ledger, "md").split("## About this report")[0]
    assert "answered by different models" in glance and "claude-other-model-1" in glance
    differences = json.loads(_report(ledger, "json"))["treatment"]["armDifferences"]
    assert len(differences) == 1 and "different models" in differences[0]  # same prompts, same built-in tools
