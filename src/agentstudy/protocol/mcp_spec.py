"""The MCP server under study as configuration (ARCHITECTURE decision 8): name, command, tools, probe. Pure.

Any read-only stdio MCP server can be studied; doc-bridge's names are the defaults. The CLI
calls an MCP tool ``mcp__<server>__<tool with dots as underscores>``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any


class McpConfigError(ValueError):
    """An MCP config document is malformed (one-line reason)."""


def mcp_tool_name(server: str, tool: str) -> str:
    """The CLI's name for an MCP tool: ``mcp__<server>__<tool with dots as underscores>``."""
    return f"mcp__{server}__{tool.replace('.', '_')}"


DOC_BRIDGE_CONFIG_CANDIDATES: tuple[str, ...] = (
    "doc-bridge.config.ts",
    "doc-bridge.config.mts",
    "doc-bridge.config.js",
    "doc-bridge.config.mjs",
    "doc-bridge.config.json",
    "doc-bridge.config.yaml",
    "doc-bridge.config.yml",
    "package.json#docBridge",
)
"""doc-bridge's own config-file order; ``package.json#docBridge`` means package.json with that key."""


@dataclass(frozen=True)
class McpServerSpec:
    """The MCP server under study (ARCHITECTURE decision 8).

    Attributes:
        name: server name in the CLI's MCP config; it is the one in the tool names.
        command: executable and arguments; ``{root}``, ``{pin}`` and ``{config}`` are replaced by
            the corpus checkout, its pin and the server config file resolved in it.
        env: extra environment of the server (never a credential of ours).
        read_only_tools: the tools the agent may call, as the server lists them.
        probe_tool: the freshness probe called before the run, with ``probe_arguments``.
        config_candidates: file names tried in order in the checkout to resolve ``{config}``;
            ``NAME#KEY`` accepts a JSON file only if it has that top-level key.
    """

    name: str
    command: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    read_only_tools: tuple[str, ...] = ("doc.search", "doc.get", "handoff.resolve")
    probe_tool: str = "doc.search"
    probe_arguments: Mapping[str, Any] = field(default_factory=lambda: {"query": "the"})
    config_candidates: tuple[str, ...] = DOC_BRIDGE_CONFIG_CANDIDATES

    @property
    def needs_config(self) -> bool:
        """Whether the command refers to ``{config}``."""
        return any("{config}" in part for part in self.command)

    def argv(self, root: str, pin: str, config: str | None = None) -> list[str]:
        """The server's command for one corpus checkout at ``pin`` (with its resolved config, if any)."""
        parts = [part.replace("{root}", root).replace("{pin}", pin) for part in self.command]
        if config is not None:
            parts = [part.replace("{config}", config) for part in parts]
        return parts

    def bind_config(self, config: str | None) -> McpServerSpec:
        """This spec with ``{config}`` replaced by one checkout's resolved config file (unchanged if ``None``)."""
        if config is None:
            return self
        return replace(self, command=tuple(part.replace("{config}", config) for part in self.command))

    def allowed_names(self) -> tuple[str, ...]:
        """The CLI names of the read-only tools."""
        return tuple(mcp_tool_name(self.name, tool) for tool in self.read_only_tools)

    def denied_names(self, listed_tools: Sequence[str]) -> tuple[str, ...]:
        """CLI names of every listed tool outside the read-only set (the extra deny list)."""
        return tuple(mcp_tool_name(self.name, t) for t in listed_tools if t not in self.read_only_tools)


def _strings(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise McpConfigError(f"{what} must be a list of strings")
    return list(value)


def parse_mcp_config(
    document: Any,
    read_only_tools: tuple[str, ...],
    probe_tool: str,
    probe_arguments: dict[str, Any],
    candidates: tuple[str, ...],
) -> McpServerSpec:
    """Read a Claude Code MCP config document (parsed JSON) naming exactly one stdio server into a spec.

    The file looks like ``{"mcpServers": {"NAME": {"type": "stdio", "command": "...",
    "args": [...], "env": {...}}}}``; ``{root}``, ``{pin}`` and ``{config}`` in ``command`` and
    ``args`` are placeholders filled per checkout.

    Raises:
        McpConfigError: not exactly one server, or a malformed entry.
    """
    servers = document.get("mcpServers") if isinstance(document, dict) else None
    if not isinstance(servers, dict) or len(servers) != 1:
        raise McpConfigError("the MCP config must name exactly one server under mcpServers")
    [(name, entry)] = servers.items()
    if not isinstance(name, str) or not name or not isinstance(entry, dict):
        raise McpConfigError("the MCP server entry is malformed")
    if entry.get("type", "stdio") != "stdio":
        raise McpConfigError("only stdio MCP servers can be studied")
    command = entry.get("command")
    if not isinstance(command, str) or not command:
        raise McpConfigError("the MCP server needs a command")
    args = _strings(entry.get("args", []), "args")
    env = entry.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise McpConfigError("env must map names to strings")
    if "ANTHROPIC_API_KEY" in env:
        raise McpConfigError("the MCP server's env must not carry ANTHROPIC_API_KEY")
    return McpServerSpec(
        name=name,
        command=(command, *args),
        env=env,
        read_only_tools=read_only_tools,
        probe_tool=probe_tool,
        probe_arguments=probe_arguments,
        config_candidates=candidates,
    )
