"""Flags that configure the MCP server under study, shared by the commands that run studies.

A study file's treatment arm gives their defaults (issue 18, :func:`study_mcp_spec`); the flags and the
file go through one check (:func:`build_mcp_spec`). A flag replaces the treatment arm's value only, so a study
file whose control arm runs a server of its own (a comparison, issue 44) refuses every one of them: the two
configurations compared are the file's, never half a file and half a command line.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource

from agentstudy.commands.common import fail
from agentstudy.protocol.seed_names import DOC_BRIDGE_CONFIG_CANDIDATES

if TYPE_CHECKING:
    from agentstudy.protocol.mcp_spec import McpServerSpec
    from agentstudy.protocol.prepare_steps import PreparedStateCap, PrepareStep
    from agentstudy.protocol.study_arms import ServerArm, TreatmentArm

F = TypeVar("F", bound=Callable[..., Any])


def mcp_options(function: F) -> F:
    """Add the MCP flags: ``--mcp-config``, ``--server-config-candidates``, ``--mcp-tools``, ``--mcp-probe``,
    ``--mcp-probe-arguments``, ``--sandbox-bind``."""
    options = [
        click.option("--mcp-config", "mcp_config_file", type=click.Path(path_type=Path),
                     help="Claude Code MCP config naming exactly one stdio server (default: the bundled read-only "
                          "server). Placeholders in its command/args: {root} a read-only snapshot of the pinned "
                          "corpus (the export's tree), {pin}, {config} the server config found in that snapshot, "
                          "{git} a private read-only clone with the pin's history only, {checkout} the live "
                          "checkout (recorded as not isolated). With a study file these MCP flags replace its "
                          "treatment arm's values only; a study file whose control arm runs a server of its own "
                          "(a comparison) refuses them: edit its arms instead."),
        click.option("--server-config-candidates", default=",".join(DOC_BRIDGE_CONFIG_CANDIDATES), show_default=True,
                     help="Files tried in order in each corpus snapshot for {config}; NAME#KEY needs that JSON key; "
                          "\"\" means the server needs no config file."),
        click.option("--mcp-tools", default="doc.search,doc.get,handoff.resolve", show_default=True,
                     help="The server's read-only tools the agent may call; every other listed tool is denied. "
                          "Preflight refuses a named tool the server annotates readOnlyHint: false or "
                          "destructiveHint: true; one without readOnlyHint is allowed on your word, and the "
                          "ledger says so."),
        click.option("--mcp-probe", default="doc.search", show_default=True,
                     help="Freshness probe called at the pin before the run; one of --mcp-tools."),
        click.option("--mcp-probe-arguments", default='{"query": "the"}', show_default=True,
                     help="JSON object of arguments for the probe; the placeholders are filled in its strings."),
        click.option("--sandbox-bind", "sandbox_binds", multiple=True, metavar="PATH",
                     help="An absolute path the MCP server needs read-only inside the sandbox, beyond its command, "
                          "interpreter and the existing absolute paths among its arguments (repeatable)."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def mcp_spec_from_options(
    mcp_config_file: Path | None,
    server_config_candidates: str,
    mcp_tools: str,
    mcp_probe: str,
    mcp_probe_arguments: str,
    sandbox_binds: tuple[str, ...] = (),
) -> McpServerSpec:
    """Build the MCP server spec from the flags; exit 2 with one line on a bad value.

    Bad values: ``--mcp-tools`` naming no tool, ``--mcp-probe`` not one of them, probe arguments
    that are not a bounded JSON object or name an unknown ``{placeholder}``, a missing or
    malformed ``--mcp-config`` (not exactly one server, unknown placeholders), or a
    ``--sandbox-bind`` that is not an existing absolute path. Nothing is started.
    """
    from agentstudy.protocol.json_input import JsonInputError, load_json
    try:
        arguments = load_json(mcp_probe_arguments)
    except JsonInputError as error:
        fail(f"--mcp-probe-arguments {error}")
    return build_mcp_spec(McpChoice(
        config=mcp_config_file,
        candidates=_split(server_config_candidates),
        tools=_split(mcp_tools),
        probe_tool=mcp_probe,
        probe_arguments=arguments,
        sandbox_binds=sandbox_binds,
    ))


def _split(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


def _default_cap() -> PreparedStateCap:
    """The default cap of a prepared server's state, imported when an options object is made (not at ``--help``)."""
    from agentstudy.protocol.prepare_steps import PreparedStateCap
    return PreparedStateCap()


@dataclass(frozen=True)
class McpChoice:
    """The MCP settings of a run, parsed, before they become a spec (issue 18: flags or a study file).

    Attributes:
        config: a Claude Code MCP config file (``--mcp-config``), its parsed document (a study
            file's ``mcpConfig``), or ``None`` for the bundled server.
        candidates: ``{config}`` file names tried in each snapshot.
        tools: the read-only tools the agent may call.
        probe_tool: the freshness probe, one of ``tools``.
        probe_arguments: the probe's arguments (parsed JSON).
        sandbox_binds: extra absolute read-only paths inside the server's sandbox.
        open_world: ``openWorldHint: true`` tools let through (a study file's ``allowOpenWorld``).
        prepare: the preparation steps (a study file's ``prepare``; issue 32).
        descriptions: ``{TOOL: DESCRIPTION}`` overrides (a study file's ``toolDescriptions``; issue 44).
        prepared_cap: the cap on the prepared state (a study file's ``prepareLimits``; issue 40).
    """

    config: Path | dict[str, Any] | None
    candidates: tuple[str, ...]
    tools: tuple[str, ...]
    probe_tool: str
    probe_arguments: Any
    sandbox_binds: tuple[str, ...] = ()
    open_world: tuple[str, ...] = ()
    prepare: tuple[PrepareStep, ...] = ()
    descriptions: tuple[tuple[str, str], ...] = ()
    prepared_cap: PreparedStateCap = field(default_factory=_default_cap)


def build_mcp_spec(choice: McpChoice) -> McpServerSpec:
    """The spec of ``choice``: the one path of the flags and the study file; exit 2 with one line on a bad value.

    Checks ``protocol.mcp_spec.check_tool_choice`` (worded with the flag names), every sandbox
    bind (an existing absolute path) and the MCP config (``parse_mcp_config``). Nothing is started.
    """
    from agentstudy.io.server_config import load_mcp_config
    from agentstudy.protocol.mcp_spec import McpConfigError, McpServerSpec, check_tool_choice, parse_mcp_config
    from agentstudy.protocol.sandbox_binds import kernel_bind_problem
    from agentstudy.runners.preflight import DEFAULT_MCP_SERVER
    for bind in choice.sandbox_binds:
        if not os.path.isabs(bind) or any(c in bind for c in "\r\n\0"):
            fail(f"--sandbox-bind must be an absolute path, got {bind!r}")
        problem = kernel_bind_problem(bind)
        if problem is not None:
            fail(problem)
        if not os.path.lexists(bind):
            fail(f"--sandbox-bind {bind} does not exist")
    try:
        check_tool_choice(choice.tools, choice.probe_tool, choice.probe_arguments)
        strays = [tool for tool, _ in choice.descriptions if tool not in choice.tools]
        if strays:
            raise McpConfigError(f"toolDescriptions names {', '.join(strays)}, not among the tools the agent is "
                                 "offered")
        if choice.config is None:
            return McpServerSpec(
                name=DEFAULT_MCP_SERVER.name,
                command=DEFAULT_MCP_SERVER.command,
                read_only_tools=choice.tools,
                probe_tool=choice.probe_tool,
                probe_arguments=choice.probe_arguments,
                config_candidates=choice.candidates,
                sandbox_binds=(*DEFAULT_MCP_SERVER.sandbox_binds, *choice.sandbox_binds),
                prepare=choice.prepare, prepared_cap=choice.prepared_cap,
                tool_descriptions=dict(choice.descriptions),
            )
        if isinstance(choice.config, Path):
            spec = load_mcp_config(choice.config, choice.tools, choice.probe_tool, choice.probe_arguments,
                                   choice.candidates)
        else:
            spec = parse_mcp_config(choice.config, choice.tools, choice.probe_tool, choice.probe_arguments,
                                    choice.candidates)
    except McpConfigError as error:
        fail(str(error))
    return replace(spec.with_sandbox_binds(choice.sandbox_binds), open_world_tools=choice.open_world,
                   prepare=choice.prepare, prepared_cap=choice.prepared_cap,
                   tool_descriptions=dict(choice.descriptions))


MCP_FLAGS = {"mcp_config_file": "--mcp-config", "server_config_candidates": "--server-config-candidates",
             "mcp_tools": "--mcp-tools", "mcp_probe": "--mcp-probe", "mcp_probe_arguments": "--mcp-probe-arguments",
             "sandbox_binds": "--sandbox-bind"}
""":func:`mcp_options`' flags by parameter name, in their order."""


def _given(ctx: click.Context, name: str) -> bool:
    source = ctx.get_parameter_source(name)
    return source is not None and source not in (ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)


def study_mcp_spec(
    ctx: click.Context,
    arm: TreatmentArm | None,
    mcp_config_file: Path | None,
    server_config_candidates: str,
    mcp_tools: str,
    mcp_probe: str,
    mcp_probe_arguments: str,
    sandbox_binds: tuple[str, ...] = (),
    control: ServerArm | None = None,
) -> McpServerSpec:
    """The spec of a run from a study file's treatment arm, each MCP flag given explicitly overriding it (issue 18).

    Without ``arm`` (a seed manifest) this is :func:`mcp_spec_from_options`. With one, the file's
    ``mcpConfig``, ``serverConfigCandidates``, ``tools``, ``probe`` and ``sandboxBinds`` are the
    defaults and a flag typed on the command line (click's parameter source) replaces the
    matching one; ``--mcp-probe-arguments`` replaces the probe's arguments only. Exit 2 with one
    line on a bad value, as for the flags. ``control`` (the file's control arm): when it runs a server of its own
    (a comparison study, issue 44), any MCP flag given is refused, exit 2 with one line naming it (it would change
    the treatment arm alone).
    """
    from agentstudy.protocol.json_input import JsonInputError, load_json
    if control is not None and control.has_server:
        given = [flag for name, flag in MCP_FLAGS.items() if _given(ctx, name)]
        if given:
            fail(f"{given[0]} would change only the treatment arm of a comparison study (its control arm runs a "
                 "server of its own): set both servers in the study file's arms.control and arms.treatment")
    if arm is None:
        return mcp_spec_from_options(mcp_config_file, server_config_candidates, mcp_tools, mcp_probe,
                                     mcp_probe_arguments, sandbox_binds)
    if _given(ctx, "mcp_probe_arguments"):
        try:
            arguments: Any = load_json(mcp_probe_arguments)
        except JsonInputError as error:
            fail(f"--mcp-probe-arguments {error}")
    else:
        arguments = dict(arm.probe.arguments)
    default_candidates = (DOC_BRIDGE_CONFIG_CANDIDATES if arm.server_config_candidates is None
                          else tuple(arm.server_config_candidates))
    return build_mcp_spec(McpChoice(
        config=mcp_config_file if _given(ctx, "mcp_config_file") else arm.mcp_config,
        candidates=_split(server_config_candidates) if _given(ctx, "server_config_candidates")
        else default_candidates,
        tools=_split(mcp_tools) if _given(ctx, "mcp_tools") else tuple(arm.tools),
        probe_tool=mcp_probe if _given(ctx, "mcp_probe") else arm.probe.tool,
        probe_arguments=arguments,
        sandbox_binds=sandbox_binds if _given(ctx, "sandbox_binds") else tuple(arm.sandbox_binds or ()),
        open_world=tuple(arm.allow_open_world),
        prepare=tuple(arm.prepare),
        descriptions=tuple(arm.tool_descriptions.items()),
        prepared_cap=arm.prepare_limits,
    ))


def arm_mcp_spec(arm: ServerArm) -> McpServerSpec | None:
    """The spec of an arm's own server as its study file gives it (no flag replaces it), ``None`` for the
    repository-only arm (issue 44: the control arm's server); exit 2 with one line on a bad value, as the flags."""
    if arm.tools is None or arm.probe is None:
        return None
    return build_mcp_spec(McpChoice(
        config=arm.mcp_config,
        candidates=DOC_BRIDGE_CONFIG_CANDIDATES if arm.server_config_candidates is None
        else tuple(arm.server_config_candidates),
        tools=tuple(arm.tools),
        probe_tool=arm.probe.tool,
        probe_arguments=dict(arm.probe.arguments),
        sandbox_binds=tuple(arm.sandbox_binds or ()),
        open_world=tuple(arm.allow_open_world),
        prepare=tuple(arm.prepare),
        descriptions=tuple(arm.tool_descriptions.items()),
        prepared_cap=arm.prepare_limits,
    ))
