"""The executor seam of the concurrent walk (issue 20): where an attempt's body runs.

An attempt is split in two (``transports.cli``): its body (``run_cli_body``: materialise the
export from content-addressed corpus blobs, contain, spawn, the bounded read) returns a
``RawAttempt``; the driver's part (``finish_cli_attempt``: the pure stream checks and costs,
then settlement and the ledger in ``runners.concurrent_walk``) stays in the driver, the only
budget authority and the only ledger writer. An executor runs bodies: ``LocalExecutor`` on
threads of this process (the default; no Ray import), ``runners.ray_executor.RayExecutor`` as
Ray tasks that are never retried. A body whose worker died raises ``WorkerDied`` through its
future; ``submit_cli_attempt`` turns that into a ``failed`` attempt (``"worker died"``, its whole
reservation charged by settlement), never a second run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol, TypeVar

from agentstudy.io.export import CorpusBlobs
from agentstudy.protocol.records import ExcludedWorker
from agentstudy.transports.cli import (
    CliAttemptBody,
    CliAttemptResult,
    RawAttempt,
    finish_cli_attempt,
    run_cli_body,
    worker_died_attempt,
)

T = TypeVar("T")
U = TypeVar("U")


class WorkerDied(RuntimeError):
    """The worker process or node running an attempt's body died before it returned (issue 20).

    ``node`` is the Ray node id the body was placed on (``None`` when unknown).
    """

    def __init__(self, node: str | None, detail: str) -> None:
        super().__init__(detail)
        self.node = node


class AttemptExecutor(Protocol):
    """Runs attempt bodies (issue 20). ``excluded`` lists the workers its preflight excluded (empty locally)."""

    excluded: list[ExcludedWorker]

    def submit(self, body: CliAttemptBody, repository: str) -> Future[RawAttempt]:
        """Start ``body`` on the corpus of ``repository``; the future raises ``WorkerDied`` if its worker died."""
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


def submit_cli_attempt(executor: AttemptExecutor, body: CliAttemptBody, repository: str) -> Future[CliAttemptResult]:
    """Run ``body`` on ``executor`` and evaluate its raw result in the driver (``finish_cli_attempt``).

    A ``WorkerDied`` becomes ``worker_died_attempt``; any other error of the body propagates.
    """

    def finish(raw: Future[RawAttempt]) -> CliAttemptResult:
        try:
            return finish_cli_attempt(body, raw.result())
        except WorkerDied as died:
            return worker_died_attempt(body, died.node)

    return then(executor.submit(body, repository), finish)


class LocalExecutor:
    """Bodies on at most ``concurrency`` threads of this process, on corpora read once (``corpora`` by repository).

    The default executor: the body gets the driver's ``parent_env`` as the body says.
    """

    def __init__(self, concurrency: int, corpora: Mapping[str, CorpusBlobs]) -> None:
        self.excluded: list[ExcludedWorker] = []
        self._corpora = dict(corpora)
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="attempt")

    def submit(self, body: CliAttemptBody, repository: str) -> Future[RawAttempt]:
        """Run ``body`` on a pool thread (see ``AttemptExecutor.submit``)."""
        return self._pool.submit(run_cli_body, body, self._corpora[repository])

    def close(self, *, cancel: bool) -> None:
        """Wait for the pool's threads (their children were already terminated after an error)."""
        self._pool.shutdown(wait=True, cancel_futures=cancel)


__all__ = ["AttemptExecutor", "LocalExecutor", "WorkerDied", "submit_cli_attempt", "then"]
