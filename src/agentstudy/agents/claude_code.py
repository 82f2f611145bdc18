"""Claude Code as an ``AgentCli`` (issue 21 item 1): what already ran every cli attempt, behind the seam.

The argv (``transports.cli_args``), the sandbox view and containment record
(``transports.cli_isolation.attempt_view`` / ``isolation``), the stream-json evaluation
(``transports.cli_evaluation``) and the Messages rehearsal server are unchanged; this module
only puts them behind ``agents.base.AgentCli``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from agentstudy.agents.base import Launch, MessagesPolicy
from agentstudy.io.agent_binary import find_agent_binary
from agentstudy.io.claude_cli import CLAUDE_LOOKUP, find_login_file, version_token
from agentstudy.io.containment import ContainmentMode, contain
from agentstudy.pricing.budget import format_max_budget
from agentstudy.pricing.table import price_entry
from agentstudy.protocol.fault_schedule import parse_fault_schedule
from agentstudy.protocol.mcp_spec import McpServerSpec
from agentstudy.protocol.run_records import AgentRecord
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.stream.steps import Step, claude_steps
from agentstudy.transports.cli import CliAttemptBody, CliSettings, RawAttempt
from agentstudy.transports.cli_args import BUILTIN_TOOLS, child_environment, cli_arguments, mcp_config
from agentstudy.transports.cli_evaluation import CliEvaluation, evaluate_cli_attempt
from agentstudy.transports.cli_isolation import attempt_view, isolation, link_login

CLAUDE_CODE_VERSION = "2.1.296"
"""The pinned Claude Code version (``claude --version`` prints ``2.1.296 (Claude Code)``)."""


class ClaudeCodeAgent:
    """Headless Claude Code (``claude -p --output-format stream-json``): the default agent."""

    name = "claude-code"
    label = "Claude Code"
    pinned_version = CLAUDE_CODE_VERSION
    rehearsal_model = "claude-haiku-5-5"
    reports_cost = True
    bounds_worst_turn = True
    judged_with_stderr = False
    start_env: Mapping[str, str] = {}
    record_files: tuple[str, ...] = ()
    repository_tools: tuple[str, ...] = BUILTIN_TOOLS
    limit_rule = "stops itself at the limit (--max-budget-usd) after each turn"

    def find_binary(self, explicit: str | None, environ: Mapping[str, str]) -> Path:
        """``--claude-bin``, ``AGENTSTUDY_CLAUDE_BIN``, ``.tools/claude-code``, then ``claude`` on PATH.

        Raises:
            AgentBinaryError: none usable.
        """
        return find_agent_binary(CLAUDE_LOOKUP, explicit, environ)

    def version_problem(self, line: str, expected: str) -> str | None:
        """The line's first token must equal ``expected`` (``2.1.296`` of ``2.1.296 (Claude Code)``)."""
        if version_token(line) == expected:
            return None
        return f"Claude Code version {line!r} is not the expected {expected}"

    def rehearsal_endpoint(self, latency_ms: int, faults: str | None = None) -> AbstractContextManager[str]:
        """The scripted Messages API server (with the fault SPEC ``faults``); its base URL becomes
        ``ANTHROPIC_BASE_URL``."""
        return _messages_server(latency_ms, faults)

    def rehearsal_server(self, latency_ms: int, policy: MessagesPolicy | None = None) -> RehearsalServer:
        """A ``RehearsalServer`` (not started) answering after ``latency_ms`` ms with ``policy`` (default the
        careful study agent)."""
        if policy is None:
            return RehearsalServer(latency_ms=latency_ms)
        return RehearsalServer(latency_ms=latency_ms, policy=policy)

    def login_file(self, environ: Mapping[str, str]) -> Path | None:
        """``$HOME/.claude/.credentials.json`` when it is a regular file (``io.claude_cli.find_login_file``)."""
        return find_login_file(environ)

    def default_scratch_root(self, environ: Mapping[str, str]) -> Path | None:
        """``None``: Claude Code's private directories are made in the system temp dir."""
        return None

    def scratch_parent(self, settings: CliSettings) -> Path | None:
        """The system temp dir (Claude Code has no objection to it)."""
        return None

    def launch(self, body: CliAttemptBody, export: Path, scratch: Path, env_source: Mapping[str, str]) -> Launch:
        """``claude -p ...`` (``transports.cli_args``) with a private HOME and TMPDIR under ``scratch``; in the MCP
        arm its MCP server command is the relay of ``body.server_launcher`` (``io.server_host``: the server runs
        in its own world, started by agentstudy)."""
        settings, server = body.settings, body.server
        home, tmp = scratch / "home", scratch / "tmp"
        home.mkdir()
        tmp.mkdir()
        env = child_environment(
            env_source, home=str(home), tmpdir=str(tmp), base_url=settings.base_url, auth_token=settings.auth_token,
            max_retries=settings.max_retries,
        )
        spec = settings.arm_mcp(body.scenario)  # the arm's own server (issue 44)
        relay = body.server_launcher if spec is not None and server is not None else None
        launcher = None if relay is None else relay.argv
        command = [
            str(settings.binary),
            *cli_arguments(
                model=settings.model,
                max_budget_usd=format_max_budget(body.reservation_usd),
                tools=body.tools,
                mcp_config_json=mcp_config(body.scenario, spec or settings.mcp, server, launcher, spec is not None),
                prompt=body.prompt,
            ),
        ]
        view = attempt_view(settings, export, home, tmp, env.get("PATH"), relay)
        argv = contain(settings.containment, view, command)
        if settings.containment == "restricted":
            link_login(settings, home)
        return Launch(argv, env)

    def evaluate(self, body: CliAttemptBody, raw: RawAttempt) -> CliEvaluation:
        """``transports.cli_evaluation.evaluate_cli_attempt`` (the same code as ``agentstudy transcript``)."""
        return evaluate_cli_attempt(raw.stdout, raw.facts, model=body.settings.model, tools=body.tools)

    def transcript_steps(self, data: bytes) -> tuple[Step, ...]:
        """``stream.steps.claude_steps`` (stream-json)."""
        return claude_steps(data)

    def isolation(self, settings: CliSettings, scenario: str) -> dict[str, Any]:
        """``transports.cli.isolation``: what Claude Code's flags and the sandbox confine."""
        return isolation(settings, scenario)

    def price_entry(self, model: str) -> dict[str, Any] | None:
        """``pricing.table.price_entry`` (the Claude rows)."""
        return price_entry(model)

    def tool_set_problems(self, binary: Path, containment: ContainmentMode, spec: McpServerSpec,
                          annotations: Mapping[str, Mapping[str, Any]], parent_env: Mapping[str, str]) -> list[str]:
        """None: Claude Code runs every tool named in ``--allowedTools`` with or without annotations, and has no
        check of its own to run."""
        return []

    def agent_record(self, settings: CliSettings, version_line: str, parent_env: Mapping[str, str]) -> AgentRecord:
        """Name and version only."""
        return AgentRecord(name=self.name, version=version_line)


@contextmanager
def _messages_server(latency_ms: int, faults: str | None) -> Iterator[str]:
    schedule = None if faults is None else parse_fault_schedule(faults)
    with RehearsalServer(latency_ms=latency_ms, faults=schedule) as server:
        yield server.base_url


AGENT = ClaudeCodeAgent()
"""The registry's entry (``agents.registry``)."""
