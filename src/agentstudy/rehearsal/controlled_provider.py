"""A scripted provider for rehearsing ``agentstudy run`` without any account (study-provider-cli-v1).

``python -I -m agentstudy.rehearsal.controlled_provider [--fail-first-attempt]`` answers the
provider process contract deterministically from its request, with its working directory at
the repository root, and without a model:

- evidence: a requirement is cited when its description names a repository file (``docs/x.md``,
  ``package.json`` …) that exists under the working directory and is read;
- acceptance checks: a check whose command is ``grep -F '<text>' <file>`` is executed by
  reading the file (never by running a program) and passes when the text occurs in it; any
  other command is reported as not executed;
- tokens: ``ceil(bytes / 4)`` of what it read and wrote, labelled ``estimate`` (nothing here is
  provider usage); ``toolCalls`` counts file reads; ``firstEvidenceLatencyMs`` is measured.

It reads the session id from ``DOC_BRIDGE_STUDY_SESSION_ID`` (exit 2 without one) and logs one
line to stderr. ``--fail-first-attempt`` exits 1 when the session id ends in ``-1``, so a retry
can be rehearsed. ``--latency-ms MS`` answers after MS ms, as a real model would take a while
(issue 19); ``--trace FILE`` appends ``start <ns>`` and ``end <ns>`` lines (``time.time_ns``) around
the answer, so a test can count how many children ran at once. Standard library only, so a child
starts fast.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

PROTOCOL = "doc-bridge.study-provider.v1"
SESSION_ENV = "DOC_BRIDGE_STUDY_SESSION_ID"
MAX_REQUEST_BYTES = 8_000_000
MAX_FILE_BYTES = 1_000_000
_FILE_NAME = re.compile(r"(?<![\w/.-])([\w.-]+(?:/[\w.-]+)*\.(?:md|py|ts|json|toml|txt))\b")


class Workspace:
    """Read-only access to files under the working directory; counts reads and bytes."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.reads = 0
        self.bytes_read = 0

    def read(self, relative: str) -> str | None:
        """The text of ``relative`` under the root, or ``None`` (missing, outside the root, too big)."""
        candidate = (self.root / relative).resolve()
        if self.root not in candidate.parents or not candidate.is_file():
            return None
        if candidate.stat().st_size > MAX_FILE_BYTES:
            return None
        self.reads += 1
        data = candidate.read_bytes()
        self.bytes_read += len(data)
        return data.decode("utf-8", errors="replace")


def named_files(description: str) -> list[str]:
    """The repository file names (``docs/x.md``, ``package.json`` …) a requirement's description names."""
    return list(_FILE_NAME.findall(description))


def grep_check(command: str) -> tuple[str, str] | None:
    """``(text, file)`` of a check command ``grep -F '<text>' <file>``; ``None`` for any other command."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if len(words) != 4 or words[:2] != ["grep", "-F"]:
        return None
    return words[2], words[3]


def _grep_check(command: str, workspace: Workspace) -> bool | None:
    """Run ``grep -F '<text>' <file>`` by reading the file: passed, failed, or ``None`` (not executable)."""
    parts = grep_check(command)
    if parts is None:
        return None
    text = workspace.read(parts[1])
    return None if text is None else parts[0] in text


def answer(request: dict[str, Any], workspace: Workspace, started: float) -> dict[str, Any]:
    """The provider's answer object for one request (see the module docstring)."""
    cited: list[str] = []
    first_evidence_ms: int | None = None
    for requirement in request.get("evidenceRequirements", []):
        names = named_files(str(requirement.get("description", "")))
        if any(workspace.read(name) is not None for name in names):
            cited.append(str(requirement["id"]))
            if first_evidence_ms is None:
                first_evidence_ms = round((time.monotonic() - started) * 1000)
    checks = request.get("acceptanceChecks", [])
    results = [_grep_check(str(check.get("command", "")), workspace) for check in checks]
    executed = sum(result is not None for result in results)
    passed = sum(result is True for result in results)
    required = len(request.get("evidenceRequirements", []))
    complete = passed == len(checks) and len(cited) == required
    measurements: dict[str, float | int] = {
        "acceptanceChecksPassed": passed,
        "acceptanceChecksTotal": len(checks),
        "acceptanceChecksExecuted": executed,
        "searchHitRate": len(cited) / required if required else 0,
    }
    if first_evidence_ms is not None:
        measurements["timeToFirstEvidenceMs"] = first_evidence_ms
    body: dict[str, Any] = {
        "taskOutcome": "success" if complete else ("incomplete" if not passed and not cited else "partial"),
        "evidenceQuality": "high" if len(cited) == required else ("medium" if cited else "low"),
        "safetyOutcome": "safe",
        "evidenceIds": cited,
        "clarificationRequests": 0,
        "reworkCount": 0,
        "toolCalls": workspace.reads,
        "measurements": measurements,
    }
    if first_evidence_ms is not None:
        body["firstEvidenceLatencyMs"] = first_evidence_ms
    return body


def read_request(protocol: str, limit: int) -> tuple[bytes, dict[str, Any] | None]:
    """Read standard input (at most ``limit`` bytes): the raw bytes and the request object, or
    ``None`` when it is too large, not UTF-8 JSON, not an object, or not of ``protocol``."""
    raw = sys.stdin.buffer.read(limit + 1)
    try:
        request = json.loads(raw.decode("utf-8")) if len(raw) <= limit else None
    except (UnicodeDecodeError, json.JSONDecodeError):
        request = None
    if not isinstance(request, dict) or request.get("protocol") != protocol:
        return raw, None
    return raw, request


def add_pacing_options(parser: argparse.ArgumentParser) -> None:
    """``--latency-ms MS`` and ``--trace FILE`` (issue 19), shared with the rehearsal adjudicator."""
    parser.add_argument("--latency-ms", type=int, default=0, help="answer after this many milliseconds")
    parser.add_argument("--trace", type=Path, help="append 'start <ns>' and 'end <ns>' lines to this file")


def paced(options: argparse.Namespace, write: Callable[[], object]) -> None:
    """Run ``write`` (the answer) after ``options.latency_ms`` ms, between the trace lines if asked."""
    trace: Path | None = options.trace
    if trace is not None:
        with trace.open("a", encoding="utf-8") as handle:
            handle.write(f"start {time.time_ns()}\n")
    time.sleep(max(options.latency_ms, 0) / 1000)
    write()
    sys.stdout.flush()
    if trace is not None:
        with trace.open("a", encoding="utf-8") as handle:
            handle.write(f"end {time.time_ns()}\n")


def main(argv: list[str] | None = None) -> int:
    """Read the request from stdin, answer on stdout; exit 2 on a bad request, 1 when told to fail."""
    parser = argparse.ArgumentParser(prog="controlled_provider", description=__doc__.splitlines()[0])
    parser.add_argument("--fail-first-attempt", action="store_true",
                        help="exit 1 on attempt 1 (session id ending in -1), to rehearse a retry")
    add_pacing_options(parser)
    options = parser.parse_args(argv)
    started = time.monotonic()
    session = os.environ.get(SESSION_ENV, "")
    if not session:
        print(f"rehearsal provider: {SESSION_ENV} is not set", file=sys.stderr)
        return 2
    raw, request = read_request(PROTOCOL, MAX_REQUEST_BYTES)
    if request is None:
        print("rehearsal provider: the request is not a study-provider v1 request", file=sys.stderr)
        return 2
    task = request.get("task") or {}
    print(f"rehearsal provider: session {session}, task {task.get('taskId')}", file=sys.stderr)
    if options.fail_first_attempt and session.endswith("-1"):
        print("rehearsal provider: failing the first attempt as asked", file=sys.stderr)
        return 1
    workspace = Workspace(Path.cwd())
    body = answer(request, workspace, started)
    draft = json.dumps(body, separators=(",", ":"))
    body["inputTokens"] = math.ceil((len(raw) + workspace.bytes_read) / 4)
    body["outputTokens"] = math.ceil(len(draft.encode("utf-8")) / 4)
    body["tokenMethod"] = "estimate"
    paced(options, lambda: sys.stdout.write(json.dumps(body, separators=(",", ":")) + "\n"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
