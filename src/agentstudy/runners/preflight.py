"""Checks before anything is reserved (seed 000, "CLI transport contract", first paragraph).

Corpus checks (also run by ``--dry-run`` with roots): each root is the top level of a clean
checkout (not a directory inside one, so no ledger can land in its work tree) whose HEAD is
the manifest's pin and every task's ``sources`` exist at the pin. CLI checks: the
binary's version equals the expected one; the MCP server of every checkout used by a
``doc-bridge-mcp`` attempt runs the study's preparation steps (issue 32, ``io.server_prepare``), starts
with their prepared state, lists the same tools, none of the operator's read-only
tools is annotated otherwise (``protocol.read_only``; checked before the probe is called), and
it answers its freshness probe; the extra deny list is derived from the listing. Any failure
raises ``PreflightError`` and nothing has been charged or written. A stop signal
(``io.signals``) during the checks turns whatever they raised into ``StopRequested``
(``refusal``); the MCP probe is not started after one.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import agentstudy
from agentstudy.agents.registry import DEFAULT_AGENT, agent_cli, sweep_stale_scratch
from agentstudy.io.agent_binary import AgentBinaryError, probe_version
from agentstudy.io.containment import ContainmentError, ContainmentMode, check_containment
from agentstudy.io.environment import allowlisted_environment
from agentstudy.io.git import GitError, head, is_clean, path_exists_at, toplevel
from agentstudy.io.mcp_client import McpListing, McpProbe, McpProbeError, probe_mcp_server
from agentstudy.io.mcp_sandbox import contained_server
from agentstudy.io.server_corpus import ServerCorpora, ServerCorpusError
from agentstudy.io.server_prepare import PrepareError, run_prepare
from agentstudy.io.signals import StopRequested, raise_if_stopped, stop_signal
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP, REPOSITORY_ONLY, StudyDefinition
from agentstudy.protocol.mcp_spec import McpServerSpec, ServerPaths
from agentstudy.protocol.prepare_steps import PrepareOutcome
from agentstudy.protocol.read_only import ReadOnlyError, read_only_evidence, require_probe_allowed
from agentstudy.protocol.schedule import ScheduleEntry
from agentstudy.protocol.server_words import with_cause
from agentstudy.protocol.tool_names import listing_problem
from agentstudy.transports.cli_args import tool_lists_problem

DEFAULT_MCP_SERVER = McpServerSpec(
    name="doc-bridge",
    command=(sys.executable, "-I", "-m", "agentstudy.rehearsal.mcp_server", "--root", "{root}", "--pin", "{pin}"),
    sandbox_binds=(str(Path(agentstudy.__file__).resolve().parent),),
)
"""The bundled read-only server: serves the pinned corpus snapshot ``{root}`` (the export's filtered tree).

``-I`` keeps the working directory (the export) off its module path; its own package is bound
read-only into the sandbox."""


class PreflightError(RuntimeError):
    """The run is refused before any reservation (one-line reason)."""


NOTHING_WRITTEN = "nothing was reserved or written"


def refusal(error: BaseException, refused: tuple[type[BaseException], ...] = ()) -> BaseException:
    """What a failure before the ledger exists becomes: ``StopRequested`` after a stop signal; ``error``
    itself when it is a ``PreflightError``, one of ``refused`` or not an ``Exception``; any other error
    a ``PreflightError`` naming it (a run refused before any ledger exits 2, never 1)."""
    signum = stop_signal()
    if signum is not None:
        return StopRequested(signum, NOTHING_WRITTEN)
    if isinstance(error, (PreflightError, *refused)) or not isinstance(error, Exception):
        return error
    text = str(error).splitlines()[0][:300] if str(error) else ""
    return PreflightError(f"preflight failed: {error.__class__.__name__}" + (f": {text}" if text else ""))


def check_corpus_roots(manifest: StudyDefinition, roots: Mapping[str, Path]) -> list[str]:
    """Check each given root against the manifest; return the names checked, in manifest order.

    Raises:
        PreflightError: unknown repository name, a root that is not a directory or not a git
            checkout (named as such, not as git's exit code), a root that is not its
            checkout's top level (``git rev-parse --show-toplevel`` differs from the resolved
            root; both named), HEAD not at the pin, a dirty checkout, or a task source missing
            at the pin.
    """
    for name in roots:
        if name not in manifest.repositories:
            raise PreflightError(f"--root names an unknown repository {name!r}")
    checked: list[str] = []
    for name, pin in manifest.repositories.items():
        root = roots.get(name)
        if root is None:
            continue
        if not root.is_dir():
            raise PreflightError(f"{name}: --root {root} is not a directory")
        try:
            top = toplevel(root)
        except GitError:
            raise PreflightError(f"{name}: --root {root} is not a git checkout") from None
        try:
            if top != root.resolve():
                raise PreflightError(f"{name}: --root {root} is not the top level of its checkout {top}")
            if head(root) != pin:
                raise PreflightError(f"{name}: HEAD of {root} is not the pin {pin}")
            if not is_clean(root):
                raise PreflightError(f"{name}: checkout {root} is not clean")
            for task in manifest.tasks:
                if task.repository != name:
                    continue
                for source in task.sources:
                    if not path_exists_at(root, pin, source):
                        raise PreflightError(f"{name}: source {source} of task {task.id} is missing at the pin")
        except GitError as error:
            raise PreflightError(f"{name}: {error}") from None
        checked.append(name)
    return checked


def require_roots(schedule: Iterable[ScheduleEntry], roots: Mapping[str, Path]) -> None:
    """Every repository the schedule uses must have a ``--root``.

    Raises:
        PreflightError: naming the first repository without one.
    """
    for entry in schedule:
        if entry.repository not in roots:
            raise PreflightError(f"missing --root {entry.repository}=PATH")


def check_cli_version(
    binary: Path, expected: str, env: Mapping[str, str], containment: ContainmentMode = "bwrap",
    agent: str = DEFAULT_AGENT,
) -> str:
    """Probe ``binary --version``; return the full line when it is ``agent``'s version ``expected``
    (``AgentCli.version_problem``: Claude Code's first token, Codex's ``codex-cli X.Y.Z``; issue 21).

    ``env`` is the parent environment; the probe child gets only its allowlisted part, with a
    private ``HOME``, ``TMPDIR`` and working directory, contained like an attempt (see
    ``probe_version``).

    Raises:
        PreflightError: when the probe fails or the version differs.
    """
    try:
        line = probe_version(binary, env, containment, agent_cli(agent).start_env)
    except AgentBinaryError as error:
        raise PreflightError(str(error)) from None
    problem = agent_cli(agent).version_problem(line, expected)
    if problem is not None:
        raise PreflightError(problem)
    return line


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
    spec: McpServerSpec, corpora: ServerCorpora, containment: ContainmentMode, parent_env: Mapping[str, str], name: str
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
                check=partial(_vet, spec, name), cwd=cwd,
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

    Up to ``parallel`` corpora are probed at once (a run's ``--concurrency``; issue 19: the probes
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
    probe_one = partial(_probe_corpus, spec, corpora, containment, parent_env)
    with ThreadPoolExecutor(max_workers=max(1, min(parallel, len(names)))) as pool:
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


def mcp_corpora(
    spec: McpServerSpec, manifest: StudyDefinition, schedule: Iterable[ScheduleEntry], roots: Mapping[str, Path],
    scenario: str = DOC_BRIDGE_MCP,
) -> ServerCorpora:
    """The server's view of every corpus an attempt of ``scenario``'s arm in ``schedule`` uses (enter it to make
    them; the treatment's by default, the control's own server's with ``repository-only``, issue 44)."""
    names = sorted({e.repository for e in schedule if e.scenario == scenario})
    return ServerCorpora(spec, {name: (roots[name], manifest.repositories[name]) for name in names})


@dataclass(frozen=True)
class StudyPreflight:
    """What the shared study preflight established (both transports).

    Attributes:
        containment: the proven mechanism as recorded (``"bwrap 0.8.0"`` or ``"restricted"``).
        mcp: the MCP server's live tools and the derived deny list.
        corpora: the server's per-corpus view (snapshots, clones), removed when the run's stack closes.
        control: the control arm's own server, checked the same way (issue 44): its preflight and corpora;
            ``None`` when the control is the repository-only arm.
    """

    containment: str
    mcp: McpPreflight
    corpora: ServerCorpora
    control: tuple[McpPreflight, ServerCorpora] | None = None

    def server_paths(self, entry: ScheduleEntry) -> ServerPaths | None:
        """The placeholder values of ``entry``'s arm's server for its corpus; ``None`` when the arm runs none."""
        if entry.scenario == DOC_BRIDGE_MCP:
            return self.corpora.paths(entry.repository)
        if entry.scenario == REPOSITORY_ONLY and self.control is not None:
            return self.control[1].paths(entry.repository)
        return None

    def arm_preflight(self, scenario: str) -> McpPreflight | None:
        """The preflight of ``scenario``'s arm's server (the treatment's, the control's own), ``None`` without."""
        if scenario == DOC_BRIDGE_MCP:
            return self.mcp
        return self.control[0] if scenario == REPOSITORY_ONLY and self.control is not None else None


def prepare_study(
    stack: ExitStack,
    spec: McpServerSpec,
    manifest: StudyDefinition,
    schedule: Sequence[ScheduleEntry],
    roots: Mapping[str, Path],
    containment: ContainmentMode,
    parent_env: Mapping[str, str],
    parallel: int = 1,
    during_probes: Callable[[], None] | None = None,
    control: McpServerSpec | None = None,
) -> StudyPreflight:
    """Roots, corpus checks, the sweep of killed runs' directories, containment proof, the server's corpus views
    and the MCP probe, in that order.

    The corpus views are entered on ``stack`` so they live until the run ends; up to ``parallel``
    corpora's servers are probed at once (``check_mcp_servers``). ``during_probes`` (the cli
    runner's agent version probe) runs in a thread while the servers are probed, once every cheap
    check has passed (issue 19: it was a serial step of every run's head start); the MCP verdict is
    read first, so a run that both would refuse names the MCP failure, as a serial preflight did.
    ``control``: the control arm's own server (issue 44), given its own corpus views and the same checks,
    after the treatment's.

    Raises:
        PreflightError: any check failed (one line); nothing was reserved or written.
        Exception: whatever ``during_probes`` raised, after the MCP verdict passed.
    """
    require_roots(schedule, roots)
    check_corpus_roots(manifest, roots)
    sweep_stale_scratch(parent_env)  # what a killed run of this machine left (dead owners only; never raises)
    try:
        proven = check_containment(containment, allowlisted_environment(parent_env, home="/nonexistent",
                                                                        tmpdir="/nonexistent"))
        corpora = stack.enter_context(mcp_corpora(spec, manifest, schedule, roots))
        control_corpora = None if control is None else stack.enter_context(
            mcp_corpora(control, manifest, schedule, roots, REPOSITORY_ONLY))
    except (ContainmentError, ServerCorpusError) as error:
        raise PreflightError(str(error)) from None

    def check_both() -> tuple[McpPreflight, tuple[McpPreflight, ServerCorpora] | None]:
        mcp = check_mcp_servers(spec, corpora, containment, parent_env, parallel)
        if control is None or control_corpora is None:
            return mcp, None
        return mcp, (check_mcp_servers(control, control_corpora, containment, parent_env, parallel), control_corpora)

    if during_probes is None:
        return _preflight(proven, corpora, check_both())
    with ThreadPoolExecutor(max_workers=1) as side:  # leaving it waits for ``during_probes`` to end
        alongside = side.submit(during_probes)
        checked = check_both()
    alongside.result()
    return _preflight(proven, corpora, checked)


def _preflight(proven: str, corpora: ServerCorpora,
               checked: tuple[McpPreflight, tuple[McpPreflight, ServerCorpora] | None]) -> StudyPreflight:
    """The :class:`StudyPreflight` of the checked servers (the treatment's, then the control's own)."""
    return StudyPreflight(proven, checked[0], corpora, checked[1])
