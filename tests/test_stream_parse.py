"""Tests for stream-json parsing (``agentstudy.stream.transcript``) on built and recorded transcripts.

The event builders here are shared with ``test_stream_setup``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentstudy.stream.setup import SetupExpectations, check_setup
from agentstudy.stream.transcript import Transcript, parse_transcript

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
        assert transcript.event_count == len(objects), path.name
        last_result = objects[facts["results"][-1]] if facts["results"] else None
        assert transcript.result == last_result, path.name
        assert transcript.init == (facts["inits"][0] if facts["inits"] else None), path.name
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
