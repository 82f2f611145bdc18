"""Arguments and environment of a Claude Code attempt (seed 000, "CLI transport contract"). Pure.

Both arms get the same argument list except the ``--allowedTools`` value and the
``--mcp-config`` value. ``--restricted`` confines Read, Grep and Glob to the working directory
(the export) in both arms (issue 15): every path outside is refused and listed in the result's
``permission_denials``. The prompt comes last, right after ``--``, because the variadic
flags (``--tools``, ``--allowedTools``, ``--disallowedTools``, ``--mcp-config``) would
swallow it otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentstudy.io.environment import allowlisted_environment
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP
from agentstudy.protocol.mcp_spec import McpServerSpec as McpServerSpec
from agentstudy.protocol.mcp_spec import ServerPaths
from agentstudy.protocol.mcp_spec import mcp_tool_name as mcp_tool_name
from agentstudy.protocol.prompt import MAX_PROMPT_BYTES
from agentstudy.protocol.treatment import TREATMENT_LOST, server_lost

BUILTIN_TOOLS: tuple[str, ...] = ("Read", "Grep", "Glob")
STATIC_DENIED_TOOLS: tuple[str, ...] = (
    "Bash",
    "Edit",
    "MultiEdit",
    "Write",
    "NotebookEdit",
    "WebFetch",
    "WebSearch",
    "Task",
    "Agent",
)
CLI_MAX_RETRIES = 2
"""How often Claude Code may send a refused request again (issue 33): a bounded budget like the SDK's default.
A refused request consumed nothing; each retry is an ``api_retry`` event the observation counts. (The CLI's own
default, 10 with back-off up to 40 s, could outlive the attempt's timeout.)"""
QUIET_ENV: Mapping[str, str] = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_MAX_RETRIES": str(CLI_MAX_RETRIES),
}
"""Stop all traffic but the Messages API, and bound the CLI's own retries (each one counted, issue 33)."""


@dataclass(frozen=True)
class ArmTools:
    """Tool sets of one arm: what init must list, what may be called, and the deny list."""

    expected: tuple[str, ...]
    allowed: tuple[str, ...]
    denied: tuple[str, ...]
    mcp_server: str | None
    lost: str = TREATMENT_LOST
    """The setup problem's words when every call to ``mcp_server`` errored (``protocol.treatment.server_lost``)."""


def arm_tools(scenario: str, spec: McpServerSpec, extra_denied: Sequence[str], served: bool | None = None
              ) -> ArmTools:
    """The tool sets of ``scenario``; the deny list is identical in both arms. ``served``: whether the arm runs
    ``spec`` (default: the treatment's scenario does; a control arm with a server of its own passes ``True``,
    issue 44)."""
    denied = (*STATIC_DENIED_TOOLS, *extra_denied)
    if scenario == DOC_BRIDGE_MCP if served is None else served:
        allowed = (*BUILTIN_TOOLS, *spec.allowed_names())
        return ArmTools(allowed, allowed, denied, spec.name, server_lost(scenario))
    return ArmTools(BUILTIN_TOOLS, BUILTIN_TOOLS, denied, None)


MAX_ARGUMENT_BYTES = 128 * 1024 - 1
"""The longest single command-line argument Linux accepts (``MAX_ARG_STRLEN``, 128 KiB with its NUL)."""


def tool_lists_problem(spec: McpServerSpec, listed: Sequence[str]) -> str | None:
    """Why the agent's ``--allowedTools`` / ``--disallowedTools`` values for a server listing ``listed``
    could not be passed (one of them longer than ``MAX_ARGUMENT_BYTES``, UTF-8), or ``None``.

    Known before any spend: ``--dry-run --probe``, the run's preflight and ``init`` check it (issue 29,
    break 13: a 10,000-tool server made a 260 KB ``--disallowedTools`` and attempt 1 failed to start).
    """
    tools = arm_tools(DOC_BRIDGE_MCP, spec, spec.denied_names(listed))
    for flag, names in (("--allowedTools", tools.allowed), ("--disallowedTools", tools.denied)):
        size = len(",".join(names).encode("utf-8"))
        if size > MAX_ARGUMENT_BYTES:
            return (f"the MCP server lists {len(listed)} tools: Claude Code's {flag} value would be {size:,} bytes, "
                    f"more than one command-line argument can carry ({MAX_ARGUMENT_BYTES:,} bytes); study a server "
                    "with fewer tools")
    return None


def mcp_config(
    scenario: str, spec: McpServerSpec, paths: ServerPaths | None, launcher: Sequence[str] | None = None,
    served: bool | None = None,
) -> str:
    """The ``--mcp-config`` JSON: no server in ``repository-only``, the one server (placeholders filled) otherwise.

    ``launcher``: the command that starts the server with an environment of ours
    (``io.server_host``'s relay command); it replaces the server's argv and ``env`` (issue 29).
    ``served``: whether the arm runs ``spec`` (as :func:`arm_tools`; issue 44).

    Raises:
        ValueError: ``paths`` is ``None`` in the MCP arm (a programming error).
    """
    if not (scenario == DOC_BRIDGE_MCP if served is None else served):
        return json.dumps({"mcpServers": {}}, separators=(",", ":"))
    if paths is None:
        raise ValueError("the MCP arm needs the server's corpus paths")
    command = spec.argv(paths) if launcher is None else list(launcher)
    server: dict[str, Any] = {"type": "stdio", "command": command[0], "args": command[1:]}
    if spec.env and launcher is None:
        server["env"] = dict(spec.env)
    return json.dumps({"mcpServers": {spec.name: server}}, separators=(",", ":"))


def cli_arguments(
    *, model: str, max_budget_usd: str, tools: ArmTools, mcp_config_json: str, prompt: str
) -> list[str]:
    """The argument list after the executable (seed 000 ``cliArguments``).

    Raises:
        ValueError: if the prompt exceeds 8 KiB in UTF-8 (a programming error, not a status).
    """
    if len(prompt.encode("utf-8")) > MAX_PROMPT_BYTES:
        raise ValueError("the prompt is larger than 8 KiB")
    return [
        "-p",
        "--model",
        model,
        "--output-format",
        "stream-json",
        "--verbose",
        "--no-session-persistence",
        "--max-budget-usd",
        max_budget_usd,
        "--disable-slash-commands",
        "--restricted",
        "--setting-sources",
        "",
        "--permission-mode",
        "dontAsk",
        "--tools",
        ",".join(BUILTIN_TOOLS),
        "--allowedTools",
        ",".join(tools.allowed),
        "--disallowedTools",
        ",".join(tools.denied),
        "--mcp-config",
        mcp_config_json,
        "--strict-mcp-config",
        "--",
        prompt,
    ]


LOGIN_TOKEN_ENV = "CLAUDE_CODE_OAUTH_TOKEN"  # noqa: S105 - a variable name, not a credential
"""The CLI's own long-lived login token (``claude setup-token``): passed through in real runs when set."""
REHEARSAL_TOKEN = "rehearsal-dummy-token"  # noqa: S105 - not a credential


def child_environment(
    parent: Mapping[str, str],
    *,
    home: str,
    tmpdir: str,
    base_url: str | None = None,
    auth_token: str | None = None,
    max_retries: int = CLI_MAX_RETRIES,
) -> dict[str, str]:
    """The child's complete environment, rebuilt from an allowlist (``io.environment``).

    ``ANTHROPIC_API_KEY`` is never included. ``base_url`` (the rehearsal server, or an LLM
    gateway given by ``--cli-base-url``) becomes ``ANTHROPIC_BASE_URL`` and ``auth_token``
    ``ANTHROPIC_AUTH_TOKEN``. Without a base URL (a real run on the CLI's own login),
    ``CLAUDE_CODE_OAUTH_TOKEN`` is passed through when the parent has it. ``max_retries`` becomes
    ``CLAUDE_CODE_MAX_RETRIES`` (issue 33).
    """
    extra = {**QUIET_ENV, "CLAUDE_CODE_MAX_RETRIES": str(max_retries)}
    if base_url is not None:
        extra["ANTHROPIC_BASE_URL"] = base_url
    elif LOGIN_TOKEN_ENV in parent:
        extra[LOGIN_TOKEN_ENV] = parent[LOGIN_TOKEN_ENV]
    if auth_token is not None:
        extra["ANTHROPIC_AUTH_TOKEN"] = auth_token
    return allowlisted_environment(parent, home=home, tmpdir=tmpdir, extra=extra)
