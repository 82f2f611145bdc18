"""Codex gets a bounded retry budget too (issue 33 item 3): the real pinned ``codex`` against the scripted
Responses server refusing its first request with a 429, then a 500 on every request."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from agentstudy.protocol.fault_schedule import parse_fault_schedule
from agentstudy.rehearsal.codex_run import run_codex_rehearsal
from agentstudy.stream.codex import codex_retries, parse_codex_stream
from agentstudy.transports.codex_args import RehearsalProvider, config_toml

ROOT = Path(__file__).resolve().parents[1]
CODEX = ROOT / ".tools" / "codex" / "node_modules" / ".bin" / "codex"
SCRATCH = ROOT / ".codex-scratch" / "tests"  # not under /tmp: see rehearsal.codex_run
PROMPT = "What does the frobnicate flag enable? Cite the file and line."
FILES = {"README.md": "# Widgets\n\nSome intro text.\n\nThe frobnicate flag enables the widget cache.\n"}


def test_the_provider_entry_bounds_codex_retries() -> None:
    provider = RehearsalProvider("http://127.0.0.1:1/v1", "AGENTSTUDY_REHEARSAL_KEY", max_retries=3)
    entry = tomllib.loads(config_toml(model="m", provider=provider, mcp=None))["model_providers"]["rehearsal"]
    assert (entry["request_max_retries"], entry["stream_max_retries"]) == (3, 3)
    plain = RehearsalProvider("http://127.0.0.1:1/v1", "AGENTSTUDY_REHEARSAL_KEY")
    assert "request_max_retries" not in tomllib.loads(config_toml(model="m", provider=plain, mcp=None))[
        "model_providers"]["rehearsal"]


def test_real_codex_rides_out_a_429_and_stops_after_its_budget() -> None:
    parent = dict(os.environ)
    run = run_codex_rehearsal(CODEX, scratch=SCRATCH, files=FILES, prompt=PROMPT, parent_env=parent,
                              faults=parse_fault_schedule("1:429/ra=0"), max_retries=2)
    assert run.exit_code == 0, run.stderr[-2000:]
    assert [r.status for r in run.requests][:2] == [429, 200]
    stream = parse_codex_stream(run.stdout.splitlines())
    assert stream.grammar_problems == []
    assert codex_retries(stream.notices) == [429]  # "Reconnecting... 1/2 (… last status: 429 …)"
    failing = run_codex_rehearsal(CODEX, scratch=SCRATCH, files=FILES, prompt=PROMPT, parent_env=parent,
                                  faults=parse_fault_schedule("*:500"), max_retries=1, timeout_s=120)
    assert failing.exit_code != 0
    # bounded: (1 + request retries) x (1 + stream retries) requests, each layer at most max_retries
    assert [r.status for r in failing.requests] == [500] * 4
    # "Reconnecting... 1/1 (We're currently experiencing high demand, …)": Codex's words for an HTTP 500
    assert codex_retries(parse_codex_stream(failing.stdout.splitlines()).notices) == [500]


def test_codex_retry_notices_are_counted_with_the_status_they_name() -> None:
    assert codex_retries(["Reconnecting... 1/5 (exceeded retry limit, last status: 529 Overloaded)",
                          "Reconnecting... 2/5 (stream disconnected)", "Reconnecting... 3/5 (something new)",
                          "Skill descriptions were shortened"]) == [529, "network", "unknown"]
