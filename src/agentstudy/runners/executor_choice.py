"""Opening the executor a concurrent run asked for (issue 20): the corpora read once, then local or Ray.

``start_executor`` is the one opener every runner uses (minimal cli and http, both adjudications,
the controlled runner); ``open_executor`` is the cli run's (its corpora and worker requirements).
Part of the run's preflight: whatever fails here refuses the run before any reservation or
ledger. Ray is imported only when ``executor="ray"`` (``runners.ray_executor``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from agentstudy.io.export import CorpusBlobs, read_pinned_corpus
from agentstudy.io.git import GitError
from agentstudy.protocol.arm_servers import arm_server
from agentstudy.protocol.mcp_spec import McpServerSpec
from agentstudy.protocol.records import MinimalLedger
from agentstudy.protocol.schedule import ScheduleEntry
from agentstudy.runners.executor import AttemptExecutor, LocalExecutor, WorkerRequirements
from agentstudy.runners.preflight import PreflightError
from agentstudy.runners.progress import RunProgress, report_excluded

if TYPE_CHECKING:
    from agentstudy.runners.cli_request import CliRunRequest


def read_corpora(roots: Mapping[str, Path], pins: Mapping[str, str], names: Iterable[str]) -> dict[str, CorpusBlobs]:
    """Every repository of ``names`` (the ones a schedule uses), read once at its pin as content-addressed blobs.

    Raises:
        PreflightError: a corpus cannot be read (named).
    """
    corpora: dict[str, CorpusBlobs] = {}
    for name in sorted(set(names)):
        try:
            corpora[name] = read_pinned_corpus(roots[name], pins[name])
        except GitError as error:
            raise PreflightError(f"{name}: {error}") from None
    return corpora


def ray_ledger_fields(ledger: MinimalLedger, executor: AttemptExecutor, progress: RunProgress) -> None:
    """Record a Ray run in its ledger (``executor: "ray"``, ``excludedWorkers``) and show each excluded worker."""
    ledger.executor, ledger.excluded_workers = "ray", list(executor.excluded)
    for worker in executor.excluded:
        report_excluded(progress, worker.node, worker.reason)


def start_executor(stack: ExitStack, *, executor: str, ray_address: str | None, concurrency: int,
                   corpora: Mapping[str, CorpusBlobs], needs: WorkerRequirements) -> AttemptExecutor:
    """The executor every concurrent runner opens (``local`` or ``ray``), closed when ``stack`` closes.

    ``needs`` is what each Ray worker proves before its first attempt (unused locally); the
    corpora are handed to the bodies (shipped once through the object store with Ray). Closing
    after an error cancels the running bodies.

    Raises:
        PreflightError: with ``ray``: no ``ray_address``, the cluster is unreachable, or no
            worker passes the worker preflight (each node's reason named).
    """
    opened: AttemptExecutor
    if executor == "local":
        opened = LocalExecutor(concurrency, corpora)
    else:
        if ray_address is None:
            raise PreflightError("--executor ray needs --ray-address (the head of a running Ray cluster)")
        from agentstudy.runners.ray_executor import RayExecutor

        opened = RayExecutor(ray_address, corpora, needs)
    stack.callback(opened.close, cancel=True)
    return opened


def only_pinned_corpus(spec: McpServerSpec) -> None:
    """Refuse an MCP server that needs what a Ray worker never gets (``{git}``, ``{checkout}``).

    Raises:
        PreflightError: the server uses ``{git}`` or ``{checkout}``.
    """
    if spec.needs_git or spec.reads_live_checkout:
        raise PreflightError("--executor ray ships only the pinned corpus: an MCP server using {git} or "
                             "{checkout} runs with the local executor")


def served_commands(schedule: tuple[ScheduleEntry, ...], treatment: McpServerSpec,
                    control: McpServerSpec | None) -> tuple[str, ...]:
    """The commands of every server the scheduled arms run (``protocol.arm_servers``: the treatment's, and the
    control arm's own when it has one; issue 44), in first-scheduled order: what each Ray worker must prove."""
    served = (arm_server(entry.scenario, treatment, control) for entry in schedule)
    return tuple(dict.fromkeys(spec.command[0] for spec in served if spec is not None))


def open_executor(stack: ExitStack, request: CliRunRequest, schedule: tuple[ScheduleEntry, ...]) -> AttemptExecutor:
    """The executor of a concurrent CLI run (``local`` or ``ray``; ``start_executor``).

    Raises:
        PreflightError: the corpora cannot be read; with ``ray``: see ``start_executor``, or the
            MCP server needs what is never shipped (``only_pinned_corpus``).
    """
    corpora = read_corpora(request.roots, request.loaded.manifest.repositories, (e.repository for e in schedule))
    spec, control = request.settings.mcp, request.settings.control_mcp
    if request.executor == "ray":
        for each in (spec, control):  # both arms' servers ship on the pinned corpus alone (issue 44)
            if each is not None:
                only_pinned_corpus(each)
    if request.executor == "ray" and request.other_agents:
        raise PreflightError("a study with several agents runs on the local executor only (one agent per Ray run)")
    needs = WorkerRequirements(binary=request.settings.binary, expected_version=request.expected_cli_version,
                               agent=request.settings.agent, containment=request.settings.containment,
                               commands=served_commands(schedule, spec, control))
    return start_executor(stack, executor=request.executor, ray_address=request.ray_address,
                          concurrency=request.concurrency, corpora=corpora, needs=needs)


__all__ = ["WorkerRequirements", "only_pinned_corpus", "open_executor", "ray_ledger_fields", "read_corpora",
           "served_commands", "start_executor"]
