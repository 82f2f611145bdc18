"""The MCP server under study as configuration (ARCHITECTURE decision 8): name, command, tools, probe. Pure.

Any read-only stdio MCP server can be studied; doc-bridge's names are the defaults. The CLI
calls an MCP tool ``mcp__<server>__<tool with dots as underscores>``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agentstudy.protocol.prepare_steps import PreparedStateCap, PrepareStep
from agentstudy.protocol.read_only import ReadOnlyError, require_probe_allowed
from agentstudy.protocol.seed_names import DOC_BRIDGE_CONFIG_CANDIDATES as DOC_BRIDGE_CONFIG_CANDIDATES
from agentstudy.protocol.tool_names import listing_problem


class McpConfigError(ValueError):
    """An MCP config document is malformed (one-line reason)."""


def mcp_tool_name(server: str, tool: str) -> str:
    """The CLI's name for an MCP tool: ``mcp__<server>__<tool with dots as underscores>``."""
    return f"mcp__{server}__{tool.replace('.', '_')}"




PLACEHOLDERS: tuple[str, ...] = ("{root}", "{pin}", "{config}", "{git}", "{checkout}", "{cwd}")
"""What ``command``, ``args`` and the probe arguments may name (issue 15, deliverable 4)."""
_PLACEHOLDER_LIKE = re.compile(r"\{[A-Za-z][A-Za-z0-9_-]*\}")
"""What reads as a placeholder: ``{word}`` (a JSON text such as ``{"a": 1}`` does not)."""


def unknown_placeholders(texts: Sequence[str]) -> list[str]:
    """Every ``{word}`` in ``texts`` that is not one of :data:`PLACEHOLDERS`, in order, once each.

    ``{roots}`` or ``{ROOT}`` would reach the server unfilled; a run refuses them before it starts.
    """
    found: list[str] = []
    for text in texts:
        for match in _PLACEHOLDER_LIKE.findall(text):
            if match not in PLACEHOLDERS and match not in found:
                found.append(match)
    return found


def json_strings(value: Any) -> list[str]:
    """Every string in a JSON value (keys and values), depth first."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [text for item in value for text in json_strings(item)]
    if isinstance(value, dict):
        return [text for key, item in value.items() for text in (*json_strings(key), *json_strings(item))]
    return []


LIVE_CHECKOUT_NOTE = "the MCP server read the live checkout ({checkout} in its command)"
"""The ``isolationNotAchieved`` sentence of every attempt whose server was handed the live checkout."""


def open_world_note(tool: str) -> str:
    """The ``isolationNotAchieved`` sentence of an ``openWorldHint: true`` tool the operator let through (issue 32)."""
    return (f"the MCP server's tool {tool} is annotated openWorldHint: true and was let through (allowOpenWorld): "
            "it may reach outside the pinned corpus over the shared network")


@dataclass(frozen=True)
class ServerPaths:
    """The placeholder values of the MCP server for one corpus (issue 15, deliverable 4).

    Attributes:
        root: ``{root}``, the run's read-only snapshot of the pinned corpus (the export's filtered tree);
            also ``{cwd}``, the server's working directory, which is that snapshot (issue 32).
        pin: ``{pin}``, the 40-hex commit.
        config: ``{config}``, the server config file resolved inside the snapshot, if needed.
        git: ``{git}``, a private read-only clone with history up to the pin, if needed.
        checkout: ``{checkout}``, the live checkout, only when the operator wrote that placeholder.
        live: where the live checkout is, never a placeholder value: the sandbox refuses to bind
            it (or an ancestor, or anything inside it) unless ``{checkout}`` was written.
        state: the checkout's prepared state (``home/`` and ``tmp/``, issue 32), copied afresh into every
            server's private HOME and TMPDIR; ``None`` when the study declares no preparation step.
    """

    root: str
    pin: str
    config: str | None = None
    git: str | None = None
    checkout: str | None = None
    live: str | None = None
    state: str | None = None

    def fill(self, text: str) -> str:
        """``text`` with every placeholder that has a value replaced."""
        values = {"{root}": self.root, "{cwd}": self.root, "{pin}": self.pin, "{config}": self.config,
                  "{git}": self.git, "{checkout}": self.checkout}
        for placeholder, value in values.items():
            if value is not None:
                text = text.replace(placeholder, value)
        return text


def _fill_json(value: Any, paths: ServerPaths) -> Any:
    if isinstance(value, str):
        return paths.fill(value)
    if isinstance(value, list):
        return [_fill_json(item, paths) for item in value]
    if isinstance(value, dict):
        return {key: _fill_json(item, paths) for key, item in value.items()}
    return value


@dataclass(frozen=True)
class McpServerSpec:
    """The MCP server under study (ARCHITECTURE decision 8; issue 15).

    Attributes:
        name: server name in the CLI's MCP config; it is the one in the tool names.
        command: executable and arguments with the placeholders of ``ServerPaths``.
        env: extra environment of the server (never a credential of ours).
        read_only_tools: the tools the agent may call, as the server lists them.
        probe_tool: the freshness probe called before the run, with ``probe_arguments``
            (placeholders are filled there too).
        config_candidates: file names tried in order in the snapshot to resolve ``{config}``;
            ``NAME#KEY`` accepts a JSON file only if it has that top-level key.
        sandbox_binds: absolute paths the server needs read-only inside the sandbox beyond its
            command, interpreter and the existing absolute paths among its filled arguments
            (``--sandbox-bind``; the bundled server's own package).
        open_world_tools: tools annotated ``openWorldHint: true`` the operator let through
            (a study file's ``allowOpenWorld``; issue 32); every other open-world tool is refused.
        prepare: the preparation steps run once per checkout before any reservation (a study file's
            ``prepare``; issue 32, ``protocol.prepare_steps``).
        tool_descriptions: ``{TOOL: DESCRIPTION}`` shown to the agent instead of the server's own (an arm's
            ``toolDescriptions``; issue 44): the ``io.warm_up`` relay rewrites the server's ``tools/list``.
        prepared_cap: the most files and bytes the prepared state may hold (a study file's
            ``prepareLimits``; issue 40).
    """

    name: str
    command: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    read_only_tools: tuple[str, ...] = ("doc.search", "doc.get", "handoff.resolve")
    probe_tool: str = "doc.search"
    probe_arguments: Mapping[str, Any] = field(default_factory=lambda: {"query": "the"})
    config_candidates: tuple[str, ...] = DOC_BRIDGE_CONFIG_CANDIDATES
    sandbox_binds: tuple[str, ...] = ()
    open_world_tools: tuple[str, ...] = ()
    prepare: tuple[PrepareStep, ...] = ()
    prepared_cap: PreparedStateCap = field(default_factory=PreparedStateCap)
    tool_descriptions: Mapping[str, str] = field(default_factory=dict)

    @property
    def relayed(self) -> bool:
        """Whether the server runs behind the ``io.warm_up`` relay: it has ``"scope": "server"`` preparation steps
        to replay (issue 32) or descriptions to rewrite (issue 44)."""
        return bool(self.tool_descriptions) or any(step.scope == "server" for step in self.prepare)

    def _names(self, placeholder: str) -> bool:
        texts = [*self.command, json.dumps(dict(self.probe_arguments)),
                 *(text for step in self.prepare for text in step.strings())]
        return any(placeholder in part for part in texts)

    @property
    def needs_config(self) -> bool:
        """Whether the command or probe arguments refer to ``{config}``."""
        return self._names("{config}")

    @property
    def needs_git(self) -> bool:
        """Whether the command or probe arguments refer to ``{git}`` (a private pinned clone is made)."""
        return self._names("{git}")

    @property
    def reads_live_checkout(self) -> bool:
        """Whether the operator handed the server the live checkout (``{checkout}``)."""
        return self._names("{checkout}")

    def isolation_notes(self) -> tuple[str, ...]:
        """The treatment attempts' ``isolationNotAchieved`` sentences owed to this server: the live
        checkout (``{checkout}``) and each open-world tool let through."""
        live = (LIVE_CHECKOUT_NOTE,) if self.reads_live_checkout else ()
        return (*live, *(open_world_note(tool) for tool in self.open_world_tools))

    def argv(self, paths: ServerPaths) -> list[str]:
        """The server's command for one corpus, placeholders filled."""
        return [paths.fill(part) for part in self.command]

    def probe_arguments_for(self, paths: ServerPaths) -> dict[str, Any]:
        """The probe's arguments for one corpus, placeholders filled in every string."""
        filled: dict[str, Any] = _fill_json(dict(self.probe_arguments), paths)
        return filled

    def prepare_step_for(self, step: PrepareStep, paths: ServerPaths) -> PrepareStep:
        """``step`` with the placeholders of one corpus filled in its arguments and command."""
        return step.model_copy(update={
            "arguments": _fill_json(dict(step.arguments), paths),
            "command": None if step.command is None else [paths.fill(part) for part in step.command]})

    def config_problem(self) -> str | None:
        """Why ``{config}`` cannot be resolved whatever the corpus holds, or ``None`` (issue 18).

        An empty candidate list (``--server-config-candidates ""``) means the server needs no
        config file; naming ``{config}`` with it is a contradiction a dry run already refuses.
        """
        if self.needs_config and not self.config_candidates:
            return ("the MCP server's command or probe arguments name {config} but --server-config-candidates "
                    "is empty; name the config file(s) your server reads, or drop {config}")
        return None

    def with_sandbox_binds(self, binds: Sequence[str]) -> McpServerSpec:
        """This spec with more read-only sandbox paths."""
        return replace(self, sandbox_binds=(*self.sandbox_binds, *binds))

    def allowed_names(self) -> tuple[str, ...]:
        """The CLI names of the read-only tools."""
        return tuple(mcp_tool_name(self.name, tool) for tool in self.read_only_tools)

    def denied_names(self, listed_tools: Sequence[str]) -> tuple[str, ...]:
        """CLI names of every listed tool outside the read-only set (the extra deny list)."""
        return tuple(mcp_tool_name(self.name, t) for t in listed_tools if t not in self.read_only_tools)


@dataclass(frozen=True)
class ChoiceNames:
    """How errors about the tool choice name its three parts: the flags, or a study file's fields (issue 18)."""

    tools: str = "--mcp-tools"
    probe: str = "--mcp-probe"
    arguments: str = "--mcp-probe-arguments"


FLAG_NAMES = ChoiceNames()
"""The run commands' flags."""


def check_tool_choice(
    tools: Sequence[str], probe_tool: str, probe_arguments: Any, names: ChoiceNames = FLAG_NAMES
) -> None:
    """Check the read-only tools, the probe and its arguments: the one check of the flags and the study file.

    Rules: at least one tool, every name valid (``protocol.tool_names``, issue 29), none named twice; the
    probe is one of them; the arguments are a JSON object whose
    strings name only known ``{placeholders}`` (issue 15, deliverable 4; issue 18).

    Raises:
        McpConfigError: the first broken rule, worded with ``names``.
    """
    if not tools:
        raise McpConfigError(f"{names.tools} names no tool")
    problem = listing_problem(tools)
    if problem is not None:
        raise McpConfigError(f"{names.tools}: {problem}")
    twice = sorted({tool for tool in tools if list(tools).count(tool) > 1})
    if twice:
        raise McpConfigError(f"{names.tools} names {twice[0]} twice")
    try:
        require_probe_allowed(probe_tool, tools, names.probe, names.tools)
    except ReadOnlyError as error:
        raise McpConfigError(str(error)) from None
    if not isinstance(probe_arguments, dict):
        raise McpConfigError(f"{names.arguments} must be a JSON object")
    unknown = unknown_placeholders(json_strings(probe_arguments))
    if unknown:
        raise McpConfigError(f"{names.arguments} names unknown placeholders {unknown} "
                             f"(known: {' '.join(PLACEHOLDERS)})")


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
    "args": [...], "env": {...}}}}``; ``{root}``, ``{pin}``, ``{config}``, ``{git}`` and
    ``{checkout}`` in ``command`` and ``args`` are placeholders filled per corpus (``ServerPaths``).

    Raises:
        McpConfigError: not exactly one server, a malformed entry, a NUL in the command, its
            arguments or its environment (no process could be started with it), a
            ``{word}`` in the command or arguments that is not a known placeholder, or
            ``{config}`` named with no config candidates (``McpServerSpec.config_problem``).
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
    if any("\0" in text for text in (name, command, *args, *env, *env.values())):
        raise McpConfigError("the MCP server's name, command, args and env must not contain NUL")
    unknown = unknown_placeholders((command, *args))
    if unknown:
        raise McpConfigError(f"the MCP server's command names unknown placeholders {unknown} "
                             f"(known: {' '.join(PLACEHOLDERS)})")
    spec = McpServerSpec(
        name=name,
        command=(command, *args),
        env=env,
        read_only_tools=read_only_tools,
        probe_tool=probe_tool,
        probe_arguments=probe_arguments,
        config_candidates=candidates,
    )
    problem = spec.config_problem()
    if problem is not None:
        raise McpConfigError(problem)
    return spec
