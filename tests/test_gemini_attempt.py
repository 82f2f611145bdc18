"""One Gemini CLI attempt through the real attempt path: both arms, the offered tools, usage and money equal
to what the scripted server served (per request), the fidelity check against ``tools.core``, its retries."""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from agentstudy.protocol.manifest import DOC_BRIDGE_MCP, REPOSITORY_ONLY
from agentstudy.rehearsal.example_study import build_corpus_repository
from agentstudy.stream.gemini import NO_MCP_TOOL, READ_ONLY_BUILTINS
from agentstudy.transports import gemini as transport
from agentstudy.transports.gemini_args import gemini_settings

from gemini_attempts import run_gemini_attempt


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("gemini-corpus") / "harbor-playbook"
    return root, build_corpus_repository("harbor-playbook", root)


def test_both_arms_complete_and_only_the_treatment_calls_the_server(corpus: tuple[Path, str]) -> None:
    root, pin = corpus
    control, control_server = run_gemini_attempt(root, pin, REPOSITORY_ONLY)
    treatment, treatment_server = run_gemini_attempt(root, pin, DOC_BRIDGE_MCP)
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


def test_tokens_and_usd_equal_what_the_server_served_per_request(corpus: tuple[Path, str]) -> None:
    root, pin = corpus
    result, server = run_gemini_attempt(root, pin, DOC_BRIDGE_MCP)
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


def _answer_as(model: str) -> Any:
    from agentstudy.rehearsal.policy import next_reply

    def policy(body: Mapping[str, Any]) -> Any:
        import dataclasses

        return dataclasses.replace(next_reply(body), model=model)

    return policy


def test_a_refused_request_is_retried_by_the_cli_and_counted(corpus: tuple[Path, str]) -> None:
    root, pin = corpus
    result, server = run_gemini_attempt(root, pin, REPOSITORY_ONLY, faults="1:429,2:503")
    assert [r.status for r in server.requests[:2]] == [429, 503]
    assert result.status == "completed", result.status_reason
    assert result.fields["api_retries"] == 2 and result.fields["api_retry_statuses"] == [429, 503]
