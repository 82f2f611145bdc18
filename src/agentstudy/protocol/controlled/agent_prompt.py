"""The prompt a bundled provider or adjudicator adapter gives its agent (issue 34). Pure.

The prompt is a fixed instruction, the output schema, and the runner's request as one compact
JSON line after :data:`REQUEST_MARKER` (so a scripted rehearsal model can read the request back).
The request holds no path (digest 5.7); the agent's working directory is the repository root.
"""

from __future__ import annotations

import json
from typing import Any

from agentstudy.protocol.controlled.provider_output import ADJUDICATOR_OUTPUT_SCHEMA, PROVIDER_OUTPUT_SCHEMA

__all__ = ["REQUEST_MARKER", "adjudicator_prompt", "provider_prompt", "request_in_prompt"]

REQUEST_MARKER = "Request (JSON, one line):"
"""The line after which the prompt's last line is the runner's request."""

_PROVIDER_TEXT = (
    "You are the agent of one task of a controlled study. Your working directory is the repository the task is "
    "about; it is read-only. Do the task the request below describes with the tools you have: read and search "
    "the repository, cite evidence by the request's evidenceRequirements ids, and establish each acceptance check "
    "by reading the files it names (you cannot run programs from the repository). Never modify files or use the "
    "network. Then reply with exactly one JSON object matching the JSON Schema below and nothing else: no prose, "
    "no code fence. Report measurements as a list of {name, value}, using the names the request's response text "
    "lists (acceptanceChecksPassed, acceptanceChecksTotal, acceptanceChecksExecuted, ...)."
)
_ADJUDICATOR_TEXT = (
    "You are an independent adjudicator of one observation of a controlled study. Judge only the candidate record "
    "in the request below against its task and rubric, as its instruction says; you need no tool. Reply with "
    "exactly one JSON object matching the JSON Schema below and nothing else: no prose, no code fence."
)


def _prompt(text: str, schema: dict[str, Any], request: dict[str, Any]) -> str:
    compact = json.dumps(request, ensure_ascii=False, separators=(",", ":"))
    return f"{text}\n\nJSON Schema of your reply:\n{json.dumps(schema, separators=(',', ':'))}\n\n" \
           f"{REQUEST_MARKER}\n{compact}"


def provider_prompt(request: dict[str, Any]) -> str:
    """The agent's prompt for one provider request (``doc-bridge.study-provider.v1``)."""
    return _prompt(_PROVIDER_TEXT, PROVIDER_OUTPUT_SCHEMA, request)


def adjudicator_prompt(request: dict[str, Any]) -> str:
    """The agent's prompt for one adjudicator request (``doc-bridge.study-adjudicator.v1``)."""
    return _prompt(_ADJUDICATOR_TEXT, ADJUDICATOR_OUTPUT_SCHEMA, request)


def request_in_prompt(prompt: str) -> dict[str, Any] | None:
    """The request a prompt of :func:`provider_prompt` / :func:`adjudicator_prompt` carries, or ``None``."""
    _head, marker, tail = prompt.rpartition(REQUEST_MARKER)
    if not marker:
        return None
    try:
        request = json.loads(tail.strip())
    except ValueError:
        return None
    return request if isinstance(request, dict) else None
