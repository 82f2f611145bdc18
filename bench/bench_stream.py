"""Stream validation: a 4 MiB stream-json transcript through our evaluation, the floor and the SDK.

The transcript is assembled from real Claude Code 2.1.296 events (``../shared/transcripts``):
the ``init`` and ``result`` of the dontAsk MCP run, and between them, round after round, the
``assistant`` / ``user`` events of three real runs (a Read, MCP calls with list results, MCP
calls with plain-text results), message and tool ids renamed per round so every call is
distinct. Calls to tools outside the MCP arm's allowed set (and their results) are left out,
so the whole transcript validates: status ``completed``, every check run. It stops just under
the 4 MiB stdout bound.

Three ways over the same bytes, each decoding them and splitting on ``\\n`` first:
- ours: ``transports.cli_evaluation.evaluate_cli_attempt`` (the runner's and ``agentstudy
  transcript``'s path): parse every line, setup checks, ``modelUsage``, both costs, outcome;
- floor: a bare ``json.loads`` per non-empty line, nothing kept;
- SDK: ``claude-agent-sdk``'s stdout line parser (``_parse_stdout_line``) and message parser
  (``parse_message``) per line, which build typed message objects and check nothing.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from typing import Any, cast

from agentstudy.protocol.manifest import DOC_BRIDGE_MCP
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER
from agentstudy.stream.outcome import ProcessFacts
from agentstudy.transports.cli_args import ArmTools, arm_tools
from agentstudy.transports.cli_evaluation import CliEvaluation, evaluate_cli_attempt
from bench.common import TRANSCRIPTS, Skipped, Stats, Timer, interleave, package_version, ratio, timed

LIMIT = 4 * 1024 * 1024
FRAME = "15-mcp-calls-dontAsk"
"""The run whose ``init`` and ``result`` frame the transcript."""
SOURCES = ("01-read-readme-apikey", "15-mcp-calls-dontAsk", "37-mcp-calls-default-mode-plain-text-results")
"""Real runs whose middle events are repeated."""
MODEL = "claude-haiku-4-5"
POLICY: ArmTools = arm_tools(DOC_BRIDGE_MCP, DEFAULT_MCP_SERVER, ())
PROCESS = ProcessFacts(started=True, timed_out=False, truncated=False, exit_code=0)


def _lines(name: str) -> list[str]:
    path = TRANSCRIPTS / f"{name}.stdout.jsonl"
    if not path.exists():
        raise Skipped(f"transcript not found: {path}")
    return [line for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]


def _allowed_middle(lines: list[str]) -> list[str]:
    """The ``assistant`` / ``user`` lines of a run, without calls outside the allowed set or their results."""
    kept: list[str] = []
    refused: set[str] = set()
    for line in lines:
        event = json.loads(line)
        if event.get("type") not in ("assistant", "user"):
            continue
        blocks = event.get("message", {}).get("content")
        blocks = blocks if isinstance(blocks, list) else []
        uses = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
        if any(b.get("name") not in POLICY.allowed for b in uses):
            refused.update(str(b.get("id")) for b in uses)
            continue
        if any(isinstance(b, dict) and b.get("tool_use_id") in refused for b in blocks):
            continue
        kept.append(line)
    return kept


def build_stdout(limit: int = LIMIT) -> bytes:
    """Real events, repeated with fresh ids until the bytes just fit under ``limit``."""
    frame = _lines(FRAME)
    init = next(line for line in frame if json.loads(line).get("subtype") == "init")
    result = frame[-1]
    pools = [_allowed_middle(_lines(name)) for name in SOURCES]
    body: list[str] = []
    size = len(init.encode()) + len(result.encode()) + 2
    round_number = 0
    while True:
        batch: list[str] = []
        for source, pool in enumerate(pools):
            tag = f"r{round_number}s{source}_"
            batch.extend(line.replace('"msg_', f'"msg_{tag}').replace('"toolu_', f'"toolu_{tag}') for line in pool)
        extra = sum(len(line.encode()) + 1 for line in batch)
        if size + extra > limit:
            break
        body.extend(batch)
        size += extra
        round_number += 1
    return ("\n".join([init, *body, result]) + "\n").encode("utf-8")


def ours(stdout: bytes) -> CliEvaluation:
    """Our parse and full validation (the runner's path)."""
    return evaluate_cli_attempt(stdout, PROCESS, model=MODEL, tools=POLICY)


def floor(stdout: bytes) -> int:
    """A bare ``json.loads`` per non-empty line; returns the number of lines."""
    count = 0
    for line in stdout.decode("utf-8").split("\n"):
        if line:
            json.loads(line)
            count += 1
    return count


def sdk_parser() -> Callable[[bytes], int]:
    """The SDK's per-line parse (framing, JSON, typed message); raises ``Skipped`` when it is not installed."""
    if package_version("claude-agent-sdk") is None:
        raise Skipped("skipped: not installed (pip install claude-agent-sdk)")
    try:  # private modules: the SDK's own read path, which may move between its versions
        transport = importlib.import_module("claude_agent_sdk._internal.transport.subprocess_cli")
        parser = importlib.import_module("claude_agent_sdk._internal.message_parser")
        parse_line = cast(Callable[[str], "dict[str, Any] | None"], transport._parse_stdout_line)
        parse_message = cast(Callable[["dict[str, Any]"], object], parser.parse_message)
    except (ImportError, AttributeError) as error:
        version = package_version("claude-agent-sdk")
        raise Skipped(f"skipped: claude-agent-sdk {version} moved its parser ({error})") from None

    def parse(stdout: bytes) -> int:
        count = 0
        for line in stdout.decode("utf-8").split("\n"):
            data = parse_line(line)
            if data is not None and parse_message(data) is not None:
                count += 1
        return count

    return parse


def run(repeats: int) -> dict[str, Any]:
    """Time the three ways interleaved; return the JSON section."""
    stdout = build_stdout()
    evaluation = ours(stdout)
    lines = floor(stdout)
    methods: dict[str, Timer] = {
        "ours": lambda: timed(lambda: ours(stdout)),
        "json_loads": lambda: timed(lambda: floor(stdout)),
    }
    sdk_note = None
    try:
        sdk = sdk_parser()
        sdk_messages = sdk(stdout)
        methods["sdk"] = lambda: timed(lambda: sdk(stdout))
    except Skipped as why:
        sdk_note, sdk_messages = str(why), None
    stats = interleave(methods, dict.fromkeys(methods, repeats))
    megabytes = len(stdout) / 1e6

    def column(stat: Stats) -> dict[str, Any]:
        return {**stat.to_json(), "mb_per_s_median": round(megabytes / stat.median, 1)}

    section: dict[str, Any] = {
        "input": {
            "bytes": len(stdout),
            "lines": lines,
            "tool_calls": evaluation.fields["tool_calls"],
            "status": evaluation.status,
            "setup_problems": list(evaluation.setup_problems),
            "sdk_messages": sdk_messages,
            "frame": FRAME,
            "sources": list(SOURCES),
        },
        "ours": column(stats["ours"]),
        "json_loads": column(stats["json_loads"]),
        "ratio_ours_to_json_loads": ratio(stats["ours"], stats["json_loads"]),
        "target_ratio_ours_to_json_loads_max": 2.0,
    }
    if "sdk" in stats:
        section["sdk"] = column(stats["sdk"])
        section["ratio_ours_to_sdk"] = ratio(stats["ours"], stats["sdk"])
    else:
        section["sdk"] = {"skipped": sdk_note}
        section["ratio_ours_to_sdk"] = None
    section["target_ratio_ours_to_sdk_max"] = 1.0
    return section
