"""The http agent's tool set and loop details with real parts (issue 7; digest 2.1 step 9, 2.3).

A real example corpus, the bundled MCP server over the official SDK, the rehearsal server on
127.0.0.1 and the real Messages API client.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from agentstudy.io.git import head
from agentstudy.io.messages_api import MessagesClient
from agentstudy.io.server_corpus import ServerCorpora
from agentstudy.pricing.budget import Budget
from agentstudy.pricing.http import CallReservation, CallSettlement, UpperPrices
from agentstudy.protocol.mcp_spec import McpServerSpec, ServerPaths
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.rehearsal.policy import ScriptedReply
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER
from agentstudy.transports.http import (
    UNKNOWN_TOOL,
    HttpSettings,
    agent_loop,
    run_http_attempt,
)
from agentstudy.transports.http_tools import AgentTools, ToolSetupError, agent_tools
from agentstudy.transports.repo_tools import TOOL_ERROR, RepositoryTools, ToolResult

PRICES = UpperPrices(Decimal("0.50"), Decimal("2.50"))
USAGE = {"input_tokens": 50, "output_tokens": 5}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    study: ExampleStudy = build_example_study(tmp_path_factory.mktemp("tools") / "study")
    root = study.roots["lantern-cache"]
    return root, head(root)


@pytest.fixture(scope="module")
def snapshot(corpus: tuple[Path, str]) -> Iterator[ServerPaths]:
    """The MCP server's read-only snapshot of the corpus, as a study hands it over."""
    with ServerCorpora(DEFAULT_MCP_SERVER, {"lantern-cache": corpus}) as corpora:
        yield corpora.paths("lantern-cache")


class Calls:
    """A call ledger that only counts (the runner's persisting one is tested with the runner)."""

    def __init__(self) -> None:
        self.reserved_count = 0
        self.settled_count = 0

    def reserved(self, budget: Budget, reservation: CallReservation) -> None:
        self.reserved_count += 1

    def settled(self, budget: Budget, settlement: CallSettlement) -> None:
        self.settled_count += 1


def test_the_mcp_arm_adds_the_read_only_tools_under_underscore_names(
    corpus: tuple[Path, str], snapshot: ServerPaths
) -> None:
    root, pin = corpus
    with agent_tools("repository-only", root, pin, DEFAULT_MCP_SERVER) as tools:
        assert tools.names == ["repo_list", "repo_read", "repo_search"]
    with agent_tools("doc-bridge-mcp", root, pin, DEFAULT_MCP_SERVER, snapshot) as tools:
        assert tools.names == ["repo_list", "repo_read", "repo_search", "doc_search", "doc_get", "handoff_resolve"]
        definitions = {d["name"]: d for d in tools.definitions}
        assert all(set(d) == {"name", "description", "input_schema"} for d in definitions.values())
        assert definitions["doc_get"]["input_schema"]["required"] == ["path"]
        assert "Read lines" in definitions["doc_get"]["description"]
        assert tools.mcp_name("doc_search") == "doc.search" and tools.mcp_name("repo_read") is None
        found = tools.call("doc_search", {"query": "monotonic"})
        assert not found.is_error and "monotonic" in json.loads(found.content)
        assert tools.call("doc_get", {"path": "no/such.md"}).is_error
        for name, arguments in [("doc.search", {"query": "x"}), ("doc_write", {"path": "a", "text": "b"}),
                                ("doc_search", "not an object")]:
            assert tools.call(name, arguments) == ToolResult(TOOL_ERROR, True)
    assert tools.call("doc_search", {"query": "monotonic"}) == ToolResult(TOOL_ERROR, True), "server closed"


def test_a_missing_read_only_tool_or_a_dead_server_is_a_setup_error(
    corpus: tuple[Path, str], snapshot: ServerPaths
) -> None:
    root, pin = corpus
    missing = McpServerSpec(name="doc-bridge", command=DEFAULT_MCP_SERVER.command,
                            read_only_tools=("doc.search", "doc.nothing"),
                            sandbox_binds=DEFAULT_MCP_SERVER.sandbox_binds)
    with pytest.raises(ToolSetupError, match=r"names doc\.nothing, which the server does not list"), \
            agent_tools("doc-bridge-mcp", root, pin, missing, snapshot):
        pass
    with pytest.raises(ToolSetupError, match="no corpus snapshot"), \
            agent_tools("doc-bridge-mcp", root, pin, DEFAULT_MCP_SERVER):
        pass
    dead = McpServerSpec(name="doc-bridge", command=(sys.executable, "-c", "raise SystemExit(3)"))
    calls = Calls()
    settings = HttpSettings(model="m", prices=PRICES, mcp=dead)
    with RehearsalServer() as server, MessagesClient("dummy", server.base_url) as client:
        result = run_http_attempt(settings, sender=client, scenario="doc-bridge-mcp", root=root, pin=pin,
                                  prompt="q", budget=Budget(cap=Decimal(1)), ledger=calls, server=snapshot)
        assert server.requests == ()
    assert (result.status, result.status_reason) == ("failed", "the MCP server did not start")
    assert calls.reserved_count == 0 and result.budget.spent == 0


def test_bad_calls_get_the_fixed_error_and_are_counted(corpus: tuple[Path, str]) -> None:
    root, pin = corpus
    bodies: list[Mapping[str, Any]] = []
    first: list[ScriptedReply] = []
    long_term = "line"

    def policy(body: Mapping[str, Any]) -> ScriptedReply:
        bodies.append(body)
        if len(bodies) > 1:
            return ScriptedReply([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "end_turn", USAGE)
        calls = [("repo_read", {"path": ".env.example"}), ("bash", {"command": "cat /etc/passwd"}),
                 ("repo_search", {"term": ""}), ("repo_list", {}), ("repo_search", {"term": long_term})]
        first.append(ScriptedReply([{"type": "tool_use", "id": f"toolu_{i}", "name": n, "input": a}
                                    for i, (n, a) in enumerate(calls)], "tool_use", USAGE))
        return first[0]

    with RehearsalServer(policy=policy) as server, MessagesClient("dummy", server.base_url) as client:
        result = agent_loop(sender=client, tools=AgentTools(RepositoryTools(root, pin)), model="m", prompt="q",
                            prices=PRICES, budget=Budget(cap=Decimal(1)), ledger=Calls())
    assert result.status == "completed" and result.answer == "a\nb"
    assert result.tool_calls == 5
    assert result.tool_calls_by_name == {"repo_read": 1, UNKNOWN_TOOL: 1, "repo_search": 2, "repo_list": 1}
    assert result.tool_errors_by_name == {"repo_read": 1, UNKNOWN_TOOL: 1, "repo_search": 1}
    results = bodies[1]["messages"][-1]["content"]
    assert [r["tool_use_id"] for r in results] == [f"toolu_{i}" for i in range(5)]
    assert [r["content"] for r in results[:3]] == [TOOL_ERROR] * 3 and all(r["is_error"] for r in results[:3])
    assert json.loads(results[3]["content"])[0] == "README.md" and not results[3]["is_error"]
    assert 0 < len(json.loads(results[4]["content"])["matches"]) <= 30
    assert bodies[1]["messages"][1] == {"role": "assistant", "content": first[0].content}, "the full content"


def test_the_deadline_is_checked_before_each_turn(corpus: tuple[Path, str]) -> None:
    root, pin = corpus
    now = [0.0]

    class SlowTools(AgentTools):
        def call(self, name: str, arguments: Any) -> ToolResult:
            now[0] += 301.0  # one tool call uses up the five minutes
            return super().call(name, arguments)

    def policy(body: Mapping[str, Any]) -> ScriptedReply:
        return ScriptedReply([{"type": "tool_use", "id": "toolu_1", "name": "repo_list", "input": {}}],
                             "tool_use", USAGE)

    calls = Calls()
    with RehearsalServer(policy=policy) as server, MessagesClient("dummy", server.base_url) as client:
        result = agent_loop(sender=client, tools=SlowTools(RepositoryTools(root, pin)), model="m", prompt="q",
                            prices=PRICES, budget=Budget(cap=Decimal(1)), ledger=calls, clock=lambda: now[0])
        requests = server.requests
    assert (result.status, result.turns, result.tool_calls, len(requests)) == ("timed-out", 1, 1, 1)
    assert result.status_reason == "the five-minute deadline passed before turn 2"
    assert calls.reserved_count == calls.settled_count == 1 and result.usage_complete
