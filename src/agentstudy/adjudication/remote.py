"""The minimal study's adjudicator attempts on the executor seam (issue 20): ``agentstudy adjudicate --executor ray``.

The adjudication's walk (``adjudication.walk.ItemWalk``) stays in the driver: it admits each item
against its per-item limit, reserves, settles, judges and writes the companion. With the Ray
executor an item's adjudicator attempt is a ``runners.executor.CliJob`` (Claude Code with
Read, Grep and Glob only, in an export the worker materialises from the shipped corpus blobs),
evaluated in the driver (``submit_cli_attempt``); a worker that died ends the item ``failed``
("worker died"), its whole reservation charged, and stops admission like any attempt that did
not complete. What ships per item: the adjudicator's prompt (the scrubbed, blinded answer and
the task's expected propositions), the model, the containment mode and the reservation. The
ledger, the companion, the blinding key (which arm answered) and the budget never leave the driver.
"""

from __future__ import annotations

from contextlib import ExitStack
from decimal import Decimal
from typing import TYPE_CHECKING

from agentstudy.adjudication.items import PreparedItem
from agentstudy.adjudication.walk import ItemRunner
from agentstudy.agents.registry import agent_cli
from agentstudy.protocol.manifest import REPOSITORY_ONLY
from agentstudy.runners.executor import AttemptExecutor, WorkerRequirements, submit_cli_attempt
from agentstudy.runners.executor_choice import read_corpora, start_executor
from agentstudy.runners.progress import report_excluded
from agentstudy.transports.cli import CliAttemptBody, CliAttemptResult
from agentstudy.transports.cli_args import ArmTools

if TYPE_CHECKING:
    from agentstudy.adjudication.run import AdjudicationRequest


def open_item_executor(stack: ExitStack, request: AdjudicationRequest, items: list[PreparedItem]) -> AttemptExecutor:
    """The Ray executor of a concurrent adjudication, opened in its preflight (closed with ``stack``).

    Each worker proves the agent binary's version and the containment; an excluded worker is shown
    on stderr (the companion's form is unchanged).

    Raises:
        PreflightError: a corpus cannot be read, or ``start_executor`` refused (nothing written).
    """
    corpora = read_corpora(request.roots, request.loaded.manifest.repositories,
                           {item.task.repository for item in items if item.prompt is not None})
    needs = WorkerRequirements(binary=request.settings.binary, expected_version=request.expected_cli_version,
                               containment=request.settings.containment, agent=request.settings.agent)
    executor = start_executor(stack, executor="ray", ray_address=request.ray_address,
                              concurrency=request.concurrency, corpora=corpora, needs=needs)
    for worker in executor.excluded:
        report_excluded(request.progress, worker.node, worker.reason)
    return executor


def remote_item_runner(executor: AttemptExecutor, request: AdjudicationRequest, tools: ArmTools) -> ItemRunner:
    """``ItemWalk``'s ``run_item`` on ``executor``: each item's attempt a ``CliJob``, awaited in the walk's thread."""

    def run_item(item: PreparedItem, reservation: Decimal) -> CliAttemptResult:
        body = CliAttemptBody(request.settings, REPOSITORY_ONLY, tools, item.prompt or "", reservation, None,
                              request.parent_env, agent=agent_cli(request.settings.agent))
        return submit_cli_attempt(executor, body, item.task.repository).result()

    return run_item


__all__ = ["open_item_executor", "remote_item_runner"]
