"""One bundled provider (or adjudicator) adapter call: a real agent CLI answers one controlled-study request (issue 34).

``agentstudy provider AGENT`` (``commands.provider``) reads the runner's request and calls
:func:`run_adapter`, which runs the agent through the same seam as a study attempt
(``agents.registry`` -> ``AgentCli.launch`` / ``evaluate``, ``transports.cli.run_agent_in``: the
bubblewrap containment, private HOME / TMPDIR (and Codex's ``CODEX_HOME``), the allowlisted
environment, the agent's own login file only, the bounded spawn that kills the whole tree). The
working directory is the repository root the runner gave (read-only inside the sandbox), except in the
MCP arm (below).

Scenarios map to arms: ``repository-only`` gets the repository tools only; every other scenario
gets the MCP server of the adapter's ``--mcp-config`` (default: the bundled read-only server),
verified first exactly as a study's preflight does (``runners.preflight.check_mcp_servers``: the
contained server lists the read-only tools, none annotated otherwise, the probe answers; every
other listed tool is denied). That arm runs like every study attempt (``transports.cli.run_cli_body``):
the agent works in a sealed export of the repository at its ``HEAD`` and the server is started in
the one server world (``io.server_world``) on that same export, at the agent's absolute path (issue
39), so that arm needs the root to be a Git checkout. An adjudicator call gets no server.

The agent answers in the output schema (Codex: ``--output-schema``; Claude Code: the schema in
its prompt and a strict answer parser); :mod:`agentstudy.protocol.controlled.provider_output`
reads it and builds the printed object with the usage the agent's stream reported.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from agentstudy.agents.registry import agent_cli
from agentstudy.io.agent_binary import AgentBinaryError, probe_version
from agentstudy.io.containment import ContainmentError, ContainmentMode
from agentstudy.io.export import read_pinned_corpus
from agentstudy.io.git import GitError, head
from agentstudy.io.server_corpus import ServerCorpora, ServerCorpusError
from agentstudy.io.signals import raise_if_stopped
from agentstudy.protocol.controlled.agent_prompt import adjudicator_prompt, provider_prompt
from agentstudy.protocol.controlled.provider_output import (
    ADJUDICATOR_OUTPUT_SCHEMA,
    PROVIDER_OUTPUT_SCHEMA,
    AgentAnswerError,
    AgentUsage,
    adjudicator_stdout,
    parse_adjudicator_answer,
    parse_provider_answer,
    provider_stdout,
)
from agentstudy.protocol.late_errors import AgentEndedThenFailed
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP, REPOSITORY_ONLY
from agentstudy.protocol.mcp_spec import McpServerSpec, ServerPaths
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.runners.preflight import PreflightError, check_mcp_servers
from agentstudy.transports.cli import CliAttemptBody, CliSettings, RawAttempt, run_agent_in, run_cli_body
from agentstudy.transports.cli_args import arm_tools
from agentstudy.transports.cli_evaluation import CliEvaluation

__all__ = ["AdapterError", "AdapterOptions", "arm_of", "run_adapter"]

SERVER_CORPUS = "repository"
"""The name of the one corpus an adapter's MCP server serves (the repository root at ``HEAD``)."""


class AdapterError(RuntimeError):
    """The adapter cannot give an answer (one line, never the agent's text): it exits 1, nothing on stdout."""


@dataclass(frozen=True)
class AdapterOptions:
    """One adapter's settings (the provider entry's ``args``).

    Attributes:
        agent: ``claude-code`` or ``codex`` (``agents.registry``).
        model: the model the agent runs (``None``: the agent's rehearsal model, rehearsal only).
        mcp: the MCP server of every scenario but ``repository-only``.
        rehearsal: point the agent at the scripted server on 127.0.0.1 with a dummy token (zero spend).
        adjudicator: answer ``doc-bridge.study-adjudicator.v1`` requests instead of provider ones.
        agent_bin: an explicit agent executable (else the agent's usual lookup).
        agent_version: the version the agent's ``--version`` must report.
        timeout_s: the agent's wall-clock limit in seconds (its whole tree is killed then).
        max_usd: the per-call spending limit in USD (Claude Code's ``--max-budget-usd``; Codex's
            running-usage stop).
        containment: ``bwrap`` (default) or ``restricted``.
    """

    agent: str
    model: str | None
    mcp: McpServerSpec
    rehearsal: bool = False
    adjudicator: bool = False
    agent_bin: str | None = None
    agent_version: str | None = None
    timeout_s: float = 170.0
    max_usd: Decimal = Decimal("1")
    containment: ContainmentMode = "bwrap"


def arm_of(scenario: str) -> str:
    """The study arm of a controlled-study scenario: ``repository-only`` is the control, any other the MCP arm."""
    return REPOSITORY_ONLY if scenario == REPOSITORY_ONLY else DOC_BRIDGE_MCP


def _served(server: RehearsalServer | None) -> dict[str, float]:
    """What the scripted server served and offered (rehearsal only): tokens and the most MCP tools one request
    offered (the agent's own tool list as it reached the model)."""
    if server is None:
        return {}
    records = [r for r in server.requests if r.status == 200]
    return {"rehearsalServedInputTokens": sum(r.served_input_tokens for r in records),
            "rehearsalServedOutputTokens": sum(r.served_output_tokens for r in records),
            "rehearsalRequests": len(records),
            "agentMcpToolsOffered": max((sum(1 for name in r.tool_names if name.startswith("mcp__"))
                                         for r in records), default=0)}


def _usage(evaluation: CliEvaluation, raw: RawAttempt, spec: McpServerSpec, arm: str,
           served: Mapping[str, float]) -> AgentUsage:
    fields = evaluation.fields
    if not fields.get("usage_complete") or fields.get("input_tokens") is None or fields.get("output_tokens") is None:
        raise AdapterError("the agent's stream reported no usage")
    cached = int(fields.get("cache_read_input_tokens") or 0)
    written = int(fields.get("cache_creation_input_tokens") or 0)
    by_name: Mapping[str, int] = fields.get("tool_calls_by_name") or {}
    prefix = f"mcp__{spec.name}__"
    extra: dict[str, float] = {"stderrBytes": raw.stderr_bytes, "agentDurationMs": raw.wall_time_ms, **served}
    if arm == DOC_BRIDGE_MCP:
        extra["docBridgeQueryCount"] = sum(n for name, n in by_name.items() if name.startswith(prefix))
    listed = fields.get("tools")
    if isinstance(listed, list):
        extra["agentMcpToolsListed"] = sum(1 for name in listed if str(name).startswith("mcp__"))
    return AgentUsage(
        input_tokens=int(fields["input_tokens"]) + cached + written,
        output_tokens=int(fields["output_tokens"]),
        cached_input_tokens=cached,
        reasoning_output_tokens=evaluation.measurements.get("reasoningOutputTokens"),
        tool_calls=int(fields.get("tool_calls") or 0),
        extra=extra,
    )


def _check_binary(options: AdapterOptions, environ: Mapping[str, str]) -> Path:
    agent = agent_cli(options.agent)
    try:
        binary = agent.find_binary(options.agent_bin, environ)
        line = probe_version(binary, environ, options.containment, agent.start_env)
    except AgentBinaryError as error:
        raise AdapterError(str(error)) from None
    problem = agent.version_problem(line, options.agent_version or agent.pinned_version)
    if problem is not None:
        raise AdapterError(problem)
    return binary


def _verified_server(stack: ExitStack, options: AdapterOptions, cwd: Path,
                     environ: Mapping[str, str]) -> tuple[ServerPaths, tuple[str, ...], str]:
    """The MCP server's paths for the repository at ``cwd``, the deny list and the pinned ``HEAD`` (40 hex),
    after the study's own checks."""
    try:
        pin = head(cwd)
    except GitError:
        raise AdapterError("a doc-bridge scenario needs the repository root to be a Git checkout (the MCP "
                           "server serves its HEAD read-only)") from None
    try:
        corpora = stack.enter_context(ServerCorpora(options.mcp, {SERVER_CORPUS: (cwd, pin)}))
        verified = check_mcp_servers(options.mcp, corpora, options.containment, environ)
    except (ServerCorpusError, PreflightError) as error:
        raise AdapterError(f"MCP server refused: {error}") from None
    return corpora.paths(SERVER_CORPUS), verified.extra_denied, pin


def _run_agent(body: CliAttemptBody, cwd: Path, pin: str | None, environ: Mapping[str, str]) -> RawAttempt:
    """The agent's attempt: in the MCP arm (``pin`` given) in a fresh export of ``cwd`` at ``pin`` with the
    server on that export, exactly as a study attempt runs; otherwise in ``cwd`` itself.

    Raises:
        AdapterError: bubblewrap vanished, the server's world was refused, the export could not be made, or
            reading what the agent left failed after it ended.
    """
    try:
        if pin is None:
            return run_agent_in(body, cwd, environ)
        return run_cli_body(body, read_pinned_corpus(cwd, pin))
    except (ContainmentError, ValueError, GitError, OSError, AgentEndedThenFailed) as error:
        raise AdapterError(str(error)) from None


def run_adapter(options: AdapterOptions, request: dict[str, Any], cwd: Path,
                environ: Mapping[str, str]) -> dict[str, Any]:
    """Run the agent on ``request`` in ``cwd`` and return the object to print (see the module docstring).

    Args:
        options: the adapter's settings.
        request: the runner's request (already checked to be of the right protocol).
        cwd: the repository root (provider) or the runner's directory (adjudicator).
        environ: the adapter's environment; the agent's is rebuilt from its allowlist.

    Raises:
        StopRequested: a stop signal arrived (the agent's tree was killed).
        AdapterError: the agent could not be found or is not the pinned version, the MCP server was refused,
            the agent's attempt did not complete (timeout, stream problems, over its limit, …), it reported no
            usage, or its answer is not one JSON object of the output schema.
    """
    agent = agent_cli(options.agent)
    model = options.model or (agent.rehearsal_model if options.rehearsal else None)
    if model is None:
        raise AdapterError("--model is required unless --rehearsal is given")
    binary = _check_binary(options, environ)
    if options.adjudicator:
        arm, prompt, schema = REPOSITORY_ONLY, adjudicator_prompt(request), ADJUDICATOR_OUTPUT_SCHEMA
    else:
        scenario = str((request.get("task") or {}).get("scenarioId", ""))
        arm, prompt, schema = arm_of(scenario), provider_prompt(request), PROVIDER_OUTPUT_SCHEMA
    with ExitStack() as stack:
        server_paths, denied, pin = (_verified_server(stack, options, cwd, environ) if arm == DOC_BRIDGE_MCP
                                     else (None, (), None))
        server = stack.enter_context(agent.rehearsal_server(0)) if options.rehearsal else None
        settings = CliSettings(
            binary=binary, model=model, mcp=options.mcp,
            rehearsal_base_url=server.agent_base_url if server is not None else None,
            containment=options.containment,
            login_file=None if options.rehearsal else agent.login_file(environ),
            timeout_s=options.timeout_s, agent=agent.name,
        )
        body = CliAttemptBody(settings, arm, arm_tools(arm, options.mcp, denied), prompt, options.max_usd,
                              server_paths, environ, output_schema=json.dumps(schema), agent=agent)
        raw = _run_agent(body, cwd, pin, environ)
        evaluation = agent.evaluate(body, raw)
        served = _served(server)
    raise_if_stopped("the agent's tree was killed; nothing was printed")
    if evaluation.status != "completed":
        why = evaluation.status_reason or "no reason given"
        raise AdapterError(f"the agent's attempt ended {evaluation.status}: {why}")
    usage = _usage(evaluation, raw, options.mcp, arm, served)
    text = str(evaluation.fields.get("answer_text") or "")
    try:
        if options.adjudicator:
            return adjudicator_stdout(parse_adjudicator_answer(text), usage)
        return provider_stdout(parse_provider_answer(text), usage)
    except AgentAnswerError as error:
        raise AdapterError(str(error)) from None
