"""Property tests of the stream-json reader (``agentstudy.stream.transcript``) and the setup checks."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentstudy.stream.setup import SetupExpectations, check_setup
from agentstudy.stream.transcript import parse_transcript

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOOL_NAMES = ("Read", "Grep", "Glob", "mcp__doc-bridge__doc_search", "mcp__doc-bridge__doc_get", "Bash")
EXPECT = SetupExpectations(
    "claude-haiku-5-5",
    ("Read", "Grep", "Glob", "mcp__doc-bridge__doc_search", "mcp__doc-bridge__doc_get"),
    "doc-bridge",
)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)
KEYS = ("type", "subtype", "message", "id", "content", "usage", "name", "tool_use_id", "is_error", "permission_denials")


@st.composite
def event_like(draw: st.DrawFn) -> dict[str, Any]:
    """Objects that look like events but with arbitrary (often wrong) field types."""
    event: dict[str, Any] = {"type": draw(st.sampled_from(["system", "assistant", "user", "result", "stream_event"]))}
    if draw(st.booleans()):
        event["subtype"] = draw(st.sampled_from(["init", "success", "api_retry"]) | st.text(max_size=5))
    block = draw(st.dictionaries(st.sampled_from(KEYS), json_values, max_size=5))
    if draw(st.booleans()):
        block["type"] = draw(st.sampled_from(["tool_use", "tool_result", "text"]))
    message = draw(st.dictionaries(st.sampled_from(KEYS), json_values, max_size=4))
    message["content"] = draw(st.sampled_from([[block], block, [block, block], None]))
    event["message"] = draw(st.sampled_from([message, None]) | json_values)
    for key in draw(st.lists(st.sampled_from(KEYS), max_size=4)):
        event[key] = draw(json_values)
    if event["type"] == "result" and draw(st.booleans()):
        event["permission_denials"] = draw(st.lists(json_values | st.just({"tool_name": "Read"}), max_size=3))
    return event


arbitrary_lines = st.lists(
    st.text(max_size=40) | json_values.map(json.dumps) | event_like().map(json.dumps),
    max_size=15,
)


@SETTINGS
@given(lines=arbitrary_lines)
def test_parse_and_check_never_raise(lines: list[str]) -> None:
    transcript = parse_transcript(lines)
    problems = check_setup(transcript, EXPECT, EXPECT.tools)
    assert isinstance(problems, list)
    assert all(isinstance(p, str) for p in problems)
    assert problems[: len(transcript.shape_problems)] == transcript.shape_problems
    assert len(transcript.events) <= len([line for line in lines if line.strip()])
    transcript.tool_calls_by_name()
    transcript.tool_errors_by_name()
    transcript.permission_denials()


# --------------------------------------------------------------------------- well-formed transcripts


@dataclass
class Generated:
    lines: list[str]
    result: dict[str, Any]
    calls: dict[str, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    tool_ids: set[str] = field(default_factory=set)
    answered: set[str] = field(default_factory=set)
    prompts: dict[str, int] = field(default_factory=dict)


@st.composite
def well_formed(draw: st.DrawFn) -> Generated:
    init = {
        "type": "system",
        "subtype": "init",
        "model": EXPECT.model,
        "tools": list(EXPECT.tools),
        "mcp_servers": [{"name": "doc-bridge", "status": "connected"}],
    }
    events: list[dict[str, Any]] = [init]
    names: dict[str, str] = {}
    erred: set[str] = set()
    answered: set[str] = set()
    prompts: dict[str, int] = {}
    steps = draw(st.lists(st.sampled_from(["assistant", "user", "system", "stream_event"]), max_size=25))
    counter = 0
    for step in steps:
        if step == "assistant":
            message_id = f"msg_{draw(st.integers(0, 6))}"
            blocks: list[dict[str, Any]] = []
            for _ in range(draw(st.integers(0, 3))):
                if draw(st.booleans()):
                    blocks.append({"type": "text", "text": draw(st.text(max_size=10))})
                elif names and draw(st.integers(0, 4)) == 0:
                    repeated = draw(st.sampled_from(sorted(names)))  # the CLI may repeat a block
                    blocks.append({"type": "tool_use", "id": repeated, "name": names[repeated], "input": {}})
                else:
                    counter += 1
                    tool_id = f"toolu_{counter}"
                    names[tool_id] = draw(st.sampled_from(TOOL_NAMES))
                    blocks.append({"type": "tool_use", "id": tool_id, "name": names[tool_id], "input": {"q": "x"}})
            usage = {
                "input_tokens": draw(st.integers(0, 200_000)),
                "cache_read_input_tokens": draw(st.integers(0, 200_000)),
                "cache_creation_input_tokens": draw(st.integers(0, 200_000)),
                "output_tokens": draw(st.integers(0, 1000)),
            }
            size = usage["input_tokens"] + usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"]
            prompts[message_id] = max(size, prompts.get(message_id, 0))
            events.append({"type": "assistant", "message": {"id": message_id, "content": blocks, "usage": usage}})
        elif step == "user":
            results: list[dict[str, Any]] = []
            for tool_id in draw(st.lists(st.sampled_from(sorted(names)), max_size=3)) if names else []:
                is_error = draw(st.sampled_from([True, False, None]))
                block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_id, "content": "r"}
                if is_error is not None:
                    block["is_error"] = is_error
                if is_error is True:
                    erred.add(tool_id)
                answered.add(tool_id)
                results.append(block)
            events.append({"type": "user", "message": {"role": "user", "content": results}})
        elif step == "system":
            subtype = draw(st.text(min_size=1, max_size=12).filter(lambda s: s != "init"))
            events.append({"type": "system", "subtype": subtype, "extra": draw(json_values)})
        else:
            events.append({"type": "stream_event", "event": draw(json_values)})
    result = {"type": "result", "subtype": "success", "is_error": False, "total_cost_usd": 0.01}
    events.append(result)
    calls: dict[str, int] = {}
    for name in names.values():
        calls[name] = calls.get(name, 0) + 1
    errors: dict[str, int] = {}
    for tool_id in erred:
        errors[names[tool_id]] = errors.get(names[tool_id], 0) + 1
    return Generated([json.dumps(e) for e in events], result, calls, errors, set(names), answered, prompts)


@SETTINGS
@given(generated=well_formed())
def test_well_formed_transcripts_have_no_shape_problem(generated: Generated) -> None:
    transcript = parse_transcript(generated.lines)
    assert transcript.shape_problems == []
    assert transcript.result == generated.result
    assert transcript.init is not None and transcript.init["subtype"] == "init"
    assert len(transcript.events) == len(generated.lines)
    assert set(transcript.tool_uses) == generated.tool_ids
    assert len(transcript.tool_uses) == len(generated.tool_ids)
    assert transcript.tool_calls_by_name() == generated.calls
    assert sum(transcript.tool_calls_by_name().values()) == len(generated.tool_ids)
    assert transcript.tool_errors_by_name() == generated.errors
    assert transcript.answered_tool_ids == generated.answered
    assert transcript.message_prompts == generated.prompts


non_json_lines = (
    st.text(alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\r\n"), max_size=30)
    .map(lambda s: "not-json " + s)
    .filter(lambda s: not _is_json(s))
)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@SETTINGS
@given(generated=well_formed(), bad=non_json_lines, data=st.data())
def test_one_non_json_line_adds_exactly_one_problem(generated: Generated, bad: str, data: st.DataObject) -> None:
    position = data.draw(st.integers(0, len(generated.lines)))
    lines = [*generated.lines[:position], bad, *generated.lines[position:]]
    transcript = parse_transcript(lines)
    assert len(transcript.shape_problems) == 1
    assert f"line {position + 1}" in transcript.shape_problems[0]
    assert transcript.result == generated.result
    assert transcript.tool_calls_by_name() == generated.calls
    assert transcript.tool_errors_by_name() == generated.errors
    problems = check_setup(transcript, EXPECT, TOOL_NAMES)
    assert problems[0] == transcript.shape_problems[0]
