"""``agentstudy minimal --executor ray`` on a real local Ray cluster (issue 20, "Must show").

The cluster (a head with 2 CPUs and a second worker node with 1) runs in its own network and
pid namespace (``unshare --net --pid``): its only interface is loopback, so every Ray server,
the rehearsal server and every attempt are on 127.0.0.1 and nothing else is ever a target
(Ray rewrites ``--node-ip-address 127.0.0.1`` to the machine's address and binds its gRPC servers
on every interface outside such a namespace; measured with Ray 2.60.0). Ending the namespace's
first process ends the whole cluster, also when a test fails. The bundled full study in
rehearsal completes under Ray with the same statuses, tokens and tool calls per attempt as the
local executor; a worker killed mid-attempt settles that attempt ``failed`` ("worker died", its
whole reservation charged), it is never run again and the run stops by the stop rule; a worker
whose agent binary reports another version is excluded before any attempt, and when no worker
passes the executor refuses to open.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from agentstudy.commands.common import EXIT_BLOCKED
from agentstudy.protocol.ledger_integrity import verify_ledger_bytes
from agentstudy.protocol.manifest import load_manifest
from agentstudy.protocol.schemas import json_schema
from agentstudy.rehearsal.controlled.example import build_controlled_example
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study
from agentstudy.runners.executor import WORKER_BINARY_ENV
from test_controlled_concurrency import observations
from test_controlled_run_support import run_args

from inprocess_cli import invoke_agentstudy

HERE = Path(__file__).resolve().parent
RAY = str(Path(sys.executable).parent / "ray")
PORT = 6379
ADDRESS = f"127.0.0.1:{PORT}"
PR_SET_PDEATHSIG = 1


def _die_with_test() -> None:
    """In the namespace's parent: get SIGKILL if the test process dies, so the cluster never outlives it."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _ignore_sigint() -> None:
    """In a node's ``ray start``: ignore SIGINT, as a cluster started from a background job does (workers keep it)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _child_env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    return {**env, **extra}


class Cluster:
    """A Ray cluster inside a fresh network + pid namespace; ``inside`` runs a command in it."""

    def __init__(self, temp: Path) -> None:
        self.temp = temp
        self.namespace = subprocess.Popen(
            ["unshare", "--net", "--pid", "--fork", "--mount-proc", "--kill-child", "sleep", "infinity"],
            preexec_fn=_die_with_test,
        )
        self.init_pid = self._first_child()
        self.inside(["ip", "link", "set", "lo", "up"], check=True)

    def _first_child(self) -> int:
        for _ in range(200):
            children = Path(f"/proc/{self.namespace.pid}/task/{self.namespace.pid}/children")
            text = children.read_text().split() if children.exists() else []
            if text:
                return int(text[0])
            time.sleep(0.05)
        raise RuntimeError("the namespace did not start")

    def inside(self, argv: Sequence[str], *, env: dict[str, str] | None = None, check: bool = False,
               **options: Any) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` in the cluster's namespaces and wait for it."""
        return subprocess.run(self.command(argv), env=env or _child_env(), check=check, text=True,
                              capture_output=True, **options)

    def command(self, argv: Sequence[str]) -> list[str]:
        """``argv`` prefixed so that it runs in the cluster's namespaces."""
        return ["nsenter", "-t", str(self.init_pid), "-n", "-p", "-m", "--", *argv]

    def start_node(self, *, head: bool, cpus: int, env: dict[str, str] | None = None,
                   sigint_ignored: bool = False) -> None:
        """``ray start`` a head (on 127.0.0.1:6379) or a worker node joining it; with ``sigint_ignored`` its
        daemons and workers inherit SIGINT ignored."""
        where = (["--head", "--port", str(PORT), "--include-dashboard", "false", "--temp-dir", str(self.temp)]
                 if head else ["--address", ADDRESS])
        done = self.inside([RAY, "start", *where, "--node-ip-address", "127.0.0.1", "--num-cpus", str(cpus),
                            "--disable-usage-stats"], env=env,
                           preexec_fn=_ignore_sigint if sigint_ignored else None)
        assert done.returncode == 0, done.stderr[-2000:]

    def wait_for_nodes(self, count: int) -> None:
        """Wait until ``count`` nodes are alive."""
        probe = (f"import ray; ray.init(address='{ADDRESS}', log_to_driver=False); "
                 "print(sum(n['Alive'] for n in ray.nodes()))")
        for _ in range(60):
            done = self.inside([sys.executable, "-c", probe])
            if done.returncode == 0 and done.stdout.strip().splitlines()[-1:] == [str(count)]:
                return
            time.sleep(1)
        raise RuntimeError(f"{count} Ray nodes never came up")

    def pids_running(self, title: str) -> list[int]:
        """Host pids of this namespace's processes whose title starts with ``title``."""
        ours = os.readlink(f"/proc/{self.init_pid}/ns/pid")
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                if os.readlink(entry / "ns" / "pid") == ours and (entry / "cmdline").read_bytes().startswith(
                        title.encode()):
                    found.append(int(entry.name))
        return found

    def close(self) -> None:
        """End the namespace: its first process gets SIGKILL and the kernel ends every other one."""
        self.namespace.kill()  # unshare --kill-child: its child, the namespace's first process, gets SIGKILL
        self.namespace.wait(timeout=30)


def started_cluster(workers: int = 1, *, sigint_ignored: bool = False) -> Iterator[Cluster]:
    """A loopback-only cluster: a head node with 2 CPUs and ``workers`` worker nodes of 1 CPU, closed and its
    temp dir removed afterwards (the body of every Ray test file's module fixture); ``sigint_ignored``: see
    ``Cluster.start_node``."""
    temp = Path(tempfile.mkdtemp(prefix="agentstudy-ray-"))
    made = Cluster(temp)
    try:
        made.start_node(head=True, cpus=2, sigint_ignored=sigint_ignored)
        for _ in range(workers):
            made.start_node(head=False, cpus=1, sigint_ignored=sigint_ignored)
        made.wait_for_nodes(1 + workers)
        yield made
    finally:
        made.close()
        subprocess.run(["rm", "-rf", str(temp)], check=False)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    yield from started_cluster()


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> ExampleStudy:
    return build_example_study(tmp_path_factory.mktemp("ray-study") / "study")


def _args(study: ExampleStudy, ledger: Path, *flags: str) -> list[str]:
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    return ["minimal", "--manifest", str(study.manifest_path), "--rehearsal", "--transport", "cli", *roots,
            "--output", str(ledger), "--model", "claude-haiku-5-5", "--budget-usd", "10", *flags]


def _ledger(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    assert verify_ledger_bytes(data).problems == ()
    document: dict[str, Any] = json.loads(data)
    jsonschema.validate(document, json_schema("ledger"))
    return document


def _key(observation: dict[str, Any]) -> tuple[str, str, int]:
    return observation["taskId"], observation["scenario"], observation["repetition"]


def _facts(observation: dict[str, Any]) -> tuple[Any, ...]:
    return (observation["status"], observation["inputTokens"], observation["outputTokens"],
            observation["toolCalls"], observation["toolCallsByName"], observation["exportTreeSha256"])


TWELVE = ("--pilot", "--pilot-tasks", "3", "--pilot-repetitions", "2")
"""Three tasks (two repositories) x both arms x two repetitions: 12 attempts, three rounds of four in flight (18
and the full 36 took longer and added no other path: ``--run`` on Ray is the killed-worker test's)."""


def test_a_12_attempt_study_on_ray_matches_the_local_executor(cluster: Cluster, study: ExampleStudy,
                                                               tmp_path: Path) -> None:
    local_path, ray_path = tmp_path / "local.json", tmp_path / "ray.json"
    local = invoke_agentstudy(*_args(study, local_path, *TWELVE, "--concurrency", "4"), env=_child_env())
    assert local.returncode == 0, local.stderr[-3000:]
    on_ray = cluster.inside([sys.executable, "-m", "agentstudy",
                             *_args(study, ray_path, *TWELVE, "--concurrency", "4", "--executor", "ray",
                                    "--ray-address", ADDRESS)])
    assert on_ray.returncode == 0, on_ray.stderr[-3000:]
    local_ledger, ray_ledger = _ledger(local_path), _ledger(ray_path)
    assert len(ray_ledger["observations"]) == len(local_ledger["observations"]) == 12
    assert {o["taskId"] for o in ray_ledger["observations"]} == {"lantern-discovery", "lantern-architecture",
                                                                 "quill-discovery"}
    assert ({_key(o): _facts(o) for o in ray_ledger["observations"]}
            == {_key(o): _facts(o) for o in local_ledger["observations"]})
    assert {o["status"] for o in ray_ledger["observations"]} == {"completed"}
    assert ray_ledger["executor"] == "ray" and ray_ledger["excludedWorkers"] == []
    assert len({o["workerNode"] for o in ray_ledger["observations"]}) == 2  # both nodes ran attempts
    assert "executor" not in local_ledger and all("workerNode" not in o for o in local_ledger["observations"])


def test_a_worker_killed_mid_attempt_fails_that_attempt_once(cluster: Cluster, study: ExampleStudy,
                                                             tmp_path: Path) -> None:
    ledger_path, prompts = tmp_path / "ledger.json", tmp_path / "prompts.jsonl"
    driver = subprocess.Popen(
        cluster.command([sys.executable, str(HERE / "ray_driver.py"), str(prompts), "--",
                         *_args(study, ledger_path, "--run", "--concurrency", "2", "--executor", "ray",
                                "--ray-address", ADDRESS, "--rehearsal-latency-ms", "4000")]),
        env=_child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(240):  # both running attempts have sent their opening request: kill one of their workers
            opened = prompts.read_text().count("\n") if prompts.exists() else 0
            bodies = cluster.pids_running("ray::attempt_body")
            if opened >= 2 and len(bodies) == 2:
                left = _owned_by(bodies[0])
                os.kill(bodies[0], signal.SIGKILL)
                kept = [path for path in left if path.exists()]  # what the killed worker leaves behind
                break
            assert driver.poll() is None, driver.communicate()
            time.sleep(0.25)
        else:
            pytest.fail("two attempts never ran at once")
        _, stderr = driver.communicate(timeout=600)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode == EXIT_BLOCKED, stderr[-3000:]  # blocked by the stop rule
    ledger = _ledger(ledger_path)
    failed = [o for o in ledger["observations"] if o["status"] != "completed"]
    assert len(failed) == 1
    died = failed[0]
    assert died["status"] == "failed" and died["statusReason"] == "worker died"
    assert died["chargedUsd"] == died["reservedUsd"] > 0 and died["usageComplete"] is False
    assert died["workerNode"]
    index = ledger["observations"].index(died) + 1
    assert ledger["status"] == "blocked" and ledger["stopReason"] == f"attempt {index} ended failed"
    assert len(ledger["observations"]) < ledger["plannedAttempts"]
    assert ledger.get("openReservations") == []
    assert len(kept) == 2  # measured: the killed worker left its export and its HOME/TMPDIR directory …
    assert not any(path.exists() for path in kept)  # … swept by the driver's close (or the node's next task)
    questions = {task.id: task.question for task in load_manifest(study.manifest_path).manifest.tasks}
    opening = [json.loads(line) for line in prompts.read_text().splitlines()]
    for task_id, question in questions.items():
        runs = sum(o["taskId"] == task_id for o in ledger["observations"])
        assert sum(question in text for text in opening) == runs  # every attempt opened once: none ran again


def _owned_by(host_pid: int) -> list[Path]:
    """The temporary directories (``io.scratch`` markers) the process ``host_pid`` of the namespace owns now."""
    status = Path(f"/proc/{host_pid}/status").read_text()
    inner = next(line.split()[-1] for line in status.splitlines() if line.startswith("NSpid:"))
    token = f"{os.stat(f'/proc/{host_pid}/ns/pid').st_ino}_{inner}_"
    markers = [entry for entry in Path(tempfile.gettempdir()).glob("agentstudy-*.owner")
               if entry.read_text().startswith(token)]
    return [marker.with_name(marker.name.removesuffix(".owner")) for marker in markers]


def _http_args(study: ExampleStudy, ledger: Path, *flags: str) -> list[str]:
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    return ["minimal", "--manifest", str(study.manifest_path), "--transport", "http", *roots, "--output",
            str(ledger), "--model", "claude-haiku-5-5", "--budget-usd", "10", "--attempt-budget-usd", "0.5", *flags]


def test_the_http_study_on_ray_matches_the_local_executor(cluster: Cluster, study: ExampleStudy,
                                                          tmp_path: Path) -> None:
    local_path, ray_path = tmp_path / "local.json", tmp_path / "ray.json"
    # One repetition: the cli study above carries the repeated cells; this one carries the agent loop's facts.
    flags = ("--pilot", "--pilot-tasks", "3", "--pilot-repetitions", "1", "--rehearsal", "--concurrency", "4")
    local = invoke_agentstudy(*_http_args(study, local_path, *flags), env=_child_env())
    assert local.returncode == 0, local.stderr[-3000:]
    on_ray = cluster.inside([sys.executable, "-m", "agentstudy",
                             *_http_args(study, ray_path, *flags, "--executor", "ray", "--ray-address", ADDRESS)])
    assert on_ray.returncode == 0, on_ray.stderr[-3000:]
    local_ledger, ray_ledger = _ledger(local_path), _ledger(ray_path)

    def facts(o: dict[str, Any]) -> tuple[Any, ...]:
        return (o["status"], o["inputTokens"], o["outputTokens"], o["numTurns"], o["toolCalls"],
                o["toolCallsByName"], o["chargedUsd"], o["reservedUsd"], o["answer"])

    assert len(ray_ledger["observations"]) == len(local_ledger["observations"]) == 6  # 3 tasks, 2 arms, 1 rep
    assert ({_key(o): facts(o) for o in ray_ledger["observations"]}
            == {_key(o): facts(o) for o in local_ledger["observations"]})
    assert {o["status"] for o in ray_ledger["observations"]} == {"completed"}
    assert any(o["toolCalls"] > 0 for o in ray_ledger["observations"])
    assert ray_ledger["executor"] == "ray" and ray_ledger["excludedWorkers"] == []
    assert ray_ledger["budget"]["spent"] == local_ledger["budget"]["spent"] > 0
    assert len({o["workerNode"] for o in ray_ledger["observations"]}) == 2  # both nodes ran agent loops
    assert "executor" not in local_ledger and all("workerNode" not in o for o in local_ledger["observations"])


def test_a_ray_run_no_worker_passes_is_refused_before_any_ledger(cluster: Cluster, study: ExampleStudy,
                                                                  tmp_path: Path) -> None:
    ledger_path = tmp_path / "ledger.json"  # a real http run: no worker was started with ANTHROPIC_API_KEY
    refused = cluster.inside(
        [sys.executable, "-m", "agentstudy",
         *_http_args(study, ledger_path, "--pilot", "--approve-budget", "--api-base-url", "http://127.0.0.1:9",
                     "--input-usd-per-million", "0.5", "--output-usd-per-million", "2.5", "--concurrency", "2",
                     "--executor", "ray", "--ray-address", ADDRESS)],
        env=_child_env(ANTHROPIC_API_KEY="sk-ant-dummy-never-sent"))
    assert refused.returncode == 2, refused.stderr[-3000:]
    errors = [line for line in refused.stderr.splitlines() if line.startswith("agentstudy: error")]
    assert len(errors) == 1 and "no Ray worker passed the worker preflight" in errors[0]
    assert errors[0].count("ANTHROPIC_API_KEY is not set on this worker") == 2  # both nodes, each named
    assert "sk-ant-dummy-never-sent" not in refused.stdout + refused.stderr
    assert not ledger_path.exists() and list(tmp_path.iterdir()) == []  # no ledger, no journal: nothing charged


def test_a_controlled_study_and_its_adjudication_on_ray_match_the_local_executor(cluster: Cluster,
                                                                                  tmp_path: Path) -> None:
    example = build_controlled_example(tmp_path / "study")
    outputs: dict[str, list[Any]] = {}
    for name, flags in (("local", ()), ("ray", ("--executor", "ray", "--ray-address", ADDRESS))):
        ledger, judged = tmp_path / f"{name}.json", tmp_path / f"{name}-judged.json"
        commands = ([*run_args(example, ledger, "--concurrency", "3", *flags)],
                    ["adjudicate-controlled", str(ledger), str(example.suite), "--adjudicator", str(example.providers),
                     "--output", str(judged), "--concurrency", "3", *flags])
        for command in commands:
            done = (cluster.inside([sys.executable, "-m", "agentstudy", *command]) if flags else
                    invoke_agentstudy(*command, env=_child_env()))
            assert done.returncode == 0, done.stderr[-3000:]
        outputs[name] = observations(judged)
    assert outputs["ray"] == outputs["local"] and len(outputs["local"]) == 12


@pytest.fixture(scope="module")
def excluded_node_pilot(cluster: Cluster, study: ExampleStudy,
                        tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """A third node whose agent binary reports 9.9.9 joins, then a 2-task pilot runs on Ray: its ledger and its
    process, read by the exclusion test and adjudicated by the adjudication test."""
    fake = tmp_path_factory.mktemp("fake-bin") / "claude"
    fake.write_text("#!/bin/sh\necho '9.9.9 (Claude Code)'\n")
    fake.chmod(0o755)
    cluster.start_node(head=False, cpus=1, env=_child_env(**{WORKER_BINARY_ENV: str(fake)}))
    cluster.wait_for_nodes(3)
    ledger_path = tmp_path_factory.mktemp("excluded-node-pilot") / "ledger.json"
    return ledger_path, cluster.inside([sys.executable, "-m", "agentstudy",
                                        *_args(study, ledger_path, "--pilot", "--pilot-tasks", "2", "--concurrency",
                                               "4", "--executor", "ray", "--ray-address", ADDRESS)])


def test_a_worker_with_another_agent_version_is_excluded(
        cluster: Cluster, excluded_node_pilot: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    refuse = ("import sys; from pathlib import Path; from agentstudy.runners.ray_executor import RayExecutor\n"
              "from agentstudy.runners.preflight import PreflightError\n"
              "from agentstudy.runners.executor import WorkerRequirements\n"
              "try:\n"
              f"    RayExecutor('{ADDRESS}', {{}}, WorkerRequirements(binary=Path('/nonexistent/claude'),"
              " expected_version='2.1.296', containment='bwrap'))\n"
              "except PreflightError as error:\n"
              "    print(error); sys.exit(0)\n"
              "sys.exit(1)\n")
    refused = cluster.inside([sys.executable, "-c", refuse])  # no node passes: the run is refused before any ledger
    assert refused.returncode == 0, refused.stderr[-2000:]
    assert refused.stdout.count("no Ray worker passed the worker preflight") == 1
    assert refused.stdout.count("/nonexistent/claude") >= 2  # the nodes excluded, each with its reason
    ledger_path, done = excluded_node_pilot
    assert done.returncode == 0, done.stderr[-3000:]
    ledger = _ledger(ledger_path)
    excluded = ledger["excludedWorkers"]
    assert len(excluded) == 1 and "9.9.9" in excluded[0]["reason"] and "2.1.296" in excluded[0]["reason"]
    assert f"worker {excluded[0]['node'][:12]} excluded" in done.stdout + done.stderr
    assert {o["status"] for o in ledger["observations"]} == {"completed"}
    assert excluded[0]["node"] not in {o["workerNode"] for o in ledger["observations"]}


def test_an_adjudication_on_ray_matches_the_local_executor(
        cluster: Cluster, study: ExampleStudy, tmp_path: Path,
        excluded_node_pilot: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    """Adjudicates the 2-task pilot run with the 9.9.9 node in the cluster: the Ray adjudication excludes that node
    (proof that its items ran on Ray)."""
    ledger, ran = excluded_node_pilot
    assert ran.returncode == 0, ran.stderr[-3000:]
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]

    def adjudicate(output: Path, *flags: str) -> list[dict[str, Any]]:
        argv = ["adjudicate", str(ledger), "--manifest", str(study.manifest_path), *roots, "--output", str(output),
                "--model", "claude-haiku-5-5", "--budget-usd", "1", "--rehearsal", "--seed", "7", "--concurrency", "2",
                *flags]
        done = (cluster.inside([sys.executable, "-m", "agentstudy", *argv]) if flags else
                invoke_agentstudy(*argv, env=_child_env()))
        assert done.returncode == 0, done.stderr[-3000:]
        assert ("excluded: " in done.stderr and "9.9.9" in done.stderr) == bool(flags)
        items: list[dict[str, Any]] = json.loads(output.read_text())["items"]
        return [{key: item[key] for key in ("itemId", "status", "attemptStatus", "score", "verdicts", "citations",
                                             "inputTokens", "outputTokens", "chargedUsd")} for item in items]

    local = adjudicate(tmp_path / "local.adjudication.json")
    on_ray = adjudicate(tmp_path / "ray.adjudication.json", "--executor", "ray", "--ray-address", ADDRESS)
    assert on_ray == local and len(local) == 4 and {item["status"] for item in local} == {"scored"}
