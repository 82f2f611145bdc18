"""Tests for the setup checks (``agentstudy.stream.setup``) and the outcome precedence (``stream.outcome``)."""

from __future__ import annotations

from typing import Any

import pytest

from agentstudy.stream.outcome import ProcessFacts, classify
from agentstudy.stream.setup import check_setup
from agentstudy.stream.transcript import Transcript
from test_stream_parse import (
    BUILTIN,
    D_EXPECT,
    D_TOOLS,
    DOC_BRIDGE_NAMES,
    R_EXPECT,
    assistant,
    denial,
    init_event,
    parse,
    r_init,
    result_event,
    tool_result,
    tool_use,
)

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
