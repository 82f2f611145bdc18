"""An internal error after an attempt has its result never loses its observation (issue 40).

Each test runs the real ``agentstudy minimal`` (cli transport, the fake ``claude`` of ``tests/fakes.py``, the
example study's real git checkouts and the bundled MCP server) one attempt at a time and at ``--concurrency 2``,
on the first task's pilot with two repetitions (four attempts on one corpus, so one MCP server and one probe in
the preflight; the failure lands on the second attempt, so the run still stops before its schedule ends), with
one real failure injected once, at one step after the agent process ended: evaluating its stream
(the setup checks), pricing it, settling it, keeping its transcript, building its observation. Every
time: the attempt is recorded (``failed``, its ``statusReason`` naming the internal error, charged at least
its whole reservation; a transcript that could not be kept leaves the observation without one), the run
stops ``blocked`` naming the error, no reservation is left open, every child that ran is recorded, spent is
the observations' charges, and ``agentstudy ledger`` verifies the file.
"""

from __future__ import annotations

import errno
import itertools
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study
from agentstudy.runners.attempt_port import ObservedThenFailed, kept_or_late

from fakes import FakeClaude

INTERNAL = "internal error after the agent ended: "
# Six attempts: at --concurrency 2 the failing second call leaves at most four started when the run stops.
PILOT = ("--pilot", "--pilot-repetitions", "3")
"""The schedule every run here walks: the first task, two repetitions, both arms (four attempts, one corpus)."""


class _Once:
    """Wrap ``real`` so that its ``nth`` call (thread-safe count) raises ``error`` instead; every other call is real."""

    def __init__(self, real: Callable[..., Any], error: BaseException, nth: int = 2) -> None:
        self.real, self.error, self.nth = real, error, nth
        self.calls = itertools.count(1)
        self.lock = threading.Lock()
        self.raised = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            call = next(self.calls)
        if call == self.nth:
            self.raised += 1
            raise self.error
        return self.real(*args, **kwargs)


def _inject(monkeypatch: pytest.MonkeyPatch, step: str) -> _Once:
    """Patch ``step``'s function where it is looked up at call time; the wrapper that raises once."""
    import agentstudy.runners.cli_request as cli_request
    import agentstudy.runners.minimal as minimal
    import agentstudy.transports.cli_evaluation as cli_evaluation
    where: dict[str, tuple[Any, str, BaseException]] = {
        "evaluation": (cli_evaluation, "check_setup", RuntimeError("the setup check broke")),
        "pricing": (cli_evaluation, "compute_cost", ArithmeticError("the price table broke")),
        "settlement": (cli_request, "settle_attempt", ValueError("the settlement broke")),
        "transcript": (minimal, "keep_transcript", OSError(errno.ENOSPC, "No space left on device")),
        "observation": (minimal, "cli_observation", KeyError("a field the observation needs")),
    }
    module, name, error = where[step]
    once = _Once(getattr(module, name), error)
    monkeypatch.setattr(module, name, once)
    return once


@pytest.fixture
def study(tmp_path: Path) -> ExampleStudy:
    return build_example_study(tmp_path / "study")


def _run(study: ExampleStudy, fake: FakeClaude, ledger: Path, concurrency: int) -> Any:
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    args = ["minimal", "--manifest", str(study.manifest_path), "--transport", "cli", "--approve-budget", *roots,
            "--output", str(ledger), "--claude-bin", str(fake.path), "--model", "claude-haiku-5-5",
            *PILOT, "--budget-usd", "10", "--concurrency", str(concurrency)]
    return CliRunner().invoke(main, args, catch_exceptions=False)


@pytest.mark.parametrize("concurrency", [1, 2])
@pytest.mark.parametrize("step", ["evaluation", "pricing", "settlement", "transcript", "observation"])
def test_an_internal_error_after_the_agent_ended_is_recorded_then_the_run_stops(
    study: ExampleStudy, fake_claude: FakeClaude, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str,
    concurrency: int,
) -> None:
    fake_claude.behave(mode="ok", reportedCost=0.01)
    once = _inject(monkeypatch, step)
    ledger_path = tmp_path / "out" / "ledger.json"
    ledger_path.parent.mkdir()
    result = _run(study, fake_claude, ledger_path, concurrency)
    assert once.raised == 1, f"the {step} step was reached and failed once: {result.output[-3000:]}"
    assert result.exit_code == 1, result.output[-2000:]
    assert "internal error" in result.output and "see the ledger" in result.output, result.output[-2000:]
    ledger = json.loads(ledger_path.read_text(encoding="utf-8"))
    assert ledger["status"] == "blocked"
    assert not ledger.get("openReservations") and not ledger.get("openReservation"), "no reservation is left open"
    observations = ledger["observations"]
    ran = sum(call != ["--version"] for call in fake_claude.calls)
    assert len(observations) == ran, "every child that ran is recorded"
    assert len(observations) < ledger["plannedAttempts"], "the run stopped"
    assert abs(sum(o["chargedUsd"] for o in observations) - ledger["budget"]["spent"]) < 1e-9
    error_text = once.error.strerror if isinstance(once.error, OSError) else type(once.error).__name__
    assert error_text and error_text in ledger["stopReason"], ledger["stopReason"]
    if step == "transcript":  # the attempt itself is fine: recorded as it settled, without the transcript
        kept = [o for o in observations if "transcriptFile" not in o]
        assert len(kept) == 1 and kept[0]["status"] == "completed", kept
    else:
        hit = [o for o in observations if str(o.get("statusReason") or "").startswith(INTERNAL)]
        assert len(hit) == 1, [o.get("statusReason") for o in observations]
        assert hit[0]["status"] == "failed" and hit[0]["answer"] == ""
        assert hit[0]["chargedUsd"] >= hit[0]["reservedUsd"] > 0, "charged by the seed's conservative rule"
        assert error_text in hit[0]["statusReason"]
        assert not hit[0]["statusReason"].startswith("never started"), "its agent ran"
    verified = CliRunner().invoke(main, ["ledger", str(ledger_path)], catch_exceptions=False)
    assert verified.exit_code == 0, verified.output[-2000:]


@pytest.mark.parametrize("concurrency", [1, 2])
def test_an_http_observation_that_fails_to_build_is_recorded_then_the_run_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, concurrency: int,
) -> None:
    """The http transport (rehearsal server on 127.0.0.1): building the second observation raises once."""
    import agentstudy.runners.http_attempts as http_attempts
    import agentstudy.runners.minimal_http as minimal_http
    once = _Once(http_attempts.http_observation, KeyError("a field the observation needs"))
    monkeypatch.setattr(http_attempts, "http_observation", once)  # the one-at-a-time loop looks it up here
    monkeypatch.setattr(minimal_http, "http_observation", once)  # the concurrent walk's port, here
    built = build_example_study(tmp_path / "study")
    ledger_path = tmp_path / "out" / "ledger.json"
    ledger_path.parent.mkdir()
    roots = [f"--root={name}={path}" for name, path in built.roots.items()]
    env: dict[str, str | None] = {"ANTHROPIC_API_KEY": None}
    result = CliRunner().invoke(main, [
        "minimal", "--manifest", str(built.manifest_path), *PILOT, "--transport", "http", "--rehearsal", *roots,
        "--approve-budget", "--output", str(ledger_path), "--model", "claude-haiku-5-5", "--budget-usd", "2",
        "--concurrency", str(concurrency), *(["--attempt-budget-usd", "0.2"] if concurrency > 1 else []),
    ], env=env, catch_exceptions=False)
    assert once.raised == 1, result.output[-3000:]
    assert result.exit_code == 1, result.output[-2000:]
    ledger = json.loads(ledger_path.read_text(encoding="utf-8"))
    assert ledger["status"] == "blocked" and "KeyError" in ledger["stopReason"], ledger["stopReason"]
    assert not ledger.get("openReservations") and not ledger.get("openReservation"), "no reservation is left open"
    hit = [o for o in ledger["observations"] if str(o.get("statusReason") or "").startswith(INTERNAL)]
    assert len(hit) == 1 and hit[0]["status"] == "failed" and "KeyError" in hit[0]["statusReason"], hit
    assert hit[0].get("transcriptFile"), "the transcript kept before the error is named, never orphaned"
    assert abs(sum(o["chargedUsd"] for o in ledger["observations"]) - ledger["budget"]["spent"]) < 1e-9
    verified = CliRunner().invoke(main, ["ledger", str(ledger_path)], catch_exceptions=False)
    assert verified.exit_code == 0, verified.output[-2000:]


def test_a_file_kept_before_a_later_keep_failed_is_still_named() -> None:
    """The transcript is written, then keeping the server's stderr tail fails: the observation built names the
    transcript (a file on disk is never left unnamed, which ``agentstudy ledger`` would refuse)."""
    built: list[dict[str, str]] = []

    def build(kept: dict[str, str]) -> Any:
        built.append(dict(kept))
        return bare_observation_stand_in

    def keep(kept: dict[str, str]) -> None:
        kept.update({"transcript_file": "t--repository-only--r1.jsonl", "transcript_sha256": "0" * 64})
        raise OSError(errno.EIO, "Input/output error")

    bare_observation_stand_in = object()
    with pytest.raises(ObservedThenFailed) as raised:
        kept_or_late(build, keep)
    assert raised.value.observation is bare_observation_stand_in
    assert built == [{"transcript_file": "t--repository-only--r1.jsonl", "transcript_sha256": "0" * 64}]
    assert "Input/output error" in str(raised.value)
