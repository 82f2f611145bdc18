"""Opening the executor a concurrent CLI run asked for (issue 20): the corpora read once, then local or Ray.

Part of the run's preflight: whatever fails here refuses the run before any reservation or
ledger. Ray is imported only when ``executor="ray"`` (``runners.ray_executor``).
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import TYPE_CHECKING

from agentstudy.io.export import CorpusBlobs, read_pinned_corpus
from agentstudy.io.git import GitError
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP
from agentstudy.protocol.schedule import ScheduleEntry
from agentstudy.runners.executor import AttemptExecutor, LocalExecutor
from agentstudy.runners.preflight import PreflightError

if TYPE_CHECKING:
    from agentstudy.runners.minimal import CliRunRequest


def read_corpora(request: CliRunRequest, schedule: tuple[ScheduleEntry, ...]) -> dict[str, CorpusBlobs]:
    """Every repository the schedule uses, read once at its pin as content-addressed blobs.

    Raises:
        PreflightError: a corpus cannot be read (named).
    """
    corpora: dict[str, CorpusBlobs] = {}
    for name in sorted({entry.repository for entry in schedule}):
        try:
            corpora[name] = read_pinned_corpus(request.roots[name], request.loaded.manifest.repositories[name])
        except GitError as error:
            raise PreflightError(f"{name}: {error}") from None
    return corpora


def open_executor(stack: ExitStack, request: CliRunRequest, schedule: tuple[ScheduleEntry, ...]) -> AttemptExecutor:
    """The executor of ``request`` (``local`` or ``ray``), closed when ``stack`` closes (running bodies cancelled).

    Raises:
        PreflightError: the corpora cannot be read; with ``ray``: no ``ray_address``, the MCP
            server needs what is never shipped (``{git}``, ``{checkout}``), the cluster is
            unreachable, or no worker passes the worker preflight.
    """
    corpora = read_corpora(request, schedule)
    executor: AttemptExecutor
    if request.executor == "local":
        executor = LocalExecutor(request.concurrency, corpora)
    else:
        spec = request.settings.mcp
        if request.ray_address is None:
            raise PreflightError("--executor ray needs --ray-address (the head of a running Ray cluster)")
        if spec.needs_git or spec.reads_live_checkout:
            raise PreflightError("--executor ray ships only the pinned corpus: an MCP server using {git} or "
                                 "{checkout} runs with the local executor")
        from agentstudy.runners.ray_executor import RayExecutor

        uses_mcp = any(entry.scenario == DOC_BRIDGE_MCP for entry in schedule)
        executor = RayExecutor(request.ray_address, corpora, binary=request.settings.binary,
                               expected_version=request.expected_cli_version,
                               containment=request.settings.containment,
                               mcp_command=spec.command[0] if uses_mcp else None)
    stack.callback(executor.close, cancel=True)
    return executor


__all__ = ["open_executor", "read_corpora"]
