"""The executor seam of every concurrent walk (issue 20): where an attempt's body runs.

An attempt is split in two: its body, a ``WorkerJob`` (picklable; it holds what ships to a
worker and the name of the corpus it needs), and the driver's part (the pure checks, costs,
settlement and the ledger), which stays in the driver, the only budget authority and the only
ledger writer. An executor runs jobs: ``LocalExecutor`` on threads of this process (the
default; no Ray import; ``job.run_here``), ``runners.ray_executor.RayExecutor`` as Ray tasks that
are never retried (``job.run_on_worker`` with the worker's node id). A job whose worker died
raises ``WorkerDied`` through its future; each runner turns that into its own ``failed`` result
(``"worker died"``, its whole reservation charged by settlement), never a second run.

The jobs: ``CliJob`` (a Claude Code attempt: ``agentstudy minimal --transport cli`` and the
adjudication of a minimal study), ``runners.http_remote.HttpJob`` (a Messages API agent loop),
``controlled.remote`` (a controlled execution and a controlled adjudicator child).
``submit_cli_attempt`` chains the driver's evaluation of a CLI attempt onto its future.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from agentstudy.agents.registry import DEFAULT_AGENT
from agentstudy.io.containment import ContainmentMode
from agentstudy.io.export import CorpusBlobs
from agentstudy.protocol.run_records import ExcludedWorker
from agentstudy.transports.cli import (
    GATEWAY_TOKEN_ENV,
    CliAttemptBody,
    CliAttemptResult,
    RawAttempt,
    finish_cli_attempt,
    run_cli_body,
    worker_died_attempt,
)

T = TypeVar("T")
U = TypeVar("U")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


class WorkerDied(RuntimeError):
    """The worker process or node running an attempt's body died before it returned (issue 20).

    ``node`` is the Ray node id the body was placed on (``None`` when unknown).
    """

    def __init__(self, node: str | None, detail: str) -> None:
        super().__init__(detail)
        self.node = node


class WorkerJob(Protocol[R_co]):
    """One attempt's body as an executor runs it (issue 20); picklable, so it can go to a Ray worker.

    ``repository`` names the corpus (``CorpusBlobs``) the executor hands the body, or is ``None``
    when it needs none.
    """

    @property
    def repository(self) -> str | None:
        """The corpus the body needs, by repository name, or ``None``."""
        ...

    def run_here(self, corpus: CorpusBlobs | None) -> R_co:
        """Run the body in this process (the local executor): the driver's settings and environment."""
        ...

    def run_on_worker(self, corpus: CorpusBlobs | None, node: str) -> R_co:
        """Run the body on a Ray worker whose node id is ``node``: the worker's own environment and binaries."""
        ...

    def shipped(self) -> WorkerJob[R_co]:
        """This job as it may leave the driver: no credential, no driver environment (what a Ray task gets)."""
        ...


class AttemptExecutor(Protocol):
    """Runs attempt bodies (issue 20). ``excluded`` lists the workers its preflight excluded (empty locally)."""

    excluded: list[ExcludedWorker]

    def submit(self, job: WorkerJob[R]) -> Future[R]:
        """Start ``job``; the future raises ``WorkerDied`` if its worker died, else the job's own error."""
        ...

    def close(self, *, cancel: bool) -> None:
        """Release the executor; with ``cancel`` first end every body still running (after an error)."""
        ...


def then(source: Future[T], step: Callable[[Future[T]], U]) -> Future[U]:
    """A future of ``step(source)``, computed when ``source`` is done (in the thread that finished it).

    An exception of ``step`` (including the one ``source.result()`` re-raises) becomes the new
    future's exception.
    """
    chained: Future[U] = Future()
    chained.set_running_or_notify_cancel()

    def done(finished: Future[T]) -> None:
        try:
            chained.set_result(step(finished))
        except BaseException as error:  # handed to whoever waits on the chained future
            chained.set_exception(error)

    source.add_done_callback(done)
    return chained


@dataclass(frozen=True)
class CliJob:
    """A Claude Code attempt's body (``run_cli_body``) on the corpus of ``repository`` (issue 20).

    On a worker the body uses the worker's agent binary (``worker_binary``), its own environment
    (``parent_env=None``), its own gateway token and its own MCP server snapshot, and its
    ``RawAttempt`` carries the worker's node id.
    """

    body: CliAttemptBody
    repository: str

    def run_here(self, corpus: CorpusBlobs | None) -> RawAttempt:
        """``run_cli_body`` with the body as the driver built it."""
        assert corpus is not None  # a CLI attempt always names its corpus
        return run_cli_body(self.body, corpus)

    def run_on_worker(self, corpus: CorpusBlobs | None, node: str) -> RawAttempt:
        """``run_cli_body`` with the worker's binary, environment and token, stamped with ``node``."""
        assert corpus is not None
        settings = self.body.settings
        token = os.environ.get(GATEWAY_TOKEN_ENV) if settings.gateway_base_url is not None else None
        settings = dataclasses.replace(settings, binary=worker_binary(settings.binary), gateway_token=token)
        local = dataclasses.replace(self.body, settings=settings, parent_env=None)
        return dataclasses.replace(run_cli_body(local, corpus), worker_node=node)

    def shipped(self) -> CliJob:
        """This job without the gateway token and the driver's environment (what may leave the driver)."""
        settings = dataclasses.replace(self.body.settings, gateway_token=None)
        return CliJob(dataclasses.replace(self.body, settings=settings, parent_env=None), self.repository)


@dataclass(frozen=True)
class WorkerRequirements:
    """What every worker must prove before its first attempt (issue 20, item 4).

    Attributes:
        binary, expected_version: the agent binary (the driver's path; ``worker_binary`` may
            override it on a worker) and the ``--version`` it must report; ``None`` when the
            bodies run no agent binary (http, controlled).
        agent: whose version rule reads that ``--version`` line (``agents.registry``; issue 21).
        containment: the containment the bodies use (bubblewrap must run ``/usr/bin/true``), or
            ``None`` when no body contains a child.
        commands: executables that must resolve on the worker's PATH (the MCP server's, a
            provider's); an absolute path must exist and be executable.
        variables: environment variables that must be set on the worker (names only; their
            values never leave it), e.g. ``ANTHROPIC_API_KEY`` for a real http run.
        directories: directories that must exist on the worker (a controlled repository root).
    """

    binary: Path | None = None
    expected_version: str | None = None
    agent: str = DEFAULT_AGENT
    containment: ContainmentMode | None = None
    commands: tuple[str, ...] = ()
    variables: tuple[str, ...] = ()
    directories: tuple[str, ...] = ()


WORKER_BINARY_ENV = "AGENTSTUDY_WORKER_CLAUDE_BIN"
"""Set in a worker's environment (before ``ray start``) when its agent binary lives elsewhere than the driver's."""


def worker_binary(default: Path) -> Path:
    """The agent binary on this worker: ``AGENTSTUDY_WORKER_CLAUDE_BIN`` when set, else ``default``."""
    chosen = os.environ.get(WORKER_BINARY_ENV)
    return Path(chosen) if chosen else default


def submit_cli_attempt(executor: AttemptExecutor, body: CliAttemptBody, repository: str) -> Future[CliAttemptResult]:
    """Run ``body`` on ``executor`` and evaluate its raw result in the driver (``finish_cli_attempt``).

    A ``WorkerDied`` becomes ``worker_died_attempt``; any other error of the body propagates.
    """

    def finish(raw: Future[RawAttempt]) -> CliAttemptResult:
        try:
            return finish_cli_attempt(body, raw.result())
        except WorkerDied as died:
            return worker_died_attempt(body, died.node)

    return then(executor.submit(CliJob(body, repository)), finish)


class LocalExecutor:
    """Bodies on at most ``concurrency`` threads of this process, on corpora read once (``corpora`` by repository).

    The default executor: each job runs ``run_here`` (the driver's environment as its body says).
    """

    def __init__(self, concurrency: int, corpora: Mapping[str, CorpusBlobs]) -> None:
        self.excluded: list[ExcludedWorker] = []
        self._corpora = dict(corpora)
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="attempt")

    def submit(self, job: WorkerJob[R]) -> Future[R]:
        """Run ``job`` on a pool thread (see ``AttemptExecutor.submit``)."""
        corpus = None if job.repository is None else self._corpora[job.repository]
        return self._pool.submit(job.run_here, corpus)

    def close(self, *, cancel: bool) -> None:
        """Wait for the pool's threads (their children were already terminated after an error)."""
        self._pool.shutdown(wait=True, cancel_futures=cancel)


__all__ = ["WORKER_BINARY_ENV", "AttemptExecutor", "CliJob", "LocalExecutor", "WorkerDied", "WorkerJob",
           "WorkerRequirements",
           "submit_cli_attempt", "then", "worker_binary"]
