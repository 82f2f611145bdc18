"""The treatment record and its summary (issue 28): built from streams, counted and judged on the report."""

from __future__ import annotations

import json
from pathlib import Path

from agentstudy.protocol.treatment import TREATMENT_LOST, ServerCall, read_treatment, treatment_record
from agentstudy.report.analysis import analyse
from agentstudy.report.build import build_report
from agentstudy.report.load import load_study
from agentstudy.report.treatment import fidelity_line, summarize_treatment, verdict
from agentstudy.stream.codex import parse_codex_stream
from agentstudy.stream.setup import SetupExpectations, check_setup
from agentstudy.stream.transcript import parse_transcript
from agentstudy.stream.treatment_facts import claude_treatment, codex_treatment
from test_report_builders import TASKS, cli_obs, ledger, treatment, write

SEARCH = "mcp__doc-bridge__doc_search"


def _claude_stream(results: list[tuple[str, bool]], model: str = "claude-haiku-4-5") -> list[str]:
    init = {"type": "system", "subtype": "init", "model": model, "tools": ["Read", SEARCH],
            "mcp_servers": [{"name": "doc-bridge", "status": "connected"}]}
    lines = [json.dumps(init)]
    for i, (text, error) in enumerate(results):
        lines.append(json.dumps({"type": "assistant", "message": {
            "id": f"msg_{i}", "model": model, "usage": {"input_tokens": 100 + i, "cache_read_input_tokens": 5},
            "content": [{"type": "tool_use", "id": f"t{i}", "name": SEARCH, "input": {}}]}}))
        lines.append(json.dumps({"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": f"t{i}", "is_error": error,
             "content": [{"type": "text", "text": text}]}]}}))
    lines.append(json.dumps({"type": "assistant", "message": {"id": "msg_x", "model": "<synthetic>", "content": []}}))
    lines.append(json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "a"}))
    return lines


def test_a_claude_stream_gives_calls_errors_empty_results_bytes_models_and_the_first_request() -> None:
    transcript = parse_transcript(_claude_stream([("héllo", False), ("  ", False), ("boom", True)]))
    record = claude_treatment(transcript, "doc-bridge")
    assert record.server_offered and record.offered_server_tools == ["doc_search"]
    assert record.server_calls_by_tool == {"doc_search": 3} and record.server_call_errors == 1
    assert record.empty_results == 1 and record.result_bytes == len("héllo".encode()) + 4
    assert record.answering_models == ["claude-haiku-4-5"] and record.first_request_input_tokens == 105
    assert not record.all_calls_failed
    control = claude_treatment(parse_transcript([json.dumps({"type": "system", "subtype": "init", "tools": ["Read"],
                                                             "mcp_servers": []})]), None)
    assert not control.server_offered and control.offered_server_tools == [] and control.server_calls == 0


def test_every_call_erroring_is_the_one_treatment_lost_problem_on_claude_and_codex() -> None:
    transcript = parse_transcript(_claude_stream([("no", True), ("no", True)]))
    assert claude_treatment(transcript, "doc-bridge").all_calls_failed
    problems = check_setup(transcript, SetupExpectations("claude-haiku-4-5", ("Read", SEARCH), "doc-bridge"),
                           ("Read", SEARCH))
    assert problems == [f"{TREATMENT_LOST}: the server answered 'no'"]  # the one text, with the server's words
    events = [{"type": "thread.started", "thread_id": "t"}, {"type": "turn.started"},
              {"type": "item.completed", "item": {"id": "i1", "type": "mcp_tool_call", "server": "doc-bridge",
                                                  "tool": "doc.get", "status": "failed", "result": None}},
              {"type": "turn.completed", "usage": {"input_tokens": 1, "cached_input_tokens": 0, "output_tokens": 1}}]
    codex = parse_codex_stream(json.dumps(e) for e in events)
    record = codex_treatment(codex, "doc-bridge", ("doc.get",), "gpt-5")
    assert record.all_calls_failed and record.evidence == "config" and record.server_calls_by_tool == {"doc.get": 1}


def test_a_record_round_trips_and_an_invalid_one_reads_as_not_recorded() -> None:
    record = treatment_record(server="s", offered_server_tools=["a"], evidence="request",
                              calls=[ServerCall("a", False, 3), ServerCall("a", True, None)])
    assert read_treatment(record.to_json()) == record
    assert read_treatment({"serverCalls": "many"}) is None and read_treatment(None) is None


def _study(tmp_path: Path, used: list[int], minimum: float = 0.5) -> tuple[str, str, str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    observations = []
    for i, calls in enumerate(used):
        task = TASKS[i % len(TASKS)]
        rep = 1 + i // len(TASKS)
        observations.append(cli_obs(task, "repository-only", rep,
                                    treatment={**treatment(0), "server": None, "serverOffered": False,
                                               "offeredServerTools": [], "firstRequestInputTokens": 3000}))
        observations.append(cli_obs(task, "doc-bridge-mcp", rep, tool_calls=max(calls, 1),
                                    treatment=treatment(calls, first_request=3400)))
    write(tmp_path / "ledger.json", ledger(observations, mode="full", planned=len(observations)))
    study = load_study(tmp_path / "ledger.json")
    summary = summarize_treatment(study, minimum)
    return (fidelity_line(summary, "doc-bridge"), verdict(analyse(study), summary, primary="inputTokens"),
            verdict(analyse(study), summary))


def test_the_fidelity_line_counts_attempts_calls_and_the_tool_definition_overhead(tmp_path: Path) -> None:
    line, sentence, default = _study(tmp_path, [3, 2, 4, 0, 3, 5])
    assert ("doc-bridge was used in 5 of 6 treatment attempts (median 3 calls; 0 calls errored; 0 attempts where "
            "every call failed)") in line
    assert "No server tool was offered in any of the 6 control attempts." in line
    assert "add ~400 input tokens to every request" in line
    assert sentence.startswith("Does doc-bridge help? On the primary metric, input tokens")
    assert "intention to treat" in sentence
    # no analysis section: the primary endpoint is correctness, unknown before adjudication
    assert default.endswith("its primary endpoint, correctness, is known only once the answers are adjudicated "
                            "(agentstudy adjudicate).")


def test_below_the_minimum_use_the_study_cannot_answer(tmp_path: Path) -> None:
    _, sentence, _ = _study(tmp_path / "a", [0, 0, 1, 0, 0, 0])
    assert sentence.startswith("This study cannot answer whether doc-bridge helps")
    _, stricter, _ = _study(tmp_path / "b", [3, 2, 4, 0, 3, 0], minimum=0.9)
    assert "requires at least 90%" in stricter


def test_an_older_ledger_without_records_counts_server_calls_by_tool_name(tmp_path: Path) -> None:
    observations = [cli_obs(TASKS[0], "repository-only", 1),
                    cli_obs(TASKS[0], "doc-bridge-mcp", 1, toolCallsByName={SEARCH: 2}, toolCalls=2)]
    for obs in observations:
        obs.pop("treatment", None)
    write(tmp_path / "ledger.json", ledger(observations, mode="pilot"))
    report = json.loads(build_report(tmp_path / "ledger.json", output_format="json"))
    assert report["treatment"]["delivered"] is True and report["treatment"]["serverCalls"] == 2
    assert report["treatment"]["toolDefinitionTokens"] is None
    text = build_report(tmp_path / "ledger.json", output_format="text")
    assert "carry no treatment record" in text
