"""The CLI transport's run-wide settings (seed 000; issues 15, 21, 33, 44): ``CliSettings``. Split from
``transports.cli``, which re-exports it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agentstudy.io.containment import ContainmentMode
from agentstudy.io.process import STDOUT_LIMIT_BYTES
from agentstudy.protocol.agent_names import DEFAULT_AGENT
from agentstudy.protocol.arm_servers import arm_server
from agentstudy.transports.cli_args import CLI_MAX_RETRIES, REHEARSAL_TOKEN, McpServerSpec

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


__all__ = ["ATTEMPT_TIMEOUT_S", "CliSettings"]
