"""The normalised step model (``stream.steps``) over real Claude Code and Codex transcripts and an http one."""

from __future__ import annotations

import json
from pathlib import Path

from agentstudy.stream.steps import (
    Step,
    StepUsage,
    claude_steps,
    codex_steps,
    first_divergence,
    gemini_steps,
    http_steps,
)

CODEX = Path(__file__).parent / "transcripts" / "codex-0.171.0"
CLAUDE = Path(__file__).parent / "transcripts" / "claude-code-2.1.296"


def shape(steps: tuple[Step, ...]) -> list[tuple[str, str | None, str | None, bool]]:
    return [(s.kind, s.tool, s.server, s.error) for s in steps]


def test_claude_code_calls_results_and_server_calls() -> None:
    steps = claude_steps((CLAUDE / "15-mcp-calls-dontAsk.jsonl").read_bytes())
    assert shape(steps) == [
        ("text", None, None, False),
        ("call", "mcp__doc-bridge__doc_search", "doc-bridge", False),
        ("result", None, "doc-bridge", False),
        ("call", "mcp__doc-bridge__handoff_resolve", "doc-bridge", False),
        ("call", "Bash", None, False),
        ("result", None, None, True),
        ("result", None, "doc-bridge", False),
        ("call", "mcp__doc-bridge__doc_write", "doc-bridge", False),
        ("result", None, "doc-bridge", True),
        ("text", None, None, False),
    ]
    assert steps[1].arguments == {"query": "handoff"}
    assert steps[2].call_id == steps[1].call_id and 'hits' in steps[2].text
    # One API message's usage is given once, on its first step.
    assert steps[0].usage == StepUsage(2000, 1, 0) and steps[1].usage is None
    assert sum(s.usage.input_tokens for s in steps if s.usage) == 8600  # the result's total


def test_codex_shell_and_mcp_items() -> None:
    control = codex_steps((CODEX / "control-completed.jsonl").read_bytes())
    assert shape(control) == [("text", None, None, False), ("call", "shell", None, False),
                              ("result", None, None, False)] * 2 + [("text", None, None, False)]
    assert control[1].arguments == {"command": "/bin/bash -lc 'grep -rli -- frobnicate'"}
    assert control[-1].usage == StepUsage(654, 126, 0)
    errors = codex_steps((CODEX / "treatment-all-calls-error.jsonl").read_bytes())
    assert shape(errors)[1:3] == [("call", "doc.get", "doc-bridge", False), ("result", None, "doc-bridge", True)]
    assert errors[2].text.startswith("Error executing tool doc.get")
    assert errors[1].arguments == {"path": "no/such/file.md"}


def test_http_exchange_lines() -> None:
    lines = [
        {"turn": 1, "request": {"messages": [{"role": "user", "content": "Question?"}]}},
        {"turn": 1, "response": {"content": [
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "t1", "name": "doc_search", "input": {"query": "x"}},
            {"type": "tool_use", "id": "t2", "name": "read_file", "input": {"path": "README.md"}}],
            "usage": {"input_tokens": 10, "output_tokens": 3}}},
        {"turn": 2, "request": {"messages": [{"role": "user", "content": "Question?"}, {"role": "assistant"},
                                             {"role": "user", "content": [
                                                 {"type": "tool_result", "tool_use_id": "t1", "content": "hit",
                                                  "is_error": True},
                                                 {"type": "tool_result", "tool_use_id": "t2", "content": "text"}]}]}},
        {"turn": 2, "lost": "network None"},
        "not an object",
    ]
    data = b"".join(json.dumps(line).encode() + b"\n" for line in lines) + b"{broken\n"
    steps = http_steps(data, frozenset({"doc_search"}), "kb")
    assert shape(steps) == [("text", None, None, False), ("call", "doc_search", "kb", False),
                            ("call", "read_file", None, False), ("result", None, "kb", True),
                            ("result", None, None, False)]
    assert steps[0].usage == StepUsage(10, 3, 0)


def test_first_divergence() -> None:
    control = codex_steps((CODEX / "control-completed.jsonl").read_bytes())
    treatment = codex_steps((CODEX / "treatment-completed.jsonl").read_bytes())
    assert first_divergence(control, treatment) == 1  # both talk first, then one greps and one searches
    assert first_divergence(control, control) is None
    assert first_divergence(control, control[:3]) == 3
    other_words = (Step("text", text="something else"), *control[1:])
    assert first_divergence(control, other_words) is None  # wording alone is no divergence
    refused = (*control[:2], Step("result", text="no", call_id=control[2].call_id, error=True), *control[3:])
    assert first_divergence(control, refused) == 2


def test_gemini_stream_json_events() -> None:
    events = [
        {"type": "init", "timestamp": "t", "session_id": "s", "model": "m"},
        {"type": "message", "timestamp": "t", "role": "user", "content": "Question?"},
        {"type": "message", "timestamp": "t", "role": "assistant", "content": "Let me ", "delta": True},
        {"type": "message", "timestamp": "t", "role": "assistant", "content": "look.", "delta": True},
        {"type": "tool_use", "timestamp": "t", "tool_name": "mcp_kb_search", "tool_id": "c1",
         "parameters": {"query": "x"}},
        {"type": "tool_result", "timestamp": "t", "tool_id": "c1", "status": "error",
         "error": {"type": "tool_error", "message": "no index"}},
        {"type": "tool_use", "timestamp": "t", "tool_name": "read_file", "tool_id": "c2",
         "parameters": {"absolute_path": "README.md"}},
        {"type": "tool_result", "timestamp": "t", "tool_id": "c2", "status": "success", "output": "# Title"},
        {"type": "result", "timestamp": "t", "status": "success"},
    ]
    steps = gemini_steps(b"".join(json.dumps(e).encode() + b"\n" for e in events))
    assert shape(steps) == [("text", None, None, False), ("call", "mcp_kb_search", "kb", False),
                            ("result", None, "kb", True), ("call", "read_file", None, False),
                            ("result", None, None, False)]
    assert steps[0].text == "Let me look." and steps[2].text == "no index" and steps[4].text == "# Title"
