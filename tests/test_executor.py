"""The executor seam without Ray (issue 20): no Ray import by default, chaining, a dead worker's attempt.

A worker that died settles its attempt ``failed`` ("worker died") with no cost, so settlement
charges the whole reservation; an error of the body itself propagates; the local executor's
body materialises the same export as ``export_pinned_corpus``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import Future
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentstudy.agents.registry import agent_cli
from agentstudy.cli import main
from agentstudy.io.export import export_pinned_corpus, materialise_corpus, read_pinned_corpus, remove_export
from agentstudy.pricing.budget import settle_attempt
from agentstudy.protocol.run_records import ExcludedWorker
from agentstudy.rehearsal.example_study import build_example_study
from agentstudy.runners.executor import WorkerDied, WorkerJob, submit_cli_attempt, then
from agentstudy.transports.cli import WORKER_DIED, CliAttemptBody, CliSettings
from agentstudy.transports.cli_args import ArmTools, McpServerSpec


def test_the_local_executor_imports_no_ray() -> None:
    code = ("import sys, agentstudy.cli, agentstudy.runners.minimal, agentstudy.runners.executor_choice; "
            "print('ray' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_then_chains_results_and_errors() -> None:
    source: Future[int] = Future()
    doubled = then(source, lambda done: done.result() * 2)
    source.set_result(21)
    assert doubled.result(timeout=1) == 42
    failing: Future[int] = Future()
    chained = then(failing, lambda done: done.result() + 1)
    failing.set_exception(OSError("disk"))
    with pytest.raises(OSError, match="disk"):
        chained.result(timeout=1)


class DeadWorkers:
    """An executor whose every job's worker dies (what ``RayExecutor`` raises for WorkerCrashedError); it counts
    the jobs ``submitted`` (shared by the tests of the seam's dead-worker paths)."""

    def __init__(self) -> None:
        self.excluded: list[ExcludedWorker] = []
        self.submitted = 0

    def submit(self, job: WorkerJob[Any]) -> Future[Any]:
        self.submitted += 1
        future: Future[Any] = Future()
        future.set_exception(WorkerDied("node-7", "WorkerCrashedError on node node-7"))
        return future

    def close(self, *, cancel: bool) -> None:
        """Nothing to release."""


def _body() -> CliAttemptBody:
    spec = McpServerSpec(name="doc-bridge", command=("python",))
    settings = CliSettings(binary=Path("/nonexistent/claude"), model="claude-haiku-5-5", mcp=spec)
    tools = ArmTools(expected=("Read",), allowed=("Read",), denied=(), mcp_server=None)
    return CliAttemptBody(settings, "repository-only", tools, "question?", Decimal("0.1"), None, None,
                          agent=agent_cli(settings.agent))


def test_an_attempt_body_carries_the_agent_its_settings_name() -> None:
    """The caller hands the transport its agent (issue 42); one other than the settings' is refused, and the
    body with its agent still pickles (a Ray task's argument)."""
    import pickle

    body = _body()
    assert pickle.loads(pickle.dumps(body)).agent.name == "claude-code"
    with pytest.raises(ValueError, match="'codex' is not its settings' 'claude-code'"):
        CliAttemptBody(body.settings, body.scenario, body.tools, body.prompt, body.reservation_usd, None, None,
                       agent=agent_cli("codex"))


def test_a_dead_worker_fails_its_attempt_with_the_whole_reservation_charged() -> None:
    result = submit_cli_attempt(DeadWorkers(), _body(), "lantern").result(timeout=1)
    assert result.status == "failed" and result.status_reason == WORKER_DIED
    assert result.fields["usage_complete"] is False and result.fields["worker_node"] == "node-7"
    status, charged = settle_attempt(result.status, Decimal("0.1"), result.reported_cost_usd, None)
    assert (status, charged) == ("failed", Decimal("0.1"))


def test_a_materialised_corpus_is_the_pinned_export(tmp_path: Path) -> None:
    study = build_example_study(tmp_path / "study")
    name, root = next(iter(study.roots.items()))
    pin = json.loads(study.manifest_path.read_text())["repositories"][name]
    direct, shipped = export_pinned_corpus(root, pin), materialise_corpus(read_pinned_corpus(root, pin))
    try:
        assert (direct.files, direct.bytes, direct.tree_sha256) == (shipped.files, shipped.bytes,
                                                                    shipped.tree_sha256)
        assert direct.files > 0
        assert sorted(p.relative_to(direct.path) for p in direct.path.rglob("*")) == sorted(
            p.relative_to(shipped.path) for p in shipped.path.rglob("*"))
    finally:
        remove_export(direct.path)
        remove_export(shipped.path)


@pytest.mark.parametrize(("flags", "said"), [
    (["--executor", "ray", "--concurrency", "4"], "--executor ray needs --concurrency above 1 and --ray-address"),
    (["--executor", "ray", "--ray-address", "127.0.0.1:6379"], "--executor ray needs --concurrency above 1"),
    (["--ray-address", "127.0.0.1:6379", "--concurrency", "2"], "--ray-address goes with --executor ray"),
])
def test_the_executor_flags_refuse_what_they_cannot_mean(tmp_path: Path, flags: list[str], said: str) -> None:
    study = build_example_study(tmp_path / "study")
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    ledger = tmp_path / "ledger.json"
    done = CliRunner().invoke(main, ["minimal", "--manifest", str(study.manifest_path), "--run", "--rehearsal",
                                     "--transport", "cli", *roots, "--output", str(ledger), "--model",
                                     "claude-haiku-5-5", "--budget-usd", "10", *flags])
    assert done.exit_code == 2 and said in done.output
    assert not ledger.exists()


def test_a_ray_body_hears_the_cancel_interrupt_even_with_sigint_ignored() -> None:
    """Ray's non-forced cancel is ``_thread.interrupt_main()``, a no-op while SIGINT is ignored (a worker of a cluster
    started from a background job): inside ``cancellable_by_ray`` it raises, and the ignored disposition comes back."""
    import _thread
    import signal

    from agentstudy.runners.ray_executor import cancellable_by_ray

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        _thread.interrupt_main()  # ignored: nothing happens
        with pytest.raises(KeyboardInterrupt), cancellable_by_ray():
            _thread.interrupt_main()
            for _ in range(1000):  # the interrupt is delivered at the next bytecode boundary
                pass
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
