"""The shared post-processing of an attempt (``transports.cli_evaluation``) and the outcome reasons."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from agentstudy.stream.outcome import CLI_STATUSES, Outcome, ProcessFacts, outcome
from agentstudy.transports.cli_args import ArmTools
from agentstudy.transports.cli_evaluation import evaluate_cli_attempt, reported_cost

TRANSCRIPTS = Path(__file__).resolve().parents[2] / "shared" / "transcripts" / "claude-code-2.1.296"
CLEAN = TRANSCRIPTS / "01-read-readme-apikey.stdout.jsonl"
MODEL = "claude-haiku-4-5"
R = ArmTools(("Read", "Grep", "Glob"), ("Read", "Grep", "Glob"), (), None)
EXITED = ProcessFacts(started=True, timed_out=False, truncated=False, exit_code=0)


def events() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CLEAN.read_text(encoding="utf-8").splitlines()]


def encode(items: list[dict[str, Any] | str], end: str = "\n") -> bytes:
    return "".join((i if isinstance(i, str) else json.dumps(i, ensure_ascii=False)) + end for i in items).encode()


def with_result(**changes: Any) -> list[dict[str, Any] | str]:
    items: list[dict[str, Any] | str] = list(events())
    result = dict(items[-1])  # type: ignore[arg-type]
    for key, value in changes.items():
        if value is ...:
            result.pop(key, None)
        else:
            result[key] = value
    items[-1] = result
    return items


def evaluate(data: bytes, process: ProcessFacts = EXITED, model: str = MODEL) -> Any:
    return evaluate_cli_attempt(data, process, model=model, tools=R)


def test_clean_real_transcript_completes() -> None:
    evaluation = evaluate(CLEAN.read_bytes())
    assert evaluation.status == "completed" and evaluation.status_problem is None
    assert evaluation.fields["answer_text"].startswith("The README contains:")
    # The transcript says total_cost_usd 0.0031999999999999997 (a JavaScript sum); read at a double's
    # 15 significant digits it is the computed cost exactly (issue 17 item 8).
    assert b"0.0031999999999999997" in CLEAN.read_bytes()
    assert evaluation.reported_cost_usd == Decimal("0.0032")
    assert evaluation.computed_cost is not None and evaluation.computed_cost.usd == Decimal("0.0032")


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])
def test_only_newline_ends_a_line(separator: str) -> None:
    # The CLI writes these characters unescaped inside JSON strings (JSON.stringify does).
    items = events()
    items[3]["message"]["content"][0]["content"] = f"line one{separator}line two"
    data = encode(list(items))
    assert len(data.decode().splitlines()) > len(items)  # str.splitlines would cut the event
    evaluation = evaluate(data)
    assert evaluation.status == "completed", evaluation.setup_problems


def test_crlf_and_invalid_utf8() -> None:
    assert evaluate(encode(list(events()), end="\r\n")).status == "completed"
    data = CLEAN.read_bytes().replace(b"\n", b"\n\xff\xfe garbage\n", 1)
    evaluation = evaluate(data)
    assert evaluation.status == "invalid-setup"
    assert evaluation.setup_problems == ("line 2 is not JSON",)
    assert evaluation.reported_cost_usd is not None  # the last result is still read


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"modelUsage": ...}, "modelUsage is missing or not an object"),
        ({"modelUsage": []}, "modelUsage is missing or not an object"),
        ({"modelUsage": {MODEL: {"inputTokens": -1}}}, "modelUsage field inputTokens is not"),
        ({"modelUsage": {MODEL: {"inputTokens": 1.5}}}, "modelUsage field inputTokens is not"),
        ({"modelUsage": {MODEL: "lots"}}, f"modelUsage entry for {MODEL} is not an object"),
    ],
)
def test_missing_or_malformed_model_usage_is_invalid_cost(changes: dict[str, Any], problem: str) -> None:
    evaluation = evaluate(encode(with_result(**changes)))
    assert evaluation.status == "invalid-cost"
    assert evaluation.cost_problem is not None and evaluation.cost_problem.startswith(problem)
    assert evaluation.status_problem == evaluation.cost_problem
    assert evaluation.computed_cost is None
    assert evaluation.fields["usage_complete"] is False
    assert evaluation.fields["input_tokens"] is None


def test_unpriced_model_keeps_its_tokens() -> None:
    usage = {"claude-unknown-9": {"inputTokens": 10, "outputTokens": 2}}
    evaluation = evaluate(encode(with_result(modelUsage=usage)))
    assert evaluation.status == "invalid-cost"
    assert evaluation.cost_problem == "model claude-unknown-9 is not in the price table"
    assert evaluation.fields["usage_complete"] is True
    assert (evaluation.fields["input_tokens"], evaluation.fields["output_tokens"]) == (10, 2)


def test_empty_model_usage_is_valid_zero_usage() -> None:
    evaluation = evaluate(encode(with_result(modelUsage={}, total_cost_usd=0)))
    assert evaluation.status == "completed"
    assert evaluation.fields["input_tokens"] == 0 and evaluation.fields["usage_complete"] is True
    assert evaluation.computed_cost is not None and evaluation.computed_cost.usd == 0


@pytest.mark.parametrize("cost", [..., None, -0.01, "0.1", True, float("inf")])
def test_invalid_reported_cost_is_invalid_cost(cost: Any) -> None:
    items = with_result(total_cost_usd=cost)
    data = encode(items) if cost != float("inf") else encode(items).replace(b"Infinity", b"1e999")
    evaluation = evaluate(data)
    assert evaluation.status == "invalid-cost"
    assert evaluation.cost_problem == "total_cost_usd is not a finite number >= 0"
    assert evaluation.reported_cost_usd is None
    assert evaluation.computed_cost is not None  # still recorded, and charged by settlement


def test_reported_cost_values() -> None:
    assert reported_cost({"total_cost_usd": 0}) == Decimal(0)
    assert reported_cost({"total_cost_usd": 0.1}) == Decimal("0.1")
    assert reported_cost({"total_cost_usd": float("nan")}) is None
    assert reported_cost(None) is None


def test_setup_is_judged_before_cost() -> None:
    evaluation = evaluate(encode(with_result(modelUsage=...)), model="claude-haiku-5-5")
    assert evaluation.status == "invalid-setup"
    assert evaluation.setup_problems == ("init model 'claude-haiku-4-5' is not 'claude-haiku-5-5'",)
    assert evaluation.cost_problem is not None  # recorded too


@pytest.mark.parametrize(
    ("process", "status"),
    [
        (ProcessFacts(True, True, False, -9), "timed-out"),
        (ProcessFacts(True, False, True, -9), "failed"),
        (ProcessFacts(False, False, False, None), "failed"),
    ],
)
def test_killed_or_missing_child_has_no_setup_problems(process: ProcessFacts, status: str) -> None:
    cut = b"\n".join(CLEAN.read_bytes().split(b"\n")[:3])[:-20]  # no result, a broken last line
    evaluation = evaluate(cut, process, model="another-model")
    assert evaluation.status == status
    assert evaluation.setup_problems == ()
    assert evaluation.cost_problem == "no result event"


def test_malformed_tool_use_and_denials_are_setup_problems() -> None:
    items = events()
    items[2]["message"]["content"][0].pop("id")
    evaluation = evaluate(encode(list(items)))
    assert evaluation.setup_problems == ("line 3 has a tool_use block without a string id and name",)
    evaluation = evaluate(encode(with_result(permission_denials={"tool_name": "Read"})))
    assert evaluation.setup_problems == ("result permission_denials is not a list",)
    evaluation = evaluate(encode(with_result(permission_denials=["Write"])))
    assert evaluation.setup_problems == ("a permission denial is not an object",)
    evaluation = evaluate(encode(with_result(permission_denials=[{"tool_name": None}])))
    assert evaluation.setup_problems == ("permission denials of ['None']",)


SUCCESS: dict[str, Any] = {"subtype": "success", "is_error": False}


@pytest.mark.parametrize(
    ("process", "setup", "cost", "result", "expected"),
    [
        (ProcessFacts(False, True, True, None), ["x"], "c", SUCCESS,
         Outcome("failed", "the executable could not be started", "the executable could not be started")),
        (ProcessFacts(True, True, True, -9), ["x"], "c", SUCCESS,
         Outcome("timed-out", "the attempt timed out and its process group was killed",
                 "the attempt timed out and its process group was killed")),
        (ProcessFacts(True, True, True, -9, timeout_s=1.5), [], None, None,
         Outcome("timed-out", "the attempt timed out after 1.5 s and its process group was killed",
                 "the attempt timed out after 1.5 s and its process group was killed")),
        (ProcessFacts(True, False, True, 0), ["x"], "c", SUCCESS,
         Outcome("failed", "stdout went past its bound and was truncated",
                 "stdout went past its bound and was truncated")),
        (ProcessFacts(True, False, True, 0, stdout_limit=4 * 1024 * 1024), [], None, SUCCESS,
         Outcome("failed", "stdout went past its 4 MiB bound and was truncated",
                 "stdout went past its 4 MiB bound and was truncated")),
        (EXITED, ["a", "b"], "c", SUCCESS, Outcome("invalid-setup", "a; b", "the setup checks failed (setupProblem)")),
        (ProcessFacts(True, False, False, -9), ["a"], None, None,
         Outcome("invalid-setup", "a",
                 "the setup checks failed (setupProblem); the child was stopped by signal SIGKILL")),
        (EXITED, [], "no modelUsage", SUCCESS,
         Outcome("invalid-cost", "no modelUsage", "a cost is invalid (costProblem)")),
        (EXITED, [], None, None, Outcome("failed", "no result event", "no result event")),
        (ProcessFacts(True, False, False, -15), [], None, None,
         Outcome("failed", "no result event; the child was stopped by signal SIGTERM",
                 "no result event; the child was stopped by signal SIGTERM")),
        (ProcessFacts(True, False, False, 1), [], None, {"subtype": "error_max_budget_usd", "is_error": True},
         Outcome("budget-exceeded", "result subtype 'error_max_budget_usd'", "result subtype 'error_max_budget_usd'")),
        (ProcessFacts(True, False, False, 1), [], None, {"subtype": "success", "is_error": True},
         Outcome("failed", "result is_error is true; exit code 1", "the CLI reported an error; exit code 1")),
        (ProcessFacts(True, False, False, -15), [], None, SUCCESS,
         Outcome("failed", "stopped by signal SIGTERM", "stopped by signal SIGTERM")),
        (EXITED, [], None, {"subtype": "success"},
         Outcome("failed", "result is_error is 'missing', not false", "the result's is_error is not false")),
        (EXITED, [], None, {"subtype": "error_during_execution", "is_error": False},
         Outcome("failed", "result subtype 'error_during_execution' is not 'success'",
                 "the result subtype is not 'success'")),
        (ProcessFacts(True, False, False, None), [], None, SUCCESS,
         Outcome("failed", "exit code None", "exit code None")),
        (EXITED, [], None, SUCCESS, Outcome("completed", None)),
    ],
)
def test_outcome_and_its_reason(
    process: ProcessFacts, setup: list[str], cost: str | None, result: dict[str, Any] | None, expected: Outcome
) -> None:
    decided = outcome(process, setup, cost, result)
    assert decided == expected
    assert decided.status in CLI_STATUSES


def test_malformed_init_lists_are_recorded_as_null() -> None:
    items = events()
    items[0]["tools"] = ["Read", 7]
    items[0]["mcp_servers"] = ["doc-bridge"]
    evaluation = evaluate(encode(list(items)))
    assert evaluation.status == "invalid-setup"
    assert evaluation.setup_problems == (
        "init tools is not a list of names",
        "an MCP server is present in the repository-only arm",
    )
    assert evaluation.fields["tools"] is None and evaluation.fields["mcp_servers"] is None
