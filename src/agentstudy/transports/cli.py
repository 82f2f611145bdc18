"""One agent CLI attempt (seed 000, ``runCliAttempt``): export, contain, spawn, read, check, price.

The caller has already reserved and checkpointed; this module runs the child in a fresh
export of the pinned corpus with private directories, contained as the run asks
(``io.containment``: bubblewrap by default, issue 15). What is agent-specific — the argv and
environment, the stdout watcher, the meaning of the output — comes from the attempt's agent, handed in
by the caller (an ``agents.base.AgentCli``, issue 21; this module never looks an agent up by name, so
the agent modules import it without a circle, issue 42): for Claude Code
``transports.cli_evaluation.evaluate_cli_attempt`` (parse, setup checks, costs, outcome — the same code
path as ``agentstudy transcript``), for Codex ``transports.codex``. Settlement is the caller's, through
``pricing.budget.settle_attempt`` and the attempt machine. After a stop signal
(``io.signals``) nothing new is started: the attempt ends as a child that never started
(``failed``, usage incomplete), and a child already running is terminated by ``run_bounded``.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

from agentstudy.agents.base import GATEWAY_TOKEN_ENV
from agentstudy.io.containment import (
    ContainmentMode,
)
from agentstudy.io.export import CorpusBlobs, materialise_corpus, read_pinned_corpus, remove_export
from agentstudy.io.git import GitError
from agentstudy.io.process import STDOUT_LIMIT_BYTES, run_bounded
from agentstudy.io.scratch import owned_mkdtemp, release
from agentstudy.io.server_corpus import at_corpus
from agentstudy.io.server_host import ServerLauncher, attempt_server
from agentstudy.io.signals import stop_signal
from agentstudy.protocol.agent_names import DEFAULT_AGENT
from agentstudy.protocol.arm_servers import arm_server
from agentstudy.protocol.late_errors import AgentEndedThenFailed
from agentstudy.protocol.mcp_spec import ServerPaths
from agentstudy.protocol.server_words import with_server_words
from agentstudy.protocol.treatment import sha256_text
from agentstudy.stream.outcome import STOPPED_FACTS, ProcessFacts
from agentstudy.transports.cli_args import CLI_MAX_RETRIES, REHEARSAL_TOKEN, ArmTools, McpServerSpec
from agentstudy.transports.cli_evaluation import evaluate_cli_attempt
from agentstudy.transports.cli_records import CliAttemptResult, RawAttempt

if TYPE_CHECKING:
    from agentstudy.agents.base import AgentCli

__all__ = ["GATEWAY_TOKEN_ENV", "CliAttemptResult", "RawAttempt"]  # re-exported: importers read them here

ATTEMPT_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class CliSettings:
    """Run-wide settings of the CLI transport.

    Attributes:
        binary: the Claude Code executable.
        model: ``STUDY_MODEL``.
        mcp: the MCP server under study.
        rehearsal_base_url: the local Messages API server in rehearsal, else ``None``.
        containment: ``bwrap`` (default) or ``restricted`` (issue 15).
        gateway_base_url: ``--cli-base-url``, an LLM gateway the CLI talks to instead of the API.
        gateway_token: the gateway's token (``AGENTSTUDY_GATEWAY_TOKEN``), sent as
            ``ANTHROPIC_AUTH_TOKEN``; never recorded.
        login_file: in real runs, the CLI's own credentials file, mounted read-only into the
            private HOME at ``.claude/.credentials.json``; ``None`` when absent or in rehearsal.
        timeout_s: attempt timeout in seconds.
        stdout_limit: stdout bound in bytes.
        agent: which coding agent the binary is (issue 21).
        agent_home_root: the parent of per-attempt homes kept out of temp dirs (Codex).
    """

    binary: Path
    model: str
    mcp: McpServerSpec
    rehearsal_base_url: str | None = None
    containment: ContainmentMode = "bwrap"
    gateway_base_url: str | None = None
    gateway_token: str | None = field(default=None, repr=False)
    login_file: Path | None = None
    timeout_s: float = ATTEMPT_TIMEOUT_S
    stdout_limit: int = STDOUT_LIMIT_BYTES
    agent: str = DEFAULT_AGENT
    """The agent (``agents.registry``; issue 21): ``claude-code`` or ``codex``."""
    agent_home_root: Path | None = None
    """Where agents that refuse a home under a temp dir (Codex) make their per-attempt private
    directories; ``None`` means ``agents.codex.default_home_root()``."""
    max_retries: int = CLI_MAX_RETRIES
    """How often the agent CLI may send a refused request again (``--api-max-retries``; issue 33): Claude Code's
    ``CLAUDE_CODE_MAX_RETRIES``."""
    control_mcp: McpServerSpec | None = None
    """The control arm's own server (issue 44); ``None``: the repository-only arm."""

    def arm_mcp(self, scenario: str) -> McpServerSpec | None:
        """The server ``scenario``'s arm runs (``protocol.arm_servers.arm_server``), ``None`` without one."""
        return arm_server(scenario, self.mcp, self.control_mcp)

    @property
    def base_url(self) -> str | None:
        """Where the child sends Messages API requests, when not the CLI's default."""
        return self.rehearsal_base_url or self.gateway_base_url

    @property
    def auth_token(self) -> str | None:
        """The ``ANTHROPIC_AUTH_TOKEN`` of the child: a dummy in rehearsal, the gateway's token, or none."""
        if self.rehearsal_base_url is not None:
            return REHEARSAL_TOKEN
        return self.gateway_token


def run_cli_attempt(
    settings: CliSettings,
    *,
    agent: AgentCli,
    scenario: str,
    tools: ArmTools,
    root: Path,
    pin: str,
    prompt: str,
    reservation_usd: Decimal,
    parent_env: Mapping[str, str],
    server: ServerPaths | None = None,
) -> CliAttemptResult:
    """Run one attempt of ``scenario`` against the corpus at ``root``/``pin`` with ``agent`` (the
    ``AgentCli`` named by ``settings.agent``; ``agents.registry.agent_cli``).

    ``server`` holds the MCP server's placeholder values (its read-only snapshot, …) and is
    required in the MCP arm. The export and the attempt's private directories are removed
    afterwards, even after a timeout or a stop. Never raises for the child's behaviour; raises
    ``GitError`` if the export fails and ``ContainmentError`` if bubblewrap vanished (both
    before anything was spawned). After a stop signal the result is that of a child that never
    started (``stopped_attempt``). The body (``run_cli_body``) and the driver's part
    (``finish_cli_attempt``) are the same two steps an executor runs apart (issue 20).
    """
    if stop_signal() is not None:
        return stopped_attempt(settings, scenario, tools, agent)
    try:
        corpus = read_pinned_corpus(root, pin)
    except GitError:
        if stop_signal() is not None:  # the stop ended git under us
            return stopped_attempt(settings, scenario, tools, agent)
        raise
    body = CliAttemptBody(settings, scenario, tools, prompt, reservation_usd, server, parent_env, agent=agent)
    return finish_cli_attempt(body, run_cli_body(body, corpus))


@dataclass(frozen=True)
class CliAttemptBody:
    """What one attempt's body needs besides the corpus (issue 20); picklable, so it can go to a Ray worker.

    ``parent_env`` is the environment the child's allowlisted one is built from; ``None`` means
    the environment of the process that runs the body (a Ray worker's own), so nothing of the
    driver's environment is shipped. ``server`` is the MCP arm's placeholder values; its ``{root}`` is
    moved to the attempt's own export, wherever the body runs (``run_agent_in``; issue 39). ``agent`` is
    the ``AgentCli`` named by ``settings.agent`` (the caller looks it up, issue 42; a module-level object,
    so the body still pickles).

    Raises:
        ValueError: ``agent`` is not the agent ``settings`` names.
    """

    settings: CliSettings
    scenario: str
    tools: ArmTools
    prompt: str
    reservation_usd: Decimal
    server: ServerPaths | None
    parent_env: Mapping[str, str] | None
    server_launcher: ServerLauncher | None = None
    """Set by ``run_agent_in`` for the agent's launch in the MCP arm (issue 39): the relay command the agent is
    given as its MCP server, and what the agent's sandbox must show for it (``io.server_host``)."""
    output_schema: str | None = None
    """A JSON Schema (text) the agent's final message must match, for agents that take one (Codex's
    ``--output-schema``; the bundled provider adapters, issue 34); ``None`` in a study attempt."""
    agent: AgentCli = field(kw_only=True)
    """The agent that runs the attempt (``agents.registry.agent_cli(settings.agent)``)."""

    def __post_init__(self) -> None:
        """Refuse an agent other than the one the settings name."""
        if self.agent.name != self.settings.agent:
            raise ValueError(f"the attempt's agent {self.agent.name!r} is not its settings' {self.settings.agent!r}")


def run_cli_body(body: CliAttemptBody, corpus: CorpusBlobs) -> RawAttempt:
    """One attempt's body (issue 20): materialise the export from ``corpus``, contain, spawn, read (bounded).

    Runs wherever the executor puts it (a thread of the driver, or a Ray worker); it never
    evaluates, prices or settles. The export, the server snapshot it made and the private
    directories are removed afterwards. Raises ``OSError`` if the export cannot be written and
    ``ContainmentError`` if bubblewrap vanished (both before anything was spawned).
    """
    env_source = os.environ if body.parent_env is None else body.parent_env
    if stop_signal() is not None:
        return RawAttempt(b"", STOPPED_FACTS, 0, None, None, None)
    export = materialise_corpus(corpus)
    try:
        raw = run_agent_in(body, export.path, env_source)
    finally:
        remove_export(export.path)
    return dataclasses.replace(raw, export_files=export.files, export_bytes=export.bytes,
                               export_tree_sha256=export.tree_sha256)


def run_agent_in(body: CliAttemptBody, cwd: Path, env_source: Mapping[str, str]) -> RawAttempt:
    """Launch the body's agent contained in ``cwd`` (made read-only by the containment; its working directory)
    with fresh private directories, and read it bounded: the one spawn of every agent attempt (a study's
    export, issue 20; a provider adapter's repository root, issue 34).

    In the MCP arm the server's ``{root}`` is ``cwd`` itself (the agent and the server see the repository at
    one absolute path) and the server is served by ``io.server_host.attempt_server`` in its own world, the
    agent given the relay command (``CliAttemptBody.server_launcher``); its stderr tail is kept
    (``RawAttempt.server_stderr``). The private directories are removed afterwards; ``export_*`` facts are
    left ``None``.

    Raises:
        ContainmentError: bubblewrap vanished, or the server's world is refused (nothing was spawned).
        AgentEndedThenFailed: collecting the agent's files or closing its server failed after it ended.
    """
    settings, agent = body.settings, body.agent
    scratch = owned_mkdtemp("attempt", agent.scratch_parent(settings))
    server_stderr, server_changed = b"", None
    try:
        with ExitStack() as stack:
            launched = body
            spec = settings.arm_mcp(body.scenario)  # the arm's own server (issue 44)
            if spec is not None and body.server is not None:
                server = at_corpus(body.server, cwd)  # one path for the repository (issue 39)
                host = stack.enter_context(attempt_server(spec, server, settings.containment, env_source,
                                                          scratch))
                launched = dataclasses.replace(body, server=server, server_launcher=host.launcher())
            launch = agent.launch(launched, cwd, scratch, env_source)
            process = run_bounded(launch.argv, launch.env, cwd, settings.timeout_s, settings.stdout_limit,
                                  watch=launch.watch, keep_stderr=launch.keep_stderr)
            try:  # the agent has ended: an error now is not "never started" (issue 40)
                agent_files = {} if launch.collect is None else launch.collect()
                if spec is not None and body.server is not None:
                    stack.close()
                    server_stderr, server_changed = host.said().encode("utf-8"), host.changed
            except Exception as error:
                raise AgentEndedThenFailed(error) from error
    finally:
        for directory, _dirs, _files in os.walk(scratch):
            Path(directory).chmod(stat.S_IRWXU)  # the server snapshot's sealed directories
        shutil.rmtree(scratch, ignore_errors=True)
        release(scratch)
    stopped = process.stopped and process.exit_code != 0  # a child that exited 0 ended on its own
    facts = ProcessFacts(process.started, process.timed_out, process.truncated, process.exit_code,
                         timeout_s=settings.timeout_s, stdout_limit=settings.stdout_limit, stopped=stopped)
    return RawAttempt(process.stdout, facts, process.wall_time_ms, None, None, None,
                      stderr=process.stderr_tail, watch_stop=process.watch_stop, stderr_bytes=process.stderr_bytes,
                      running_peak_usd=None if launch.watch is None else launch.watch.peak_usd,
                      server_stderr=server_stderr, agent_files=agent_files, server_changed=server_changed)


WORKER_DIED = "worker died"
"""The ``statusReason`` of an attempt whose Ray worker or node died under it (issue 20)."""


def finish_cli_attempt(body: CliAttemptBody, raw: RawAttempt) -> CliAttemptResult:
    """The driver's part of an attempt (issue 20): the pure stream checks and costs over the body's raw result.

    Settlement stays the caller's. A body that never made an export (a stop kept it from
    starting) gives ``stopped_attempt``'s result. Raises ``AgentEndedThenFailed`` (issue 40) when evaluating
    or pricing the raw result fails.
    """
    if raw.export_files is None and not raw.facts.started:
        return stopped_attempt(body.settings, body.scenario, body.tools, body.agent)
    try:
        return _finished(body, raw)
    except Exception as error:  # the agent ran: never "never started" (issue 40)
        raise AgentEndedThenFailed(error) from error


def _finished(body: CliAttemptBody, raw: RawAttempt) -> CliAttemptResult:
    settings, scenario, agent = body.settings, body.scenario, body.agent
    evaluation = agent.evaluate(body, raw)
    isolation = agent.isolation(settings, scenario)
    if raw.server_changed is not None:  # the server's word, checked in the attempt (issue 40)
        evaluation = dataclasses.replace(evaluation, status="invalid-setup", status_reason=raw.server_changed,
                                         status_problem=raw.server_changed,
                                         setup_problems=(*evaluation.setup_problems, raw.server_changed))
        isolation = {**isolation, "isolation_not_achieved": [*isolation["isolation_not_achieved"],
                                                             raw.server_changed]}
    return CliAttemptResult(
        status=evaluation.status,
        reported_cost_usd=evaluation.reported_cost_usd,
        computed_cost=evaluation.computed_cost,
        setup_problems=evaluation.setup_problems,
        cost_problem=evaluation.cost_problem,
        exit_code=raw.facts.exit_code,
        wall_time_ms=raw.wall_time_ms,
        status_reason=with_server_words(evaluation.status, evaluation.status_reason, raw.server_stderr),
        raw_output=raw.stdout,
        server_stderr=raw.server_stderr,
        fields={
            **evaluation.fields,
            **({"treatment": {**evaluation.fields["treatment"], "promptSha256": sha256_text(body.prompt)}}
               if isinstance(evaluation.fields.get("treatment"), dict) else {}),
            "export_files": raw.export_files,
            "export_bytes": raw.export_bytes,
            "export_tree_sha256": raw.export_tree_sha256,
            **isolation,
            **({"usage_complete": False} if raw.facts.stopped else {}),
            **({"worker_node": raw.worker_node} if raw.worker_node is not None else {}),
        },
    )


def worker_died_attempt(body: CliAttemptBody, worker_node: str | None) -> CliAttemptResult:
    """The result of an attempt whose worker or node died mid-attempt (issue 20): ``failed``, reason
    ``"worker died"``, usage incomplete, no cost (settlement charges the whole reservation)."""
    result = unstarted_attempt(body, WORKER_DIED)
    fields = {**result.fields, **({"worker_node": worker_node} if worker_node is not None else {})}
    return dataclasses.replace(result, fields=fields)


def unstarted_attempt(body: CliAttemptBody, reason: str) -> CliAttemptResult:
    """The result of an attempt that ended without a child result: ``failed`` with ``reason`` as its
    ``statusReason`` (a body that raised before its agent started, issue 40: ``never started: …``), usage
    incomplete, no cost (settlement charges the whole reservation)."""
    result = stopped_attempt(body.settings, body.scenario, body.tools, body.agent)
    return dataclasses.replace(result, status="failed", status_reason=reason)


def stopped_attempt(settings: CliSettings, scenario: str, tools: ArmTools, agent: AgentCli) -> CliAttemptResult:
    """The result of an attempt a stop signal kept from starting: ``failed`` as a child that never started,
    no export, usage incomplete, no cost (settlement charges the whole reservation)."""
    evaluation = evaluate_cli_attempt(b"", STOPPED_FACTS, model=settings.model, tools=tools)
    return CliAttemptResult(
        status=evaluation.status, reported_cost_usd=None, computed_cost=None, setup_problems=(),
        cost_problem=evaluation.cost_problem, exit_code=None, wall_time_ms=0,
        fields={**evaluation.fields, "usage_complete": False,
                **agent.isolation(settings, scenario)},
    )
