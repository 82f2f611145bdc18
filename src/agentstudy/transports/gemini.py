"""One Gemini CLI attempt: launch ``gemini -p ... -o stream-json`` contained, read its records, check it.

``transports.cli`` makes the export and the private directories and spawns the child; this module says
what the child is. Under the attempt's private directory it makes ``home``, ``tmp`` and ``gemini-home``
(``GEMINI_CLI_HOME``), writes ``gemini-home/.gemini/settings.json`` and ``gemini-home/policy.toml``
(``transports.gemini_args``), and wraps the command in the run's containment (bubblewrap: the export and
the install read-only, the private directories writable; in the MCP arm the server command is the relay
of ``body.server_launcher``: the server runs in its own world, ``io.server_host``, as for every agent).
After the child ended, :func:`collect` reads the session file and the local telemetry file (bounded)
before the private directories go. :func:`evaluate_gemini_attempt` checks the stream (``stream.gemini``),
prices every request of the session file (``pricing.gemini``), reconciles the session with
``result.stats`` and checks that the treatment's MCP tools reached the model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentstudy.agents.base import Launch
from agentstudy.io.containment import NETWORK_NOT_ACHIEVED, SANDBOX_UID, SandboxView, command_paths, contain
from agentstudy.pricing.cost import AttemptCost, CostProblem
from agentstudy.pricing.gemini import RequestUsage, gemini_cost
from agentstudy.pricing.usd_json import usd_number
from agentstudy.protocol.mcp_spec import mcp_tool_name
from agentstudy.protocol.treatment import ServerCall, text_bytes, tool_set_sha256, treatment_record
from agentstudy.rehearsal.gemini_server import REHEARSAL_KEY
from agentstudy.stream.gemini import (
    GeminiExpectations,
    GeminiTranscript,
    gemini_outcome,
    mcp_parts,
    parse_gemini_stream,
)
from agentstudy.stream.gemini_records import (
    RECORD_LIMIT_BYTES,
    printed_failure,
    printed_retries,
    reconcile,
    retry_statuses,
    session_usage,
    telemetry_facts,
)
from agentstudy.stream.outcome import Outcome
from agentstudy.transports.cli import CliAttemptBody, CliSettings, RawAttempt
from agentstudy.transports.cli_evaluation import CliEvaluation
from agentstudy.transports.cli_isolation import isolation
from agentstudy.transports.gemini_args import (
    API_KEY_ENV,
    GeminiMcpServer,
    gemini_arguments,
    gemini_environment,
    gemini_settings,
    policy_toml,
    server_alias,
    settings_json,
)
from agentstudy.transports.gemini_watch import SessionWatch

__all__ = ["RECORDS", "SESSION", "STDERR_KEPT_BYTES", "TELEMETRY", "collect", "evaluate_gemini_attempt",
           "gemini_isolation", "gemini_launch"]

SESSION = "session"
TELEMETRY = "telemetry"
RECORDS = (SESSION, TELEMETRY)
"""The records :func:`collect` reads (``AgentCli.record_files``)."""
_TELEMETRY_FILE = "telemetry.jsonl"
STDERR_KEPT_BYTES = 64 * 1024
"""The tail of the child's stderr kept for the retry count (``stream.gemini_records.printed_retries``)."""


def _server(body: CliAttemptBody, launcher: Sequence[str]) -> GeminiMcpServer | None:
    spec = body.settings.arm_mcp(body.scenario)  # the arm's own server (issue 44)
    if spec is None:
        return None
    return GeminiMcpServer(server_alias(spec.name), launcher, {}, tuple(spec.read_only_tools))


def _api_key(settings: CliSettings, env_source: Mapping[str, str]) -> str | None:
    if settings.rehearsal_base_url is not None:
        return REHEARSAL_KEY
    if settings.gateway_base_url is not None:
        return settings.gateway_token
    return env_source.get(API_KEY_ENV)


def collect(gemini_home: Path) -> dict[str, bytes]:
    """The newest session file and the telemetry file under ``gemini_home``, each cut at
    ``RECORD_LIMIT_BYTES`` (missing ones are left out)."""
    found: dict[str, bytes] = {}
    sessions = sorted((gemini_home / ".gemini" / "tmp").glob("*/chats/session-*.jsonl"),
                      key=lambda p: p.stat().st_mtime)
    for name, path in ((SESSION, sessions[-1] if sessions else None), (TELEMETRY, gemini_home / _TELEMETRY_FILE)):
        if path is not None and path.is_file() and not path.is_symlink():
            with path.open("rb") as handle:
                found[name] = handle.read(RECORD_LIMIT_BYTES)
    return found


def gemini_launch(body: CliAttemptBody, export: Path, scratch: Path, env_source: Mapping[str, str]) -> Launch:
    """The contained ``gemini`` child of one attempt (``AgentCli.launch``).

    Raises:
        ContainmentError: bubblewrap was asked for and is not installed.
    """
    settings = body.settings
    home, tmp, gemini_home = scratch / "home", scratch / "tmp", scratch / "gemini-home"
    for directory in (home, tmp, gemini_home, gemini_home / ".gemini"):
        directory.mkdir(mode=0o700)
    relay = body.server_launcher if body.settings.arm_mcp(body.scenario) is not None and body.server is not None \
        else None
    server = None if relay is None else _server(body, relay.argv)
    config = gemini_settings(mcp=server, max_attempts=settings.max_retries + 1,
                             telemetry_file=str(gemini_home / _TELEMETRY_FILE))
    (gemini_home / ".gemini" / "settings.json").write_text(settings_json(config), encoding="utf-8")
    policy = gemini_home / "policy.toml"
    policy.write_text(policy_toml(None if server is None else server.name), encoding="utf-8")
    env = gemini_environment(env_source, home=str(home), tmpdir=str(tmp), gemini_home=str(gemini_home),
                             base_url=settings.base_url, api_key=_api_key(settings, env_source))
    command = [str(settings.binary), *gemini_arguments(prompt=body.prompt, model=settings.model,
                                                       policy_file=str(policy),
                                                       mcp_server=None if server is None else server.name)]
    read_only = [export, *command_paths(str(settings.binary), env.get("PATH")), *(relay.read_only if relay else ())]
    view = SandboxView(cwd=export, read_only=tuple(dict.fromkeys(read_only)),
                       writable=(home, tmp, gemini_home, *(relay.writable if relay else ())), uid=SANDBOX_UID)
    return Launch(contain(settings.containment, view, command), env, keep_stderr=STDERR_KEPT_BYTES,
                  watch=SessionWatch(gemini_home, body.reservation_usd), collect=lambda: collect(gemini_home))


def _output_problems(requests: Sequence[RequestUsage], transcript: GeminiTranscript,
                     session_problems: Sequence[str]) -> list[str]:
    """Where the agent's own records contradict each other or break their grammar: the session file's malformed
    lines and its per-request sums against ``result.stats`` (none without a ``result``; without any answered
    request the session is missing, not contradicting: a cost problem). Issue 45: an output problem like a
    broken stream, never a cost problem alone."""
    if transcript.result is None:
        return []
    return [*session_problems, *(reconcile(requests, transcript.result.get("stats")) if requests else [])]


def _price(requests: Sequence[RequestUsage], transcript: GeminiTranscript,
           output_problems: Sequence[str]) -> tuple[AttemptCost | None, str | None]:
    if transcript.result is None:
        return None, None
    problems = [*output_problems]
    if not requests:
        problems += reconcile(requests, transcript.result.get("stats"))
    if not requests and transcript.result.get("status") == "success":
        problems.append("no answered request in the session file")
    if problems:
        return None, "; ".join(problems)
    try:
        return gemini_cost(requests), None
    except CostProblem as problem:
        return None, str(problem)


def _treatment(body: CliAttemptBody, transcript: GeminiTranscript, offered: tuple[str, ...] | None,
               requests: Sequence[RequestUsage], server: str | None) -> dict[str, Any]:
    calls = [ServerCall(mcp_parts(str(use["tool_name"]), server) or "" if server is not None else str(use["tool_name"]),
                        transcript.tool_results.get(tool_id, {}).get("status") != "success",
                        text_bytes(str(transcript.tool_results.get(tool_id, {}).get("output", ""))))
             for tool_id, use in transcript.tool_uses.items()
             if str(use["tool_name"]).startswith(f"mcp_{server}_" if server is not None else "mcp_")]
    own = [mcp_parts(n, server) or "" for n in offered or () if server is not None and mcp_parts(n, server)]
    builtins = sorted(n for n in offered or () if not n.startswith("mcp_"))
    record = treatment_record(server=server, offered_server_tools=own, evidence="request" if offered is not None
                              else "none", calls=calls, answering_models=transcript.answering_models,
                              first_request_input_tokens=requests[0].input if requests else None)
    return record.model_copy(update={"builtin_tools_sha256": tool_set_sha256(builtins)}).to_json()


def _fields(body: CliAttemptBody, transcript: GeminiTranscript, requests: Sequence[RequestUsage],
            offered: tuple[str, ...] | None, retries: tuple[int, ...], server: str | None,
            final: int | str | None) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for name, n in transcript.tool_calls.items():
        tool = mcp_parts(name, server) if server is not None else None
        key = mcp_tool_name((body.settings.arm_mcp(body.scenario) or body.settings.mcp).name, tool) \
            if tool is not None else name
        counts[key] = counts.get(key, 0) + n
    errors: dict[str, int] = {}
    for tool_id, result in transcript.tool_results.items():
        if result.get("status") == "error":
            name = str(transcript.tool_uses.get(tool_id, {}).get("tool_name", ""))
            errors[name] = errors.get(name, 0) + 1
    result = transcript.result or {}
    error = result.get("error")
    complete = bool(requests) and transcript.result is not None
    return {
        "model": body.settings.model,
        "tools": None if offered is None else list(offered),
        "mcp_servers": None,
        "tool_calls_by_name": counts,
        "tool_calls": sum(counts.values()),
        "permission_denials": [],
        "tool_errors_by_name": errors,
        "input_tokens": sum(r.input - r.cached + r.tool for r in requests) if requests else None,
        "output_tokens": sum(r.output + r.thoughts for r in requests) if requests else None,
        "cache_creation_input_tokens": 0 if requests else None,
        "cache_read_input_tokens": sum(r.cached for r in requests) if requests else None,
        "num_turns": len(requests) if requests else None,
        "cli_subtype": None if transcript.result is None else str(result.get("status")),
        "is_error": None if transcript.result is None else result.get("status") != "success",
        "usage_complete": complete,
        "answer_text": transcript.answer,
        "api_retries": len(retries),
        "api_retry_wait_ms": None,
        "api_retry_statuses": list(retries),
        "api_error_status": final if final is not None and transcript.result is not None and result.get("status")
        != "success" else str(error.get("type")) if isinstance(error, Mapping) and error.get("type") else None,
        "treatment": _treatment(body, transcript, offered, requests, server),
    }


def evaluate_gemini_attempt(body: CliAttemptBody, raw: RawAttempt) -> CliEvaluation:
    """What one Gemini attempt's stdout and records mean (pure; ``AgentCli.evaluate``; never raises on content).

    The stream checks (``stream.gemini``; a child killed by its timeout, bound or a stop is not checked for
    setup), the fidelity check (the MCP tools of the first request, from the telemetry file), the computed
    cost of the session file's requests, and the status. A session file that disagrees with ``result.stats``
    (or has malformed lines) is an invalid output, as a broken stream is (issue 45): ``invalid-setup`` with
    the disagreement as its problem, the minimal study's word for an output that breaks its contract
    (seed minimal-study-runner-v1), and its usage is not trusted (no computed cost: the attempt is charged at
    least its whole reservation). A success without any answered request in the session file stays a cost
    problem (``invalid-cost``: nothing to price). Gemini CLI reports no cost (``reported_cost_usd`` is ``None``).
    """
    settings = body.settings
    transcript = parse_gemini_stream(raw.stdout.decode("utf-8", "replace").split("\n"))
    requests, session_problems = session_usage(raw.agent_files.get(SESSION, b"").decode("utf-8", "replace"))
    facts = telemetry_facts(raw.agent_files.get(TELEMETRY, b"").decode("utf-8", "replace"))
    stderr = raw.stderr.decode("utf-8", "replace")
    retries = retry_statuses(printed_retries(stderr), facts, stderr_complete=raw.stderr_bytes <= len(raw.stderr))
    spec = settings.arm_mcp(body.scenario)  # the arm's own server (issue 44)
    server = server_alias(spec.name) if spec is not None else None
    expected = GeminiExpectations(server, tuple((spec or settings.mcp).read_only_tools), facts.first_tools)
    output_problems = _output_problems(requests, transcript, session_problems)
    cost, cost_problem = _price(requests, transcript, output_problems)
    killed = raw.facts.timed_out or raw.facts.truncated or raw.facts.stopped
    decided = gemini_outcome(raw.facts, GeminiTranscript() if killed else transcript, expected,
                             None if killed else cost_problem, () if killed else output_problems)
    problems = tuple(decided.problem.split("; ")) if decided.status == "invalid-setup" and decided.problem else ()
    if raw.watch_stop is not None and not raw.facts.stopped:  # the running limit (transports.gemini_watch)
        decided = Outcome("budget-exceeded", raw.watch_stop, raw.watch_stop)
    peak = raw.running_peak_usd
    if peak is not None and (cost is None or peak > cost.usd):  # charged at least the running cost seen
        cost = AttemptCost(usd=peak, basis={**(cost.basis if cost is not None else {"pricing": "gemini"}),
                                            "runningPeakUsd": usd_number(peak)})
    return CliEvaluation(
        status=decided.status, status_problem=decided.problem, status_reason=decided.reason,
        reported_cost_usd=None, computed_cost=cost, setup_problems=problems, cost_problem=cost_problem,
        fields=_fields(body, transcript, requests, facts.first_tools, retries, server, printed_failure(stderr)),
        measurements={"thoughtsTokens": sum(r.thoughts for r in requests)} if requests else {},
    )


GEMINI_ACHIEVED: tuple[str, ...] = (
    "working directory is a fresh export of the pinned blobs only (no .git, no dotfiles, no lockfiles, "
    "no build output), files 0444 and directories 0555, removed after the attempt",
    "built-in tools restricted by policy rules to read_file, grep_search, glob, list_directory and "
    "read_many_files (every other tool denied and not offered; no tools.core, which would drop MCP tools)",
    "stdin closed; argv only, no shell",
    "environment rebuilt from an allowlist; only the agent's own GEMINI_API_KEY is passed; OPENAI_API_KEY and "
    "ANTHROPIC_API_KEY never",
    "private HOME, TMPDIR and GEMINI_CLI_HOME per attempt with a generated settings.json, removed afterwards; "
    "the user's Gemini settings, memory and sessions not loaded",
    "Clearcut usage statistics and auto-update off; OpenTelemetry written to a local file only",
    "own process group, killed after the attempt",
)
GEMINI_NOT_ACHIEVED: tuple[str, ...] = (
    NETWORK_NOT_ACHIEVED,
    "Gemini CLI's own retries (up to general.maxAttempts) are counted from the lines its retry loop prints on "
    "stderr and, for a stream that broke off after its HTTP 200, from its telemetry file, which it may not flush "
    "before exiting (a lower bound there); their waits are not recorded",
)


def gemini_isolation(settings: CliSettings, scenario: str) -> dict[str, Any]:
    """The containment of a Gemini attempt of ``scenario``, as plain record fields (``AgentCli.isolation``)."""
    return isolation(settings, scenario, GEMINI_ACHIEVED, GEMINI_NOT_ACHIEVED)
