"""Codex CLI 0.171.0 attempt inputs: argv, the per-attempt ``config.toml``, the environment (pure; issue 21).

One attempt is ``codex exec --json`` with a private ``CODEX_HOME`` holding :func:`config_toml`'s
text. The arms' argv and config are identical except the ``[mcp_servers.NAME]`` table (the
treatment arm's server, ``required = true``, ``enabled_tools`` = the verified read-only tools, each approved in
its own ``[mcp_servers.NAME.tools.TOOL]`` table).
Every default-on feature outside read-only repository work is switched off
(:data:`DISABLED_FEATURES`, each accepted by 0.171.0 under ``--strict-config`` — docs/codex.md),
as are analytics, web search and update checks. The environment is rebuilt from the allowlist of
:mod:`agentstudy.io.environment`: ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY`` never pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import tomli_w

from agentstudy.io.environment import allowlisted_environment

__all__ = [
    "CODEX_VERSION",
    "DISABLED_FEATURES",
    "REHEARSAL_MODEL",
    "REHEARSAL_PROVIDER",
    "TOOL_APPROVAL_MODE",
    "CodexMcpServer",
    "RehearsalProvider",
    "codex_arguments",
    "codex_environment",
    "config_toml",
    "version_problem",
]

CODEX_VERSION = "0.171.0"
"""The pinned Codex CLI version; ``codex --version`` prints ``codex-cli 0.171.0``."""
REHEARSAL_PROVIDER = "rehearsal"
REHEARSAL_MODEL = "rehearsal-scripted"
"""A model name outside Codex's bundled catalog: Codex then offers MCP tools directly (a
``namespace`` tool) instead of deferring them behind ``tool_search`` (measured, docs/codex.md)."""
DISABLED_FEATURES = (
    "apps", "browser_use", "browser_use_external", "computer_use", "image_generation", "plugins",
    "remote_plugin", "plugin_sharing", "hooks", "goals", "view_image", "skill_search",
    "skill_mcp_dependency_install", "sleep_tool", "tool_suggest", "in_app_browser", "guardian_approval",
    "fast_mode", "shell_snapshot", "workspace_dependencies",
)
"""Default-on features of 0.171.0 switched off in every attempt (``[features] NAME = false``);
sub-agents are off by ``[agents] enabled = false`` (``[features].multi_agent`` is deprecated in 0.171.0)."""


TOOL_APPROVAL_MODE = "approve"
"""Each enabled tool's ``[mcp_servers.NAME.tools.TOOL] approval_mode`` (issue 32 item 5). ``codex exec`` runs
with the approval policy ``never``, under which 0.171.0 cancels every MCP call it would ask about ("MCP tool
call requires approval, but approval policy is never") unless the server annotates the tool ``readOnlyHint:
true`` or the tool's own table approves it; the enabled tools are exactly the verified read-only ones
(annotated, or declared by the operator with ``--tool``), so every one is approved the same way."""


def version_problem(line: str, expected: str = CODEX_VERSION) -> str | None:
    """Why ``codex --version``'s output ``line`` is not the pinned ``codex-cli <expected>``; None when it is."""
    want = f"codex-cli {expected}"
    got = line.strip()
    return None if got == want else f"codex --version printed {got[:80]!r}, not {want!r}"


@dataclass(frozen=True)
class CodexMcpServer:
    """The treatment arm's MCP server: table ``name``, ``command`` argv (program first), its
    ``env``, the ``enabled_tools`` (server tool names, e.g. ``doc.search``) and
    ``startup_timeout_sec`` (seconds)."""

    name: str
    command: Sequence[str]
    env: Mapping[str, str]
    enabled_tools: Sequence[str]
    startup_timeout_sec: int = 20


@dataclass(frozen=True)
class RehearsalProvider:
    """A custom ``[model_providers.NAME]`` entry: ``base_url`` (``http://127.0.0.1:PORT/v1``) and
    the variable ``env_key`` whose value is the (dummy) key. ``max_retries`` (issue 33), when set, bounds
    Codex's own retries of a refused request and of a broken stream (``request_max_retries``,
    ``stream_max_retries``)."""

    base_url: str
    env_key: str
    name: str = REHEARSAL_PROVIDER
    max_retries: int | None = None


def config_toml(*, model: str, provider: RehearsalProvider | None, mcp: CodexMcpServer | None) -> str:
    """The ``$CODEX_HOME/config.toml`` text of one attempt (TOML; keys accepted by 0.171.0's
    ``--strict-config``). ``mcp`` None is the control arm."""
    return tomli_w.dumps(_config(model=model, provider=provider, mcp=mcp))


PROVIDER_KEYS = ("model_provider", "model_providers")
"""The configuration's provider keys: where requests go, not which tools the agent has."""


def builtin_tool_basis(*, model: str, output_schema: bool) -> dict[str, object]:
    """What decides Codex's built-in tools in an attempt, the same in both arms (issue 28 item 2): the
    ``config.toml`` without the MCP table and the provider (the model, the switched-off features, web search,
    sub-agents) and the ``codex exec`` flags (``-s read-only``, the approval policy it implies, rules, strict
    config), with the attempt's own paths and prompt as placeholders. Codex lists no tool set in its events, so
    the treatment record's ``builtinToolsSha256`` hashes this (``protocol.treatment.tool_set_sha256``)."""
    config = {key: value for key, value in _config(model=model, provider=None, mcp=None).items()
              if key not in PROVIDER_KEYS}
    arguments = codex_arguments(export_dir="{export}", prompt="{prompt}",
                                output_schema="{schema}" if output_schema else None)
    return {"config": config, "arguments": arguments}


def _config(*, model: str, provider: RehearsalProvider | None, mcp: CodexMcpServer | None) -> dict[str, object]:
    config: dict[str, object] = {
        "model": model,
        "check_for_update_on_startup": False,
        "web_search": "disabled",
        "analytics": {"enabled": False},
        "features": dict.fromkeys(DISABLED_FEATURES, False),
        "agents": {"enabled": False},
    }
    if provider is not None:
        config["model_provider"] = provider.name
        config["model_providers"] = {provider.name: {
            "name": provider.name, "base_url": provider.base_url, "env_key": provider.env_key,
            "wire_api": "responses",
            **({"request_max_retries": provider.max_retries, "stream_max_retries": provider.max_retries}
               if provider.max_retries is not None else {})}}
    if mcp is not None:
        table: dict[str, object] = {"command": mcp.command[0], "args": list(mcp.command[1:]), "required": True,
                                    "startup_timeout_sec": mcp.startup_timeout_sec,
                                    "enabled_tools": list(mcp.enabled_tools),
                                    "tools": {tool: {"approval_mode": TOOL_APPROVAL_MODE}
                                              for tool in mcp.enabled_tools}}
        if mcp.env:
            table["env"] = dict(mcp.env)
        config["mcp_servers"] = {mcp.name: table}
    return config


def codex_arguments(*, export_dir: str, prompt: str, output_schema: str | None = None) -> list[str]:
    """The argument list after the ``codex`` executable: ``exec --json`` read-only, ephemeral,
    no rules, strict config, in ``export_dir``, the prompt last (after ``--``).

    No ``--ignore-user-config``: in 0.171.0 it skips ``$CODEX_HOME/config.toml`` — the generated
    per-attempt file — and ``-p`` profiles with it (measured, docs/codex.md); the private
    ``CODEX_HOME`` is what keeps the user's own config out. ``output_schema``: the path of a JSON
    Schema file the final message must match (``--output-schema``; the provider adapters, issue 34)."""
    schema = ["--output-schema", output_schema] if output_schema is not None else []
    return ["exec", "--json", "--color", "never", "-s", "read-only", "--ephemeral", "--ignore-rules",
            "--skip-git-repo-check", "--strict-config", *schema, "-C", export_dir, "--", prompt]


def codex_environment(parent: Mapping[str, str], *, home: str, tmpdir: str, codex_home: str,
                      provider_key: tuple[str, str] | None = None) -> dict[str, str]:
    """The child's complete environment: the allowlist, ``CODEX_HOME`` and, in a rehearsal, the
    dummy key ``provider_key`` = (variable, value). No ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``."""
    extra = {"CODEX_HOME": codex_home, "NO_COLOR": "1", "RUST_LOG": "warn"}
    if provider_key is not None:
        extra[provider_key[0]] = provider_key[1]
    return allowlisted_environment(parent, home=home, tmpdir=tmpdir, extra=extra)
