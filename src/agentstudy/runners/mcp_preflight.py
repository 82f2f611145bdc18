"""The MCP server's preflight: start the contained server once per corpus of its arm, after the study's
preparation steps, vet its listing, call its freshness probe and compare the corpora (seed 000, "CLI transport
contract"; issues 19, 32, 44). Any failure raises ``PreflightError``; no server is started after a stop signal.
:mod:`agentstudy.runners.preflight` re-exports ``McpPreflight`` and ``check_mcp_servers``.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from agentstudy.io.containment import ContainmentError, ContainmentMode
from agentstudy.io.mcp_client import (
    McpListing,
    McpProbe,
    McpProbeError,
    ProbeProcesses,
    probe_mcp_server,
    process_probe_processes,
)
from agentstudy.io.mcp_sandbox import contained_server
from agentstudy.io.server_corpus import ServerCorpora
from agentstudy.io.server_prepare import PrepareError, run_prepare
from agentstudy.io.signals import raise_if_stopped
from agentstudy.protocol.mcp_spec import McpServerSpec
from agentstudy.protocol.prepare_steps import PrepareOutcome
from agentstudy.protocol.read_only import ReadOnlyError, read_only_evidence, require_probe_allowed
from agentstudy.protocol.server_words import with_cause
from agentstudy.protocol.tool_names import listing_problem
from agentstudy.runners.preflight_refusal import NOTHING_WRITTEN, PreflightError
from agentstudy.transports.cli_args import tool_lists_problem


@dataclass(frozen=True)
class McpPreflight:
    """What the MCP preflight established.

    Attributes:
        listed_tools: the live ``tools/list`` names shared by every corpus.
        extra_denied: CLI names of every listed tool outside the read-only set.
        read_only_evidence: per read-only tool, why it counts as read-only
            (``protocol.read_only.ANNOTATED_BY_SERVER`` or ``DECLARED_BY_OPERATOR``); empty
            when no server was started.
        annotations: every listed tool's annotations as the server sent them (camelCase keys,
            ``io.mcp_client.McpProbe.annotations``); shown by ``--dry-run --probe``.
        servers_started: how many servers were started (one per corpus of the MCP arm).
        prepared: per repository, its preparation's outcome (issue 32); empty when the study declares no step.
        tools_list_sha256: SHA-256 of the first corpus's ``tools/list`` as the agent sees it (descriptions
            rewritten by the arm's ``toolDescriptions``; issue 44); ``None`` when no server was started.
        descriptions: that listing's description of every listed tool (issue 44).
        server_version: the first corpus's server's ``serverInfo.version`` (issue 44); ``None`` when unknown.
    """

    listed_tools: tuple[str, ...]
    extra_denied: tuple[str, ...]
    read_only_evidence: Mapping[str, str]
    annotations: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    servers_started: int = 0
    prepared: Mapping[str, PrepareOutcome] = field(default_factory=dict)
    tools_list_sha256: str | None = None
    descriptions: Mapping[str, str] = field(default_factory=dict)
    server_version: str | None = None


def _vet(spec: McpServerSpec, name: str, listing: McpListing) -> None:
    """Refuse a listing with a tool name that breaks the rule or that the agent's argv cannot carry, without every
    read-only tool, or with one annotated otherwise (before the probe call)."""
    problem = listing_problem(listing.tools) or tool_lists_problem(spec, listing.tools)
    if problem is not None:  # the same rules as init and the study-file loader (issue 29)
        raise PreflightError(f"{name}: {problem}")
    missing = sorted(set(spec.read_only_tools) - set(listing.tools))
    if missing:
        raise PreflightError(f"{name}: MCP server does not list {missing}")
    try:
        read_only_evidence(spec.read_only_tools, listing.hints, spec.open_world_tools)
    except ReadOnlyError as error:
        raise PreflightError(f"{name}: {error}") from None


def _prepare_corpus(
    spec: McpServerSpec, corpora: ServerCorpora, containment: ContainmentMode, parent_env: Mapping[str, str], name: str
) -> PrepareOutcome | None:
    """Run the study's preparation steps for corpus ``name`` and hand their state to its later servers (issue 32).

    Raises:
        PreflightError: a step failed (the server's bounded, redacted words) or the state could not be kept.
    """
    if not spec.prepare:
        return None
    try:
        state = corpora.state_directory(name)
        outcome = run_prepare(spec, name, corpora.paths(name), containment, parent_env, state)
    except (PrepareError, ContainmentError, OSError) as error:
        raise PreflightError(f"{name}: {error}") from None
    corpora.set_state(name, state)
    return outcome


def _probe_corpus(
    spec: McpServerSpec, corpora: ServerCorpora, containment: ContainmentMode, parent_env: Mapping[str, str],
    processes: ProbeProcesses, name: str,
) -> tuple[McpProbe, PrepareOutcome | None]:
    """Run corpus ``name``'s preparation steps, then start the contained server on it (with the prepared state),
    vet its listing and call its probe (never after a stop signal).

    Raises:
        PreflightError: a preparation step fails, the server fails to start, a tool is missing or mis-annotated,
            or the probe fails.
        StopRequested: a stop signal arrived before the server was started.
    """
    raise_if_stopped(NOTHING_WRITTEN)
    prepared = _prepare_corpus(spec, corpora, containment, parent_env, name)
    raise_if_stopped(NOTHING_WRITTEN)
    paths = corpora.paths(name)
    try:
        with contained_server(spec, paths, containment, parent_env) as (argv, child, cwd):
            probe = probe_mcp_server(
                argv[0], argv[1:], child, spec.probe_tool, spec.probe_arguments_for(paths),
                check=partial(_vet, spec, name), cwd=cwd, processes=processes,
            )
    except (McpProbeError, ContainmentError) as error:
        raise PreflightError(f"{name}: {error}") from None
    if not probe.probe_ok:
        said = f": {probe.probe_error}" if probe.probe_error else ""
        raise PreflightError(with_cause(f"{name}: MCP freshness probe {spec.probe_tool} failed at the pin{said}",
                                        probe.probe_error or ""))
    return probe, prepared


def check_mcp_servers(
    spec: McpServerSpec,
    corpora: ServerCorpora,
    containment: ContainmentMode,
    parent_env: Mapping[str, str],
    parallel: int = 1,
) -> McpPreflight:
    """Start the contained server for every corpus the MCP arm uses, vet its tools, probe it, compare.

    The corpora's probes share the process's probe processes (``io.mcp_client.process_probe_processes``: the SDK
    is imported once per probe process, not once per corpus or per preflight; an idle one ends after
    ``io.mcp_client.PROBE_IDLE_S`` seconds or at exit). Up to ``parallel`` corpora
    are probed at once (a run's ``--concurrency``; issue 19: the probes
    were a serial head start of every run). The verdict does not depend on ``parallel``: every
    probe finishes, then the results are read in corpus-name order, so the first failure named is
    the same as in a serial preflight.

    Raises:
        PreflightError: the probe tool is not a read-only tool, a preparation step fails (issue 32: the
            server's own words, bounded and redacted), a server fails to start, a
            read-only tool is missing or annotated ``readOnlyHint: false`` / ``destructiveHint:
            true`` (named; the probe is then never called), its probe fails (the server's own
            error text quoted, bounded and scrubbed: ``io.mcp_child.server_text``), or two
            corpora list or annotate different tools.
        StopRequested: a stop signal arrived (no server is started after it).
    """
    try:
        require_probe_allowed(spec.probe_tool, spec.read_only_tools)
    except ReadOnlyError as error:
        raise PreflightError(str(error)) from None
    names = list(corpora.names)
    with ThreadPoolExecutor(max_workers=max(1, min(parallel, len(names)))) as pool:
        probe_one = partial(_probe_corpus, spec, corpora, containment, parent_env, process_probe_processes())
        futures = [pool.submit(probe_one, name) for name in names]
    listed: tuple[str, ...] | None = None
    evidence: dict[str, str] = {}
    annotations: Mapping[str, Mapping[str, Any]] = {}
    prepared: dict[str, PrepareOutcome] = {}
    first: McpProbe | None = None
    for name, future in zip(names, futures, strict=True):
        probe, outcome = future.result()  # re-raises the first failure in name order
        if outcome is not None:
            prepared[name] = outcome
        seen = read_only_evidence(spec.read_only_tools, probe.hints, spec.open_world_tools)  # vetted: cannot raise
        tools = tuple(sorted(probe.tools))
        if listed is not None and tools != listed:
            raise PreflightError("MCP servers of different corpora list different tools")
        if listed is not None and seen != evidence:
            raise PreflightError("MCP servers of different corpora annotate the read-only tools differently")
        listed, evidence, annotations = tools, seen, probe.annotations
        first = first or probe
    unapplied = sorted(tool for tool, text in spec.tool_descriptions.items()
                       if first is not None and first.descriptions.get(tool) != text)
    if unapplied:
        raise PreflightError(f"the rewritten descriptions of {', '.join(unapplied)} did not reach the client "
                             "(the description relay did not run)")
    if listed is None or first is None:
        return McpPreflight((), (), {})
    return McpPreflight(listed, spec.denied_names(listed), evidence, annotations, len(names), prepared,
                        first.listing_sha256 or None, dict(first.descriptions), first.server_version)
