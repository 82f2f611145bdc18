"""Scripted faults in the rehearsal servers (issue 33 item 1): the schedule's grammar and the real server's answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentstudy.commands.run_options import checked_faults
from agentstudy.protocol.fault_schedule import FaultScheduleError, parse_fault_schedule
from agentstudy.protocol.manifest import load_manifest
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.rehearsal.responses_server import ResponsesRehearsalServer

from study_files import study_document

BODY: dict[str, Any] = {"model": "claude-haiku-4-5", "max_tokens": 64,
                        "messages": [{"role": "user", "content": "Where is the retention window set?"}]}


def _post(client: httpx.Client, url: str, body: dict[str, Any] = BODY) -> httpx.Response:
    return client.post(f"{url}/v1/messages", json=body, timeout=10)


def test_a_schedule_by_number_range_rate_and_attempt() -> None:
    schedule = parse_fault_schedule("1:429, 3-4:529, 6:reset, 7:slow=5, 8:sse-error, 9:500/ra=2")
    faults = [schedule.fault_for(n, 1) for n in range(1, 11)]
    assert [None if f is None else f.label for f in faults] == [
        "429", None, "529", "529", None, "reset", "slow", "sse-error", "500", None]
    assert faults[0] is not None and faults[0].retry_after_s == 1
    assert faults[2] is not None and faults[2].retry_after_s is None
    assert faults[8] is not None and faults[8].retry_after_s == 2
    assert faults[6] is not None and faults[6].delay_ms == 5


def test_a_rate_replays_with_its_seed_and_hits_about_its_share() -> None:
    def labels(spec: str) -> list[str | None]:
        schedule = parse_fault_schedule(spec)
        return [None if (f := schedule.fault_for(n, 2)) is None else f.label for n in range(1, 1001)]

    first = labels("30%:429,seed=7")
    assert first == labels("30%:429,seed=7")
    assert first != labels("30%:429,seed=8")
    assert 250 <= first.count("429") <= 350


def test_attempt_selector_follows_conversations_retries_and_sessions() -> None:
    schedule = parse_fault_schedule("attempt=2:529")
    # (messages, retry): conversation 1 of two requests; conversation 2 opened, retried twice; conversation 3
    requests = [(1, False), (3, False), (1, False), (1, True), (1, True), (1, False), (3, False)]
    seen = [schedule.fault_for(n, count, None, retry) for n, (count, retry) in enumerate(requests, start=1)]
    assert [None if f is None else f.label for f in seen] == [None, None, "529", "529", "529", None, None]
    by_session = parse_fault_schedule("attempt=1:429")
    labels = [by_session.fault_for(n, 1, session) for n, session in enumerate(["a", "a", "b", "a"], start=1)]
    assert [None if f is None else f.label for f in labels] == ["429", "429", None, "429"]


@pytest.mark.parametrize("spec", ["", "1", "0:429", "2-1:429", "x:429", "1:600", "1:bogus", "101%:429",
                                  "seed=x,1:429", "attempt=0:529", "1:slow=x"])
def test_bad_specs_are_refused(spec: str) -> None:
    with pytest.raises(FaultScheduleError):
        parse_fault_schedule(spec)


def test_the_messages_server_answers_each_scheduled_fault_and_logs_it() -> None:
    schedule = parse_fault_schedule("1:429,2:529,3:reset,5:sse-error")
    with RehearsalServer(faults=schedule) as server, httpx.Client() as client:
        limited = _post(client, server.base_url)
        assert limited.status_code == 429 and limited.headers["retry-after"] == "1"
        assert limited.json()["error"]["type"] == "rate_limit_error"
        overloaded = _post(client, server.base_url)
        assert overloaded.status_code == 529 and overloaded.json()["error"]["type"] == "overloaded_error"
        with pytest.raises(httpx.TransportError):
            _post(client, server.base_url)
        assert _post(client, server.base_url).status_code == 200
        with client.stream("POST", f"{server.base_url}/v1/messages", json={**BODY, "stream": True},
                           timeout=10) as broken:
            assert broken.status_code == 200
            text = broken.read().decode()
        events = [line.removeprefix("event: ") for line in text.splitlines() if line.startswith("event: ")]
        assert events == ["message_start", "error"]
        last = [line for line in text.splitlines() if line.startswith("data: ")][-1]
        assert json.loads(last.removeprefix("data: "))["error"]["type"] == "overloaded_error"
        assert _post(client, server.base_url).status_code == 200
        log = server.requests
    assert [(r.number, r.status, r.fault) for r in log] == [
        (1, 429, "429"), (2, 529, "529"), (3, 0, "reset"), (4, 200, None), (5, 200, "sse-error"), (6, 200, None)]


def test_a_slow_first_byte_is_answered_normally_after_its_delay() -> None:
    with RehearsalServer(faults=parse_fault_schedule("1:slow=150")) as server, httpx.Client() as client:
        answer = _post(client, server.base_url)
        log = server.requests
    assert answer.status_code == 200 and answer.json()["type"] == "message"
    assert log[0].fault == "slow" and log[0].answered_after_ms >= 150


def test_the_responses_server_takes_the_same_schedule() -> None:
    body = {"model": "gpt-5.5", "input": [{"role": "user", "content": [{"type": "input_text", "text": "Where?"}]}],
            "stream": True}
    with ResponsesRehearsalServer(faults=parse_fault_schedule("1:429")) as server, httpx.Client() as client:
        refused = client.post(f"{server.base_url}/v1/responses", json=body, timeout=10)
        log = server.requests
    assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
    assert [(r.number, r.fault) for r in log] == [(1, "429")]


def test_a_study_file_carries_a_schedule_the_flag_replaces(tmp_path: Path) -> None:
    path = tmp_path / "study.json"
    path.write_text(json.dumps({**study_document({"repo": 1}, 1), "rehearsalFaults": "1:429,seed=3"}))
    loaded = load_manifest(path)
    assert checked_faults(None, loaded, True) == "1:429,seed=3"
    assert checked_faults("2:529", loaded, True) == "2:529"
    assert checked_faults(None, loaded, False) is None  # a real run ignores the file's rehearsal schedule
    with pytest.raises(SystemExit) as refused:
        checked_faults("2:529", loaded, False)
    assert refused.value.code == 2
    path.write_text(json.dumps({**study_document({"repo": 1}, 1), "rehearsalFaults": "1:nope"}))
    with pytest.raises(SystemExit) as bad:
        checked_faults(None, load_manifest(path), True)
    assert bad.value.code == 2
