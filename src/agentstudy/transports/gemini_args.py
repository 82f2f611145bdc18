"""The pinned Gemini CLI's argv, ``settings.json``, policy rules and environment for one attempt (pure).

Facts of ``@google/gemini-cli`` 0.61.0 this relies on (docs/agents.md): headless is ``-p PROMPT -o
stream-json -m MODEL``; ``GEMINI_CLI_HOME`` relocates ``~/.gemini`` (settings, sessions, policies); with
``GOOGLE_GEMINI_BASE_URL`` set the CLI picks a gateway auth type that fails headless unless
``security.auth.selectedType`` is ``gemini-api-key``; an untrusted folder silently skips MCP
(``GEMINI_CLI_TRUST_WORKSPACE=true``); **any** ``tools.core`` value silently removes every MCP tool, so the
built-ins are restricted by policy rules instead (``--policy``: allow the read-only built-ins and the arm's
server, deny everything else; a denied tool is not offered to the model at all); Clearcut usage statistics
are on unless ``privacy.usageStatisticsEnabled`` is false; ``general.maxAttempts`` bounds its own retries;
``telemetry.target = "local"`` with an ``outfile`` writes its OpenTelemetry records to that file only (the
first request's tool list and every failed request: the fidelity and retry evidence).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentstudy.io.environment import allowlisted_environment
from agentstudy.stream.gemini import READ_ONLY_BUILTINS

__all__ = ["GEMINI_VERSION", "REHEARSAL_MODEL", "GeminiMcpServer", "gemini_arguments", "gemini_environment",
           "gemini_settings", "policy_toml", "server_alias", "settings_json", "version_problem"]

GEMINI_VERSION = "0.61.0"
"""The version ``scripts/setup.sh`` installs (``scripts/gemini/package-lock.json``)."""
REHEARSAL_MODEL = "rehearsal-scripted"
"""The demo's model name against the scripted server (priced by our nominal row)."""
API_KEY_ENV = "GEMINI_API_KEY"
"""The agent's own credential variable (the only one that reaches it; the dummy key in a rehearsal)."""
BASE_URL_ENV = "GOOGLE_GEMINI_BASE_URL"
START_ENV: dict[str, str] = {"GEMINI_CLI_NO_RELAUNCH": "true"}
"""Set on every start (the ``--version`` probe and each attempt): without it 0.61.0 starts a second node process
to raise its heap limit, doubling its start-up time (a ``--version`` probe then nears its 10 s bound on a busy
machine)."""


@dataclass(frozen=True)
class GeminiMcpServer:
    """The treatment arm's server as an ``mcpServers`` entry: alias ``name`` (no underscore: the policy engine
    splits ``mcp_<alias>_<tool>`` at the first one), ``command`` argv, its ``env`` and ``include_tools`` (the
    server's own tool names)."""

    name: str
    command: Sequence[str]
    env: Mapping[str, str]
    include_tools: Sequence[str]


def server_alias(name: str) -> str:
    """The ``mcpServers`` alias of a server named ``name``: underscores become dashes (the policy engine splits
    ``mcp_<alias>_<tool>`` at the first underscore after ``mcp_``)."""
    return name.replace("_", "-")


def version_problem(line: str, expected: str = GEMINI_VERSION) -> str | None:
    """Why ``gemini --version``'s output ``line`` is not ``expected``; ``None`` when it is."""
    got = line.strip()
    return None if got == expected else f"gemini --version printed {got[:80]!r}, not {expected!r}"


def gemini_settings(*, mcp: GeminiMcpServer | None, max_attempts: int, telemetry_file: str) -> dict[str, Any]:
    """The attempt's ``settings.json`` as a dict: identical in both arms but for ``mcpServers`` (the arm's one
    server, trusted, ``includeTools`` = the study's tools); never a ``tools.core``."""
    settings: dict[str, Any] = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False, "maxAttempts": max_attempts},
        "telemetry": {"enabled": True, "target": "local", "outfile": telemetry_file, "logPrompts": False},
        "ui": {"hideBanner": True, "hideTips": True},
    }
    if mcp is not None:
        settings["mcpServers"] = {mcp.name: {"command": mcp.command[0], "args": list(mcp.command[1:]),
                                             "env": dict(mcp.env), "trust": True,
                                             "includeTools": list(mcp.include_tools)}}
    return settings


def settings_json(settings: Mapping[str, Any]) -> str:
    """``settings`` as the file's text (sorted keys, indented)."""
    return json.dumps(settings, indent=2, sort_keys=True) + "\n"


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def policy_toml(mcp_server: str | None) -> str:
    """The attempt's policy rules: allow the read-only built-ins (and, in the treatment, every tool of the arm's
    server, ``mcp_<alias>_*``: ``includeTools`` already narrows them), deny every other tool. (0.61.0 refuses a
    rule with ``mcpName`` but no ``toolName``, and a refused file is only a line on stderr: the attempt then
    runs without any rule, which the offered-tools check catches.)"""
    names = ", ".join(_toml_string(name) for name in READ_ONLY_BUILTINS)
    rules = [f"[[rule]]\ntoolName = [{names}]\ndecision = \"allow\"\npriority = 100\n"]
    if mcp_server is not None:
        rules.append(f"[[rule]]\ntoolName = {_toml_string(f'mcp_{mcp_server}_*')}\ndecision = \"allow\"\n"
                     "priority = 100\n")
    rules.append("[[rule]]\ntoolName = \"*\"\ndecision = \"deny\"\npriority = 10\n")
    return "\n".join(rules)


def gemini_arguments(*, prompt: str, model: str, policy_file: str, mcp_server: str | None) -> list[str]:
    """The argv after the program: headless stream-json, the pinned model, our policy file and, in the
    treatment, ``--allowed-mcp-server-names`` = the arm's one server."""
    arguments = ["-p", prompt, "-o", "stream-json", "-m", model, "--policy", policy_file]
    if mcp_server is not None:
        arguments += ["--allowed-mcp-server-names", mcp_server]
    return arguments


def gemini_environment(parent: Mapping[str, str], *, home: str, tmpdir: str, gemini_home: str,
                       base_url: str | None, api_key: str | None) -> dict[str, str]:
    """The child's complete environment: the allowlist, ``GEMINI_CLI_HOME``, trust of the workspace, no colour,
    and the agent's own ``GEMINI_API_KEY`` (``api_key``: the rehearsal's dummy, a gateway token, or the user's
    own key; ``None``: not set) with ``GOOGLE_GEMINI_BASE_URL`` = ``base_url`` when given. Never
    ``ANTHROPIC_API_KEY`` / ``OPENAI_API_KEY``."""
    extra = {**START_ENV, "GEMINI_CLI_HOME": gemini_home, "GEMINI_CLI_TRUST_WORKSPACE": "true", "NO_COLOR": "1"}
    if base_url is not None:
        extra[BASE_URL_ENV] = base_url
    if api_key is not None:
        extra[API_KEY_ENV] = api_key
    return allowlisted_environment(parent, home=home, tmpdir=tmpdir, extra=extra)
