"""Issue 19, item 5: ``--rehearsal-latency-ms MS`` — the scripted Messages API server answers every request after MS.

Real server on 127.0.0.1, real HTTP. Nothing here times the test: the server notes, by its own
monotonic clock, how long after arrival it answered, and that must be at least MS (a lower
bound only); a real rehearsal run through the command line shows the delay in every attempt's
wall time (at least turns × MS, again a lower bound).
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.rehearsal.example_study import build_example_study
from agentstudy.rehearsal.messages_server import RehearsalServer

BODY = {"model": "claude-haiku-5-5", "max_tokens": 16, "messages": [{"role": "user", "content": "hello"}]}


@pytest.mark.parametrize("latency_ms", [0, 250])
def test_the_server_answers_every_request_after_the_configured_delay(latency_ms: int) -> None:
    with RehearsalServer(latency_ms=latency_ms) as server:
        for _ in range(2):
            response = httpx.post(f"{server.base_url}/v1/messages", json=BODY, headers={"x-api-key": "rehearsal"},
                                  timeout=30)
            assert response.status_code == 200 and response.json()["type"] == "message"
        records = server.requests
    assert len(records) == 2
    assert all(r.answered_after_ms >= latency_ms for r in records), [r.answered_after_ms for r in records]
    if latency_ms == 0:
        assert server.latency_ms == 0


def test_a_negative_latency_is_refused() -> None:
    with pytest.raises(ValueError, match="latency_ms must be >= 0"):
        RehearsalServer(latency_ms=-1)


def test_the_flag_needs_a_rehearsal(tmp_path: Path) -> None:
    study = build_example_study(tmp_path / "study")
    result = CliRunner().invoke(main, [
        "minimal", "--manifest", str(study.manifest_path), "--pilot", "--transport", "http",
        "--rehearsal-latency-ms", "100", "--output", str(tmp_path / "ledger.json")])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "agentstudy: error: --rehearsal-latency-ms needs --rehearsal (it delays the scripted server's answers)"]
    assert not (tmp_path / "ledger.json").exists()


def test_a_real_rehearsal_run_waits_the_delay_on_every_turn(tmp_path: Path) -> None:
    study = build_example_study(tmp_path / "study")
    ledger = tmp_path / "ledger.json"
    result = CliRunner().invoke(main, [
        "minimal", "--manifest", str(study.manifest_path), "--pilot", "--transport", "http", "--rehearsal",
        "--rehearsal-latency-ms", "200", *(f"--root={name}={path}" for name, path in study.roots.items()),
        "--output", str(ledger), "--model", "claude-haiku-5-5", "--budget-usd", "1",
        "--input-usd-per-million", "1", "--output-usd-per-million", "5", "--containment", "restricted"])
    assert result.exit_code == 0, result.output
    observations = json.loads(ledger.read_bytes())["observations"]
    assert len(observations) == 2
    for observation in observations:
        assert observation["numTurns"] >= 2
        assert observation["wallTimeMs"] >= 200 * observation["numTurns"], observation["wallTimeMs"]
