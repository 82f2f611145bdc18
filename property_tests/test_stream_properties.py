"""Property tests of the stream-json reader, the setup checks and the shared attempt evaluation.

The last section mutates the recorded Claude Code 2.1.296 transcripts (drop, duplicate, swap,
cut lines, cut the stream, insert non-JSON, flip fields) and checks the evaluation never raises,
always ends in one of the six statuses, and never says ``completed`` without exactly one final
``result`` in a clean stream.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentstudy.pricing.budget import settle_attempt
from agentstudy.protocol.records import CliObservation
from agentstudy.stream.outcome import CLI_STATUSES, ProcessFacts
from agentstudy.stream.setup import SetupExpectations, check_setup
from agentstudy.stream.transcript import parse_transcript
from agentstudy.transports.cli_args import ArmTools
from agentstudy.transports.cli_evaluation import evaluate_cli_attempt, reported_cost

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
    assert transcript.event_count <= len([line for line in lines if line.strip()])
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
    assert transcript.event_count == len(generated.lines)
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


# --------------------------------------------------------------------------- mutated real transcripts

REAL = Path(__file__).resolve().parents[2] / "shared" / "transcripts" / "claude-code-2.1.296"
REAL_LINES: dict[str, list[str]] = {
    path.name: path.read_text(encoding="utf-8").split("\n") for path in sorted(REAL.glob("*.stdout.jsonl"))
}
R_POLICY = ArmTools(("Read", "Grep", "Glob"), ("Read", "Grep", "Glob"), (), None)
D_POLICY = ArmTools(
    (*R_POLICY.expected, "mcp__doc-bridge__doc_search", "mcp__doc-bridge__doc_get", "mcp__doc-bridge__handoff_resolve"),
    (*R_POLICY.allowed, "mcp__doc-bridge__doc_search", "mcp__doc-bridge__doc_get", "mcp__doc-bridge__handoff_resolve"),
    (),
    "doc-bridge",
)
FLIPPABLE = (
    ("type",), ("subtype",), ("is_error",), ("model",), ("tools",), ("mcp_servers",), ("total_cost_usd",),
    ("modelUsage",), ("permission_denials",), ("num_turns",), ("result",), ("usage",), ("message", "id"),
    ("message", "usage"), ("message", "content"), ("message", "content", 0, "id"), ("message", "content", 0, "name"),
    ("message", "content", 0, "type"), ("message", "content", 0, "is_error"), ("message", "content", 0, "tool_use_id"),
)


def _has(target: Any, key: str | int) -> bool:
    if isinstance(target, dict):
        return isinstance(key, str) and key in target
    return isinstance(target, list) and isinstance(key, int) and key < len(target)


def _flip(line: str, path: tuple[str | int, ...], value: Any) -> str:
    """``line`` with the field at ``path`` set to ``value`` (unchanged when the path is absent)."""
    try:
        event = json.loads(line)
    except ValueError:
        return line
    target = event
    for key in path[:-1]:
        if not _has(target, key):
            return line
        target = target[key]
    if (isinstance(target, dict) and isinstance(path[-1], str)) or _has(target, path[-1]):
        target[path[-1]] = value
    return json.dumps(event)


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A real transcript after 1-4 random mutations of its lines."""
    name = draw(st.sampled_from(sorted(REAL_LINES)))
    lines = list(REAL_LINES[name])
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["drop", "duplicate", "swap", "cut-line", "cut-stream", "insert", *["flip"] * 5]))
        if not lines:
            lines.append(draw(non_json_lines))
            continue
        i = draw(st.integers(0, len(lines) - 1))
        j = draw(st.integers(0, len(lines) - 1))
        if kind == "drop":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(j, lines[i])
        elif kind == "swap":
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "cut-line":
            lines[i] = lines[i][: draw(st.integers(0, max(0, len(lines[i]) - 1)))]
        elif kind == "cut-stream":
            lines = lines[:i]
        elif kind == "insert":
            lines.insert(i, draw(non_json_lines))
        else:
            path = draw(st.sampled_from(FLIPPABLE))
            holders = [k for k, line in enumerate(lines) if f'"{path[0]}"' in line] or [i]
            k = draw(st.sampled_from(holders))
            lines[k] = _flip(lines[k], path, draw(json_values))
    return name, lines


def _oracle(data: bytes) -> tuple[bool, dict[str, Any] | None]:
    """Read the stream the simplest way: (well formed, last result object or None).

    Well formed = every non-blank line is a JSON object, exactly one ``result`` which is the
    last object, at most one init.
    """
    objects: list[dict[str, Any]] = []
    malformed = False
    for raw in data.decode("utf-8", "replace").split("\n"):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except Exception:  # any failure (ValueError, RecursionError) means "not JSON" here
            malformed = True
            continue
        if isinstance(value, dict):
            objects.append(value)
        else:
            malformed = True
    results = [i for i, e in enumerate(objects) if e.get("type") == "result"]
    inits = [e for e in objects if e.get("type") == "system" and e.get("subtype") == "init"]
    ok = not malformed and len(results) == 1 and results[0] == len(objects) - 1 and len(inits) <= 1
    return ok, objects[results[-1]] if results else None


CLEAN_EXIT = ProcessFacts(started=True, timed_out=False, truncated=False, exit_code=0)
processes = st.one_of(
    st.just(CLEAN_EXIT),  # most draws: a child that exited 0, so the stream alone decides
    st.just(CLEAN_EXIT),
    st.builds(
        ProcessFacts,
        started=st.booleans(),
        timed_out=st.booleans(),
        truncated=st.booleans(),
        exit_code=st.sampled_from([0, 1, -9, None]),
    ),
)


@SETTINGS
@given(case=mutated(), process=processes, reservation=st.sampled_from(["0.10", "0.001", "5"]))
def test_mutated_real_transcripts_are_judged_safely(
    case: tuple[str, list[str]], process: ProcessFacts, reservation: str
) -> None:
    name, lines = case
    data = "\n".join(lines).encode("utf-8")
    policy = D_POLICY if "mcp" in name else R_POLICY
    evaluation = evaluate_cli_attempt(data, process, model="claude-haiku-4-5", tools=policy)
    assert evaluation.status in CLI_STATUSES
    assert (evaluation.status == "completed") == (evaluation.status_problem is None)
    computed = evaluation.computed_cost.usd if evaluation.computed_cost is not None else None
    final, charged = settle_attempt(evaluation.status, Decimal(reservation), evaluation.reported_cost_usd, computed)
    assert final in CLI_STATUSES
    assert charged >= 0
    well_formed, last_result = _oracle(data)
    if evaluation.status == "completed":
        assert well_formed, "completed without exactly one final result in a clean stream"
        assert process.started and not process.timed_out and not process.truncated and process.exit_code == 0
    if not well_formed and process.started and not process.timed_out and not process.truncated:
        assert evaluation.status == "invalid-setup"
    # The last result event is always read for its cost, whatever the shape problems.
    assert evaluation.reported_cost_usd == reported_cost(last_result)
    # The runner can always record the attempt: the fields validate as a ledger observation.
    fields = {k: v for k, v in evaluation.fields.items() if k not in ("answer_text", "api_error_status")}
    CliObservation(
        task_id="t", scenario="repository-only", repetition=1, cli_version="2.1.296",
        expected_cli_version="2.1.296", attempt_budget_usd=0.1, **fields,
        cli_reported_cost_usd=float(evaluation.reported_cost_usd) if evaluation.reported_cost_usd is not None else None,
        computed_cost_usd=float(computed) if computed is not None else None,
        cost_basis=evaluation.computed_cost.basis if evaluation.computed_cost is not None else None,
        setup_problem="; ".join(evaluation.setup_problems) or None, cost_problem=evaluation.cost_problem,
        reserved_usd=float(reservation), charged_usd=float(charged), cumulative_cap_exceeded=False,
        exit_code=process.exit_code, wall_time_ms=0, status=final, answer="",
    )


TOP_FIELDS = (
    "model", "tools", "mcp_servers", "permission_denials", "modelUsage", "total_cost_usd", "num_turns", "subtype",
    "is_error", "result", "usage",
)


@SETTINGS
@given(name=st.sampled_from(sorted(n for n, lines in REAL_LINES.items() if len(lines) > 2)), data=st.data())
def test_flipped_fields_still_give_a_valid_record(name: str, data: st.DataObject) -> None:
    lines = list(REAL_LINES[name])
    for _ in range(data.draw(st.integers(1, 3))):
        field_name = data.draw(st.sampled_from(TOP_FIELDS))
        holders = [k for k, line in enumerate(lines) if f'"{field_name}"' in line]
        if holders:
            k = data.draw(st.sampled_from(holders))
            lines[k] = _flip(lines[k], (field_name,), data.draw(json_values))
    stdout = "\n".join(lines).encode("utf-8")
    evaluation = evaluate_cli_attempt(stdout, CLEAN_EXIT, model="claude-haiku-4-5", tools=R_POLICY)
    assert evaluation.status in CLI_STATUSES
    if evaluation.status == "completed":
        assert _oracle(stdout)[0]
    fields = {k: v for k, v in evaluation.fields.items() if k not in ("answer_text", "api_error_status")}
    CliObservation.model_validate(
        {
            **fields, "task_id": "t", "scenario": "repository-only", "repetition": 1, "cli_version": "v",
            "expected_cli_version": "v", "attempt_budget_usd": 0.1, "cli_reported_cost_usd": None,
            "computed_cost_usd": None, "cost_basis": None, "reserved_usd": 0.1, "charged_usd": 0.1,
            "cumulative_cap_exceeded": False, "exit_code": 0, "wall_time_ms": 0, "status": evaluation.status,
            "answer": "",
        }
    )
