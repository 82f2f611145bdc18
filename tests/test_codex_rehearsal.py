"""The scripted Responses API for Codex (issue 21 item 5): wire shapes, the real HTTP server, the real binary."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentstudy.rehearsal.codex_run import run_codex_rehearsal
from agentstudy.rehearsal.responses_server import ResponsesRehearsalServer, responses_policy
from agentstudy.rehearsal.responses_wire import messages_view, response_events
from agentstudy.stream.codex import CodexExpectations, codex_outcome, parse_codex_stream
from agentstudy.stream.outcome import ProcessFacts
from agentstudy.transports.codex_args import (
    REHEARSAL_MODEL,
    CodexMcpServer,
    RehearsalProvider,
    codex_arguments,
    codex_environment,
    config_toml,
    version_problem,
)

ROOT = Path(__file__).resolve().parent.parent
CODEX = ROOT / ".tools" / "codex" / "node_modules" / ".bin" / "codex"
SCRATCH = ROOT / ".codex-scratch" / "tests"  # not under /tmp: see rehearsal.codex_run
PROMPT = "What does the frobnicate flag enable? Cite the file and line."
FILES = {"README.md": "# Widgets\n\nSome intro text.\n\nThe frobnicate flag enables the widget cache.\n",
         "docs/other.md": "Nothing here.\n"}
SHELL = {"type": "function", "name": "exec_command", "parameters": {"type": "object", "properties": {
    "cmd": {"type": "string"}}, "required": ["cmd"]}}
NAMESPACE = {"type": "namespace", "name": "mcp__doc_bridge", "description": "docs", "tools": [
    {"type": "function", "name": "doc_get", "parameters": {"type": "object", "properties": {
        "path": {"type": "string"}}, "required": ["path"]}},
    {"type": "function", "name": "doc_search", "parameters": {"type": "object", "properties": {
        "query": {"type": "string"}}, "required": ["query"]}}]}


def _user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def _body(tools: list[dict[str, Any]], *items: dict[str, Any]) -> dict[str, Any]:
    return {"model": "m", "stream": True, "tools": tools,
            "input": [_user("<environment_context>\n  <cwd>/x/repo</cwd>\n</environment_context>"), _user(PROMPT),
                      *items]}


def _calls(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["item"] for e in events
            if e["type"] == "response.output_item.done" and e["item"]["type"] == "function_call"]


def test_control_turn_one_is_a_shell_search_and_its_output_is_read_back() -> None:
    body = _body([SHELL])
    [call] = _calls(response_events(responses_policy(body), body, "r1"))
    assert call["name"] == "exec_command"
    assert json.loads(call["arguments"]) == {"cmd": "grep -rli -- frobnicate"}
    output = {"type": "function_call_output", "call_id": call["call_id"],
              "output": "Chunk ID: 1\nProcess exited with code 0\nOutput:\nREADME.md\n"}
    body2 = _body([SHELL], call, output)
    view = messages_view(body2)
    assert view["messages"][-1]["content"][0] == {"type": "tool_result", "tool_use_id": call["call_id"],
                                                  "content": "README.md\n", "is_error": False}
    [read] = _calls(response_events(responses_policy(body2), body2, "r2"))
    assert json.loads(read["arguments"]) == {"cmd": "sed -n 1,400p -- README.md"}
    read_output = {"type": "function_call_output", "call_id": read["call_id"],
                   "output": "Process exited with code 0\nOutput:\n" + FILES["README.md"]}
    body3 = _body([SHELL], call, output, read, read_output)
    events = response_events(responses_policy(body3), body3, "r3")
    assert _calls(events) == []
    [text] = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    assert text.endswith("(README.md:5).")


def test_treatment_turn_one_calls_the_namespaced_mcp_search_and_usage_is_reported() -> None:
    body = _body([SHELL, NAMESPACE])
    events = response_events(responses_policy(body), body, "r1")
    assert next(e["type"] for e in events) == "response.created"
    [call] = _calls(events)
    assert (call["namespace"], call["name"], json.loads(call["arguments"])) == \
        ("mcp__doc_bridge", "doc_search", {"query": "frobnicate"})
    usage = events[-1]["response"]["usage"]
    assert events[-1]["type"] == "response.completed"
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"] > 0


def test_failed_shell_command_is_an_error_result() -> None:
    body = _body([SHELL])
    [call] = _calls(response_events(responses_policy(body), body, "r1"))
    output = {"type": "function_call_output", "call_id": call["call_id"],
              "output": "Process exited with code 127\nOutput:\nbash: grep: command not found\n"}
    result = messages_view(_body([SHELL], call, output))["messages"][-1]["content"][0]
    assert result["is_error"] is True


def test_older_shell_tool_gets_an_argv_and_other_commands_pass_through_as_bash() -> None:
    old_shell = {"type": "function", "name": "shell", "parameters": {"type": "object"}}
    body = _body([old_shell])
    [call] = _calls(response_events(responses_policy(body), body, "r1"))
    assert json.loads(call["arguments"]) == {"command": ["bash", "-lc", "grep -rli -- frobnicate"]}
    own = {"type": "function_call", "name": "exec_command", "call_id": "c9", "arguments": '{"cmd": "ls -la"}'}
    view = messages_view(_body([SHELL], own))
    assert view["messages"][-1]["content"][0]["name"] == "Bash"
    assert view["messages"][-1]["content"][0]["input"] == {"command": "ls -la"}
    assert [t["name"] for t in view["tools"]] == ["Grep", "Read"]


def test_empty_input_is_rejected() -> None:
    with pytest.raises(ValueError, match="non-empty 'input'"):
        messages_view({"model": "m", "input": []})


def test_server_streams_sse_on_loopback_and_answers_400_to_bad_bodies() -> None:
    with ResponsesRehearsalServer() as server:
        assert server.provider_base_url.startswith("http://127.0.0.1:")
        with httpx.stream("POST", f"{server.provider_base_url}/responses", json=_body([SHELL])) as answer:
            assert answer.status_code == 200
            assert answer.headers["content-type"].startswith("text/event-stream")
            data = [json.loads(line[6:]) for line in answer.iter_lines() if line.startswith("data: ")]
        bad = httpx.post(f"{server.provider_base_url}/responses", json={"model": "m", "input": []})
        assert bad.status_code == 400
        assert [r.status for r in server.requests] == [200, 400]
    assert [d["type"] for d in data][-1] == "response.completed"
    assert any(d["type"] == "response.output_item.done" and d["item"]["type"] == "function_call" for d in data)


def test_arms_differ_only_by_the_mcp_table_and_no_api_key_passes() -> None:
    provider = RehearsalProvider("http://127.0.0.1:1/v1", "AGENTSTUDY_REHEARSAL_KEY")
    server = CodexMcpServer("doc-bridge", ("python", "-m", "srv"), {}, ("doc.search",))
    control = tomllib.loads(config_toml(model="m", provider=provider, mcp=None))
    treatment = tomllib.loads(config_toml(model="m", provider=provider, mcp=server))
    assert treatment.pop("mcp_servers") == {"doc-bridge": {
        "command": "python", "args": ["-m", "srv"], "required": True, "startup_timeout_sec": 20,
        "enabled_tools": ["doc.search"], "tools": {"doc.search": {"approval_mode": "approve"}}}}
    assert control == treatment
    assert codex_arguments(export_dir="/e", prompt="p")[-3:] == ["/e", "--", "p"]
    env = codex_environment({"OPENAI_API_KEY": "sk-x", "ANTHROPIC_API_KEY": "a", "PATH": "/usr/bin"},
                            home="/h", tmpdir="/t", codex_home="/c", provider_key=("K", "v"))
    assert "OPENAI_API_KEY" not in env and "ANTHROPIC_API_KEY" not in env
    assert env["CODEX_HOME"] == "/c" and env["K"] == "v"


def _bundled(repo: Path) -> CodexMcpServer:
    import sys
    command = (sys.executable, "-I", "-m", "agentstudy.rehearsal.mcp_server", "--root", str(repo), "--pin", "0" * 40)
    return CodexMcpServer("doc-bridge", command, {}, ("doc.search", "doc.get"))


def _real(mcp: Any = lambda _repo: None) -> tuple[Any, Any]:
    parent = {**os.environ, "OPENAI_API_KEY": "sk-parent-must-not-pass", "ANTHROPIC_API_KEY": "parent"}
    run = run_codex_rehearsal(CODEX, scratch=SCRATCH, files=FILES, prompt=PROMPT, parent_env=parent, mcp=mcp)
    return run, parse_codex_stream(run.stdout.splitlines())


def test_real_codex_both_arms_complete_and_only_the_treatment_calls_mcp() -> None:
    process = ProcessFacts(started=True, timed_out=False, truncated=False, exit_code=0)
    control_run, control = _real()
    assert control_run.exit_code == 0, control_run.stderr[-2000:]
    assert codex_outcome(process, control, CodexExpectations(None)).status == "completed"
    assert set(control.tool_calls) == {"shell:grep", "shell:sed"}
    treatment_run, treatment = _real(_bundled)
    assert treatment_run.exit_code == 0, treatment_run.stderr[-2000:]
    expected = CodexExpectations("doc-bridge", ("doc.search", "doc.get"))
    assert codex_outcome(process, treatment, expected).status == "completed"
    assert treatment.tool_calls["mcp__doc-bridge__doc.search"] == 1
    assert not any(name.startswith("shell:") for name in treatment.tool_calls)
    assert all(r.has_authorization and r.path == "/v1/responses" for r in treatment_run.requests)


def test_real_codex_strict_config_rejects_an_unknown_key_and_version_is_pinned(tmp_path: Path) -> None:
    import subprocess
    SCRATCH.mkdir(parents=True, exist_ok=True)
    version = subprocess.run([str(CODEX), "--version"], capture_output=True, text=True, check=True,
                             env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)})
    assert version_problem(version.stdout) is None
    assert version_problem(version.stdout, "0.170.0") == \
        "codex --version printed 'codex-cli 0.171.0', not 'codex-cli 0.170.0'"
    home = SCRATCH / "strict-home"
    home.mkdir(exist_ok=True)
    good = config_toml(model=REHEARSAL_MODEL, provider=None, mcp=None)
    (home / "config.toml").write_text("no_such_key_for_codex = 1\n" + good)
    done = subprocess.run([str(CODEX), *codex_arguments(export_dir=str(tmp_path), prompt="hi")],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False,
                          env=codex_environment(os.environ, home=str(tmp_path), tmpdir=str(tmp_path),
                                                codex_home=str(home)))
    assert done.returncode != 0
    assert "no_such_key_for_codex" in done.stderr
