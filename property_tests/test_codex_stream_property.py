"""The Codex stream validator never raises, whatever the lines (issue 21 item 3)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from agentstudy.stream.codex import CodexExpectations, check_codex_setup, parse_codex_stream

_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                     max_leaves=12)
_event = st.fixed_dictionaries({"type": st.sampled_from(["thread.started", "turn.started", "turn.completed",
                                                         "turn.failed", "item.started", "item.completed",
                                                         "error", "nope"])},
                               optional={"item": _json, "usage": _json, "error": _json, "thread_id": _json})
_line = st.one_of(_event.map(json.dumps), st.text(max_size=20))


@given(st.lists(_line, max_size=12))
def test_validator_never_raises_and_a_broken_stream_always_has_a_problem(lines: list[str]) -> None:
    transcript = parse_codex_stream(lines)
    problems = check_codex_setup(transcript, CodexExpectations("doc-bridge", ("doc.search",)))
    assert all(isinstance(p, str) and p for p in problems)
    if transcript.terminal is None:
        assert problems
