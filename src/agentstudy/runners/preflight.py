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
(``refusal``); the MCP probe is not started after one. The server's checks live in
:mod:`agentstudy.runners.mcp_preflight`, the refusal in :mod:`agentstudy.runners.preflight_refusal`; their public
names are re-exported here.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import agentstudy
from agentstudy.agents.registry import DEFAULT_AGENT, agent_cli, sweep_stale_scratch
from agentstudy.io.agent_binary import AgentBinaryError, probe_version
from agentstudy.io.containment import ContainmentError, ContainmentMode, check_containment
from agentstudy.io.environment import allowlisted_environment
from agentstudy.io.git import GitError, head, is_clean, path_exists_at, toplevel
from agentstudy.io.server_corpus import ServerCorpora, ServerCorpusError
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP, REPOSITORY_ONLY, StudyDefinition
from agentstudy.protocol.mcp_spec import McpServerSpec, ServerPaths
from agentstudy.protocol.schedule import ScheduleEntry
from agentstudy.runners.mcp_preflight import McpPreflight, check_mcp_servers
from agentstudy.runners.preflight_refusal import NOTHING_WRITTEN, PreflightError, refusal

__all__ = [
    "DEFAULT_MCP_SERVER", "NOTHING_WRITTEN", "McpPreflight", "PreflightError", "StudyPreflight", "check_cli_version",
    "check_corpus_roots", "check_mcp_servers", "mcp_corpora", "prepare_study", "refusal", "require_roots",
]

DEFAULT_MCP_SERVER = McpServerSpec(
    name="doc-bridge",
    command=(sys.executable, "-I", "-m", "agentstudy.rehearsal.mcp_server", "--root", "{root}", "--pin", "{pin}"),
    sandbox_binds=(str(Path(agentstudy.__file__).resolve().parent),),
)
"""The bundled read-only server: serves the pinned corpus snapshot ``{root}`` (the export's filtered tree).

``-I`` keeps the working directory (the export) off its module path; its own package is bound
read-only into the sandbox."""


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
