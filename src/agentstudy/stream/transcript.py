"""Parse a Claude Code stream-json transcript into facts (seed 000, "The stream is read line by line").

Tolerant of what the real CLI emits: unknown ``system`` subtypes, ``stream_event`` lines, a
first line that is not ``init``, and several ``assistant`` events sharing one ``message.id``
(one per content block). Shape problems are collected, never raised: a non-JSON line (or a
JSON line that is not an object), not exactly one ``result``, a ``result`` that is not last,
more than one ``init``, and a ``tool_use`` block without a string ``id`` and ``name`` (a call
that cannot be identified cannot be shown to be allowed). The last ``result`` is still read,
so that its cost can be charged.

The current Claude Code line's other events (issue 33) are accepted: each ``system``/``api_retry``
(a request the API refused, sent again: ``attempt``, ``max_retries``, ``retry_delay_ms``,
``error_status``) is counted with its delay and status, ``rate_limit_event`` lines are counted
(one may follow the ``result``: it does not make the result "not last"), and other ``system``
subtypes, ``stream_event``, ``tool_progress`` and the like are ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentstudy.protocol.json_input import JsonInputError, load_json
from agentstudy.protocol.treatment import content_text, server_not_ready, text_bytes

SYNTHETIC_MODEL = "<synthetic>"
"""The ``message.model`` Claude Code gives messages it wrote itself (an API error's text): no model answered."""

LINE_PROBLEMS_LISTED = 20
"""Line problems listed one by one; more are counted in one problem."""


@dataclass(frozen=True)
class ToolUse:
    """A ``tool_use`` block: its ``id`` and full tool ``name``."""

    id: str
    name: str


@dataclass
class Transcript:
    """Facts read from one transcript.

    Attributes:
        event_count: how many lines were JSON objects (the events themselves are not kept:
            holding a 4 MiB stream's objects would double the cost of reading it).
        shape_problems: reasons the stream's shape is broken (setup problems).
        init: the first ``system``/``init`` event, if any.
        result: the last ``result`` event, if any.
        tool_uses: distinct ``tool_use`` blocks by id, in first-seen order.
        tool_errors: ids of ``tool_use`` blocks whose ``tool_result`` had ``is_error: true``.
        tool_error_texts: the start of each such result's text by id (at most
            ``ERROR_TEXT_CHARS`` characters, one line): the server's own words (issue 32).
        answered_tool_ids: ids of ``tool_use`` blocks that received any ``tool_result``.
        message_prompts: prompt size (input + cache read + cache write tokens) per distinct
            ``message.id`` of ``assistant`` events (in first-seen order: the first is the first request).
        result_bytes: UTF-8 bytes of each ``tool_result``'s text by ``tool_use`` id (issue 28).
        models: the ``message.model`` of ``assistant`` events, distinct, in first-seen order (issue 28:
            the model that answered, from the stream).
        lines_not_listed: broken lines beyond the first ``LINE_PROBLEMS_LISTED`` (counted and said in
            one problem: a stream of junk lines cannot make a ledger of megabytes).
    """

    event_count: int = 0
    shape_problems: list[str] = field(default_factory=list)
    lines_not_listed: int = 0
    init: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    tool_uses: dict[str, ToolUse] = field(default_factory=dict)
    tool_errors: set[str] = field(default_factory=set)
    tool_error_texts: dict[str, str] = field(default_factory=dict)
    answered_tool_ids: set[str] = field(default_factory=set)
    message_prompts: dict[str, int] = field(default_factory=dict)
    api_retries: int = 0
    """``system``/``api_retry`` events: requests the CLI sent again after a refusal (issue 33)."""
    api_retry_wait_ms: int = 0
    """The sum of their ``retry_delay_ms``."""
    api_retry_statuses: list[int | str] = field(default_factory=list)
    """Their ``error_status`` in order (``network`` when the event names none)."""
    rate_limit_events: int = 0
    """``rate_limit_event`` lines (Claude Code 2.1.45 and later)."""
    result_bytes: dict[str, int] = field(default_factory=dict)
    not_ready: set[str] = field(default_factory=set)
    """``tool_use`` ids whose result says the server is not ready (``protocol.treatment.server_not_ready``)."""
    models: list[str] = field(default_factory=list)

    def tool_calls_by_name(self) -> dict[str, int]:
        """Count of distinct ``tool_use`` ids per full tool name (refused calls included)."""
        counts: dict[str, int] = {}
        for use in self.tool_uses.values():
            counts[use.name] = counts.get(use.name, 0) + 1
        return counts

    def tool_errors_by_name(self) -> dict[str, int]:
        """Count of ``tool_result`` blocks with ``is_error: true`` per full tool name."""
        counts: dict[str, int] = {}
        for tool_id in self.tool_errors:
            use = self.tool_uses.get(tool_id)
            if use is not None:
                counts[use.name] = counts.get(use.name, 0) + 1
        return counts

    def permission_denials(self) -> list[dict[str, Any]]:
        """The result's ``permission_denials`` entries (``tool_name``, ``tool_use_id``, ``tool_input``)."""
        denials = self.result.get("permission_denials") if self.result else None
        if not isinstance(denials, list):
            return []
        return [
            {
                "tool_name": d.get("tool_name"),
                "tool_use_id": d.get("tool_use_id"),
                "tool_input": d.get("tool_input"),
            }
            for d in denials
            if isinstance(d, Mapping)
        ]


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _line_problem(transcript: Transcript, text: str) -> None:
    """One line's shape problem: listed up to ``LINE_PROBLEMS_LISTED``, counted after."""
    if len(transcript.shape_problems) < LINE_PROBLEMS_LISTED:
        transcript.shape_problems.append(text)
    else:
        transcript.lines_not_listed += 1


def _read_assistant(event: Mapping[str, Any], transcript: Transcript, number: int) -> None:
    message = event.get("message")
    if not isinstance(message, Mapping):
        return
    message_id = message.get("id")
    usage = message.get("usage")
    model = message.get("model")
    if isinstance(model, str) and model != SYNTHETIC_MODEL and model not in transcript.models:
        transcript.models.append(model)
    if isinstance(message_id, str) and isinstance(usage, Mapping):
        prompt = (
            _int(usage.get("input_tokens"))
            + _int(usage.get("cache_read_input_tokens"))
            + _int(usage.get("cache_creation_input_tokens"))
        )
        transcript.message_prompts[message_id] = max(prompt, transcript.message_prompts.get(message_id, 0))
    content = message.get("content")
    if not isinstance(content, list):
        return
    malformed = False
    for block in content:
        if isinstance(block, Mapping) and block.get("type") == "tool_use":
            tool_id, name = block.get("id"), block.get("name")
            if not isinstance(tool_id, str) or not isinstance(name, str):
                malformed = True  # a call that cannot be identified cannot be shown to be allowed
            elif tool_id not in transcript.tool_uses:
                transcript.tool_uses[tool_id] = ToolUse(tool_id, name)
    if malformed:
        _line_problem(transcript, f"line {number} has a tool_use block without a string id and name")


ERROR_TEXT_CHARS = 200
"""How much of a failed tool call's answer a setup problem quotes."""


def one_line(text: str, limit: int = ERROR_TEXT_CHARS) -> str:
    """``text`` on one line (whitespace runs as one space), at most ``limit`` characters (``…`` when cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def result_text(content: Any) -> str:
    """The text blocks of a tool result's ``content`` (a string, or a list of ``{type: text}`` blocks) joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(b.get("text", "")) for b in content if isinstance(b, Mapping) and b.get("type") == "text")
    return ""


def _read_user(event: Mapping[str, Any], transcript: Transcript) -> None:
    message = event.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(content, list):
        return
    for block in content:
        if isinstance(block, Mapping) and block.get("type") == "tool_result":
            tool_id = block.get("tool_use_id")
            if isinstance(tool_id, str):
                transcript.answered_tool_ids.add(tool_id)
                transcript.result_bytes[tool_id] = text_bytes(content_text(block.get("content")))
                if server_not_ready(content_text(block.get("content"))):
                    transcript.not_ready.add(tool_id)
                if block.get("is_error") is True:
                    transcript.tool_errors.add(tool_id)
                    transcript.tool_error_texts.setdefault(tool_id, one_line(result_text(block.get("content"))))


def _read_api_retry(event: Mapping[str, Any], transcript: Transcript) -> None:
    """Count one ``system``/``api_retry`` event: its ``retry_delay_ms`` and ``error_status`` when well formed."""
    transcript.api_retries += 1
    delay = event.get("retry_delay_ms")
    if isinstance(delay, (int, float)) and not isinstance(delay, bool) and 0 <= delay < 86_400_000:
        transcript.api_retry_wait_ms += round(delay)
    status = event.get("error_status")
    if isinstance(status, int) and not isinstance(status, bool) and 100 <= status <= 599:
        transcript.api_retry_statuses.append(status)
    else:
        transcript.api_retry_statuses.append("network")


def parse_transcript(lines: Iterable[str]) -> Transcript:
    """Read stream-json lines (without or with trailing newlines) into a ``Transcript``.

    Blank lines are ignored. Never raises on content: problems land in ``shape_problems``.
    """
    transcript = Transcript()
    init_count = 0
    results: list[int] = []
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        try:
            # Bounded (depth, number length); NaN, Infinity and 1e999 are kept as floats so a
            # non-finite cost is judged an invalid cost, not an unreadable line.
            event = load_json(line, parse_float=float, parse_constant=float)
        except JsonInputError:  # not JSON, too deep, a number too long
            _line_problem(transcript, f"line {number} is not JSON")
            continue
        if not isinstance(event, dict):
            _line_problem(transcript, f"line {number} is not a JSON object")
            continue
        transcript.event_count += 1
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "init":
            init_count += 1
            if transcript.init is None:
                transcript.init = event
        elif kind == "assistant":
            _read_assistant(event, transcript, number)
        elif kind == "user":
            _read_user(event, transcript)
        elif kind == "result":
            results.append(transcript.event_count)
            transcript.result = event
        elif kind == "system" and event.get("subtype") == "api_retry":
            _read_api_retry(event, transcript)
        elif kind == "rate_limit_event":
            transcript.rate_limit_events += 1
            if results and results[-1] == transcript.event_count - 1:
                results[-1] = transcript.event_count  # a rate-limit notice after the result leaves it last
    if transcript.lines_not_listed:
        transcript.shape_problems.append(f"{transcript.lines_not_listed} more lines break the shape (not listed)")
    if init_count > 1:
        transcript.shape_problems.append(f"{init_count} init events")
    if len(results) != 1:
        transcript.shape_problems.append(f"{len(results)} result events, expected exactly one")
    if results and results[-1] != transcript.event_count:
        transcript.shape_problems.append("the result event is not the last event")
    return transcript
