"""Every recorded Claude Code 2.1.296 transcript, judged against the configuration it ran with.

The expectations come from each run's own argv (``meta.json``): ``--model``; the MCP servers
of ``--mcp-config`` (one ``doc-bridge`` server -> the MCP arm, none -> ``repository-only``);
the allowed set ``--allowedTools``; and the init tool set the configuration promises, which
for the seed's own argv is exactly R = {Read, Grep, Glob} or D = R + the three doc-bridge
names: the ``--tools`` built-ins plus the MCP names in ``--allowedTools``, minus
``--disallowedTools``. The exit code is ``rc`` (``"timeout"``: the probe harness killed the
child). Each status and problem below is argued from the seed, not read off the code.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from agentstudy.pricing.budget import reservation_for, settle_attempt
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP, REPOSITORY_ONLY
from agentstudy.stream.outcome import ProcessFacts
from agentstudy.transports.cli_args import ArmTools
from agentstudy.transports.cli_evaluation import evaluate_cli_attempt

TRANSCRIPTS = Path(__file__).resolve().parents[2] / "shared" / "transcripts" / "claude-code-2.1.296"
VARIADIC = ("--tools", "--allowedTools", "--disallowedTools", "--mcp-config")
DOC_WRITE = "mcp__doc-bridge__doc_write"

# name -> (status, fragments): each fragment names one problem; for invalid-setup the setup
# problems are exactly as many as the fragments.
EXPECTED: dict[str, tuple[str, tuple[str, ...]]] = {
    # A clean read-only run: init echoes the model, lists exactly R, no server; the one Read is
    # allowed; subtype success, is_error false, exit 0, modelUsage priced -> "a clean success".
    "01-read-readme-apikey": ("completed", ()),
    "02-read-readme-authtoken-only": ("completed", ()),
    # Not logged in: success subtype but is_error true and exit 1 -> "any other error ... or
    # non-zero exit is failed". modelUsage {} is valid zero usage, so not invalid-cost.
    "03-no-auth-env": ("failed", ("is_error is true", "exit code 1")),
    # --max-turns 1: a non-success subtype and exit 1 -> failed.
    "04-max-turns-1": ("failed", ("error_max_turns", "exit code 1")),
    # Bash is called though only R is allowed -> "every tool call inside the allowed set".
    "05-bash-not-in-tools": ("invalid-setup", ("outside the allowed set ['Bash']",)),
    "06-bash-in-tools-but-disallowed": ("invalid-setup", ("outside the allowed set ['Bash']",)),
    # --tools Read,Write (nothing disallowed) promises {Read, Write}, which init lists; Write is
    # called outside the allowed {Read} and denied -> a denial of a non-read tool is invalid.
    "07-write-not-allowed-default-mode": (
        "invalid-setup",
        ("outside the allowed set ['Write']", "permission denials of ['Write']"),
    ),
    "08-write-not-allowed-dontAsk": (
        "invalid-setup",
        ("outside the allowed set ['Write']", "permission denials of ['Write']"),
    ),
    # Setup holds (the one Read is allowed), both costs are valid, subtype error_max_budget_usd
    # -> budget-exceeded (setup and cost come first and are clean).
    "10-budget-exceeded": ("budget-exceeded", ("error_max_budget_usd",)),
    # Killed by the harness after 120 s: a timeout is timed-out, and the missing result of a
    # killed child is no extra setup problem (ARCHITECTURE decision 2).
    "11-http500-default-retries": ("timed-out", ("timed out",)),
    # One connected doc-bridge server but no MCP name allowed: the promised set is R, init adds
    # all four MCP tools -> "exact tool set, nothing extra".
    "12-mcp-list-tools": (
        "invalid-setup",
        (
            "unexpected tools ['mcp__doc-bridge__doc_get', 'mcp__doc-bridge__doc_search', "
            "'mcp__doc-bridge__doc_write', 'mcp__doc-bridge__handoff_resolve']",
        ),
    ),
    # doc_write is not deny-listed, so init lists it (extra); Bash and doc_write are called
    # outside the allowed set; doc_write is denied (a refused doc-bridge call is invalid).
    "13-mcp-calls-default-mode": (
        "invalid-setup",
        (
            f"unexpected tools ['{DOC_WRITE}']",
            f"outside the allowed set ['Bash', '{DOC_WRITE}']",
            f"permission denials of ['{DOC_WRITE}']",
        ),
    ),
    # API 500 after one retry: success subtype, is_error true, exit 1 -> failed.
    "14-http500-max-retries-1": ("failed", ("is_error is true", "exit code 1")),
    # The tool set and server are exact (doc_write deny-listed), but Bash and doc_write are
    # called: outside the allowed set. They are unavailable, so "No such tool" errors, no
    # denial; the doc-bridge calls did not all error, so the treatment is not lost.
    "15-mcp-calls-dontAsk": ("invalid-setup", (f"outside the allowed set ['Bash', '{DOC_WRITE}']",)),
    # API 400: is_error true, exit 1 -> failed.
    "17-http400-invalid-request": ("failed", ("is_error is true", "exit code 1")),
    # 401 retried until the harness killed it -> timed-out.
    "20-http401": ("timed-out", ("timed out",)),
    "21-http500-max-retries-0": ("failed", ("is_error is true", "exit code 1")),
    # The prompt placement differs (after -p, or on stdin); the configuration is the clean R
    # arm and the run is clean -> completed.
    "26-prompt-first-then-variadic-flags": ("completed", ()),
    "27-prompt-via-stdin": ("completed", ()),
    "28-tmpdir-redirect": ("completed", ()),
    "32-parallel-1": ("completed", ()),
    # --tools Read, --allowedTools Read, one doc-bridge server: init adds four MCP tools
    # (extra); doc_search is called outside {Read}, denied, and it was the only doc-bridge
    # call and it errored -> the treatment was lost.
    "35-mcp-readonly-tool-not-in-allowedTools": (
        "invalid-setup",
        (
            "unexpected tools ['mcp__doc-bridge__doc_get', 'mcp__doc-bridge__doc_search', "
            "'mcp__doc-bridge__doc_write', 'mcp__doc-bridge__handoff_resolve']",
            "outside the allowed set ['mcp__doc-bridge__doc_search']",
            "permission denials of ['mcp__doc-bridge__doc_search']",
            "treatment lost",
        ),
    ),
    # Same configuration and calls as 13 (plain-text MCP results) -> the same three problems.
    "37-mcp-calls-default-mode-plain-text-results": (
        "invalid-setup",
        (
            f"unexpected tools ['{DOC_WRITE}']",
            f"outside the allowed set ['Bash', '{DOC_WRITE}']",
            f"permission denials of ['{DOC_WRITE}']",
        ),
    ),
    # Empty stdout (the CLI refused its flags), exit 1: not exactly one result and no init ->
    # setup problems, which come before the non-zero exit.
    "38-stream-json-without-verbose": ("invalid-setup", ("0 result events", "no init event")),
    "39-bypassPermissions-as-root": ("invalid-setup", ("0 result events", "no init event")),
    # bypassPermissions with IS_SANDBOX: Write is unavailable ("No such tool") but was called,
    # outside the allowed set R -> invalid-setup.
    "40-bypassPermissions-as-root-IS_SANDBOX": ("invalid-setup", ("outside the allowed set ['Write']",)),
    # The fake answered from rules; the run itself is the clean R arm -> completed.
    "42-rules-based-scenario": ("completed", ()),
}


def flag_values(argv: list[str], flag: str) -> list[str]:
    """Every value given to ``flag``: variadic flags take tokens up to the next ``-`` token."""
    values: list[str] = []
    for index, token in enumerate(argv):
        if token != flag:
            continue
        for value in argv[index + 1 :]:
            if value.startswith("-"):
                break
            values.append(value)
            if flag not in VARIADIC:
                break
    return values


def names(argv: list[str], flag: str) -> list[str]:
    return [name for value in flag_values(argv, flag) for name in value.split(",") if name]


def configuration(argv: list[str]) -> tuple[str, str, ArmTools]:
    """``(scenario, model, tool policy)`` the run was configured with."""
    [model] = flag_values(argv, "--model")
    servers = [s for config in flag_values(argv, "--mcp-config") for s in json.loads(config)["mcpServers"]]
    assert servers in ([], ["doc-bridge"]), servers
    scenario = DOC_BRIDGE_MCP if servers else REPOSITORY_ONLY
    allowed = names(argv, "--allowedTools")
    disallowed = set(names(argv, "--disallowedTools"))
    assert flag_values(argv, "--tools"), "every probe run names its --tools"
    promised = [*names(argv, "--tools"), *(a for a in allowed if a.startswith("mcp__"))]
    expected = tuple(t for t in promised if t not in disallowed)
    return scenario, model, ArmTools(expected, tuple(allowed), (), "doc-bridge" if servers else None)


def judge(name: str) -> tuple[dict[str, Any], str, Any, Decimal]:
    meta = json.loads((TRANSCRIPTS / f"{name}.meta.json").read_text(encoding="utf-8"))
    argv = meta["argv"][1:]
    scenario, model, tools = configuration(argv)
    rc = meta["rc"]
    timed_out = rc == "timeout"
    process = ProcessFacts(started=True, timed_out=timed_out, truncated=False, exit_code=None if timed_out else rc)
    stdout = (TRANSCRIPTS / f"{name}.stdout.jsonl").read_bytes()
    evaluation = evaluate_cli_attempt(stdout, process, model=model, tools=tools)
    reservation = reservation_for(Decimal(next(iter(flag_values(argv, "--max-budget-usd")), "0.10")))
    computed = evaluation.computed_cost.usd if evaluation.computed_cost else None
    status, charged = settle_attempt(evaluation.status, reservation, evaluation.reported_cost_usd, computed)
    return {"status": status, "problem": evaluation.status_problem}, scenario, evaluation, charged


def test_the_table_covers_every_transcript() -> None:
    recorded = sorted(p.name.removesuffix(".meta.json") for p in TRANSCRIPTS.glob("*.meta.json"))
    assert len(recorded) >= 25
    assert recorded == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recorded_transcript_status_and_problem(name: str) -> None:
    status, fragments = EXPECTED[name]
    outcome, _, evaluation, _ = judge(name)
    assert outcome["status"] == status, outcome["problem"]
    if status == "completed":
        assert outcome["problem"] is None
        assert evaluation.setup_problems == () and evaluation.cost_problem is None
        return
    for fragment in fragments:
        assert fragment in str(outcome["problem"]), (fragment, outcome["problem"])
    if status == "invalid-setup":
        assert len(evaluation.setup_problems) == len(fragments), evaluation.setup_problems
    else:
        assert evaluation.setup_problems == ()


def test_charges_follow_the_seed() -> None:
    # A completed attempt is charged the larger cost: 2700 in x 1 + 100 out x 5 per million.
    assert judge("01-read-readme-apikey")[3] == Decimal("0.0032")
    # error_max_budget_usd: max(reservation, 10 USD reported, 10 USD computed).
    assert judge("10-budget-exceeded")[3] == Decimal("10")
    # A timeout without any result is charged its reservation.
    assert judge("11-http500-default-retries")[3] == Decimal("0.10")
    # An invalid setup is charged max(reservation, valid costs): 0.00925 < 0.10.
    assert judge("13-mcp-calls-default-mode")[3] == Decimal("0.10")


def test_counts_of_a_recorded_mcp_run() -> None:
    _, scenario, evaluation, _ = judge("15-mcp-calls-dontAsk")
    assert scenario == DOC_BRIDGE_MCP
    fields = evaluation.fields
    # Four distinct tool_use ids in seven assistant events; Bash and doc_write got is_error results.
    assert fields["tool_calls"] == 4
    assert fields["tool_calls_by_name"] == {
        "mcp__doc-bridge__doc_search": 1,
        "mcp__doc-bridge__handoff_resolve": 1,
        "Bash": 1,
        DOC_WRITE: 1,
    }
    assert fields["tool_errors_by_name"] == {"Bash": 1, DOC_WRITE: 1}
    assert fields["permission_denials"] == []
    assert (fields["input_tokens"], fields["output_tokens"]) == (8600, 130)
    assert fields["num_turns"] == 5 and fields["usage_complete"] is True
    assert evaluation.computed_cost is not None
    assert evaluation.computed_cost.basis["largestPromptTokens"] == 2300  # per message id, not summed


def test_budget_exceeded_tokens_come_from_model_usage() -> None:
    # The result's usage is all zeros after error_max_budget_usd; modelUsage has the totals.
    _, _, evaluation, _ = judge("10-budget-exceeded")
    assert (evaluation.fields["input_tokens"], evaluation.fields["output_tokens"]) == (5_000_000, 1_000_000)
    assert evaluation.reported_cost_usd == Decimal("10")
    assert evaluation.computed_cost is not None and evaluation.computed_cost.usd == Decimal("10")


def test_api_error_has_complete_zero_usage() -> None:
    # modelUsage {} before any billing: valid zero usage, both costs 0, no cost problem.
    _, _, evaluation, _ = judge("21-http500-max-retries-0")
    assert evaluation.cost_problem is None
    assert evaluation.fields["usage_complete"] is True
    assert evaluation.fields["input_tokens"] == 0
    assert evaluation.reported_cost_usd == Decimal("0")


def test_timed_out_run_has_no_usage() -> None:
    _, _, evaluation, _ = judge("20-http401")
    assert evaluation.fields["usage_complete"] is False
    assert evaluation.fields["input_tokens"] is None
    assert evaluation.reported_cost_usd is None and evaluation.computed_cost is None
