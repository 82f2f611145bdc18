"""Checks before anything is reserved (seed 000, "CLI transport contract", first paragraph).

Corpus checks (also run by ``--dry-run`` with roots): each root is a clean checkout whose
HEAD is the manifest's pin and every task's ``sources`` exist at the pin. CLI checks: the
binary's version equals the expected one; the MCP server of every checkout used by a
``doc-bridge-mcp`` attempt starts, answers its freshness probe and lists the same tools,
from which the extra deny list is derived. Any failure raises ``PreflightError`` and nothing
has been charged or written.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from agentstudy.io.claude_cli import ClaudeBinaryError, probe_version, version_token
from agentstudy.io.git import GitError, head, is_clean, path_exists_at
from agentstudy.io.mcp_client import McpProbeError, probe_mcp_server
from agentstudy.io.server_config import resolve_server_config
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP, Manifest
from agentstudy.protocol.mcp_spec import McpServerSpec
from agentstudy.protocol.schedule import ScheduleEntry

DEFAULT_MCP_SERVER = McpServerSpec(
    name="doc-bridge",
    command=(sys.executable, "-m", "agentstudy.rehearsal.mcp_server", "--repo", "{root}", "--pin", "{pin}"),
)
"""The bundled read-only server: serves any git corpus from its blobs at the pin."""


class PreflightError(RuntimeError):
    """The run is refused before any reservation (one-line reason)."""


def check_corpus_roots(manifest: Manifest, roots: Mapping[str, Path]) -> list[str]:
    """Check each given root against the manifest; return the names checked, in manifest order.

    Raises:
        PreflightError: unknown repository name, not a git checkout, HEAD not at the pin,
            a dirty checkout, or a task source missing at the pin.
    """
    for name in roots:
        if name not in manifest.repositories:
            raise PreflightError(f"--root names an unknown repository {name!r}")
    checked: list[str] = []
    for name, pin in manifest.repositories.items():
        root = roots.get(name)
        if root is None:
            continue
        try:
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


def check_cli_version(binary: Path, expected: str, env: Mapping[str, str]) -> str:
    """Probe ``binary --version``; return the full line when its first token equals ``expected``.

    ``env`` is the parent environment; the probe child gets only its allowlisted part, with a
    private ``HOME``, ``TMPDIR`` and working directory (see ``probe_version``).

    Raises:
        PreflightError: when the probe fails or the version differs.
    """
    try:
        line = probe_version(binary, env)
    except ClaudeBinaryError as error:
        raise PreflightError(str(error)) from None
    if version_token(line) != expected:
        raise PreflightError(f"Claude Code version {line!r} is not the expected {expected}")
    return line


@dataclass(frozen=True)
class McpPreflight:
    """What the MCP preflight established.

    Attributes:
        listed_tools: the live ``tools/list`` names shared by every checkout.
        extra_denied: CLI names of every listed tool outside the read-only set.
        configs: per repository, the server config file resolved in its checkout (``None``
            when the command needs none).
    """

    listed_tools: tuple[str, ...]
    extra_denied: tuple[str, ...]
    configs: Mapping[str, str | None]


def check_mcp_servers(
    spec: McpServerSpec, manifest: Manifest, schedule: Iterable[ScheduleEntry], roots: Mapping[str, Path]
) -> McpPreflight:
    """Start the server for every checkout a doc-bridge attempt uses, probe it and compare tool lists.

    Raises:
        PreflightError: no server config file in a checkout (when the command needs one), a
            server fails to start, its probe fails, a read-only tool is missing, or two
            checkouts list different tools.
    """
    names = sorted({e.repository for e in schedule if e.scenario == DOC_BRIDGE_MCP})
    listed: tuple[str, ...] | None = None
    configs: dict[str, str | None] = {}
    for name in names:
        config: str | None = None
        if spec.needs_config:
            found = resolve_server_config(roots[name], spec.config_candidates)
            if found is None:
                raise PreflightError(f"{name}: no MCP server config file ({', '.join(spec.config_candidates)})")
            config = str(found)
        configs[name] = config
        argv = spec.argv(str(roots[name]), manifest.repositories[name], config)
        try:
            probe = probe_mcp_server(argv[0], argv[1:], spec.env or None, spec.probe_tool, spec.probe_arguments)
        except McpProbeError as error:
            raise PreflightError(f"{name}: {error}") from None
        if not probe.probe_ok:
            raise PreflightError(f"{name}: MCP freshness probe {spec.probe_tool} failed at the pin")
        missing = sorted(set(spec.read_only_tools) - set(probe.tools))
        if missing:
            raise PreflightError(f"{name}: MCP server does not list {missing}")
        tools = tuple(sorted(probe.tools))
        if listed is not None and tools != listed:
            raise PreflightError("MCP servers of different checkouts list different tools")
        listed = tools
    if listed is None:
        return McpPreflight((), (), configs)
    return McpPreflight(listed, spec.denied_names(listed), configs)
