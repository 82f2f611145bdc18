"""Tests for stream parsing, setup checks, outcome classification and the CLI arguments/environment."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from agentstudy.pricing.budget import format_max_budget, reservation_for
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP, REPOSITORY_ONLY
from agentstudy.stream.outcome import ProcessFacts, classify
from agentstudy.stream.setup import SetupExpectations, check_setup
from agentstudy.stream.transcript import Transcript, parse_transcript
from agentstudy.transports.cli_args import (
    McpServerSpec,
    arm_tools,
    child_environment,
    cli_arguments,
    mcp_config,
    mcp_tool_name,
)

TRANSCRIPTS = Path(__file__).resolve().parents[2] / "shared" / "transcripts" / "claude-code-2.1.296"
MODEL = "claude-haiku-5-5"
BUILTIN = ("Read", "Grep", "Glob")
DOC_BRIDGE_NAMES = (
    "mcp__doc-bridge__doc_search",
    "mcp__doc-bridge__doc_get",
    "mcp__doc-bridge__handoff_resolve",
)
D_TOOLS = (*BUILTIN, *DOC_BRIDGE_NAMES)
R_EXPECT = SetupExpectations(MODEL, BUILTIN, None)
D_EXPECT = SetupExpectations(MODEL, D_TOOLS, "doc-bridge")
STATIC_DENY = ("Bash", "Edit", "MultiEdit", "Write", "NotebookEdit", "WebFetch", "WebSearch", "Task", "Agent")


# --------------------------------------------------------------------------- event builders


def init_event(
    model: str = MODEL, tools: list[str] | None = None, servers: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "type": "system",
        "subtype": "init",
        "model": model,
        "tools": list(D_TOOLS) if tools is None else tools,
        "mcp_servers": [{"name": "doc-bridge", "status": "connected", "source": "dynamic"}]
        if servers is None
        else servers,
    }


def r_init(**kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("tools", list(BUILTIN))
    kwargs.setdefault("servers", [])
    return init_event(**kwargs)


def tool_use(tool_id: str, name: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": {}}


def assistant(message_id: str, *blocks: dict[str, Any], prompt: tuple[int, int, int] = (10, 0, 0)) -> dict[str, Any]:
    usage = {
        "input_tokens": prompt[0],
        "cache_read_input_tokens": prompt[1],
        "cache_creation_input_tokens": prompt[2],
        "output_tokens": 1,
    }
    return {"type": "assistant", "message": {"id": message_id, "content": list(blocks), "usage": usage}}


def tool_result(tool_id: str, *, is_error: bool | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_id, "content": "ok"}
    if is_error is not None:
        block["is_error"] = is_error
    return {"type": "user", "message": {"role": "user", "content": [block]}}


def result_event(
    subtype: str = "success", *, is_error: bool = False, denials: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "type": "result",
        "subtype": subtype,
        "is_error": is_error,
        "result": "answer",
        "total_cost_usd": 0.001,
        "permission_denials": denials or [],
    }


def denial(name: str, tool_id: str = "toolu_denied") -> dict[str, Any]:
    return {"tool_name": name, "tool_use_id": tool_id, "tool_input": {"x": 1}}


def lines(*events: dict[str, Any] | str) -> list[str]:
    return [e if isinstance(e, str) else json.dumps(e) for e in events]


def parse(*events: dict[str, Any] | str) -> Transcript:
    return parse_transcript(lines(*events))


# --------------------------------------------------------------------------- real transcripts


def transcript_files() -> list[Path]:
    assert TRANSCRIPTS.is_dir(), f"missing transcripts folder {TRANSCRIPTS}"
    files = sorted(TRANSCRIPTS.glob("*.stdout.jsonl"))
    assert len(files) >= 20, f"expected the real transcripts in {TRANSCRIPTS}"
    return files


def independent_facts(path: Path) -> dict[str, Any]:
    """Facts of a real transcript read in the simplest way (no parser under test)."""
    objects: list[dict[str, Any]] = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        if raw.strip():
            value = json.loads(raw)
            assert isinstance(value, dict)
            objects.append(value)
    names: dict[str, str] = {}
    errors: set[str] = set()
    for event in objects:
        content = event.get("message", {}).get("content") if event.get("type") in ("assistant", "user") else None
        for block in content if isinstance(content, list) else []:
            if event["type"] == "assistant" and block.get("type") == "tool_use":
                names.setdefault(block["id"], block["name"])
            if event["type"] == "user" and block.get("type") == "tool_result" and block.get("is_error") is True:
                errors.add(block["tool_use_id"])
    calls: dict[str, int] = {}
    for name in names.values():
        calls[name] = calls.get(name, 0) + 1
    errs: dict[str, int] = {}
    for tool_id in errors:
        errs[names[tool_id]] = errs.get(names[tool_id], 0) + 1
    results = [i for i, e in enumerate(objects) if e.get("type") == "result"]
    inits = [e for e in objects if e.get("type") == "system" and e.get("subtype") == "init"]
    return {"objects": objects, "calls": calls, "errors": errs, "results": results, "inits": inits}


def test_every_real_transcript_parses() -> None:
    for path in transcript_files():
        transcript = parse_transcript(path.read_text(encoding="utf-8").splitlines(keepends=True))
        facts = independent_facts(path)
        objects = facts["objects"]
        assert transcript.events == objects, path.name
        assert transcript.tool_calls_by_name() == facts["calls"], path.name
        assert transcript.tool_errors_by_name() == facts["errors"], path.name
        results, inits = facts["results"], facts["inits"]
        well_formed = len(results) == 1 and results[0] == len(objects) - 1 and len(inits) <= 1
        if well_formed:
            assert transcript.shape_problems == [], path.name
            assert transcript.result == objects[-1]
        else:
            assert transcript.shape_problems, path.name
        if facts["inits"]:
            assert transcript.init == facts["inits"][0]


def test_real_transcripts_without_result_have_one_shape_problem() -> None:
    missing = [p for p in transcript_files() if not independent_facts(p)["results"]]
    names = {p.name for p in missing}
    assert "11-http500-default-retries.stdout.jsonl" in names
    assert "38-stream-json-without-verbose.stdout.jsonl" in names  # an empty stdout
    for path in missing:
        transcript = parse_transcript(path.read_text(encoding="utf-8").splitlines())
        assert transcript.result is None
        assert len(transcript.shape_problems) == 1, path.name


def test_mcp_calls_dont_ask_counts() -> None:
    path = TRANSCRIPTS / "15-mcp-calls-dontAsk.stdout.jsonl"
    transcript = parse_transcript(path.read_text(encoding="utf-8").splitlines())
    # Verified by hand against the file: four tool_use blocks; Bash and doc_write got is_error results.
    assert transcript.tool_calls_by_name() == {
        "mcp__doc-bridge__doc_search": 1,
        "mcp__doc-bridge__handoff_resolve": 1,
        "Bash": 1,
        "mcp__doc-bridge__doc_write": 1,
    }
    assert transcript.tool_errors_by_name() == {"Bash": 1, "mcp__doc-bridge__doc_write": 1}
    assert transcript.tool_calls_by_name() == independent_facts(path)["calls"]
    assert transcript.tool_errors_by_name() == independent_facts(path)["errors"]
    assert len(transcript.tool_uses) == 4
    assert len(transcript.answered_tool_ids) == 4
    assert transcript.shape_problems == []
    assert transcript.permission_denials() == []
    # Seven assistant events carry four distinct message ids (prompt sizes 2000..2300 in the fake server).
    assert sorted(transcript.message_prompts.values()) == [2000, 2100, 2200, 2300]
    expected = SetupExpectations("claude-haiku-4-5", D_TOOLS, "doc-bridge")
    problems = check_setup(transcript, expected, D_TOOLS)
    assert len(problems) == 1
    assert "Bash" in problems[0] and "mcp__doc-bridge__doc_write" in problems[0]


def test_real_refused_doc_bridge_call_is_a_setup_problem() -> None:
    path = TRANSCRIPTS / "35-mcp-readonly-tool-not-in-allowedTools.stdout.jsonl"
    transcript = parse_transcript(path.read_text(encoding="utf-8").splitlines())
    assert [d["tool_name"] for d in transcript.permission_denials()] == ["mcp__doc-bridge__doc_search"]
    init = transcript.init
    assert init is not None
    expected = SetupExpectations(init["model"], tuple(init["tools"]), "doc-bridge")
    problems = check_setup(transcript, expected, D_TOOLS)
    assert any("permission denials" in p and "mcp__doc-bridge__doc_search" in p for p in problems)


def test_real_clean_read_transcript_has_no_setup_problem() -> None:
    path = TRANSCRIPTS / "01-read-readme-apikey.stdout.jsonl"
    transcript = parse_transcript(path.read_text(encoding="utf-8").splitlines())
    init = transcript.init
    assert init is not None
    expected = SetupExpectations(init["model"], tuple(init["tools"]), None)
    assert init["mcp_servers"] == []
    assert check_setup(transcript, expected, BUILTIN) == []
    assert transcript.tool_calls_by_name() == {"Read": 1}


# --------------------------------------------------------------------------- transcript shape


def test_message_prompts_deduplicate_by_message_id() -> None:
    transcript = parse(
        init_event(),
        assistant("msg_1", {"type": "text", "text": "a"}, prompt=(100, 20, 3)),
        assistant("msg_1", tool_use("t1", "Read"), prompt=(100, 20, 3)),
        assistant("msg_1", tool_use("t2", "Grep"), prompt=(100, 20, 3)),
        tool_result("t1"),
        tool_result("t2"),
        assistant("msg_2", {"type": "text", "text": "b"}, prompt=(7, 1000, 0)),
        result_event(),
    )
    assert transcript.message_prompts == {"msg_1": 123, "msg_2": 1007}
    assert len(transcript.tool_uses) == 2
    assert transcript.shape_problems == []


def test_repeated_tool_use_id_is_counted_once() -> None:
    transcript = parse(
        init_event(),
        assistant("msg_1", tool_use("t1", "Read")),
        assistant("msg_1", tool_use("t1", "Read")),
        tool_result("t1", is_error=True),
        tool_result("t1", is_error=True),
        result_event(),
    )
    assert transcript.tool_calls_by_name() == {"Read": 1}
    assert transcript.tool_errors_by_name() == {"Read": 1}


def test_malformed_first_line_is_a_shape_problem_but_result_is_read() -> None:
    transcript = parse("{not json", init_event(), assistant("m", tool_use("t1", "Read")), result_event())
    assert len(transcript.shape_problems) == 1
    assert "line 1" in transcript.shape_problems[0]
    assert transcript.result is not None
    assert transcript.result["subtype"] == "success"
    assert transcript.init is not None
    assert check_setup(transcript, D_EXPECT, D_TOOLS) == transcript.shape_problems


def test_non_object_json_line_is_a_shape_problem() -> None:
    transcript = parse(init_event(), "[1, 2]", '"text"', result_event())
    assert len(transcript.shape_problems) == 2
    assert transcript.result is not None


def test_blank_lines_and_unknown_events_are_tolerated() -> None:
    transcript = parse_transcript(
        [
            "",
            json.dumps(init_event()) + "\n",
            "   \n",
            json.dumps({"type": "stream_event", "event": {"type": "content_block_delta"}}),
            json.dumps({"type": "system", "subtype": "api_retry", "attempt": 1}),
            json.dumps({"type": "system", "subtype": "something_new"}),
            json.dumps(result_event()),
            "\n",
        ]
    )
    assert transcript.shape_problems == []
    assert transcript.result is not None


def test_two_results_is_a_problem_and_the_last_is_read() -> None:
    first = {**result_event("error_during_execution", is_error=True), "total_cost_usd": 0.5}
    transcript = parse(init_event(), first, result_event())
    assert len(transcript.shape_problems) == 1
    assert transcript.result is not None and transcript.result["subtype"] == "success"


def test_no_result_is_a_problem() -> None:
    transcript = parse(init_event(), assistant("m", {"type": "text", "text": "x"}))
    assert len(transcript.shape_problems) == 1
    assert transcript.result is None


def test_result_not_last_is_a_problem() -> None:
    transcript = parse(init_event(), result_event(), assistant("m", {"type": "text", "text": "late"}))
    assert len(transcript.shape_problems) == 1
    assert transcript.result is not None


def test_two_inits_is_a_problem_and_the_first_is_kept() -> None:
    transcript = parse(init_event(model="first"), init_event(model="second"), result_event())
    assert len(transcript.shape_problems) == 1
    assert transcript.init is not None and transcript.init["model"] == "first"


def test_first_line_not_init_is_tolerated() -> None:
    transcript = parse({"type": "system", "subtype": "hook_started"}, init_event(), result_event())
    assert transcript.shape_problems == []


# Known bug candidates: json.loads raises ValueError / RecursionError (not JSONDecodeError) on these
# lines, and parse_transcript promises never to raise on content.
def test_huge_integer_line_does_not_raise() -> None:
    transcript = parse_transcript([json.dumps(init_event()), "1" * 5000, json.dumps(result_event())])
    assert len(transcript.shape_problems) == 1
    assert transcript.result is not None


def test_deeply_nested_line_does_not_raise() -> None:
    transcript = parse_transcript([json.dumps(init_event()), "[" * 10_000, json.dumps(result_event())])
    assert len(transcript.shape_problems) == 1
    assert transcript.result is not None


# --------------------------------------------------------------------------- setup checks


def clean_d_events(*middle: dict[str, Any], denials: list[dict[str, Any]] | None = None) -> Transcript:
    return parse(init_event(), *middle, result_event(denials=denials))


def test_clean_doc_bridge_attempt_has_no_problem() -> None:
    transcript = clean_d_events(
        assistant("m1", tool_use("t1", "mcp__doc-bridge__doc_search"), tool_use("t2", "Read")),
        tool_result("t1"),
        tool_result("t2"),
    )
    assert check_setup(transcript, D_EXPECT, D_TOOLS) == []


def test_clean_repository_only_attempt_has_no_problem() -> None:
    transcript = parse(r_init(), assistant("m1", tool_use("t1", "Grep")), tool_result("t1"), result_event())
    assert check_setup(transcript, R_EXPECT, BUILTIN) == []


def test_no_init_is_a_problem() -> None:
    transcript = parse(result_event())
    assert check_setup(transcript, D_EXPECT, D_TOOLS) == ["no init event"]


def test_model_mismatch() -> None:
    transcript = parse(init_event(model="claude-sonnet-5-5"), result_event())
    problems = check_setup(transcript, D_EXPECT, D_TOOLS)
    assert len(problems) == 1 and "model" in problems[0]


@pytest.mark.parametrize(
    ("tools", "word"),
    [
        ([t for t in D_TOOLS if t != "Glob"], "missing"),
        ([*D_TOOLS, "Bash"], "unexpected"),
        ([*D_TOOLS, "Read"], "duplicate"),
        ([*D_TOOLS[:3], *DOC_BRIDGE_NAMES[:2]], "missing"),
    ],
)
def test_tool_set_must_be_exact(tools: list[str], word: str) -> None:
    transcript = parse(init_event(tools=tools), result_event())
    problems = check_setup(transcript, D_EXPECT, D_TOOLS)
    assert len(problems) == 1
    assert word in problems[0]


def test_tools_not_a_list_of_names() -> None:
    transcript = parse({**init_event(), "tools": "Read,Grep,Glob"}, result_event())
    assert len(check_setup(transcript, D_EXPECT, D_TOOLS)) == 1


def test_tool_order_does_not_matter() -> None:
    transcript = parse(init_event(tools=list(reversed(D_TOOLS))), result_event())
    assert check_setup(transcript, D_EXPECT, D_TOOLS) == []


@pytest.mark.parametrize(
    "servers",
    [
        [{"name": "doc-bridge", "status": "failed", "source": "dynamic"}],
        [{"name": "doc-bridge", "status": "pending"}],
        [],
        [{"name": "other", "status": "connected"}],
        [{"name": "doc-bridge", "status": "connected"}, {"name": "doc-bridge", "status": "connected"}],
        [{"name": "doc-bridge", "status": "connected"}, "junk"],
    ],
)
def test_doc_bridge_arm_needs_exactly_one_connected_server(servers: list[Any]) -> None:
    transcript = parse(init_event(servers=servers), result_event())
    problems = check_setup(transcript, D_EXPECT, D_TOOLS)
    assert len(problems) == 1
    assert "MCP servers" in problems[0]


def test_mcp_servers_not_a_list() -> None:
    transcript = parse({**init_event(), "mcp_servers": None}, result_event())
    assert len(check_setup(transcript, D_EXPECT, D_TOOLS)) == 1


def test_mcp_server_in_repository_only_arm() -> None:
    transcript = parse(r_init(servers=[{"name": "doc-bridge", "status": "connected"}]), result_event())
    problems = check_setup(transcript, R_EXPECT, BUILTIN)
    assert len(problems) == 1 and "MCP server" in problems[0]


def test_mcp_tool_in_repository_only_arm() -> None:
    transcript = parse(r_init(tools=[*BUILTIN, "mcp__doc-bridge__doc_search"]), result_event())
    problems = check_setup(transcript, R_EXPECT, BUILTIN)
    assert any("MCP tool" in p for p in problems)
    assert any("unexpected" in p for p in problems)


def test_tool_use_outside_the_allowed_set() -> None:
    transcript = clean_d_events(assistant("m1", tool_use("t1", "Bash")), tool_result("t1", is_error=True))
    problems = check_setup(transcript, D_EXPECT, D_TOOLS)
    assert len(problems) == 1 and "Bash" in problems[0]


def test_doc_bridge_call_in_repository_only_arm_is_outside_the_allowed_set() -> None:
    transcript = parse(
        r_init(), assistant("m1", tool_use("t1", "mcp__doc-bridge__doc_search")), tool_result("t1"), result_event()
    )
    problems = check_setup(transcript, R_EXPECT, BUILTIN)
    assert len(problems) == 1 and "mcp__doc-bridge__doc_search" in problems[0]


@pytest.mark.parametrize("name", ["Read", "Grep", "Glob"])
def test_denied_builtin_read_is_tolerated(name: str) -> None:
    transcript = clean_d_events(
        assistant("m1", tool_use("t1", name)), tool_result("t1", is_error=True), denials=[denial(name, "t1")]
    )
    assert check_setup(transcript, D_EXPECT, D_TOOLS) == []
    assert transcript.permission_denials() == [denial(name, "t1")]


@pytest.mark.parametrize("name", ["mcp__doc-bridge__doc_search", "Write", "Bash"])
def test_denial_of_other_tools_is_a_problem(name: str) -> None:
    transcript = clean_d_events(denials=[denial("Read"), denial(name)])
    problems = check_setup(transcript, D_EXPECT, D_TOOLS)
    assert len(problems) == 1
    assert "permission denials" in problems[0] and name in problems[0]


def test_every_mcp_call_errored_is_a_problem() -> None:
    transcript = clean_d_events(
        assistant("m1", tool_use("t1", "mcp__doc-bridge__doc_search")),
        tool_result("t1", is_error=True),
        assistant("m2", tool_use("t2", "mcp__doc-bridge__doc_get"), tool_use("t3", "Read")),
        tool_result("t2", is_error=True),
        tool_result("t3"),
    )
    problems = check_setup(transcript, D_EXPECT, D_TOOLS)
    assert len(problems) == 1 and "treatment lost" in problems[0]
    assert transcript.tool_errors_by_name() == {"mcp__doc-bridge__doc_search": 1, "mcp__doc-bridge__doc_get": 1}


def test_partial_mcp_errors_are_no_problem() -> None:
    transcript = clean_d_events(
        assistant("m1", tool_use("t1", "mcp__doc-bridge__doc_search")),
        tool_result("t1", is_error=True),
        assistant("m2", tool_use("t2", "mcp__doc-bridge__doc_get")),
        tool_result("t2", is_error=False),
    )
    assert check_setup(transcript, D_EXPECT, D_TOOLS) == []
    assert transcript.tool_errors_by_name() == {"mcp__doc-bridge__doc_search": 1}


def test_no_mcp_call_is_no_problem() -> None:
    transcript = clean_d_events(assistant("m1", tool_use("t1", "Read")), tool_result("t1", is_error=True))
    assert check_setup(transcript, D_EXPECT, D_TOOLS) == []


def test_shape_problems_come_first() -> None:
    transcript = parse("garbage", init_event(model="wrong"), result_event())
    problems = check_setup(transcript, D_EXPECT, D_TOOLS)
    assert len(problems) == 2
    assert problems[0] == transcript.shape_problems[0]
    assert "model" in problems[1]


# --------------------------------------------------------------------------- classify

STARTED = ProcessFacts(started=True, timed_out=False, truncated=False, exit_code=0)
SUCCESS: dict[str, Any] = {"type": "result", "subtype": "success", "is_error": False}
BUDGET: dict[str, Any] = {"type": "result", "subtype": "error_max_budget_usd", "is_error": True}


@pytest.mark.parametrize(
    ("process", "setup", "cost", "result", "expected"),
    [
        # each rule alone
        (ProcessFacts(False, False, False, None), [], None, None, "failed"),
        (ProcessFacts(True, True, False, -9), [], None, None, "timed-out"),
        (ProcessFacts(True, False, True, -9), [], None, SUCCESS, "failed"),
        (STARTED, ["bad model"], None, SUCCESS, "invalid-setup"),
        (STARTED, [], "modelUsage is missing or empty", SUCCESS, "invalid-cost"),
        (STARTED, [], None, None, "failed"),
        (ProcessFacts(True, False, False, 1), [], None, BUDGET, "budget-exceeded"),
        (STARTED, [], None, {**SUCCESS, "is_error": True}, "failed"),
        (STARTED, [], None, {**SUCCESS, "subtype": "error_max_turns"}, "failed"),
        (STARTED, [], None, {**SUCCESS, "subtype": "error_during_execution", "is_error": True}, "failed"),
        (STARTED, [], None, {"type": "result", "subtype": "success"}, "failed"),
        (ProcessFacts(True, False, False, 1), [], None, SUCCESS, "failed"),
        (ProcessFacts(True, False, False, None), [], None, SUCCESS, "failed"),
        (STARTED, [], None, SUCCESS, "completed"),
        # precedence
        (ProcessFacts(False, True, True, None), ["x"], "c", BUDGET, "failed"),
        (ProcessFacts(True, True, True, -9), ["x"], "c", BUDGET, "timed-out"),
        (ProcessFacts(True, True, False, -9), ["x"], "c", SUCCESS, "timed-out"),
        (ProcessFacts(True, False, True, 0), ["x"], "c", SUCCESS, "failed"),
        (STARTED, ["x"], "c", BUDGET, "invalid-setup"),
        (ProcessFacts(True, False, False, 1), ["x"], None, {**SUCCESS, "is_error": True}, "invalid-setup"),
        (STARTED, [], "c", BUDGET, "invalid-cost"),
        (ProcessFacts(True, False, False, 1), [], "c", {**SUCCESS, "is_error": True}, "invalid-cost"),
        (ProcessFacts(True, False, False, 3), [], None, {**BUDGET, "is_error": True}, "budget-exceeded"),
    ],
)
def test_classify_precedence(
    process: ProcessFacts, setup: list[str], cost: str | None, result: dict[str, Any] | None, expected: str
) -> None:
    assert classify(process, setup, cost, result) == expected


# --------------------------------------------------------------------------- arguments and environment

SPEC = McpServerSpec(
    name="doc-bridge",
    command=("/usr/bin/node", "/opt/engine/cli.js", "mcp", "--config", "{root}/doc-bridge.config.json"),
)
EXTRA_DENIED = ("mcp__doc-bridge__doc_write", "mcp__doc-bridge__gate_status")


def both_arms(prompt: str = "What does the handoff say?") -> tuple[list[str], list[str]]:
    budget = format_max_budget(reservation_for(Decimal("0.10")))
    args = []
    for scenario in (REPOSITORY_ONLY, DOC_BRIDGE_MCP):
        args.append(
            cli_arguments(
                model=MODEL,
                max_budget_usd=budget,
                tools=arm_tools(scenario, SPEC, EXTRA_DENIED),
                mcp_config_json=mcp_config(scenario, SPEC, "/corpora/harbor", "a" * 40),
                prompt=prompt,
            )
        )
    return args[0], args[1]


def value_of(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


def test_arms_differ_only_at_allowed_tools_and_mcp_config() -> None:
    r_args, d_args = both_arms()
    assert len(r_args) == len(d_args)
    differing = [i for i, (a, b) in enumerate(zip(r_args, d_args, strict=True)) if a != b]
    assert differing == [r_args.index("--allowedTools") + 1, r_args.index("--mcp-config") + 1]
    assert value_of(r_args, "--allowedTools") == "Read,Grep,Glob"
    assert value_of(d_args, "--allowedTools") == ",".join(D_TOOLS)
    assert json.loads(value_of(r_args, "--mcp-config")) == {"mcpServers": {}}
    d_config = json.loads(value_of(d_args, "--mcp-config"))
    assert d_config == {
        "mcpServers": {
            "doc-bridge": {
                "type": "stdio",
                "command": "/usr/bin/node",
                "args": ["/opt/engine/cli.js", "mcp", "--config", "/corpora/harbor/doc-bridge.config.json"],
            }
        }
    }


def test_common_flags() -> None:
    r_args, d_args = both_arms()
    for args in (r_args, d_args):
        assert args[0] == "-p"
        assert value_of(args, "--model") == MODEL
        assert value_of(args, "--output-format") == "stream-json"
        assert "--verbose" in args
        assert "--no-session-persistence" in args
        assert "--strict-mcp-config" in args
        assert "--disable-slash-commands" in args
        assert value_of(args, "--permission-mode") == "dontAsk"
        assert value_of(args, "--tools") == "Read,Grep,Glob"
        assert value_of(args, "--disallowedTools") == ",".join((*STATIC_DENY, *EXTRA_DENIED))
        assert args.count("--") == 1


def test_max_budget_has_six_decimals() -> None:
    r_args, _ = both_arms()
    assert value_of(r_args, "--max-budget-usd") == "0.100000"
    assert format_max_budget(reservation_for(Decimal("0.12345678"))) == "0.123456"
    assert format_max_budget(Decimal("2")) == "2.000000"


def test_prompt_is_last_after_double_dash() -> None:
    prompt = "--model evil -p what?"
    r_args, d_args = both_arms(prompt)
    for args in (r_args, d_args):
        assert args[-1] == prompt
        assert args[-2] == "--"


def test_prompt_over_8_kib_raises() -> None:
    both_arms("a" * 8192)
    with pytest.raises(ValueError):
        both_arms("a" * 8193)
    with pytest.raises(ValueError):
        both_arms("\u00e9" * 4097)  # 4097 characters, 8194 bytes in UTF-8


def test_arm_tools() -> None:
    r_tools = arm_tools(REPOSITORY_ONLY, SPEC, EXTRA_DENIED)
    d_tools = arm_tools(DOC_BRIDGE_MCP, SPEC, EXTRA_DENIED)
    assert r_tools.expected == r_tools.allowed == BUILTIN
    assert r_tools.mcp_server is None
    assert d_tools.expected == d_tools.allowed == D_TOOLS
    assert d_tools.mcp_server == "doc-bridge"
    assert r_tools.denied == d_tools.denied == (*STATIC_DENY, *EXTRA_DENIED)
    assert SPEC.allowed_names() == DOC_BRIDGE_NAMES
    listed = ["doc.search", "doc.get", "handoff.resolve", "gate.status", "memory.promoteDraft"]
    assert SPEC.denied_names(listed) == ("mcp__doc-bridge__gate_status", "mcp__doc-bridge__memory_promoteDraft")
    assert mcp_tool_name("doc-bridge", "a.b.c") == "mcp__doc-bridge__a_b_c"


PARENT_ENV = {
    "PATH": "/custom/bin:/usr/bin",
    "USER": "alice",
    "LOGNAME": "alice",
    "LANG": "en_US.UTF-8",
    "TERM": "xterm",
    "HOME": "/home/alice",
    "ANTHROPIC_API_KEY": "sk-ant-secret",
    "ANTHROPIC_BASE_URL": "https://proxy.example",
    "AWS_SECRET_ACCESS_KEY": "aws",
    "PYTHONPATH": "/x",
}


@pytest.mark.parametrize("base_url", [None, "http://127.0.0.1:4000"])
def test_child_environment_never_has_the_api_key(base_url: str | None) -> None:
    env = child_environment(PARENT_ENV, home="/h", tmpdir="/t", rehearsal_base_url=base_url)
    assert "ANTHROPIC_API_KEY" not in env
    assert "AWS_SECRET_ACCESS_KEY" not in env
    assert "PYTHONPATH" not in env
    assert "sk-ant-secret" not in env.values()
    assert env["PATH"] == "/custom/bin:/usr/bin"
    assert env["USER"] == "alice"
    assert env["HOME"] == "/h"
    assert env["TMPDIR"] == "/t"
    assert env["CLAUDE_CODE_MAX_RETRIES"] == "0"
    if base_url is None:
        assert "ANTHROPIC_BASE_URL" not in env
        assert "ANTHROPIC_AUTH_TOKEN" not in env
    else:
        assert env["ANTHROPIC_BASE_URL"] == base_url
        assert env["ANTHROPIC_AUTH_TOKEN"]


def test_child_environment_defaults() -> None:
    env = child_environment({}, home="/h", tmpdir="/t", rehearsal_base_url=None)
    assert env["PATH"]
    assert env["LANG"] == "C.UTF-8"
    assert set(env) == {
        "PATH",
        "LANG",
        "HOME",
        "TMPDIR",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
        "DISABLE_TELEMETRY",
        "DISABLE_AUTOUPDATER",
        "DISABLE_ERROR_REPORTING",
        "CLAUDE_CODE_MAX_RETRIES",
    }
