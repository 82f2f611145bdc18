"""One Codex CLI attempt (issue 21 item 2): launch ``codex exec --json`` contained, stop it at the limit, check it.

``transports.cli`` makes the export and the private directories and spawns the child; this module
says what the child is. Under the attempt's private directory (``AgentCli.scratch_parent``:
never a temp dir — Codex 0.171.0 refuses to make its sandbox helper under one, docs/codex.md)
it makes ``home``, ``tmp`` and ``codex-home``, writes ``codex-home/config.toml``
(``transports.codex_args.config_toml``: the treatment arm's server as ``[mcp_servers.NAME]``,
``required``, ``enabled_tools`` = the verified read-only tools; the rehearsal's
``[model_providers.rehearsal]`` with its dummy key), and wraps ``codex exec --json -s read-only
... -C <export>`` in the run's containment (bubblewrap: the export and the install read-only, the
three private directories writable; Codex's own bubblewrap sandbox runs nested inside it). The
environment is the allowlist plus ``CODEX_HOME`` (never ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``).
The stdout watcher reads ``turn.completed`` usage as it arrives and stops the child once its
cost passes the per-attempt limit (``budget-exceeded``). Afterwards the pure checks of
``stream.codex`` give the status, and ``pricing.openai`` the cost.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from agentstudy.agents.base import Launch
from agentstudy.io.containment import (
    NETWORK_NOT_ACHIEVED,
    SANDBOX_UID,
    SandboxView,
    command_paths,
    contain,
)
from agentstudy.io.process import STDOUT_LIMIT_BYTES
from agentstudy.pricing.cost import AttemptCost, CostProblem
from agentstudy.pricing.openai import OpenAiUsage, openai_cost
from agentstudy.pricing.usd_json import usd_number
from agentstudy.protocol.json_input import load_json
from agentstudy.protocol.mcp_spec import mcp_tool_name
from agentstudy.protocol.treatment import server_lost, tool_set_sha256
from agentstudy.rehearsal.responses_server import REHEARSAL_KEY, REHEARSAL_KEY_ENV
from agentstudy.stream.codex import (
    CodexExpectations,
    CodexTranscript,
    CodexUsage,
    codex_outcome,
    codex_retries,
    parse_codex_stream,
)
from agentstudy.stream.codex_failures import codex_failure_status, codex_retry_wait_ms
from agentstudy.stream.outcome import Outcome
from agentstudy.stream.treatment_facts import codex_treatment
from agentstudy.transports.cli import GATEWAY_TOKEN_ENV, CliAttemptBody, CliSettings, RawAttempt
from agentstudy.transports.cli_evaluation import CliEvaluation
from agentstudy.transports.cli_isolation import isolation
from agentstudy.transports.codex_args import (
    CodexMcpServer,
    RehearsalProvider,
    builtin_tool_basis,
    codex_arguments,
    codex_environment,
    config_toml,
)

__all__ = ["SANDBOX_UID", "STDERR_KEPT_BYTES", "UsageWatch", "charged_floor", "codex_config", "codex_isolation",
           "codex_launch", "evaluate_codex_attempt"]

STDERR_KEPT_BYTES = 64 * 1024
"""The tail of Codex's stderr kept for the checks (a failed required MCP server is reported only there)."""
GATEWAY_PROVIDER = "gateway"


def _mcp_table(body: CliAttemptBody, launcher: Sequence[str] | None = None) -> CodexMcpServer | None:
    """The treatment arm's ``[mcp_servers.NAME]`` (the verified read-only tools enabled); ``None`` in control.

    ``launcher``: the command that starts the server (``io.server_host``'s relay, the server's
    environment inside it); without it, the server's own argv and ``env`` (``codex_config``'s pure view).
    """
    spec = body.settings.arm_mcp(body.scenario)  # the arm's own server (issue 44)
    if spec is None:
        return None
    if body.server is None:
        raise ValueError("the MCP arm needs the server's corpus paths")
    command = spec.argv(body.server) if launcher is None else launcher
    return CodexMcpServer(name=spec.name, command=command, env=dict(spec.env) if launcher is None else {},
                          enabled_tools=tuple(spec.read_only_tools))


def provider_for(settings: CliSettings) -> RehearsalProvider | None:
    """The model provider entry: the rehearsal server, an LLM gateway (``--cli-base-url``), or Codex's own."""
    if settings.rehearsal_base_url is not None:
        return RehearsalProvider(settings.rehearsal_base_url, REHEARSAL_KEY_ENV, max_retries=settings.max_retries)
    if settings.gateway_base_url is not None:
        return RehearsalProvider(settings.gateway_base_url, GATEWAY_TOKEN_ENV, name=GATEWAY_PROVIDER,
                                 max_retries=settings.max_retries)
    return None


def codex_config(body: CliAttemptBody, launcher: Sequence[str] | None = None) -> str:
    """The attempt's ``config.toml`` text (pure): identical in both arms but for the MCP table
    (whose command is ``launcher`` when given)."""
    return config_toml(model=body.settings.model, provider=provider_for(body.settings),
                       mcp=_mcp_table(body, launcher))


def _provider_key(settings: CliSettings) -> tuple[str, str] | None:
    if settings.rehearsal_base_url is not None:
        return REHEARSAL_KEY_ENV, REHEARSAL_KEY
    if settings.gateway_base_url is not None and settings.gateway_token is not None:
        return GATEWAY_TOKEN_ENV, settings.gateway_token
    return None


def codex_launch(body: CliAttemptBody, export: Path, scratch: Path, env_source: Mapping[str, str]) -> Launch:
    """The contained ``codex exec --json`` child of one attempt (``AgentCli.launch``).

    Makes ``scratch/{home,tmp,codex-home}`` and writes ``codex-home/config.toml``; the watcher
    stops the child when the running usage's cost passes ``body.reservation_usd`` (USD).

    Raises:
        ContainmentError: bubblewrap was asked for and is not installed.
        ValueError: the MCP arm without the server's corpus paths (a programming error).
    """
    settings = body.settings
    home, tmp, codex_home = scratch / "home", scratch / "tmp", scratch / "codex-home"
    for directory in (home, tmp, codex_home):
        directory.mkdir(mode=0o700)
    relay = body.server_launcher if settings.arm_mcp(body.scenario) is not None and body.server is not None else None
    launcher = None if relay is None else relay.argv
    (codex_home / "config.toml").write_text(codex_config(body, launcher), encoding="utf-8")
    schema: str | None = None
    if body.output_schema is not None:
        schema = str(codex_home / "output-schema.json")
        Path(schema).write_text(body.output_schema, encoding="utf-8")
    env = codex_environment(env_source, home=str(home), tmpdir=str(tmp), codex_home=str(codex_home),
                            provider_key=_provider_key(settings))
    command = [str(settings.binary), *codex_arguments(export_dir=str(export), prompt=body.prompt,
                                                      output_schema=schema)]
    read_only = [export, *command_paths(str(settings.binary), env.get("PATH")), *(relay.read_only if relay else ())]
    mounted: tuple[tuple[Path, Path], ...] = ()
    if settings.login_file is not None and settings.base_url is None:
        mounted = ((settings.login_file, codex_home / "auth.json"),)
    view = SandboxView(cwd=export, read_only=tuple(dict.fromkeys(read_only)),
                       writable=(home, tmp, codex_home, *(relay.writable if relay else ())),
                       mounted=mounted, uid=SANDBOX_UID)
    argv = contain(settings.containment, view, command)
    return Launch(argv, env, watch=UsageWatch(settings.model, body.reservation_usd), keep_stderr=STDERR_KEPT_BYTES)


def _openai_usage(usage: CodexUsage) -> OpenAiUsage:
    return OpenAiUsage(usage.input_tokens, usage.cached_input_tokens, usage.cache_write_input_tokens,
                       usage.output_tokens, usage.reasoning_output_tokens)


@dataclass
class UsageWatch:
    """The running per-attempt limit (issue 21 item 4): fed stdout chunks, it prices every
    ``turn.completed`` usage (the thread's running total) at ``model``'s rates and returns a stop
    reason once the cost passes ``limit_usd`` (USD). Codex reports usage only at ``turn.completed``,
    so within one exec turn the limit can only be seen at its end (docs/codex.md)."""

    model: str
    limit_usd: Decimal
    peak_usd: Decimal | None = None
    """The largest running cost seen (USD; ``StdoutWatch.peak_usd``): a total that goes back down never
    lowers it, and the attempt is charged at least this (issue 29)."""
    _pending: bytearray = field(default_factory=bytearray, repr=False)
    _overflow: bool = field(default=False, repr=False)

    def __call__(self, chunk: bytes) -> str | None:
        """The stop reason, or ``None`` to let the child run on.

        Only the newest chunk is searched for line ends, and a line is kept up to ``STDOUT_LIMIT_BYTES``
        (what the attempt keeps of stdout at all): a flood with no newline costs linear time and bounded
        memory, and the line it makes is not read (the truncated stdout decides that attempt).
        """
        if b"\n" not in chunk:
            self._keep(chunk)
            return None
        head, *middle, rest = chunk.split(b"\n")
        self._keep(head)
        lines = [b"" if self._overflow else bytes(self._pending), *middle]
        self._pending, self._overflow = bytearray(), False
        self._keep(rest)
        for line in lines:
            reason = self._check(line)
            if reason is not None:
                return reason
        return None

    def _keep(self, part: bytes) -> None:
        if self._overflow or len(self._pending) + len(part) > STDOUT_LIMIT_BYTES:
            self._pending, self._overflow = bytearray(), True
        else:
            self._pending.extend(part)

    def _check(self, line: bytes) -> str | None:
        if b"turn.completed" not in line:
            return None
        try:
            event = load_json(line, parse_float=float, parse_constant=float)
            usage = parse_codex_stream([line.decode("utf-8", "replace")]).usage
            if not isinstance(event, dict) or usage is None:
                return None
            cost = openai_cost(self.model, _openai_usage(usage)).usd
        except (ValueError, CostProblem):
            return None
        self.peak_usd = cost if self.peak_usd is None else max(self.peak_usd, cost)
        if cost > self.limit_usd:
            return f"the running usage cost {cost.normalize():f} USD passed the per-attempt limit of " \
                   f"{self.limit_usd.normalize():f} USD; the child was stopped"
        return None


def _price(model: str, transcript: CodexTranscript) -> tuple[AttemptCost | None, str | None]:
    """The computed cost, or ``None`` and why it is invalid (``None`` reason: nothing to price).

    A ``turn.failed`` never carries usage (docs/codex.md): that attempt is ``failed`` with
    ``usageComplete`` false and is charged its whole reservation, not ``invalid-cost``.
    """
    if transcript.usage is None:
        terminal = transcript.terminal
        if terminal is not None and terminal.get("type") == "turn.failed":
            return None, None
        return None, "no turn.completed usage"
    try:
        return openai_cost(model, _openai_usage(transcript.usage)), None
    except CostProblem as problem:
        return None, str(problem)


def _largest(model: str, transcript: CodexTranscript) -> AttemptCost | None:
    """The cost of the dearest running total the stream holds (``usages``), ``None`` if none prices."""
    costs: list[AttemptCost] = []
    for usage in transcript.usages:
        try:
            costs.append(openai_cost(model, _openai_usage(usage)))
        except CostProblem:
            continue
    return max(costs, key=lambda cost: cost.usd, default=None)


def charged_floor(cost: AttemptCost | None, largest: AttemptCost | None,
                  peak_usd: Decimal | None) -> AttemptCost | None:
    """The computed cost the attempt is settled on (issue 29): never below the dearest running total in the
    stream (``largest``) nor the largest running cost the watcher saw (``peak_usd``, USD). A cost raised so
    keeps the priced usage's basis and records ``runningPeakUsd``; ``None`` when nothing was priced or seen."""
    best = cost
    if largest is not None and (best is None or largest.usd > best.usd):
        best = AttemptCost(usd=largest.usd, basis={**largest.basis, "runningPeakUsd": usd_number(largest.usd)})
    if peak_usd is not None and (best is None or peak_usd > best.usd):
        basis = dict(best.basis) if best is not None else {"pricing": "openai"}
        best = AttemptCost(usd=peak_usd, basis={**basis, "runningPeakUsd": usd_number(peak_usd)})
    return best


def _tool_counts(transcript: CodexTranscript) -> dict[str, int]:
    """Calls by name, MCP tools under Claude Code's spelling (``mcp__doc-bridge__doc_search``)."""
    counts = {name: n for name, n in transcript.tool_calls.items() if not name.startswith("mcp__")}
    for call in transcript.mcp_calls:
        name = mcp_tool_name(str(call.get("server")), str(call.get("tool")))
        counts[name] = counts.get(name, 0) + 1
    return counts


def _fields(settings: CliSettings, transcript: CodexTranscript, expected: CodexExpectations,
            stderr: str, output_schema: bool) -> dict[str, Any]:
    usage = transcript.usage
    terminal = transcript.terminal
    errors = dict(Counter(mcp_tool_name(str(c.get("server")), str(c.get("tool"))) for c in transcript.mcp_calls
                          if c.get("status") == "failed"))
    denial = {"tool_name": "shell", "tool_use_id": None, "tool_input": None}
    counts = _tool_counts(transcript)
    return {
        "model": settings.model,
        "tools": None,
        "mcp_servers": None,
        "tool_calls_by_name": counts,
        "tool_calls": sum(counts.values()),
        "permission_denials": [dict(denial) for _ in range(transcript.read_denials)],
        "tool_errors_by_name": errors,
        "input_tokens": None if usage is None else usage.input_tokens - usage.cached_input_tokens
        - usage.cache_write_input_tokens,
        "output_tokens": None if usage is None else usage.output_tokens,
        "cache_creation_input_tokens": None if usage is None else usage.cache_write_input_tokens,
        "cache_read_input_tokens": None if usage is None else usage.cached_input_tokens,
        "num_turns": None,
        "cli_subtype": None if terminal is None else str(terminal.get("type")),
        "is_error": None if terminal is None else terminal.get("type") != "turn.completed",
        "usage_complete": transcript.usage_complete,
        "answer_text": transcript.answer,
        "api_retries": len(codex_retries(transcript.notices)),
        "api_retry_wait_ms": codex_retry_wait_ms(stderr, len(codex_retries(transcript.notices))),
        "api_retry_statuses": codex_retries(transcript.notices),
        "api_error_status": codex_failure_status(terminal),
        "treatment": codex_treatment(transcript, expected.mcp_server, expected.allowed_tools, settings.model)
        .model_copy(update={"builtin_tools_sha256": tool_set_sha256(
            builtin_tool_basis(model=settings.model, output_schema=output_schema))}).to_json(),
    }


def evaluate_codex_attempt(body: CliAttemptBody, raw: RawAttempt) -> CliEvaluation:
    """What one Codex attempt's stdout and stderr tail mean (pure; ``AgentCli.evaluate``).

    Grammar and setup checks (``stream.codex``; a child killed by its timeout, its bound or a stop
    is not checked for setup), the computed cost (``pricing.openai``; Codex reports none, so
    ``reported_cost_usd`` is ``None``), and the status: a child the watcher stopped is
    ``budget-exceeded``, otherwise ``codex_outcome``'s. The computed cost is never below the largest
running cost the stream or the watcher showed (:func:`charged_floor`). Never raises on the content.
    """
    settings = body.settings
    transcript = parse_codex_stream(raw.stdout.decode("utf-8", "replace").split("\n"))
    stderr = raw.stderr.decode("utf-8", "replace")
    cost, cost_problem = _price(settings.model, transcript)
    cost = charged_floor(cost, _largest(settings.model, transcript), raw.running_peak_usd)
    spec = settings.arm_mcp(body.scenario)
    expected = CodexExpectations(spec.name if spec is not None else None,
                                 tuple((spec or settings.mcp).read_only_tools), server_lost(body.scenario))
    killed = raw.facts.timed_out or raw.facts.truncated or raw.facts.stopped
    checked = CodexTranscript() if killed else transcript
    decided: Outcome = codex_outcome(raw.facts, checked, expected, "" if killed else stderr,
                                     None if killed else cost_problem)
    problems: tuple[str, ...] = ()
    if decided.status == "invalid-setup" and decided.problem:
        problems = tuple(decided.problem.split("; "))
    if raw.watch_stop is not None and not raw.facts.stopped:
        decided = Outcome("budget-exceeded", raw.watch_stop, raw.watch_stop)
    return CliEvaluation(
        status=decided.status,
        status_problem=decided.problem,
        status_reason=decided.reason,
        reported_cost_usd=None,
        computed_cost=cost,
        setup_problems=problems,
        cost_problem=cost_problem,
        fields=_fields(settings, transcript, expected, stderr, body.output_schema is not None),
        measurements={} if transcript.usage is None else
        {"reasoningOutputTokens": transcript.usage.reasoning_output_tokens},
    )


CODEX_ACHIEVED: tuple[str, ...] = (
    "working directory is a fresh export of the pinned blobs only (no .git, no dotfiles, no lockfiles, "
    "no build output), files 0444 and directories 0555, removed after the attempt",
    "codex exec -s read-only: Codex's own bubblewrap and seccomp sandbox refuses writes (approval policy never)",
    "stdin closed; argv only, no shell",
    "environment rebuilt from an allowlist; OPENAI_API_KEY and ANTHROPIC_API_KEY never passed",
    "private HOME, TMPDIR and CODEX_HOME per attempt (outside any temp dir), removed afterwards; the user's "
    "Codex config, rules and sessions not loaded (--ignore-rules, --ephemeral, a generated config.toml, "
    "--strict-config)",
    "own process group, killed after the attempt",
    "analytics, web search, update checks, sub-agents and the default-on features outside read-only "
    "repository work switched off in config.toml",
)
CODEX_NOT_ACHIEVED: tuple[str, ...] = (
    NETWORK_NOT_ACHIEVED,
    "Codex's shell tool is on (its read-only sandbox is the confinement): the agent may run any program "
    "that reads, and the exec --json stream can omit a command (docs/codex.md), so shell counts are a lower bound",
)


def codex_isolation(settings: CliSettings, scenario: str) -> dict[str, Any]:
    """The containment of a Codex attempt of ``scenario``, as plain record fields (``AgentCli.isolation``)."""
    return isolation(settings, scenario, CODEX_ACHIEVED, CODEX_NOT_ACHIEVED)
