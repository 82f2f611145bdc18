"""The Gemini CLI stream validator and session reader: never raise, accept every well-formed stream, refuse every
broken one with a problem, and reconcile exactly the session sums the stats report."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentstudy.pricing.gemini import RequestUsage
from agentstudy.stream.gemini import GeminiExpectations, check_gemini_setup, parse_gemini_stream
from agentstudy.stream.gemini_records import reconcile, session_usage

_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                     max_leaves=12)
_event = st.fixed_dictionaries({"type": st.sampled_from(["init", "message", "tool_use", "tool_result", "error",
                                                         "result", "nope"]), "timestamp": st.text(max_size=4)},
                               optional={"role": _json, "content": _json, "tool_id": _json, "tool_name": _json,
                                         "parameters": _json, "status": _json, "stats": _json, "session_id": _json,
                                         "model": _json, "severity": _json, "message": _json, "delta": _json})
_line = st.one_of(_event.map(json.dumps), st.text(max_size=20))


@settings(deadline=None)  # a shared 2-core machine: no per-example time limit
@given(st.lists(_line, max_size=12))
def test_validator_never_raises_and_a_stream_without_result_or_init_has_a_problem(lines: list[str]) -> None:
    transcript = parse_gemini_stream(lines)
    problems = check_gemini_setup(transcript, GeminiExpectations("doc-bridge", ("doc.search",), None))
    assert all(isinstance(p, str) and p for p in problems)
    if transcript.event_count and (transcript.init is None or transcript.result is None):
        assert problems


def _e(kind: str, **fields: Any) -> str:
    return json.dumps({"type": kind, "timestamp": "2026-12-04T00:00:00.000Z", **fields})


@st.composite
def _good_stream(draw: st.DrawFn) -> list[str]:
    lines = [_e("init", session_id="s", model="m"), _e("message", role="user", content="q")]
    for number in range(draw(st.integers(0, 4))):
        tool = draw(st.sampled_from(["read_file", "grep_search", "glob", "mcp_doc-bridge_doc.search"]))
        lines.append(_e("message", role="assistant", content=draw(st.text(max_size=5)), delta=True))
        lines.append(_e("tool_use", tool_name=tool, tool_id=f"t{number}", parameters={}))
        if draw(st.booleans()):
            lines.append(_e("error", severity="warning", message="loop?"))
        lines.append(_e("tool_result", tool_id=f"t{number}", status=draw(st.sampled_from(["success", "error"]))))
    lines.append(_e("message", role="assistant", content="answer", delta=True))
    lines.append(_e("result", status="success", stats={"models": {}}))
    return lines


@settings(deadline=None)
@given(_good_stream(), st.data())
def test_a_well_formed_stream_passes_and_any_break_is_named(lines: list[str], data: st.DataObject) -> None:
    assert parse_gemini_stream(lines).grammar_problems == []
    assert parse_gemini_stream(lines).answer == "answer"
    where = data.draw(st.integers(0, len(lines) - 1))
    broken = data.draw(st.sampled_from(["junk", "drop-init", "repeat-result", "no-timestamp", "orphan-result"]))
    mutated = list(lines)
    if broken == "junk":
        mutated.insert(where, "{not json")
    elif broken == "drop-init":
        mutated = mutated[1:]
    elif broken == "repeat-result":
        mutated.append(mutated[-1])
    elif broken == "no-timestamp":
        event = json.loads(mutated[where])
        del event["timestamp"]
        mutated[where] = json.dumps(event)
    else:
        mutated.insert(where + 1, _e("tool_result", tool_id="never-used", status="success"))
    assert parse_gemini_stream(mutated).grammar_problems


_request = st.builds(lambda model, i, o, c, t, tool: RequestUsage(model, i + c, o, c, t, tool, i + c + o + t),
                     st.sampled_from(["gemini-2.5-pro", "gemini-2.5-flash"]), st.integers(0, 10**6),
                     st.integers(0, 10**5), st.integers(0, 10**5), st.integers(0, 10**4), st.integers(0, 100))


@settings(deadline=None)
@given(st.lists(_request, min_size=1, max_size=8), st.integers(1, 5))
def test_session_sums_reconcile_with_the_stats_they_make_and_not_with_any_other(requests: list[RequestUsage],
                                                                                  bump: int) -> None:
    text = "\n".join(json.dumps({"type": "gemini", "id": f"m{n}", "model": r.model, "tokens": {
        "input": r.input, "output": r.output, "cached": r.cached, "thoughts": r.thoughts, "tool": r.tool,
        "total": r.total}}) for n, r in enumerate(requests))
    read, problems = session_usage(text + "\n" + text)  # a message written twice (same id) counts once
    assert problems == [] and read == requests
    models = {m: {"input_tokens": sum(r.input for r in requests if r.model == m),
                  "output_tokens": sum(r.output + r.thoughts for r in requests if r.model == m),
                  "cached": sum(r.cached for r in requests if r.model == m)} for m in {r.model for r in requests}}
    assert reconcile(read, {"models": models}) == []
    model = requests[0].model
    models[model]["output_tokens"] += bump
    assert reconcile(read, {"models": models})
