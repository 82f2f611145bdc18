"""Attempt bodies as Ray tasks (issue 20): never a silent retry, every worker proven first.

``RayExecutor`` connects to an existing cluster (``--ray-address``), ships each corpus once as
content-addressed blobs (``io.export.CorpusBlobs``) through the object store, proves every
alive node with a worker preflight (``worker_preflight``: the agent binary's version, the
containment, the MCP server's command) before its first attempt, excludes the nodes that fail
(with their reason) and places each body on the least busy passing node, pinned to it
(``NodeAffinitySchedulingStrategy(soft=False)``). Every task has ``max_retries=0`` and
``retry_exceptions=False``: a worker or node that dies mid-attempt surfaces as ``WorkerDied``
(never a second run, never a lineage reconstruction of a result), which the driver settles
``failed`` with its whole reservation charged.

A body never sees the driver's environment (``parent_env=None``: the child's allowlisted
environment is built from the worker's own), nor a credential (a gateway's token is read from
the worker's own ``AGENTSTUDY_GATEWAY_TOKEN``), nor a path on the driver's disk other than the
agent binary's, which a worker may override with ``AGENTSTUDY_WORKER_CLAUDE_BIN`` in the
environment it was started with. Ray is imported here only, and only when this executor is
chosen (``--executor ray``; ``pip install 'agentstudy[ray]'``).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import threading
from collections.abc import Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from agentstudy.io.containment import ContainmentError, ContainmentMode, check_containment
from agentstudy.io.environment import allowlisted_environment
from agentstudy.io.export import CorpusBlobs
from agentstudy.protocol.records import ExcludedWorker
from agentstudy.runners.executor import WorkerDied, then
from agentstudy.runners.preflight import PreflightError, check_cli_version
from agentstudy.transports.cli import GATEWAY_TOKEN_ENV, CliAttemptBody, RawAttempt, run_cli_body

WORKER_BINARY_ENV = "AGENTSTUDY_WORKER_CLAUDE_BIN"
"""Set in a worker's environment (before ``ray start``) when its agent binary lives elsewhere than the driver's."""


def worker_binary(default: Path) -> Path:
    """The agent binary on this worker: ``AGENTSTUDY_WORKER_CLAUDE_BIN`` when set, else ``default``."""
    chosen = os.environ.get(WORKER_BINARY_ENV)
    return Path(chosen) if chosen else default


def worker_preflight(binary: Path, expected_version: str, containment: ContainmentMode,
                     mcp_command: str | None) -> str | None:
    """Prove this worker's environment (issue 20, item 4); ``None`` when it passes, else the reason (one line).

    Checks, in order: ``binary --version`` (``worker_binary``) equals ``expected_version``, the
    containment works (bubblewrap runs ``/usr/bin/true``), and ``mcp_command`` (the MCP server's
    executable, ``None`` when no attempt uses the MCP arm) resolves on this worker's PATH.
    """
    env = dict(os.environ)
    try:
        check_cli_version(worker_binary(binary), expected_version, env, containment)
        check_containment(containment, allowlisted_environment(env, home="/nonexistent", tmpdir="/nonexistent"))
    except (PreflightError, ContainmentError) as error:
        return str(error)
    if mcp_command is not None and shutil.which(mcp_command, path=env.get("PATH")) is None:
        return f"the MCP server command {mcp_command!r} does not resolve on this worker"
    return None


def attempt_body(body: CliAttemptBody, corpus: CorpusBlobs) -> RawAttempt:
    """A Ray task's work: ``run_cli_body`` with the worker's binary and environment, stamped with its node id."""
    import ray

    token = os.environ.get(GATEWAY_TOKEN_ENV) if body.settings.gateway_base_url is not None else None
    settings = dataclasses.replace(body.settings, binary=worker_binary(body.settings.binary), gateway_token=token)
    local = dataclasses.replace(body, settings=settings, parent_env=None, own_server_snapshot=True)
    raw = run_cli_body(local, corpus)
    return dataclasses.replace(raw, worker_node=ray.get_runtime_context().get_node_id())


def _task_options(ray: Any, node: str) -> dict[str, Any]:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    strategy = NodeAffinitySchedulingStrategy(node, soft=False)
    return {"max_retries": 0, "retry_exceptions": False, "num_cpus": 1, "scheduling_strategy": strategy}


class RayExecutor:
    """Attempt bodies as Ray tasks on the proven nodes of the cluster at ``address`` (see the module docstring).

    Args:
        address: the cluster's address (``host:port`` of its head, or ``ray://…``).
        corpora: each repository's corpus, put once into the object store.
        binary, expected_version, containment, mcp_command: what ``worker_preflight`` checks on each node.

    Raises:
        PreflightError: the cluster cannot be reached, or no node passes the worker preflight
            (each node's reason named); nothing was reserved.
    """

    def __init__(self, address: str, corpora: Mapping[str, CorpusBlobs], *, binary: Path, expected_version: str,
                 containment: ContainmentMode, mcp_command: str | None) -> None:
        import ray

        self._ray = ray
        try:
            ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
        except (ConnectionError, RuntimeError, ValueError) as error:
            raise PreflightError(f"cannot connect to the Ray cluster at {address}: {error}") from None
        try:
            self._prove(binary, expected_version, containment, mcp_command)
            self._corpora = {name: ray.put(corpus) for name, corpus in corpora.items()}
        except BaseException:
            ray.shutdown()
            raise
        self._lock = threading.Lock()
        self._refs: dict[int, Any] = {}

    def _prove(self, binary: Path, expected: str, containment: ContainmentMode, mcp_command: str | None) -> None:
        ray = self._ray
        check = ray.remote(worker_preflight)
        nodes = {node["NodeID"]: int(node["Resources"].get("CPU", 0)) for node in ray.nodes() if node["Alive"]}
        refs = {node: check.options(**_task_options(ray, node)).remote(binary, expected, containment, mcp_command)
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

    def submit(self, body: CliAttemptBody, repository: str) -> Future[RawAttempt]:
        """Run ``body`` as a never-retried task on the least busy passing node (``AttemptExecutor.submit``)."""
        with self._lock:
            node = min(self.capacity, key=lambda n: (self._busy[n] / self.capacity[n], n))
            self._busy[node] += 1
            shipped = dataclasses.replace(body, settings=dataclasses.replace(body.settings, gateway_token=None),
                                          parent_env=None)  # no credential and no driver environment leaves
            ref = self._body.options(**_task_options(self._ray, node)).remote(shipped, self._corpora[repository])
            self._refs[id(ref)] = ref
        exceptions = self._ray.exceptions
        died = (exceptions.WorkerCrashedError, exceptions.NodeDiedError, exceptions.LocalRayletDiedError,
                exceptions.ObjectLostError, exceptions.TaskUnschedulableError, exceptions.TaskCancelledError)

        def landed(done: Future[RawAttempt]) -> RawAttempt:
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

    def close(self, *, cancel: bool) -> None:
        """With ``cancel`` end every body still running (``ray.cancel(force=True)``), then disconnect."""
        if cancel:
            with self._lock:
                running = list(self._refs.values())
            for ref in running:
                self._ray.cancel(ref, force=True)
        self._ray.shutdown()


__all__ = ["WORKER_BINARY_ENV", "RayExecutor", "attempt_body", "worker_binary", "worker_preflight"]
