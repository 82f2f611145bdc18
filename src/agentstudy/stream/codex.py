"""The strict validator of a Codex CLI 0.171.0 ``codex exec --json`` stream (pure; issue 21 item 3).

:func:`parse_codex_stream` reads the JSONL events into :class:`CodexTranscript` facts and its
grammar problems: every non-blank line a JSON object with a known ``type`` of the pinned version
(an unknown event or item type is a problem, never skipped); the first event ``thread.started``;
exactly one ``turn.started``; exactly one terminal ``turn.completed`` or ``turn.failed``, last.
Top-level ``error`` events are not terminal in 0.171.0 (``Reconnecting... 1/5`` notices precede a
``turn.failed``; measured, docs/codex.md). :func:`check_codex_setup` adds the setup checks: a
required MCP server that failed to start (Codex prints no event, only its stderr line), every
``mcp_tool_call`` naming the arm's one server and an allowed tool, no MCP call at all in the
control arm, no cancelled or approval-denied MCP call, not every MCP call failing (treatment
lost), no file change, web search, sub-agent call or user-input request. A declined shell
command is a recorded read denial, not a problem. :func:`codex_outcome` gives one of the six
statuses by the Claude Code precedence (:func:`agentstudy.stream.outcome.outcome`), the terminal
event standing for the ``result``. Usage (tokens) is the last ``turn.completed``'s, which is the
thread's running total; ``usageComplete`` is false when none arrived. Every count is checked where
it is read (:func:`usage_problem`: integers in [0, 10**15], parts within their totals) and a
running total that goes backwards is a problem; ``usages`` keeps every total so the attempt is
charged the largest (issue 29).
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentstudy.pricing.cost import MAX_TOKENS
from agentstudy.protocol.json_input import load_json
from agentstudy.protocol.treatment import TREATMENT_LOST
from agentstudy.stream.codex_failures import codex_error_status
from agentstudy.stream.outcome import Outcome, ProcessFacts, outcome
from agentstudy.stream.transcript import one_line, result_text

__all__ = ["CODEX_EVENT_TYPES", "CODEX_ITEM_TYPES", "CodexExpectations", "CodexTranscript", "CodexUsage",
           "check_codex_setup", "codex_outcome", "parse_codex_stream", "usage_problem", "went_backwards"]

CODEX_EVENT_TYPES = frozenset({"thread.started", "turn.started", "turn.completed", "turn.failed", "item.started",
                               "item.updated", "item.completed", "item.plan.delta", "request_user_input", "error"})
"""The top-level event types of 0.171.0's ``exec --json`` (``exec_events.rs``)."""
CODEX_ITEM_TYPES = frozenset({"agent_message", "reasoning", "command_execution", "file_change", "mcp_tool_call",
                              "collab_tool_call", "web_search", "todo_list", "error"})
"""The item types of 0.171.0's ``exec --json``."""
_TERMINAL = ("turn.completed", "turn.failed")
LINE_PROBLEMS_LISTED = 20
"""Line problems listed one by one; more are counted in one problem."""
_FORBIDDEN_ITEMS = {"file_change": "a file change", "web_search": "a web search",
                    "collab_tool_call": "a sub-agent call"}
_DENIED_MCP = ("requires approval", "cancelled", "canceled", "denied")
_REQUIRED_FAILED = "required MCP servers failed to initialize"
_USAGE_KEYS = ("input_tokens", "cached_input_tokens", "cache_write_input_tokens", "output_tokens",
               "reasoning_output_tokens")


@dataclass(frozen=True)
class CodexUsage:
    """Token counts of a ``turn.completed`` (the thread's running total): input, cached input,
    cache-write input, output and reasoning output tokens."""

    input_tokens: int
    cached_input_tokens: int
    cache_write_input_tokens: int
    output_tokens: int
    reasoning_output_tokens: int


@dataclass(frozen=True)
class CodexExpectations:
    """What the arm's configuration promises: ``mcp_server`` (the one ``[mcp_servers]`` table
    name, None in the control arm) and ``allowed_tools`` (its ``enabled_tools``, server names)."""

    mcp_server: str | None
    allowed_tools: tuple[str, ...] = ()
    lost: str = TREATMENT_LOST
    """The problem's words when every call to ``mcp_server`` failed (``protocol.treatment.server_lost``)."""


@dataclass
class CodexTranscript:
    """Facts of one stream.

    Attributes:
        event_count: JSON-object lines read.
        grammar_problems: why the stream breaks the 0.171.0 grammar (setup problems).
        thread_id: the ``thread.started`` id, if any.
        terminal: the last ``turn.completed`` / ``turn.failed`` event, if any.
        usage: the last ``turn.completed`` usage, if any and recordable (``usage_complete`` says so).
        usages: every recordable ``turn.completed`` usage, in stream order (the running totals the attempt
            is charged the largest cost of; issue 29).
        tool_calls: calls by tool name: ``shell:<program>`` per command, ``mcp__<server>__<tool>``
            per MCP call (completed items; a call seen only as started counts too).
        mcp_calls: the final ``mcp_tool_call`` item of every call, in first-seen order.
        read_denials: shell commands with status ``declined``.
        agent_requests: ``request_user_input`` events.
        notices: non-fatal ``error`` items and events (their messages).
        answer: the text of the last completed ``agent_message`` item ("" if none).
        mcp_failures: failed MCP calls by ``mcp__<server>__<tool>`` name.
        lines_not_listed: lines that broke the grammar beyond the first ``LINE_PROBLEMS_LISTED`` (counted,
            and said in one problem, so a stream of junk lines cannot make a ledger of megabytes).
    """

    def line_problem(self, text: str) -> None:
        """Record one line's grammar problem: listed up to ``LINE_PROBLEMS_LISTED``, counted after."""
        if len(self.grammar_problems) < LINE_PROBLEMS_LISTED:
            self.grammar_problems.append(text)
        else:
            self.lines_not_listed += 1

    event_count: int = 0
    grammar_problems: list[str] = field(default_factory=list)
    lines_not_listed: int = 0
    thread_id: str | None = None
    terminal: dict[str, Any] | None = None
    usage: CodexUsage | None = None
    usages: list[CodexUsage] = field(default_factory=list)
    tool_calls: Counter[str] = field(default_factory=Counter)
    mcp_calls: list[dict[str, Any]] = field(default_factory=list)
    read_denials: int = 0
    agent_requests: int = 0
    forbidden: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    answer: str = ""

    @property
    def mcp_failures(self) -> dict[str, int]:
        """Failed MCP calls (final status ``failed``) by ``mcp__<server>__<tool>`` name."""
        failed = Counter(f"mcp__{c.get('server')}__{c.get('tool')}" for c in self.mcp_calls
                         if c.get("status") == "failed")
        return dict(failed)

    @property
    def usage_complete(self) -> bool:
        """True when a ``turn.completed`` carried the usage (the ledger's ``usageComplete``)."""
        return self.usage is not None


def _program(command: Any) -> str:
    """The program a shell command runs (``grep`` for ``/bin/bash -lc 'grep -rli -- x'``); ``?`` if unreadable."""
    try:
        words = shlex.split(command) if isinstance(command, str) else []
        if len(words) >= 3 and words[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh") and words[1] in ("-lc", "-c"):
            words = shlex.split(words[2])
    except ValueError:
        return "?"
    return words[0].rsplit("/", 1)[-1] if words else "?"


def usage_problem(value: Any) -> str | None:
    """Why a ``turn.completed`` ``usage`` object cannot be recorded (``None`` when it can): every count a
    JSON integer in [0, 10**15] (``pricing.cost.MAX_TOKENS``, the bound every ledger reader applies),
    cached plus cache-write input at most the input, reasoning output at most the output (issue 29)."""
    if not isinstance(value, Mapping):
        return "turn.completed usage is not an object"
    counts = [value.get(key, 0) for key in _USAGE_KEYS]
    for key, n in zip(_USAGE_KEYS, counts, strict=True):
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_TOKENS:
            return f"turn.completed usage {key} is not a token count in [0, 10**15]"
    usage = CodexUsage(*counts)
    if usage.cached_input_tokens + usage.cache_write_input_tokens > usage.input_tokens:
        return "turn.completed usage has more cached and cache-write input tokens than input tokens"
    if usage.reasoning_output_tokens > usage.output_tokens:
        return "turn.completed usage has more reasoning output tokens than output tokens"
    return None


def _usage(value: Any) -> CodexUsage | None:
    if usage_problem(value) is not None:
        return None
    assert isinstance(value, Mapping)
    return CodexUsage(*[value.get(key, 0) for key in _USAGE_KEYS])


def went_backwards(earlier: CodexUsage, later: CodexUsage) -> bool:
    """Whether ``later`` (a running total) has fewer tokens of any kind than ``earlier``."""
    return any(b < a for a, b in zip(dataclasses.astuple(earlier), dataclasses.astuple(later), strict=True))


def _read_item(event: Mapping[str, Any], number: int, transcript: CodexTranscript, seen: dict[str, int]) -> None:
    item = event.get("item")
    if not isinstance(item, Mapping) or not isinstance(item.get("id"), str) or not isinstance(item.get("type"), str):
        transcript.line_problem(f"line {number}: {event.get('type')} without an item id and type")
        return
    kind, item_id = item["type"], item["id"]
    if kind not in CODEX_ITEM_TYPES:
        transcript.line_problem(f"line {number}: unknown item type {kind!r} for codex 0.171.0")
        return
    first = item_id not in seen
    if kind == "command_execution":
        if first:
            seen[item_id] = 0
            transcript.tool_calls[f"shell:{_program(item.get('command'))}"] += 1
        if event.get("type") == "item.completed" and item.get("status") == "declined":
            transcript.read_denials += 1
    elif kind == "mcp_tool_call":
        name = f"mcp__{item.get('server')}__{item.get('tool')}"
        if first:
            seen[item_id] = len(transcript.mcp_calls)
            transcript.tool_calls[name] += 1
            transcript.mcp_calls.append(dict(item))
        else:
            transcript.mcp_calls[seen[item_id]] = dict(item)
    elif kind in _FORBIDDEN_ITEMS and first:
        seen[item_id] = 0
        transcript.forbidden.append(_FORBIDDEN_ITEMS[kind])
    elif kind == "agent_message" and event.get("type") == "item.completed" and isinstance(item.get("text"), str):
        transcript.answer = item["text"]
    elif kind == "error" and event.get("type") == "item.completed":
        transcript.notices.append(str(item.get("message", "")))


def parse_codex_stream(lines: Iterable[str]) -> CodexTranscript:
    """Read ``codex exec --json`` lines (with or without newlines) into facts; never raises on content."""
    transcript = CodexTranscript()
    kinds: list[str] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        try:
            event = load_json(line, parse_float=float, parse_constant=float)
        except ValueError:
            transcript.line_problem(f"line {number} is not JSON")
            continue
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            transcript.line_problem(f"line {number} is not a JSON object with a type")
            continue
        kind = event["type"]
        if kind not in CODEX_EVENT_TYPES:
            transcript.line_problem(f"line {number}: unknown event type {kind!r} for codex 0.171.0")
            continue
        transcript.event_count += 1
        kinds.append(kind)
        if kind == "thread.started" and transcript.thread_id is None:
            transcript.thread_id = str(event.get("thread_id", ""))
        elif kind in _TERMINAL:
            transcript.terminal = event
            transcript.usage = _usage(event.get("usage")) if kind == "turn.completed" else None
            if kind == "turn.completed":
                _note_usage(event.get("usage"), number, transcript)
        elif kind.startswith("item.") and kind != "item.plan.delta":
            _read_item(event, number, transcript, seen)
        elif kind == "request_user_input":
            transcript.agent_requests += 1
        elif kind == "error":
            transcript.notices.append(str(event.get("message", "")))
    _check_grammar(kinds, transcript)
    return transcript


def _note_usage(value: Any, number: int, transcript: CodexTranscript) -> None:
    """Keep every readable running total (``usages``); a count that cannot be recorded or a total that goes
    backwards is a usage problem (a grammar problem: the attempt's setup is not what was measured)."""
    problem = usage_problem(value)
    if problem is not None:
        transcript.line_problem(f"line {number}: {problem}")
        return
    usage = _usage(value)
    assert usage is not None
    if transcript.usages and went_backwards(transcript.usages[-1], usage):
        transcript.line_problem(f"line {number}: turn.completed usage went backwards (a running total never "
                                f"shrinks; the largest one is charged)")
    transcript.usages.append(usage)
_RECONNECTING = re.compile(r"^Reconnecting\.\.\. \d+/\d+")


def codex_retries(notices: list[str]) -> list[int | str]:
    """The retries Codex reports (issue 33): one per ``error`` event ``Reconnecting... n/m (<cause>)``, each the
    refusal its cause names (``stream.codex_failures.codex_error_status``: an HTTP status such as 429, 529 or
    500, ``network``, ``timeout``) or ``unknown``. The stream gives no retry delay (stderr does)."""
    statuses: list[int | str] = []
    for notice in notices:
        if _RECONNECTING.match(notice):
            found = codex_error_status(notice.split("(", 1)[1] if "(" in notice else "")
            statuses.append("unknown" if found is None else found)
    return statuses


def _check_grammar(kinds: list[str], transcript: CodexTranscript) -> None:
    problems = transcript.grammar_problems
    if transcript.lines_not_listed:
        problems.append(f"{transcript.lines_not_listed} more lines break the grammar (not listed)")
    if not kinds or kinds[0] != "thread.started":
        problems.append("the first event is not thread.started")
    for kind, label in (("thread.started", "thread.started"), ("turn.started", "turn.started")):
        if kinds.count(kind) != 1:
            problems.append(f"{kinds.count(kind)} {label} events, expected exactly one")
    terminals = [i for i, kind in enumerate(kinds) if kind in _TERMINAL]
    if len(terminals) != 1:
        problems.append(f"{len(terminals)} terminal events (turn.completed / turn.failed), expected exactly one")
    if terminals and terminals[-1] != len(kinds) - 1:
        problems.append("the terminal event is not the last event")
    if transcript.terminal is not None and transcript.terminal["type"] == "turn.completed" \
            and transcript.usage is None:
        problems.append("turn.completed without readable usage")


def _call_error(call: Mapping[str, Any]) -> str:
    """A failed ``mcp_tool_call``'s own words, one line and bounded: its error message, else its result's text."""
    error = call.get("error")
    if isinstance(error, Mapping) and error.get("message"):
        return one_line(str(error["message"]))
    result = call.get("result")
    return one_line(result_text(result.get("content")) if isinstance(result, Mapping) else "")


def check_codex_setup(transcript: CodexTranscript, expected: CodexExpectations, stderr: str = "") -> list[str]:
    """Every setup problem of a Codex attempt, grammar problems first (one line each; never raises).

    ``stderr`` is the child's standard error text (only its ``required MCP servers failed to
    initialize`` line is read: Codex reports a failed required server there and nowhere else).
    """
    problems: list[str] = []
    failed_server = next((line.strip() for line in stderr.splitlines() if _REQUIRED_FAILED in line), None)
    if failed_server is not None:
        problems.append(f"the required MCP server failed to start: {failed_server[-300:]}")
    problems.extend(transcript.grammar_problems)
    allowed = set(expected.allowed_tools)
    for call in transcript.mcp_calls:
        server, tool = call.get("server"), call.get("tool")
        if expected.mcp_server is None:
            problems.append(f"an MCP tool call ({server}/{tool}) in the repository-only arm")
        elif server != expected.mcp_server or tool not in allowed:
            problems.append(f"MCP tool call {server}/{tool} outside the allowed set")
        error = call.get("error")
        message = str(error.get("message", "")) if isinstance(error, Mapping) else ""
        if any(word in message.lower() for word in _DENIED_MCP):
            problems.append(f"MCP tool call {server}/{tool} was cancelled or denied: {message[:200]}")
    mcp = [c for c in transcript.mcp_calls
           if expected.mcp_server is not None and c.get("server") == expected.mcp_server]
    if mcp and all(c.get("status") == "failed" for c in mcp):
        said = _call_error(mcp[0])
        problems.append(expected.lost + (f": the first call answered {said!r}" if said else ""))
    problems.extend(f"{what} in a read-only study" for what in transcript.forbidden)
    if transcript.agent_requests:
        problems.append("the agent asked for user input, which exec mode cannot give")
    return problems


def codex_outcome(process: ProcessFacts, transcript: CodexTranscript, expected: CodexExpectations,
                  stderr: str = "", cost_problem: str | None = None) -> Outcome:
    """The attempt's status (one of the six) and why, by :func:`agentstudy.stream.outcome.outcome`'s
    precedence: ``turn.completed`` stands for a successful ``result``, ``turn.failed`` for an
    error result (its message is the problem), no terminal event for none. Budget stops are the
    caller's (the per-attempt limit is enforced from the running usage; issue 21 item 4)."""
    terminal = transcript.terminal
    result: dict[str, Any] | None = None
    if terminal is not None and terminal["type"] == "turn.completed":
        result = {"subtype": "success", "is_error": False}
    elif terminal is not None:
        error = terminal.get("error")
        message = error.get("message") if isinstance(error, Mapping) else None
        result = {"subtype": f"turn.failed: {str(message)[:200]}", "is_error": True}
    return outcome(process, check_codex_setup(transcript, expected, stderr), cost_problem, result)
