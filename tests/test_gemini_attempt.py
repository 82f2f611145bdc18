"""One Gemini CLI attempt through the real attempt path: both arms, the offered tools, usage and money equal
to what the scripted server served (per request), the fidelity check against ``tools.core``, its retries."""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from agentstudy.pricing.budget import settle_attempt
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP, REPOSITORY_ONLY
from agentstudy.rehearsal.example_study import build_corpus_repository
from agentstudy.rehearsal.gemini_server import GeminiRehearsalServer
from agentstudy.rehearsal.policy import ScriptedReply, next_reply
from agentstudy.stream.gemini import NO_MCP_TOOL, READ_ONLY_BUILTINS
from agentstudy.transports import gemini as transport
from agentstudy.transports.cli import CliAttemptResult
from agentstudy.transports.gemini_args import gemini_settings

from gemini_attempts import run_gemini_attempt


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("gemini-corpus") / "harbor-playbook"
    return root, build_corpus_repository("harbor-playbook", root)


Attempt = tuple[CliAttemptResult, GeminiRehearsalServer]


def _other_model(body: Mapping[str, Any]) -> ScriptedReply:
    """A fallback: the server answers as another model (``gemini-2.5-flash``) with the scripted reply."""
    return dataclasses.replace(next_reply(body), model="gemini-2.5-flash")


@pytest.fixture(scope="module")
def arms(corpus: tuple[Path, str]) -> tuple[Attempt, Attempt]:
    """One control attempt (its server answering as another model) and one treatment attempt, run once for the
    module: the tests below only read them. The answering model changes nothing the arm tests assert."""
    root, pin = corpus
    return (run_gemini_attempt(root, pin, REPOSITORY_ONLY, policy=_other_model),
            run_gemini_attempt(root, pin, DOC_BRIDGE_MCP))


def test_both_arms_complete_and_only_the_treatment_calls_the_server(arms: tuple[Attempt, Attempt]) -> None:
    (control, control_server), (treatment, treatment_server) = arms
    assert (control.status, treatment.status) == ("completed", "completed"), (control.status_reason,
                                                                              treatment.status_reason)
    assert set(control.fields["tools"]) <= set(READ_ONLY_BUILTINS)  # the policy rules: no write, shell or web
    assert not any(name.startswith("mcp") for name in control.fields["tool_calls_by_name"])
    assert control.fields["treatment"]["serverOffered"] is False
    offered = treatment.fields["treatment"]
    assert offered["serverOffered"] is True and offered["evidence"] == "request"
    assert offered["offeredServerTools"] == ["doc.search", "doc.get", "handoff.resolve"]
    assert offered["serverCalls"] >= 1 and offered["answeringModels"] == ["rehearsal-scripted"]
    # the scripted server saw the same: the MCP tools in every treatment request, in no control request
    assert all(any(n.startswith("mcp_doc-bridge_") for n in tools) for tools in treatment_server.offered_tools)
    assert not any(n.startswith("mcp_") for tools in control_server.offered_tools for n in tools)
    # the built-in tool set is the same in both arms
    assert offered["builtinToolsSha256"] == control.fields["treatment"]["builtinToolsSha256"]
    assert re.search(r"\(\S+\.md:\d+\)", treatment.fields["answer_text"])  # the careful agent cites path:line


def test_tokens_and_usd_equal_what_the_server_served_per_request(arms: tuple[Attempt, Attempt]) -> None:
    _, (result, server) = arms
    served = [r for r in server.requests if r.status == 200]
    assert result.status == "completed" and result.computed_cost is not None
    assert result.fields["input_tokens"] == sum(r.served_input_tokens for r in served)
    assert result.fields["output_tokens"] == sum(r.served_output_tokens for r in served)
    assert result.computed_cost.basis["requests"] == len(served) == result.fields["num_turns"]
    # the nominal rehearsal rates (USD per million): 0.10 input, 0.50 output, each request on its own
    expected = sum((Decimal(r.served_input_tokens) * Decimal("0.10") + Decimal(r.served_output_tokens)
                    * Decimal("0.50")) / Decimal(1_000_000) for r in served)
    assert result.computed_cost.usd == expected
    assert result.fields["usage_complete"] is True and result.fields["api_retries"] == 0


def test_an_injected_tools_core_ends_invalid_setup_never_completed(corpus: tuple[Path, str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # The upstream bug: any tools.core value silently drops every MCP tool. A settings file carrying one must
    # not give a "completed" treatment attempt with zero server calls.
    def with_core(**kwargs: Any) -> dict[str, Any]:
        settings: dict[str, Any] = gemini_settings(**kwargs)
        settings["tools"] = {"core": list(READ_ONLY_BUILTINS)}
        return settings

    monkeypatch.setattr(transport, "gemini_settings", with_core)
    result, server = run_gemini_attempt(root=corpus[0], pin=corpus[1], scenario=DOC_BRIDGE_MCP)
    assert not any(n.startswith("mcp_") for tools in server.offered_tools for n in tools)  # the bug, live
    assert result.status == "invalid-setup"
    assert NO_MCP_TOOL in result.setup_problems
    assert result.fields["treatment"]["serverCalls"] == 0 and result.fields["treatment"]["serverOffered"] is False


def test_a_model_answering_for_the_pinned_one_is_recorded(arms: tuple[Attempt, Attempt]) -> None:
    # A fallback: the server answers as another model. Gemini CLI's stats name the answering model, its session
    # file the requested one; the attempt records the answering model (shown per arm in the report).
    (result, _), _ = arms
    assert result.status == "completed", result.status_reason
    assert result.fields["treatment"]["answeringModels"] == ["gemini-2.5-flash"]
    assert result.fields["model"] == "rehearsal-scripted"


def test_a_persistent_429_fails_after_the_clis_own_retries(corpus: tuple[Path, str]) -> None:
    # 0.61.0 with an API key does not fall back to another model (that path is its interactive OAuth one): a
    # persistent 429 fails the attempt after general.maxAttempts requests, each refusal counted.
    result, server = run_gemini_attempt(corpus[0], corpus[1], REPOSITORY_ONLY, faults="*:429", max_retries=1)
    assert [r.status for r in server.requests] == [429, 429]
    assert result.status == "failed" and result.fields["usage_complete"] is False
    # Counted exactly from the lines its retry loop prints on stderr (its telemetry file, flushed on a timer,
    # can miss them when the CLI exits at once after its last refusal): every refusal but the last, which ended
    # the attempt, was sent again.
    refused = [r.status for r in server.requests if r.fault is not None]
    assert result.fields["api_retries"] == len(refused) - 1 == 1
    assert result.fields["api_retry_statuses"] == refused[:-1] == [429]
    assert result.fields["api_error_status"] == 429, "the refusal that ended it (failureKind rate-limited)"
    assert result.fields["treatment"]["answeringModels"] == ["rehearsal-scripted"]


def test_a_refused_request_is_retried_by_the_cli_and_counted(corpus: tuple[Path, str]) -> None:
    root, pin = corpus
    result, server = run_gemini_attempt(root, pin, REPOSITORY_ONLY, faults="1:429,2:503,3:reset,4:sse-error",
                                        max_retries=4)
    assert [(r.status, r.fault) for r in server.requests[:4]] == [(429, "429"), (503, "503"), (0, "reset"),
                                                                  (200, "sse-error")]
    assert result.status == "completed", result.status_reason
    # a reset and a stream broken after its HTTP 200 have no status: 0
    assert result.fields["api_retries"] == 4 and result.fields["api_retry_statuses"] == [429, 503, 0, 0]


def test_the_running_limit_stops_an_attempt_whose_session_usage_passes_it(corpus: tuple[Path, str]) -> None:
    # The scripted model's first answer costs 0.10 USD of input at the nominal rehearsal rate (1,000,000 tokens at
    # 0.10 USD per million), twice the 0.05 USD limit; later answers come slowly. The session file gains the first
    # request's tokens while the attempt runs, so the watcher stops the child before the attempt can finish.
    answered: list[int] = []

    def dear_then_slow(body: Mapping[str, Any]) -> ScriptedReply:
        answered.append(len(answered) + 1)
        reply = next_reply(body)
        if len(answered) == 1:
            return dataclasses.replace(reply, usage={**reply.usage, "input_tokens": 1_000_000})
        time.sleep(5)
        return reply

    result, _ = run_gemini_attempt(corpus[0], corpus[1], REPOSITORY_ONLY, policy=dear_then_slow,
                                   reservation_usd=Decimal("0.05"))
    assert result.status == "budget-exceeded", result.status_reason
    assert "passed the per-attempt limit of 0.05 USD" in (result.status_reason or "")
    assert result.fields["cli_subtype"] is None, "stopped before its result event"
    assert result.computed_cost is not None and result.computed_cost.usd >= Decimal("0.10")
    assert result.computed_cost.basis["runningPeakUsd"] >= 0.10
    status, charged = settle_attempt(result.status, Decimal("0.05"), result.reported_cost_usd,
                                     result.computed_cost.usd)
    assert status == "budget-exceeded" and charged == result.computed_cost.usd  # charged what ran, not the limit
