"""Shared helpers of the adjudication tests (no tests here): ledgers, requests, a recording policy, fake events.

Ledgers are either real (``run_demo`` or ``run_cli_study`` with the real binary against the
rehearsal server) or written here from the real example study's manifest hashes when a test
needs chosen answers; adjudication reads both the same tolerant way.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from agentstudy.adjudication.demo import NO_MCP_SERVER
from agentstudy.adjudication.ledger_view import MinimalLedgerView, minimal_view, read_ledger_bytes
from agentstudy.adjudication.run import AdjudicationRequest
from agentstudy.io.containment import ContainmentMode
from agentstudy.protocol.manifest import load_manifest
from agentstudy.rehearsal.example_study import ExampleStudy
from agentstudy.rehearsal.policy import ScriptedReply
from agentstudy.transports.cli import CliSettings

MODEL = "claude-haiku-5-5"
PLANTED_KEY = "sk-ant-planted-adjudication-key-0123456789"
BLINDING_TERMS = (
    "repository-only", "doc-bridge-mcp", "doc-bridge", "doc_bridge", "docbridge", "doc.search", "doc_search",
    "doc.get", "doc_get", "doc.write", "doc_write", "handoff.resolve", "handoff_resolve", "mcp__",
)
"""What must never reach the adjudicator: scenario labels, the server's name, its tool names (any form)."""


def load_view(path: Path) -> MinimalLedgerView:
    """Read a minimal ledger as adjudication does."""
    data, document, kind = read_ledger_bytes(path)
    assert kind == "minimal-study"
    return minimal_view(path, data, document)


def observation(
    task_id: str, scenario: str, answer: str, status: str = "completed", repetition: int = 1
) -> dict[str, Any]:
    """A ledger observation with the fields adjudication reads (plus a few a real one has)."""
    return {"taskId": task_id, "scenario": scenario, "repetition": repetition, "transport": "cli",
            "status": status, "answer": answer if status == "completed" else "", "correctness": None,
            "adjudication": "pending", "toolCalls": 2, "chargedUsd": 0.001}


def write_ledger(path: Path, study: ExampleStudy, observations: Sequence[dict[str, Any]],
                 status: str = "awaiting-adjudication") -> Path:
    """Write a minimal-study ledger bound to the example study's manifest (the runner's fields that matter)."""
    loaded = load_manifest(study.manifest_path)
    document = {
        "version": loaded.manifest.version, "protocolHash": loaded.protocol_hash,
        "manifestSha256": loaded.manifest_sha256, "repositories": dict(loaded.manifest.repositories),
        "transport": "cli", "model": MODEL, "rehearsal": True,
        "mcpServer": {"name": "doc-bridge", "command": ["x"], "listedTools": ["doc.get", "doc.search", "doc.write",
                      "handoff.resolve"], "deniedTools": ["mcp__doc-bridge__doc_write"]},
        "adjudication": {"method": "agent", "humanReview": False}, "mode": "pilot",
        "plannedAttempts": len(observations), "observations": list(observations), "status": status,
    }
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return path


def request_for(ledger: Path, study: ExampleStudy, binary: Path, output: Path, *, base_url: str | None = None,
                cap: str = "1", item: str = "0.10", seed: int = 1,
                roots: Mapping[str, Path] | None = None,
                containment: ContainmentMode = "bwrap") -> AdjudicationRequest:
    """An adjudication request over the example study; ``base_url`` set means rehearsal.

    The fake claude keeps its records beside itself, which bubblewrap mounts read-only: its
    callers pass ``containment="restricted"``; the real binary runs under the default bwrap.
    """
    return AdjudicationRequest(
        ledger=load_view(ledger),
        loaded=load_manifest(study.manifest_path),
        roots=dict(study.roots if roots is None else roots),
        output=output,
        settings=CliSettings(binary=binary, model=MODEL, mcp=NO_MCP_SERVER, rehearsal_base_url=base_url,
                             containment=containment),
        cap_usd=Decimal(cap),
        item_budget_usd=Decimal(item),
        expected_cli_version="2.1.296",
        seed=seed,
        parent_env={**os.environ, "ANTHROPIC_API_KEY": PLANTED_KEY},
    )


class RecordingPolicy:
    """Wraps a rehearsal policy and keeps every request body it receives (thread-safe)."""

    def __init__(self, policy: Callable[[Mapping[str, Any]], ScriptedReply]) -> None:
        self._policy = policy
        self._lock = threading.Lock()
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, body: Mapping[str, Any]) -> ScriptedReply:
        with self._lock:
            self.bodies.append(json.loads(json.dumps(body)))
        return self._policy(body)


def text_reply(text: str) -> Callable[[Mapping[str, Any]], ScriptedReply]:
    """A policy that always answers ``text`` and ends the turn."""

    def policy(body: Mapping[str, Any]) -> ScriptedReply:
        return ScriptedReply([{"type": "text", "text": text}], "end_turn",
                             {"input_tokens": 100, "output_tokens": 20, "cache_creation_input_tokens": 0,
                              "cache_read_input_tokens": 0})

    return policy


def fake_adjudicator_events(result_text: str, cost: float = 0.0001) -> list[dict[str, Any]]:
    """Stream-json events of a clean adjudicator attempt (read-only tools, no MCP server) for the fake claude."""
    return [
        {"type": "system", "subtype": "init", "model": MODEL, "tools": ["Glob", "Grep", "Read"], "mcp_servers": []},
        {"type": "assistant", "message": {"id": "msg_fake_adj", "content": [{"type": "text", "text": result_text}],
                                          "usage": {"input_tokens": 1000, "output_tokens": 100}}},
        {"type": "result", "subtype": "success", "is_error": False, "result": result_text, "num_turns": 1,
         "total_cost_usd": cost, "usage": {"input_tokens": 1000, "output_tokens": 100, "cache_creation": {}},
         "modelUsage": {MODEL: {"inputTokens": 1000, "outputTokens": 100, "cacheReadInputTokens": 0,
                                "cacheCreationInputTokens": 0, "costUSD": cost}},
         "permission_denials": []},
    ]


def valid_judgement(count: int, verdict: str = "supported") -> str:
    """A strict adjudication JSON with ``count`` equal verdicts and the rubric that follows."""
    rubric = {"supported": "correct", "missing": "incomplete", "contradicted": "incorrect"}[verdict]
    return json.dumps({"verdicts": [{"proposition": n, "verdict": verdict, "reason": "checked"}
                                    for n in range(1, count + 1)], "rubric": rubric, "reason": "overall"})
