"""What Gemini CLI 0.61.0 writes besides its stream, read after an attempt (pure, no IO).

- The session file (``$GEMINI_CLI_HOME/.gemini/tmp/<project>/chats/session-*.jsonl``): one JSON object a
  line; every ``{"type": "gemini", "model", "tokens": {input, output, cached, thoughts, tool, total}}`` line is
  one answered model request (:func:`session_usage`; the CLI writes a message again, same ``id``, as it
  updates it: the last line of each ``id`` counts). Lines of other shapes (the header, ``{"$set": ...}``
  updates, user turns) are skipped; a ``gemini`` line with malformed tokens is a problem.
- The local telemetry file (``telemetry.target = "local"``, ``telemetry.outfile``; nothing leaves the
  machine): pretty-printed JSON log records one after another. :func:`telemetry_facts` reads the tools the
  CLI offered the model in its first request (``gen_ai.tool.definitions``) and the HTTP status of every
  failed request (``gemini_cli.api_error``, and ``gemini_cli.chat.content_retry`` for a stream that broke
  off: the CLI's own retries). 0.61.0 exports these records in batches on a timer and does not flush them
  when it exits on a fatal error, so the file can miss the last ones (measured under a persistent 429).
- The child's stderr: the CLI's retry loop prints ``Attempt N failed with status S. Retrying with backoff...``
  (``Attempt N failed. Retrying ...`` without a status: a reset) synchronously before each wait, so
  :func:`printed_retries` counts every request-level retry exactly; :func:`retry_statuses` merges the two.
  The request that ended the attempt is printed last as ``Error when talking to Gemini API ...`` with the
  error's fields indented below it (``status: 429``): :func:`printed_failure`.

:func:`reconcile` compares the session's per-request sums with ``result.stats`` (a disagreement is a
problem: the attempt's usage cannot be trusted).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentstudy.pricing.cost import CostProblem
from agentstudy.pricing.gemini import RequestUsage

__all__ = ["RECORD_LIMIT_BYTES", "TelemetryFacts", "printed_failure", "printed_retries", "reconcile", "retry_statuses",
           "session_usage", "telemetry_facts"]

RECORD_LIMIT_BYTES = 16 * 1024 * 1024
"""The most of each record file read after an attempt (bytes); a longer file is cut there."""
_TOKEN_KEYS = ("input", "output", "cached", "thoughts", "tool", "total")


def session_usage(text: str) -> tuple[list[RequestUsage], list[str]]:
    """Every answered request of a session file's ``text``, in order, and the problems found (one line each)."""
    requests: dict[str, RequestUsage] = {}
    problems: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            record = json.loads(line) if line.strip() else None
        except ValueError:
            problems.append(f"session file line {number} is not JSON")
            continue
        if not isinstance(record, dict) or record.get("type") != "gemini":
            continue
        tokens, model = record.get("tokens"), record.get("model")
        if not isinstance(tokens, dict) or not isinstance(model, str):
            problems.append(f"session file line {number}: a gemini message without tokens or model")
            continue
        try:
            usage = RequestUsage(model, *(tokens.get(k, 0) for k in _TOKEN_KEYS))
        except (CostProblem, TypeError) as error:
            problems.append(f"session file line {number}: {error}")
            continue
        requests[str(record.get("id", f"line-{number}"))] = usage  # a message is rewritten as it is updated
    return list(requests.values()), problems


def reconcile(requests: Sequence[RequestUsage], stats: Mapping[str, Any] | None) -> list[str]:
    """Where the session's per-request sums disagree with ``result.stats`` (input, output, cached tokens per
    model; summed over all models when the two name different models: the session file names the model
    requested, the stats the model that answered); ``[]`` when they agree or the stream has no stats."""
    models = stats.get("models") if isinstance(stats, Mapping) else None
    if not isinstance(models, Mapping):
        return []
    problems: list[str] = []
    seen = {r.model for r in requests}
    groups: list[tuple[str, list[RequestUsage], Mapping[str, Any]]] = []
    if seen == {str(m) for m in models}:
        groups = [(model, [r for r in requests if r.model == model], models[model]) for model in sorted(seen)]
    else:  # the stats name the answering model (the response's modelVersion), the session the requested one
        summed = {key: sum(v.get(key, 0) for v in models.values() if isinstance(v, Mapping) and
                           isinstance(v.get(key, 0), int)) for key in ("input_tokens", "output_tokens", "cached")}
        groups = [("all models", list(requests), summed)]
    for model, mine, theirs in groups:
        theirs = theirs if isinstance(theirs, Mapping) else {}
        for key, value in (("input_tokens", sum(r.input for r in mine)),
                           ("output_tokens", sum(r.output + r.thoughts for r in mine)),
                           ("cached", sum(r.cached for r in mine))):
            if theirs.get(key) != value:
                problems.append(f"the session file's {key} of {model} ({value}) disagrees with result.stats "
                                f"({theirs.get(key)!r})")
    return problems


@dataclass(frozen=True)
class TelemetryFacts:
    """``first_tools``: the function names of the first request (``None``: no request was recorded);
    ``error_statuses``: the HTTP status of each failed request, in order (0 when it had none: a reset, or a
    stream that broke off after its HTTP 200)."""

    first_tools: tuple[str, ...] | None
    error_statuses: tuple[int, ...]
    request_errors: tuple[int, ...] = ()
    """The ``gemini_cli.api_error`` part of ``error_statuses`` alone (the request-level retries), in order."""


_NAME_RE = re.compile(r'"name"\s*:\s*"([^"]+)"')


def _records(text: str) -> list[dict[str, Any]]:
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    index = 0
    while True:
        start = text.find("{", index)
        if start < 0:
            return found
        try:
            value, index = decoder.raw_decode(text, start)
        except ValueError:
            index = start + 1
            continue
        if isinstance(value, dict):
            found.append(value)


def _attributes(record: Mapping[str, Any]) -> Mapping[str, Any]:
    attributes = record.get("attributes")
    return attributes if isinstance(attributes, Mapping) else {}


def telemetry_facts(text: str) -> TelemetryFacts:
    """The facts :class:`TelemetryFacts` names, from a local telemetry file's ``text`` (never raises)."""
    first: tuple[str, ...] | None = None
    errors: list[int] = []
    requests: list[int] = []
    for record in _records(text):
        attributes = _attributes(record)
        definitions = attributes.get("gen_ai.tool.definitions")
        if first is None and isinstance(definitions, str):
            try:
                declared = json.loads(definitions)
            except ValueError:
                declared = None
            names = [str(d.get("name")) for tool in declared if isinstance(tool, Mapping)
                     for d in tool.get("functionDeclarations") or [] if isinstance(d, Mapping)] \
                if isinstance(declared, list) else _NAME_RE.findall(definitions)
            first = tuple(names)
        if attributes.get("event.name") == "gemini_cli.api_error":
            status = attributes.get("status_code")
            errors.append(status if isinstance(status, int) and not isinstance(status, bool) else 0)
            requests.append(errors[-1])
        elif attributes.get("event.name") == "gemini_cli.chat.content_retry":  # a broken stream sent again
            errors.append(0)
    return TelemetryFacts(first, tuple(errors), tuple(requests))


_PRINTED_RETRY = re.compile(r"^Attempt (\d+) failed(?: with status (\d{3}))?\. Retrying with backoff", re.MULTILINE)


def printed_retries(stderr: str) -> tuple[int, ...]:
    """The HTTP status of every request the CLI's retry loop sent again, in order, from its ``stderr`` text
    (0 for a failure without a status: a reset or a refused connection); ``()`` when none was printed.
    The refusal that ends an attempt (``... Max attempts reached``) is no retry and is not counted."""
    return tuple(int(match.group(2) or 0) for match in _PRINTED_RETRY.finditer(stderr))


def retry_statuses(printed: Sequence[int], telemetry: TelemetryFacts, stderr_complete: bool = True) -> tuple[int, ...]:
    """The attempt's ``apiRetryStatuses``: the telemetry's full order (request errors and broken streams sent
    again) when its request errors are exactly the ``printed`` retries; else the ``printed`` ones (exact: the
    telemetry missed a record it had not flushed) followed by the telemetry's broken-stream retries (status 0;
    a lower bound). With ``stderr_complete`` false (the kept stderr tail was cut) the longer evidence wins."""
    if list(telemetry.request_errors) == list(printed):
        return telemetry.error_statuses
    if not stderr_complete and len(telemetry.request_errors) > len(printed):
        return telemetry.error_statuses
    broken = len(telemetry.error_statuses) - len(telemetry.request_errors)
    return (*printed, *(0,) * broken)


_FINAL_ERROR = "Error when talking to Gemini API"
_STATUS_FIELD = re.compile(r"^\s+status: (\d{3})\s*$")
_NETWORK_WORDS = ("fetch failed", "ECONNRESET", "ECONNREFUSED", "ETIMEDOUT", "socket hang up", "terminated")


def printed_failure(stderr: str) -> int | str | None:
    """The refusal that ended the attempt, from the CLI's last ``Error when talking to Gemini API`` block on
    ``stderr``: its ``status`` field (an HTTP status), ``"network"`` when the request never got one (a reset,
    a refused connection), ``None`` when no such block was printed or it names neither."""
    at = stderr.rfind(_FINAL_ERROR)
    if at < 0:
        return None
    first, *rest = stderr[at:].splitlines() or [""]
    for line in rest:
        if line and not line[0].isspace() and not line.startswith("}"):
            break  # the block ends at the next unindented line
        match = _STATUS_FIELD.match(line)
        if match:
            return int(match.group(1))
    return "network" if any(word in first for word in _NETWORK_WORDS) else None
