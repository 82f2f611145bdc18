"""SIGTERM, SIGINT and SIGHUP to a Ray-executed run (issue 29, break 7), on a loopback-only cluster.

The break: Ray's own handler took SIGTERM and the driver aborted (SIGABRT): ledger ``blocked``
"stopped on an error", two reservations open; after SIGINT or SIGHUP the remote attempts were not
terminated and ran on for about 10 s. Now our handlers are put back after ``ray.init`` and a stop
cancels every remote attempt (its process tree ends with it): exit 128+n, ledger ``blocked``
naming the signal, every reservation settled, no attempt body or sandbox alive afterwards. The
cluster is the one of ``tests/test_ray_executor.py`` (its own network and pid namespace, loopback
only); the driver is ``tests/ray_driver.py`` (the rehearsal server logs each opening prompt, so the
test knows when both attempts run). The cluster's workers inherit SIGINT ignored, as every worker of a
cluster started from a background job (``nohup ray start … &``, a CI runner) does: Ray's cancel interrupts
a task through SIGINT's handler, so the attempt body puts Python's own back for its duration (without it, a
suite started in the background saw both attempts run to ``completed`` after the stop).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study
from test_ray_executor import ADDRESS, HERE, Cluster, _args, _child_env, _ledger, started_cluster

DRIVER_TITLE = f"{sys.executable}\0{HERE / 'ray_driver.py'}"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    yield from started_cluster(workers=0, sigint_ignored=True)


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> ExampleStudy:
    return build_example_study(tmp_path_factory.mktemp("ray-signal-study") / "study")


def _alive(cluster: Cluster) -> list[int]:
    """Attempt bodies and their sandboxes still running in the cluster's namespace."""
    return cluster.pids_running("ray::attempt_body") + cluster.pids_running("/usr/bin/bwrap")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_to_a_ray_run_stops_it_like_a_local_one(cluster: Cluster, study: ExampleStudy, tmp_path: Path,
                                                         sig: signal.Signals) -> None:
    ledger_path, prompts = tmp_path / "ledger.json", tmp_path / "prompts.jsonl"
    # The pilot's two attempts (one per arm) run at once; its preflight probes one checkout where a full run's
    # probes every checkout (the signal lands inside the attempts either way).
    driver = subprocess.Popen(
        cluster.command([sys.executable, str(HERE / "ray_driver.py"), str(prompts), "--",
                         *_args(study, ledger_path, "--pilot", "--concurrency", "2", "--executor", "ray",
                                "--ray-address", ADDRESS, "--rehearsal-latency-ms", "4000")]),
        env=_child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(600):  # both running attempts have sent their opening request: signal the driver
            opened = prompts.read_text().count("\n") if prompts.exists() else 0
            bodies = cluster.pids_running("ray::attempt_body")
            drivers = cluster.pids_running(DRIVER_TITLE)
            if opened >= 2 and len(bodies) == 2 and len(drivers) == 1:
                os.kill(drivers[0], sig)
                break
            assert driver.poll() is None, driver.communicate()
            time.sleep(0.25)
        else:
            pytest.fail(f"two attempts never ran at once: {opened} opened, bodies {bodies}, driver {drivers}")
        _, stderr = driver.communicate(timeout=300)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode == 128 + sig, stderr[-3000:]
    ledger = _ledger(ledger_path)
    assert ledger["status"] == "blocked"
    assert f"stopped by {sig.name}" in ledger["stopReason"], ledger["stopReason"]
    assert ledger.get("openReservations") == [], "every reservation settled"
    assert ledger["observations"] and all(o["status"] != "completed" for o in ledger["observations"][-2:])
    for _ in range(20):  # cancelled tasks end with their process tree; Ray may take a moment to reap them
        if not _alive(cluster):
            break
        time.sleep(0.25)
    assert _alive(cluster) == [], "no remote attempt is alive afterwards"
