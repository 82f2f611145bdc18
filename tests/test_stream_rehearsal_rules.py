"""Every setup rule, triggered by the real Claude Code binary and judged by ``agentstudy transcript``.

Each case runs the pinned CLI against the rehearsal Messages API server (a scripted reply
policy decides the agent's tool calls) and, in the MCP arm, the bundled read-only MCP server
over a real git corpus. Only the argv is varied — built by ``transports.cli_args.cli_arguments``
from a deliberately wrong tool policy or MCP server — while the transcript is judged with the
runner's default expectations for its arm, exactly as a researcher would with the command.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentstudy.agents.registry import agent_cli
from agentstudy.cli import main
from agentstudy.io.export import export_corpus, remove_export
from agentstudy.io.process import run_bounded
from agentstudy.io.server_corpus import ServerCorpora
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP, REPOSITORY_ONLY
from agentstudy.rehearsal.example_study import build_corpus_repository
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.rehearsal.policy import ScriptedReply
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER
from agentstudy.transports.cli import CliSettings, run_cli_attempt
from agentstudy.transports.cli_args import (
    REHEARSAL_TOKEN,
    ArmTools,
    McpServerSpec,
    arm_tools,
    child_environment,
    cli_arguments,
    mcp_config,
)

MODEL = "claude-haiku-5-5"
PROMPT = "Who owns handoff H-1? Cite the file and line."
BUILTIN = ("Read", "Grep", "Glob")
SEARCH = "mcp__doc-bridge__doc_search"
GET = "mcp__doc-bridge__doc_get"
RESOLVE = "mcp__doc-bridge__handoff_resolve"
LIVE_DENIED = ("mcp__doc-bridge__doc_write",)  # what preflight derives from the bundled server's tools/list
D_TOOLS = arm_tools(DOC_BRIDGE_MCP, DEFAULT_MCP_SERVER, LIVE_DENIED)
R_TOOLS = arm_tools(REPOSITORY_ONLY, DEFAULT_MCP_SERVER, LIVE_DENIED)

Block = dict[str, Any]


def call(name: str, **tool_input: Any) -> Block:
    return {"type": "tool_use", "name": name, "input": tool_input}


def scripted(*turns: Sequence[Block]) -> Callable[[Mapping[str, Any]], ScriptedReply]:
    """A reply policy: turn N (1 + assistant messages so far) sends ``turns[N-1]``, then a final answer."""

    def policy(body: Mapping[str, Any]) -> ScriptedReply:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise ValueError("no messages")
        turn = 1 + sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
        usage = {"input_tokens": 1000 * turn, "output_tokens": 20,
                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if turn > len(turns):
            return ScriptedReply([{"type": "text", "text": f"Scripted answer after {turn} turns."}], "end_turn", usage)
        content = [{**block, "id": f"toolu_script_{turn}_{i}"} for i, block in enumerate(turns[turn - 1])]
        return ScriptedReply(content, "tool_use", usage)

    return policy


@dataclass(frozen=True)
class Corpus:
    root: Path
    pin: str


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    root = tmp_path_factory.mktemp("corpus") / "harbor-playbook"
    return Corpus(root, build_corpus_repository("harbor-playbook", root))


@dataclass(frozen=True)
class Run:
    path: Path
    exit_code: int


def run_real_cli(
    binary: Path,
    corpus: Corpus,
    tmp_path: Path,
    turns: Sequence[Sequence[Block]],
    *,
    scenario: str,
    tools: ArmTools,
    spec: McpServerSpec = DEFAULT_MCP_SERVER,
) -> Run:
    """Run the real CLI once with argv from ``cli_arguments``; save its stdout as a transcript.

    The MCP server is handed the run's read-only snapshot of the pinned corpus (``ServerCorpora``),
    as in a study; the CLI runs in its own export.
    """
    for name in ("home", "tmp"):
        (tmp_path / name).mkdir(parents=True, exist_ok=True)
    with ServerCorpora(spec, {"harbor-playbook": (corpus.root, corpus.pin)}) as corpora, \
            RehearsalServer(policy=scripted(*turns)) as server:
        env = child_environment(
            os.environ, home=str(tmp_path / "home"), tmpdir=str(tmp_path / "tmp"), base_url=server.base_url,
            auth_token=REHEARSAL_TOKEN,
        )
        argv = [
            str(binary),
            *cli_arguments(
                model=MODEL,
                max_budget_usd="0.100000",
                tools=tools,
                mcp_config_json=mcp_config(scenario, spec, corpora.paths("harbor-playbook")),
                prompt=PROMPT,
            ),
        ]
        export = export_corpus(corpus.root, corpus.pin)
        try:
            process = run_bounded(argv, env, export, 120.0)
        finally:
            remove_export(export)
    assert process.started and not process.timed_out and not process.truncated
    assert process.exit_code is not None
    path = tmp_path / "stdout.jsonl"
    path.write_bytes(process.stdout)
    return Run(path, process.exit_code)


def judge(path: Path, scenario: str, exit_code: int, model: str = MODEL) -> dict[str, Any]:
    """``agentstudy transcript --json`` on a saved transcript; checks the exit code matches the status."""
    args = ["transcript", str(path), "--scenario", scenario, "--model", model, "--exit-code", str(exit_code), "--json"]
    result = CliRunner().invoke(main, args)
    record: dict[str, Any] = json.loads(result.output)
    assert result.exit_code == (0 if record["status"] == "completed" else 1)
    return record


def problems(record: dict[str, Any]) -> list[str]:
    return str(record["setupProblem"]).split("; ") if record["setupProblem"] else []


CLEAN_TURNS = [[call(SEARCH, query="handoff")], [call(RESOLVE, handoff_id="H-1")]]
"""The clean doc-bridge run's script: a search, then a handoff lookup, then the answer."""


@pytest.fixture(scope="module")
def clean_runs() -> dict[str, Run]:
    """Where :func:`clean_run` keeps its one run for the module (the binary's fixture is per test)."""
    return {}


@pytest.fixture
def clean_run(claude_bin: Path, corpus: Corpus, tmp_path_factory: pytest.TempPathFactory,
              clean_runs: dict[str, Run]) -> Run:
    """One clean doc-bridge run of the real CLI per module (:data:`CLEAN_TURNS`): the clean-run test, the
    malformed-line test and the stream-shape test read its transcript (each writes its variants elsewhere)."""
    if "clean" not in clean_runs:
        clean_runs["clean"] = run_real_cli(claude_bin, corpus, tmp_path_factory.mktemp("clean"), CLEAN_TURNS,
                                           scenario=DOC_BRIDGE_MCP, tools=D_TOOLS)
    return clean_runs["clean"]


def test_clean_doc_bridge_run_completes_and_matches_the_runner(
    claude_bin: Path, corpus: Corpus, clean_run: Run
) -> None:
    turns, run = CLEAN_TURNS, clean_run
    record = judge(run.path, DOC_BRIDGE_MCP, run.exit_code)
    assert record["status"] == "completed", record["setupProblem"]
    assert record["toolCallsByName"] == {SEARCH: 1, RESOLVE: 1}
    assert record["toolErrorsByName"] == {}
    assert record["mcp_servers"] == [{"name": "doc-bridge", "status": "connected", "source": "dynamic"}]
    assert sorted(record["tools"]) == sorted(D_TOOLS.expected)
    assert "answer" not in record and "answerText" not in record and "answer_text" not in record
    # The runner's own attempt (same argv, same scripted agent) goes through the same evaluation.
    # It runs under the default containment (bubblewrap), with the server on the run's snapshot.
    corpora = ServerCorpora(DEFAULT_MCP_SERVER, {"harbor-playbook": (corpus.root, corpus.pin)})
    with corpora, RehearsalServer(policy=scripted(*turns)) as server:
        settings = CliSettings(
            binary=claude_bin, model=MODEL, mcp=DEFAULT_MCP_SERVER, rehearsal_base_url=server.base_url,
        )
        attempt = run_cli_attempt(
            settings,
            agent=agent_cli(settings.agent),
            scenario=DOC_BRIDGE_MCP, tools=D_TOOLS, root=corpus.root, pin=corpus.pin, prompt=PROMPT,
            reservation_usd=Decimal("0.10"), parent_env=os.environ, server=corpora.paths("harbor-playbook"),
        )
    assert attempt.status == "completed", attempt.setup_problems
    assert attempt.fields["containment"] == "bwrap"
    fields = {k: v for k, v in attempt.fields.items() if k != "answer_text"}
    assert {k: record[k] for k in ("toolCallsByName", "toolCalls", "inputTokens", "outputTokens", "numTurns")} == {
        "toolCallsByName": fields["tool_calls_by_name"],
        "toolCalls": fields["tool_calls"],
        "inputTokens": fields["input_tokens"],
        "outputTokens": fields["output_tokens"],
        "numTurns": fields["num_turns"],
    }
    assert attempt.computed_cost is not None and record["computedCostUsd"] == float(attempt.computed_cost.usd)
    # Any other model in init is a setup problem (rule: the init model).
    other = judge(run.path, DOC_BRIDGE_MCP, run.exit_code, model="claude-sonnet-5-5")
    assert other["status"] == "invalid-setup"
    assert problems(other) == ["init model 'claude-haiku-5-5' is not 'claude-sonnet-5-5'"]


def test_wrong_tool_set_is_invalid(claude_bin: Path, corpus: Corpus, tmp_path: Path) -> None:
    # The deny list lacks the server's mutating doc.write (as if preflight had not read tools/list):
    # the CLI offers it, so init's tool set is not exactly the arm's.
    wrong = arm_tools(DOC_BRIDGE_MCP, DEFAULT_MCP_SERVER, ())
    turns = [[call(SEARCH, query="handoff")]]
    run = run_real_cli(claude_bin, corpus, tmp_path, turns, scenario=DOC_BRIDGE_MCP, tools=wrong)
    record = judge(run.path, DOC_BRIDGE_MCP, run.exit_code)
    assert record["status"] == "invalid-setup"
    assert problems(record) == ["unexpected tools ['mcp__doc-bridge__doc_write']"]
    assert "mcp__doc-bridge__doc_write" in record["tools"]


def test_mcp_server_in_the_repository_only_arm_is_invalid(claude_bin: Path, corpus: Corpus, tmp_path: Path) -> None:
    # The repository-only tool policy, but with the doc-bridge arm's --mcp-config.
    run = run_real_cli(claude_bin, corpus, tmp_path, [], scenario=DOC_BRIDGE_MCP, tools=R_TOOLS)
    record = judge(run.path, REPOSITORY_ONLY, run.exit_code)
    assert record["status"] == "invalid-setup"
    assert problems(record) == [
        "unexpected tools ['mcp__doc-bridge__doc_get', 'mcp__doc-bridge__doc_search', "
        "'mcp__doc-bridge__handoff_resolve']",
        "an MCP tool is present in the repository-only arm",
        "an MCP server is present in the repository-only arm",
    ]


def test_failed_mcp_server_is_invalid(claude_bin: Path, corpus: Corpus, tmp_path: Path) -> None:
    # An MCP server command that exits at once: init reports the server "failed" and no MCP tools.
    broken = McpServerSpec(name="doc-bridge", command=(sys.executable, "-c", "raise SystemExit(3)"))
    run = run_real_cli(claude_bin, corpus, tmp_path, [], scenario=DOC_BRIDGE_MCP, tools=D_TOOLS, spec=broken)
    record = judge(run.path, DOC_BRIDGE_MCP, run.exit_code)
    assert record["status"] == "invalid-setup"
    assert record["mcp_servers"] == [{"name": "doc-bridge", "status": "failed", "source": "dynamic"}]
    assert problems(record) == [
        "missing tools ['mcp__doc-bridge__doc_get', 'mcp__doc-bridge__doc_search', "
        "'mcp__doc-bridge__handoff_resolve']",
        "MCP servers doc-bridge (failed) are not exactly one connected 'doc-bridge'",
    ]


def test_denied_doc_bridge_call_is_invalid(claude_bin: Path, corpus: Corpus, tmp_path: Path) -> None:
    # --allowedTools lacks handoff_resolve, so --permission-mode dontAsk refuses the call.
    allowed = (*BUILTIN, SEARCH, GET)
    tools = ArmTools(D_TOOLS.expected, allowed, D_TOOLS.denied, "doc-bridge")
    turns = [[call(SEARCH, query="handoff")], [call(RESOLVE, handoff_id="H-1")]]
    run = run_real_cli(claude_bin, corpus, tmp_path, turns, scenario=DOC_BRIDGE_MCP, tools=tools)
    record = judge(run.path, DOC_BRIDGE_MCP, run.exit_code)
    assert record["status"] == "invalid-setup"
    assert problems(record) == ["permission denials of ['mcp__doc-bridge__handoff_resolve']"]
    assert [d["tool_name"] for d in record["permissionDenials"]] == [RESOLVE]
    assert record["toolCallsByName"] == {SEARCH: 1, RESOLVE: 1}  # the refused call is counted
    assert record["toolErrorsByName"] == {RESOLVE: 1}


def test_denied_builtin_read_is_recorded_not_invalid(claude_bin: Path, corpus: Corpus, tmp_path: Path) -> None:
    # Read is not in --allowedTools; reading outside the export needs a permission dontAsk refuses.
    tools = ArmTools(BUILTIN, ("Grep", "Glob"), R_TOOLS.denied, None)
    turns = [[call("Read", file_path="/etc/hostname")]]
    run = run_real_cli(claude_bin, corpus, tmp_path, turns, scenario=REPOSITORY_ONLY, tools=tools)
    record = judge(run.path, REPOSITORY_ONLY, run.exit_code)
    assert record["status"] == "completed", record["setupProblem"]
    assert record["setupProblem"] is None
    assert record["permissionDenials"] == [
        {"tool_name": "Read", "tool_use_id": "toolu_script_1_0", "tool_input": {"file_path": "/etc/hostname"}}
    ]
    assert record["toolErrorsByName"] == {"Read": 1}


def test_call_outside_the_allowed_set_is_invalid(claude_bin: Path, corpus: Corpus, tmp_path: Path) -> None:
    # Bash is deny-listed: the CLI answers "No such tool available" (no permission denial).
    turns = [[call("Bash", command="id", description="who am i")]]
    run = run_real_cli(claude_bin, corpus, tmp_path, turns, scenario=REPOSITORY_ONLY, tools=R_TOOLS)
    record = judge(run.path, REPOSITORY_ONLY, run.exit_code)
    assert record["status"] == "invalid-setup"
    assert problems(record) == ["tool calls outside the allowed set ['Bash']"]
    assert record["permissionDenials"] == []


def test_every_mcp_call_erroring_is_invalid_and_partial_errors_are_counted(
    claude_bin: Path, corpus: Corpus, tmp_path: Path
) -> None:
    # doc.get of a path the server does not serve is an isError result.
    missing = call(GET, path="no/such/file.md")
    run = run_real_cli(claude_bin, corpus, tmp_path / "all", [[missing]], scenario=DOC_BRIDGE_MCP, tools=D_TOOLS)
    record = judge(run.path, DOC_BRIDGE_MCP, run.exit_code)
    assert record["status"] == "invalid-setup"
    [problem] = problems(record)
    assert problem.startswith("every MCP tool call returned an error (treatment lost): the server answered "), problem
    assert "no/such/file.md" in problem  # the server's own words
    assert record["toolErrorsByName"] == {GET: 1}
    turns = [[missing], [call(SEARCH, query="handoff")]]
    run = run_real_cli(claude_bin, corpus, tmp_path / "partial", turns, scenario=DOC_BRIDGE_MCP, tools=D_TOOLS)
    record = judge(run.path, DOC_BRIDGE_MCP, run.exit_code)
    assert record["status"] == "completed", record["setupProblem"]
    assert record["toolErrorsByName"] == {GET: 1}
    assert record["toolCallsByName"] == {GET: 1, SEARCH: 1}


def test_malformed_line_is_invalid_but_the_cost_is_read(clean_run: Run, tmp_path: Path) -> None:
    run = clean_run
    clean = judge(run.path, DOC_BRIDGE_MCP, run.exit_code)
    assert clean["status"] == "completed"
    lines = run.path.read_text(encoding="utf-8").splitlines(keepends=True)
    injected = tmp_path / "injected.jsonl"
    injected.write_text("".join([lines[0], '{"type": "assistant", "message": {\n', *lines[1:]]), encoding="utf-8")
    record = judge(injected, DOC_BRIDGE_MCP, run.exit_code)
    assert record["status"] == "invalid-setup"
    assert problems(record) == ["line 2 is not JSON"]
    assert record["cliReportedCostUsd"] == clean["cliReportedCostUsd"] > 0
    assert record["computedCostUsd"] == clean["computedCostUsd"] > 0
    assert record["chargedUsd"] == max(0.1, clean["cliReportedCostUsd"], clean["computedCostUsd"])
    assert record["toolCallsByName"] == clean["toolCallsByName"]


def test_broken_stream_shapes_are_invalid(clean_run: Run, tmp_path: Path) -> None:
    run = clean_run
    lines = run.path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert judge(run.path, DOC_BRIDGE_MCP, run.exit_code)["status"] == "completed"
    init, middle, result = lines[0], lines[1:-1], lines[-1]
    variants = {
        "two-results.jsonl": ([init, *middle, result, result], ["2 result events, expected exactly one"]),
        "no-result.jsonl": ([init, *middle], ["0 result events, expected exactly one"]),
        "result-not-last.jsonl": ([init, *middle[:-1], result, middle[-1]], ["the result event is not the last event"]),
        "two-inits.jsonl": ([init, init, *middle, result], ["2 init events"]),
    }
    for name, (content, expected) in variants.items():
        path = tmp_path / name
        path.write_text("".join(content), encoding="utf-8")
        record = judge(path, DOC_BRIDGE_MCP, run.exit_code)
        assert (name, record["status"], problems(record)) == (name, "invalid-setup", expected)
        if "no-result" not in name:
            assert record["cliReportedCostUsd"] is not None  # the last result is still read
