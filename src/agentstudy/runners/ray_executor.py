"""Attempt bodies as Ray tasks (issue 20): never a silent retry, every worker proven first.

``RayExecutor`` connects to an existing cluster (``--ray-address``), ships each corpus once as
content-addressed blobs (``io.export.CorpusBlobs``) through the object store, proves every
alive node with a worker preflight (``worker_preflight`` of the run's ``WorkerRequirements``:
the agent binary's version, the containment, the commands the bodies run, the variables they
read) before its first attempt, excludes the nodes that fail (with their reason) and places
each job (``runners.executor.WorkerJob``) on the least busy passing node, pinned to it
(``NodeAffinitySchedulingStrategy(soft=False)``). This is the one place that builds a remote
task: every task has ``max_retries=0`` and ``retry_exceptions=False``; a worker or node that dies
mid-attempt surfaces as ``WorkerDied`` (never a second run, never a lineage reconstruction of a
result), which each runner settles ``failed`` with its whole reservation charged.

A job ships only what its ``shipped()`` keeps: never the driver's environment, nor a
credential, nor the ledger. Each task first sweeps the node's temporary directories of dead
attempts (``agents.registry.sweep_stale_scratch``: what a worker killed mid-attempt left), as does the driver
when the executor closes. Ray is imported here only, and only when this executor is chosen
(``--executor ray``; ``pip install 'agentstudy[ray]'``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import threading
from collections.abc import Iterator, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from agentstudy.agents.registry import sweep_stale_scratch
from agentstudy.io.containment import ContainmentError, check_containment
from agentstudy.io.environment import allowlisted_environment
from agentstudy.io.export import CorpusBlobs
from agentstudy.io.signals import add_stop_hook, reclaim_stop_signals, remove_stop_hook
from agentstudy.protocol.run_records import ExcludedWorker
from agentstudy.runners.executor import WorkerDied, WorkerJob, WorkerRequirements, then, worker_binary
from agentstudy.runners.preflight import PreflightError, check_cli_version

R = TypeVar("R")

def worker_preflight(needs: WorkerRequirements) -> str | None:
    """Prove this worker's environment (issue 20, item 4); ``None`` when it passes, else the reason (one line).

    Checks, in order: the agent binary's version, the containment, every command, every
    variable, every directory (see ``WorkerRequirements``). Sweeps stale temporary directories first.
    """
    sweep_stale_scratch()
    env = dict(os.environ)
    try:
        if needs.binary is not None and needs.expected_version is not None:
            check_cli_version(worker_binary(needs.binary), needs.expected_version, env, needs.containment or "bwrap",
                              needs.agent)
        if needs.containment is not None:
            check_containment(needs.containment,
                              allowlisted_environment(env, home="/nonexistent", tmpdir="/nonexistent"))
    except (PreflightError, ContainmentError) as error:
        return str(error)
    for command in needs.commands:
        if shutil.which(command, path=env.get("PATH")) is None:
            return f"the command {command!r} does not resolve on this worker"
    for name in needs.variables:
        if not env.get(name):
            return f"{name} is not set on this worker"
    for directory in needs.directories:
        if not Path(directory).is_dir():
            return f"the directory {directory} does not exist on this worker"
    return None


@contextlib.contextmanager
def cancellable_by_ray() -> Iterator[None]:
    """For its duration, ``SIGINT`` raises ``KeyboardInterrupt`` in this (main) thread, whatever the worker inherited.

    ``ray.cancel(force=False)`` interrupts a running task with ``_thread.interrupt_main()``, which does
    nothing while ``SIGINT`` is ignored: and it is ignored in every worker of a cluster started from a
    background job (``nohup ray start … &``, a CI runner), since Python keeps an inherited ``SIG_IGN``.
    A stop's cancel then left the remote attempts running to their end (issue 42: a CI run started
    as a background job). The previous handler is put back afterwards; outside the main thread this is a no-op.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def attempt_body(job: WorkerJob[R], corpus: CorpusBlobs | None) -> R:
    """A Ray task's work: sweep the node's stale temporary directories, then ``job.run_on_worker`` with its node id,
    cancellable by ``RayExecutor.cancel_running`` (``cancellable_by_ray``)."""
    import ray

    sweep_stale_scratch()
    with cancellable_by_ray():
        return job.run_on_worker(corpus, ray.get_runtime_context().get_node_id())


def _task_options(ray: Any, node: str) -> dict[str, Any]:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    strategy = NodeAffinitySchedulingStrategy(node, soft=False)
    return {"max_retries": 0, "retry_exceptions": False, "num_cpus": 1, "scheduling_strategy": strategy}


class RayExecutor:
    """Attempt bodies as Ray tasks on the proven nodes of the cluster at ``address`` (see the module docstring).

    Args:
        address: the cluster's address (``host:port`` of its head, or ``ray://…``).
        corpora: each repository's corpus, put once into the object store.
        needs: what ``worker_preflight`` checks on each node.

    Raises:
        PreflightError: the cluster cannot be reached, or no node passes the worker preflight
            (each node's reason named); nothing was reserved.
    """

    def __init__(self, address: str, corpora: Mapping[str, CorpusBlobs], needs: WorkerRequirements) -> None:
        import ray

        self._ray = ray
        try:
            ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
        except (ConnectionError, RuntimeError, ValueError) as error:
            raise PreflightError(f"cannot connect to the Ray cluster at {address}: {error}") from None
        reclaim_stop_signals()  # ray.init put its own SIGTERM handler in place of ours (issue 29, break 7)
        try:
            self._prove(needs)
            self._corpora = {name: ray.put(corpus) for name, corpus in corpora.items()}
        except BaseException:
            ray.shutdown()
            raise
        self._lock = threading.Lock()
        self._refs: dict[int, Any] = {}
        add_stop_hook(self.cancel_running)

    def _prove(self, needs: WorkerRequirements) -> None:
        ray = self._ray
        check = ray.remote(worker_preflight)
        nodes = {node["NodeID"]: int(node["Resources"].get("CPU", 0)) for node in ray.nodes() if node["Alive"]}
        refs = {node: check.options(**_task_options(ray, node)).remote(needs)
                for node, cpus in nodes.items() if cpus > 0}
        self.excluded: list[ExcludedWorker] = []
        self.capacity: dict[str, int] = {}
        for node, ref in refs.items():
            try:
                reason = ray.get(ref)
            except ray.exceptions.RayError as error:
                reason = f"worker preflight did not finish: {type(error).__name__}"
            if reason is None:
                self.capacity[node] = nodes[node]
            else:
                self.excluded.append(ExcludedWorker(node=node, reason=reason))
        if not self.capacity:
            said = "; ".join(f"{w.node[:12]}: {w.reason}" for w in self.excluded) or "the cluster has no CPU node"
            raise PreflightError(f"no Ray worker passed the worker preflight ({said})")
        self._busy = dict.fromkeys(self.capacity, 0)
        self._body = ray.remote(attempt_body)

    def submit(self, job: WorkerJob[R]) -> Future[R]:
        """Run ``job.shipped()`` as a never-retried task on the least busy passing node (``AttemptExecutor.submit``)."""
        with self._lock:
            node = min(self.capacity, key=lambda n: (self._busy[n] / self.capacity[n], n))
            self._busy[node] += 1
            corpus = None if job.repository is None else self._corpora[job.repository]
            ref = self._body.options(**_task_options(self._ray, node)).remote(job.shipped(), corpus)
            self._refs[id(ref)] = ref
        exceptions = self._ray.exceptions
        died = (exceptions.WorkerCrashedError, exceptions.NodeDiedError, exceptions.LocalRayletDiedError,
                exceptions.ObjectLostError, exceptions.TaskUnschedulableError, exceptions.TaskCancelledError)

        def landed(done: Future[R]) -> R:
            with self._lock:
                self._busy[node] -= 1
                self._refs.pop(id(ref), None)
            try:
                return done.result()
            except died as error:
                raise WorkerDied(node, f"{type(error).__name__} on node {node}") from None
            except exceptions.RayTaskError as error:  # the body itself raised: the same error as locally
                raise error.as_instanceof_cause() from None

        return then(ref.future(), landed)

    def cancel_running(self) -> None:
        """Cancel every body still running (a stop signal's hook, run by the coordinator at its next safe point).

        ``ray.cancel`` without ``force`` raises ``KeyboardInterrupt`` in the task: ``io.process.run_bounded``'s
        cleanup ends the attempt's process group (and bubblewrap's pid namespace with it) and the task ends
        cancelled, which its future reports as ``WorkerDied`` (settled ``failed``, its reservation charged).
        """
        with self._lock:
            running = list(self._refs.values())
        for ref in running:
            with contextlib.suppress(Exception):
                self._ray.cancel(ref, force=False, recursive=True)

    def close(self, *, cancel: bool) -> None:
        """With ``cancel`` end every body still running (``ray.cancel(force=True)``), then disconnect."""
        remove_stop_hook(self.cancel_running)
        if cancel:
            with self._lock:
                running = list(self._refs.values())
            for ref in running:
                self._ray.cancel(ref, force=True)
        self._ray.shutdown()
        sweep_stale_scratch()  # a worker on this machine killed mid-attempt left its directories here


__all__ = ["RayExecutor", "attempt_body", "cancellable_by_ray", "worker_preflight"]
