"""A comparison study (server A against server B) on a real local Ray cluster (issue 44): the Ray executor carries
both arms' servers. The workers prove both servers' commands, each attempt starts its own arm's server on the
worker, and the ledger matches the local executor's attempt for attempt.

The cluster runs in a fresh network + pid namespace whose only interface is loopback, as the other Ray tests'
(``test_ray_executor.Cluster``); the http transport and Claude Code (the pinned binary, under bubblewrap on each
worker) talk to the scripted model servers on 127.0.0.1.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentstudy.rehearsal.example_study import build_example_study
from test_ray_executor import ADDRESS, Cluster, _child_env, _ledger, started_cluster

from inprocess_cli import invoke_agentstudy
from study_files import EXAMPLE_STUDY

LOOKUP_SERVER = Path(__file__).resolve().parent / "data" / "lookup_server.py"


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[Cluster]:
    yield from started_cluster()


TRANSPORTS = {"http": ["--transport", "http", "--input-usd-per-million", "0.5", "--output-usd-per-million", "2.5",
                        "--attempt-budget-usd", "0.5"],
              "cli": ["--transport", "cli"]}


def _comparison(tmp_path: Path, transport: str) -> list[str]:
    built = build_example_study(tmp_path / "example")
    document = json.loads(EXAMPLE_STUDY.read_text(encoding="utf-8"))
    server = {"command": sys.executable, "args": [str(LOOKUP_SERVER), "{root}"]}
    document["arms"]["control"] = {
        "id": "lookup", "label": "Repository tools + lookup", "mcpConfig": {"mcpServers": {"lookup": server}},
        "tools": ["lookup.find_text", "lookup.grep", "lookup.read"],
        "probe": {"tool": "lookup.find_text", "arguments": {"query": "the"}}, "serverConfigCandidates": []}
    path = tmp_path / "a-vs-b.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    # One task: its two attempts (one per arm, each with its own server) land on both nodes (the least busy first).
    return ["study", "--manifest", str(path), "--pilot", "--pilot-tasks", "1", "--pilot-repetitions", "1",
            *TRANSPORTS[transport], "--rehearsal", *[f"--root={n}={p}" for n, p in built.roots.items()],
            "--model", "claude-haiku-5-5", "--budget-usd", "10", "--concurrency", "4"]


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
def test_server_a_against_server_b_on_ray_matches_the_local_executor(ray_cluster: Cluster, tmp_path: Path,
                                                                    transport: str) -> None:
    args = _comparison(tmp_path, transport)
    local_path, ray_path = tmp_path / "local.json", tmp_path / "ray.json"
    local = invoke_agentstudy(*args, "--output", str(local_path), env=_child_env())
    assert local.returncode == 0, local.stderr[-3000:]
    on_ray = ray_cluster.inside([sys.executable, "-m", "agentstudy", *args, "--output", str(ray_path),
                                 "--executor", "ray", "--ray-address", ADDRESS])
    assert on_ray.returncode == 0, on_ray.stderr[-3000:]
    local_ledger, ray_ledger = _ledger(local_path), _ledger(ray_path)

    def facts(o: dict[str, Any]) -> tuple[Any, ...]:
        record = o["treatment"]
        return (o["status"], o["toolCallsByName"], record["server"], record["serverCallsByTool"],
                sorted(record["offeredServerTools"]), o["chargedUsd"])

    assert len(ray_ledger["observations"]) == len(local_ledger["observations"]) == 2  # 1 task, 2 arms, 1 rep
    key = lambda o: (o["taskId"], o["scenario"], o["repetition"])  # noqa: E731
    assert {key(o): facts(o) for o in ray_ledger["observations"]} == {
        key(o): facts(o) for o in local_ledger["observations"]}
    by_arm = {o["scenario"]: o["treatment"] for o in ray_ledger["observations"]}
    assert by_arm["repository-only"]["server"] == "lookup" and by_arm["repository-only"]["serverCalls"] >= 1
    assert by_arm["doc-bridge-mcp"]["server"] == "doc-bridge" and by_arm["doc-bridge-mcp"]["serverCalls"] >= 1
    assert [arm.get("mcpServer") for arm in ray_ledger["arms"]] == ["lookup", "doc-bridge"]
    assert ray_ledger["executor"] == "ray" and ray_ledger["excludedWorkers"] == []
    assert {o["workerNode"] for o in ray_ledger["observations"]} - {None}
