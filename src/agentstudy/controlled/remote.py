"""The controlled runner and its adjudicator on the executor seam (issue 20): ``--executor ray``.

The driver keeps the plan order, the rubric, every observation and the ledger; a worker runs only
the provider (or adjudicator) children. ``ExecutionJob`` is one execution's attempts
(``run_controlled_command``: at most the plan's attempts, each a bounded child with the request on
stdin) in the repository root, which must exist at the same path on every worker (a controlled
repository is the operator's checkout, not a pinned corpus: the worker preflight proves the root
and the provider command). ``AdjudicatorJob`` is one adjudicator child in a fresh private
directory; it returns only the child's facts, judged in the driver.

What ships: the plan (its hash, budget and model and scenario configs), the execution's identity,
the provider's command, arguments, allowlist names and bounds, and the request bytes (for an
adjudicator: the anonymised candidate record it judges). What never leaves the driver: the
suite's expected answers and the rubric, the ledger, and the driver's environment (a worker's
child copies its allowlisted variables from the worker's own environment). The controlled
observation contract has no node field, so the ledger is the same as with the local executor.

A worker that dies mid-execution: the execution is not recorded and never run again by this run,
admission stops, the executions already running are recorded, and the run ends with
``WorkerDiedError`` (a rerun of the same plan runs it, as after a stop signal).
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from agentstudy.controlled.command import CommandRun, ControlledCommandRequest, iso_now, run_controlled_command
from agentstudy.io.controlled_command import ChildFacts, child_environment, run_controlled_child
from agentstudy.io.export import CorpusBlobs
from agentstudy.io.scratch import owned_mkdtemp, release
from agentstudy.runners.executor import AttemptExecutor, WorkerDied, WorkerJob, WorkerRequirements
from agentstudy.runners.executor_choice import start_executor
from agentstudy.runners.progress import report_excluded

R = TypeVar("R")


class WorkerDiedError(RuntimeError):
    """A Ray worker died under an execution or adjudicator (issue 20): it was not recorded and not run again."""


@dataclass(frozen=True)
class ExecutionJob:
    """One controlled execution (``run_controlled_command``) as a ``WorkerJob``; it needs no corpus."""

    request: ControlledCommandRequest
    repository: None = None

    def run_here(self, corpus: CorpusBlobs | None) -> CommandRun:
        """The execution with this process's environment."""
        return run_controlled_command(self.request, environ=dict(os.environ), clock=iso_now)

    def run_on_worker(self, corpus: CorpusBlobs | None, node: str) -> CommandRun:
        """The execution with the worker's environment, in the repository root at the same path."""
        return self.run_here(corpus)

    def shipped(self) -> ExecutionJob:
        """Itself: the request holds no environment and no credential."""
        return self


@dataclass(frozen=True)
class AdjudicatorJob:
    """One controlled adjudicator child as a ``WorkerJob``: the command (absolute), its arguments, the
    allowlisted variable names, the request bytes and the bounds (ms, bytes); returns its ``ChildFacts``."""

    command: str
    args: tuple[str, ...]
    env_allowlist: tuple[str, ...]
    request: bytes
    max_runtime_ms: int
    max_output_bytes: int
    repository: None = None

    def run_here(self, corpus: CorpusBlobs | None) -> ChildFacts:
        """Run the child in a fresh private directory (removed after) with this process's environment."""
        return self.run_with(os.environ)

    def run_on_worker(self, corpus: CorpusBlobs | None, node: str) -> ChildFacts:
        """The same on a worker: its own environment."""
        return self.run_with(os.environ)

    def run_with(self, environ: Mapping[str, str]) -> ChildFacts:
        """Run the child with its allowlisted variables copied from ``environ``."""
        workdir = owned_mkdtemp("adjudicator")
        try:
            return run_controlled_child([self.command, *self.args], env=child_environment(environ, self.env_allowlist),
                                        cwd=workdir, request=self.request, max_runtime_ms=self.max_runtime_ms,
                                        max_output_bytes=self.max_output_bytes)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
            release(workdir)

    def shipped(self) -> AdjudicatorJob:
        """Itself: no environment and no credential in it."""
        return self


def awaited(executor: AttemptExecutor, job: WorkerJob[R], death: threading.Event) -> R:
    """Submit ``job`` and wait for its result (in a walk's thread); a ``WorkerDied`` sets ``death`` first, so
    the walk admits nothing more from the moment it is known, then propagates."""
    try:
        return executor.submit(job).result()
    except WorkerDied:
        death.set()
        raise


def worker_command(command: str, root: Path) -> str:
    """What a worker resolves for a provider ``command`` run from ``root``: a relative path joined to it."""
    return str(root / command) if "/" in command and not command.startswith("/") else command


def open_controlled_executor(stack: ExitStack, *, ray_address: str | None, concurrency: int,
                             commands: Iterable[str], directories: Iterable[Path]) -> AttemptExecutor:
    """The Ray executor of a controlled run or adjudication, its workers proving ``commands`` and ``directories``.

    Excluded workers are shown on stderr. Raises ``PreflightError`` (``start_executor``): nothing ran.
    """
    needs = WorkerRequirements(commands=tuple(sorted(set(commands))),
                               directories=tuple(sorted({str(path) for path in directories})))
    executor = start_executor(stack, executor="ray", ray_address=ray_address, concurrency=concurrency,
                              corpora={}, needs=needs)
    for worker in executor.excluded:
        report_excluded(None, worker.node, worker.reason)
    return executor


__all__ = ["AdjudicatorJob", "ExecutionJob", "WorkerDiedError", "awaited", "open_controlled_executor",
           "worker_command"]
