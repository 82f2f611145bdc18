"""The bundled provider adapter's failure paths with fake agent binaries (issue 34, "Must show").

Each fake answers ``--version`` as the pinned Codex does and runs a bash script for ``exec``, under
bubblewrap (the default containment) in a real example repository: a non-JSON answer, a stream
without usage, a child that outlives the adapter's timeout, a child that forks a ``setsid()``
grandchild. The adapter must exit 1 with nothing on stdout and leave no process behind; through
the controlled runner the attempt is recorded as the seed says (``failed`` / ``timed-out``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentstudy.controlled.command import ControlledCommandRequest, run_controlled_command
from agentstudy.controlled.requests import provider_request, request_bytes
from agentstudy.rehearsal.controlled.example import example_suite
from agentstudy.rehearsal.example_study import build_corpus_repository
from agentstudy.transports.codex_args import CODEX_VERSION
from test_controlled_run_support import plan_with

TRANSCRIPT = Path(__file__).parent / "transcripts" / "codex-0.171.0" / "control-completed.jsonl"
PY = sys.executable


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("provider-failures") / "lantern-cache"
    build_corpus_repository("lantern-cache", root)
    return root


@pytest.fixture(scope="module")
def request_data() -> bytes:
    task = next(t for t in example_suite()["tasks"] if t["repositoryId"] == "lantern-cache")
    execution = {"taskId": task["id"], "repositoryId": task["repositoryId"], "category": task["category"],
                 "scenarioId": "repository-only", "modelId": "low-cost-model", "replicate": 0,
                 "variantId": "variant-a", "difficulty": task["difficulty"]}
    return request_bytes(provider_request(task, execution))


@pytest.fixture
def environ(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {"PATH": os.environ["PATH"], "HOME": str(home), "TMPDIR": str(tmp_path), "LC_ALL": "C.UTF-8"}


def fake_codex(directory: Path, exec_body: str) -> Path:
    """A fake codex: the pinned version line for ``--version`` (the probe's sandbox sees only the fake), and
    ``exec_body`` (bash) for ``exec``."""
    fake = directory / "codex"
    fake.write_text(f'#!/bin/bash\ncase "$1" in --version) echo "codex-cli {CODEX_VERSION}"; exit 0;; esac\n'
                    f'{exec_body}\n')
    fake.chmod(0o755)
    return fake


def printing(lines: list[str]) -> str:
    """Bash that prints ``lines`` (a heredoc: the fake needs no file outside its sandbox)."""
    return "cat <<'EOF'\n" + "\n".join(lines) + "\nEOF"


def transcript(*, answer: str | None = None, usage: bool = True) -> list[str]:
    """The recorded Codex stream, its final agent message replaced by ``answer`` and its usage kept or dropped."""
    lines = TRANSCRIPT.read_text(encoding="utf-8").splitlines()
    out = []
    for line in lines:
        event = json.loads(line)
        if event.get("type") == "turn.completed" and not usage:
            continue
        out.append(line)
    if answer is not None:
        last = max(i for i, line in enumerate(out) if '"agent_message"' in line)
        event = json.loads(out[last])
        event["item"]["text"] = answer
        out[last] = json.dumps(event)
    return out


def adapter(fake: Path, *extra: str) -> list[str]:
    return [PY, "-I", "-m", "agentstudy", "provider", "codex", "--rehearsal", "--agent-bin", str(fake), *extra]


def run_adapter(fake: Path, repository: Path, request_data: bytes, environ: dict[str, str],
                *extra: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(adapter(fake, *extra), input=request_data, cwd=repository, env=environ,
                          capture_output=True, timeout=120, check=False)


def processes_with(marker: str, wait_s: float = 5.0) -> list[int]:
    """Live processes whose command line holds ``marker``, after at most ``wait_s`` for them to end (a bound on
    the wait for the kernel to reap a killed namespace, not a speed claim)."""
    deadline = time.monotonic() + wait_s
    while (found := _live(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return found


def _live(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker.encode() in (entry / "cmdline").read_bytes():
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state not in ("Z", "X"):
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_the_recorded_stream_with_a_schema_answer_is_answered(repository: Path, request_data: bytes,
                                                              environ: dict[str, str], tmp_path: Path) -> None:
    # The control of the failure cases below: the same fake with a well-formed answer gives one object.
    answer = {"taskOutcome": "partial", "evidenceQuality": "low", "safetyOutcome": "safe",
              "evidenceIds": ["  adr-monotonic  ", "x" * 300], "clarificationRequests": 0, "reworkCount": 1,
              "measurements": [{"name": "acceptanceChecksPassed", "value": 1}]}
    fake = fake_codex(tmp_path, printing(transcript(answer=json.dumps(answer))))
    done = run_adapter(fake, repository, request_data, environ)
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["evidenceIds"][0] == "adr-monotonic"
    assert body["evidenceIds"][1].startswith("evidence-") and len(body["evidenceIds"][1]) == len("evidence-") + 32
    assert body["tokenMethod"] == "provider" and body["inputTokens"] > 0 and body["outputTokens"] > 0
    assert body["measurements"]["acceptanceChecksPassed"] == 1
    assert body["measurements"]["cachedInputTokens"] >= 0 and "reasoningOutputTokens" in body["measurements"]
    assert body["toolCalls"] >= 1


@pytest.mark.parametrize(("case", "exec_body", "says"), [
    ("non-JSON answer", printing(transcript()), "not one JSON object"),
    ("answer outside the schema", printing(transcript(answer='{"taskOutcome": "success"}')), "output schema"),
    ("missing usage", printing(transcript(answer="{}", usage=False)), "ended"),
])
def test_a_bad_agent_output_exits_1_with_nothing_on_stdout(case: str, exec_body: str, says: str, repository: Path,
                                                           request_data: bytes, environ: dict[str, str],
                                                           tmp_path: Path) -> None:
    done = run_adapter(fake_codex(tmp_path, exec_body), repository, request_data, environ)
    assert (done.returncode, done.stdout) == (1, b""), case
    assert says in done.stderr.decode(), done.stderr


def test_a_timeout_exits_1_and_leaves_no_process(repository: Path, request_data: bytes, environ: dict[str, str],
                                                 tmp_path: Path) -> None:
    marker = f"{os.getpid()}.7301"
    done = run_adapter(fake_codex(tmp_path, f"sleep {marker}"), repository, request_data, environ,
                       "--timeout-s", "2")
    assert (done.returncode, done.stdout) == (1, b"")
    assert "timed-out" in done.stderr.decode()
    assert processes_with(marker) == []


def test_a_setsid_grandchild_dies_with_the_attempt(repository: Path, request_data: bytes, environ: dict[str, str],
                                                   tmp_path: Path) -> None:
    marker = f"{os.getpid()}.7302"
    body = f"setsid sleep {marker} </dev/null >/dev/null 2>&1 &\n{printing(transcript())}"
    done = run_adapter(fake_codex(tmp_path, body), repository, request_data, environ)
    assert (done.returncode, done.stdout) == (1, b"")
    assert processes_with(marker) == []


def _through_runner(fake: Path, repository: Path, request_data: bytes, environ: dict[str, str],
                    max_runtime_ms: int, *extra: str) -> dict[str, object]:
    argv = adapter(fake, *extra)
    request = ControlledCommandRequest(plan=plan_with(max_attempts=1), execution={
        "taskId": "consumer-01-discovery", "repositoryId": "consumer-01", "category": "discovery",
        "scenarioId": "repository-only", "modelId": "low-cost-model", "replicate": 0, "variantId": "variant-a",
        "difficulty": "easy"}, command=argv[0], args=tuple(argv[1:]), cwd=repository, input=request_data,
        context_bytes=len(request_data), max_runtime_ms=max_runtime_ms)
    run = run_controlled_command(request, environ=environ)
    execution: dict[str, object] = run.observation.document["execution"]
    return execution


def test_the_runner_records_an_adapter_without_an_answer_as_failed(repository: Path, request_data: bytes,
                                                                   environ: dict[str, str], tmp_path: Path) -> None:
    execution = _through_runner(fake_codex(tmp_path, printing(transcript())), repository, request_data, environ,
                                120_000)
    assert (execution["status"], execution["errorCode"], execution["exitCode"], execution["responseBytes"]) == (
        "failed", "non-zero-exit", 1, 0)


def test_the_runner_times_out_an_adapter_and_nothing_survives(repository: Path, request_data: bytes,
                                                              environ: dict[str, str], tmp_path: Path) -> None:
    marker = f"{os.getpid()}.7303"
    body = f"setsid sleep {marker} </dev/null >/dev/null 2>&1 &\nsleep {marker}"
    execution = _through_runner(fake_codex(tmp_path, body), repository, request_data, environ, 8000)
    assert (execution["status"], execution["errorCode"]) == ("timed-out", "timeout")
    # The group gets SIGTERM, then SIGKILL after the runner's grace; the adapter's clean-up (the agent's tree,
    # its private directories, the scripted server) may outlast that grace, so either signal is a truthful record;
    # an adapter that finished its clean-up in time exits with its own stop code, 128 + SIGTERM, and then no
    # signal ended it.
    assert (execution["exitCode"], execution["signal"]) in (
        (None, "SIGTERM"), (None, "SIGKILL"), (128 + signal.SIGTERM, None))
    assert processes_with(marker) == []


def test_a_doc_bridge_request_outside_a_git_checkout_gets_no_answer(request_data: bytes, environ: dict[str, str],
                                                                     tmp_path: Path) -> None:
    # The MCP arm's server serves the repository at HEAD: a plain directory is refused before any agent starts.
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "README.md").write_text("# plain\n", encoding="utf-8")
    marker = tmp_path / "agent-started"
    fake = fake_codex(tmp_path, f"touch '{marker}'")
    doc_bridge = request_data.replace(b'"scenarioId":"repository-only"', b'"scenarioId":"deterministic-doc-bridge"')
    assert doc_bridge != request_data
    done = run_adapter(fake, plain, doc_bridge, environ)
    assert (done.returncode, done.stdout) == (1, b"")
    assert "Git checkout" in done.stderr.decode() and not marker.exists()
