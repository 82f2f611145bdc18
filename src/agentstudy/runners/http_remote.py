"""The http transport on the executor seam (issue 20): a Messages API attempt as a job a Ray worker runs.

The driver stays the only budget authority and the only ledger writer. It admits each attempt
against its whole attempt budget (``--attempt-budget-usd``; the reservation is on disk, whole,
before the job is submitted), exactly as the local concurrent walk (``runners.http_attempts``).
The job (``HttpJob``) is the attempt's body: the bounded agent loop over the Messages API with
its per-call reservations inside an attempt-local ``Budget`` whose cap is that reservation, the
repository tools over the shipped corpus blobs, and in the MCP arm a fresh contained MCP server
on a snapshot the worker makes from the same blobs. It returns the raw exchange's facts
(``HttpAttemptResult``: status, tokens, tool calls, the attempt's money, the answer) and the
worker's node id. Nothing on the worker touches the run's budget or the ledger.

The driver re-checks every returned result (``recheck``: the attempt's budget is its
reservation, 0 <= measured <= charged <= reservation, no negative count) before the walk settles
it, so a worker can never make the run spend more than it reserved; a result that fails is
settled ``failed`` with the whole reservation charged. A worker or node that died
(``WorkerDied``) gives ``worker_died_result``: ``failed``, ``"worker died"``, usage incomplete,
the whole reservation charged; never a second run.

What ships: the model, the upper prices, the MCP server's command and placeholder values, the
containment mode, the base URL, the prompt, the reservation, and in rehearsal the dummy key. A
real key never ships: a worker reads its own ``ANTHROPIC_API_KEY`` (the worker preflight
requires it). The driver's environment never ships (the MCP server's allowlisted environment is
built from the worker's own).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import ExitStack
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

from agentstudy.io.export import CorpusBlobs
from agentstudy.io.messages_api import API_KEY_ENV, MessagesClient, api_key_from_environment
from agentstudy.io.scratch import owned_mkdtemp, release
from agentstudy.io.server_corpus import own_snapshot
from agentstudy.pricing.budget import Budget
from agentstudy.protocol.mcp_spec import ServerPaths
from agentstudy.protocol.schedule import ScheduleEntry
from agentstudy.runners.executor import AttemptExecutor, WorkerDied, WorkerRequirements, then
from agentstudy.runners.executor_choice import only_pinned_corpus, read_corpora, served_commands, start_executor
from agentstudy.runners.http_attempts import WITHIN_THE_ATTEMPT, unstarted_result
from agentstudy.transports.cli import WORKER_DIED
from agentstudy.transports.http import HttpSettings, run_http_attempt
from agentstudy.transports.http_contract import HttpAttemptResult

if TYPE_CHECKING:
    from agentstudy.runners.http_request import HttpRunRequest


@dataclass(frozen=True)
class HttpJob:
    """One http attempt's body (``WorkerJob``; see the module docstring).

    Attributes:
        settings: the run's http settings (``parent_env`` emptied when shipped).
        base_url: the Messages API (or rehearsal server) URL.
        rehearsal_key: the rehearsal's dummy key, or ``None`` for a real run (the process
            running the body reads ``ANTHROPIC_API_KEY``; locally ``api_key``).
        scenario, repository, pin, prompt: the attempt.
        reservation: the attempt's whole reservation, USD: the cap of its own budget.
        server: the MCP arm's placeholder values (the driver's snapshot), else ``None``.
        api_key: the driver's key for ``run_here``; never shipped, never shown.
    """

    settings: HttpSettings
    base_url: str
    rehearsal_key: str | None
    scenario: str
    repository: str
    pin: str
    prompt: str
    reservation: Decimal
    server: ServerPaths | None
    api_key: str | None = field(default=None, repr=False)

    def run_here(self, corpus: CorpusBlobs | None) -> HttpAttemptResult:
        """Run the attempt in this process with the driver's key, environment and server snapshot."""
        key = self.rehearsal_key or self.api_key or api_key_from_environment(self.settings.parent_env)
        return self._run(corpus, key, self.settings, self.server)

    def run_on_worker(self, corpus: CorpusBlobs | None, node: str) -> HttpAttemptResult:
        """Run the attempt on a Ray worker: its own key and environment, its own server snapshot; stamped ``node``."""
        key = self.rehearsal_key or api_key_from_environment(os.environ)
        settings = dataclasses.replace(self.settings, parent_env=dict(os.environ))
        scratch = owned_mkdtemp("attempt")
        try:
            server = None if self.server is None or corpus is None else own_snapshot(self.server, corpus, scratch)
            result = self._run(corpus, key, settings, server)
        finally:
            for directory, _dirs, _files in os.walk(scratch):
                Path(directory).chmod(stat.S_IRWXU)  # the snapshot's sealed directories
            shutil.rmtree(scratch, ignore_errors=True)
            release(scratch)
        return dataclasses.replace(result, worker_node=node)

    def shipped(self) -> HttpJob:
        """This job without the driver's key and environment."""
        return dataclasses.replace(self, api_key=None, settings=dataclasses.replace(self.settings, parent_env={}))

    def _run(self, corpus: CorpusBlobs | None, key: str, settings: HttpSettings,
             server: ServerPaths | None) -> HttpAttemptResult:
        with MessagesClient(key, self.base_url) as client:
            return run_http_attempt(settings, sender=client, scenario=self.scenario, root=Path("/nonexistent"),
                                    pin=self.pin, prompt=self.prompt, budget=Budget(cap=self.reservation),
                                    ledger=WITHIN_THE_ATTEMPT, server=server, corpus=corpus)


def worker_died_result(reservation: Decimal, node: str | None) -> HttpAttemptResult:
    """An attempt whose worker died (issue 20): ``failed``, ``"worker died"``, usage incomplete, nothing
    measured, the whole ``reservation`` (USD) charged."""
    return unstarted_result(reservation, WORKER_DIED, node)


def recheck(result: HttpAttemptResult, reservation: Decimal) -> HttpAttemptResult:
    """The driver's check of a result a worker returned (see the module docstring); ``result`` when it holds.

    A result that does not hold is settled ``failed`` ("the worker's result was refused: …") with
    the whole ``reservation`` (USD) charged and usage incomplete.
    """
    problem = None
    if result.budget.cap != reservation:
        problem = "its attempt budget is not its reservation"
    elif not Decimal(0) <= result.measured_usd <= result.charged_usd <= reservation:
        problem = "its money does not add up within its reservation"
    elif min(result.input_tokens, result.output_tokens, result.turns, result.tool_calls, result.wall_time_ms) < 0:
        problem = "it holds a negative count"
    if problem is None:
        return result
    return unstarted_result(reservation, f"the worker's result was refused: {problem}", result.worker_node)


def open_http_executor(stack: ExitStack, request: HttpRunRequest,
                       schedule: tuple[ScheduleEntry, ...]) -> AttemptExecutor:
    """The Ray executor of a concurrent http run (``--executor ray``), part of its preflight.

    The workers prove the command of every scheduled arm's MCP server (the treatment's, and the control arm's own
    when it has one: ``executor_choice.served_commands``) and the containment when any arm runs one, and their own
    ``ANTHROPIC_API_KEY`` in a real run (a rehearsal ships its dummy key).

    Raises:
        PreflightError: a corpus cannot be read, the MCP server needs ``{git}`` or ``{checkout}``,
            or ``start_executor`` refused (nothing reserved, no ledger).
    """
    for spec in (request.mcp, request.control_mcp):  # both arms' servers, each proven (issue 44)
        if spec is not None:
            only_pinned_corpus(spec)
    corpora = read_corpora(request.roots, request.loaded.manifest.repositories, (e.repository for e in schedule))
    commands = served_commands(schedule, request.mcp, request.control_mcp)
    needs = WorkerRequirements(containment=request.containment if commands else None, commands=commands,
                               variables=() if request.rehearsal else (API_KEY_ENV,))
    return start_executor(stack, executor="ray", ray_address=request.ray_address,
                          concurrency=request.concurrency, corpora=corpora, needs=needs)


def remote_start(executor: AttemptExecutor, job_for: Callable[[ScheduleEntry], HttpJob],
                 reservation: Decimal) -> Callable[[ScheduleEntry], Future[HttpAttemptResult]]:
    """The http port's ``start`` on ``executor``: submit ``job_for(entry)``, re-check what comes back.

    ``WorkerDied`` becomes ``worker_died_result``; any other error of the body propagates.
    """

    def landed(done: Future[HttpAttemptResult]) -> HttpAttemptResult:
        try:
            return recheck(done.result(), reservation)
        except WorkerDied as died:
            return worker_died_result(reservation, died.node)

    return lambda entry: then(executor.submit(job_for(entry)), landed)


__all__ = ["HttpJob", "open_http_executor", "recheck", "remote_start", "worker_died_result"]
