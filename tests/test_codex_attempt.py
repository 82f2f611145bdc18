"""One Codex attempt through the real attempt path (issue 21 items 2 and 4): symmetry, both arms, pricing, the
running per-attempt limit."""

from __future__ import annotations

import json
import tomllib
from decimal import Decimal
from pathlib import Path

import pytest

from agentstudy.agents.registry import agent_cli
from agentstudy.io.server_corpus import ServerCorpora
from agentstudy.pricing.budget import settle_attempt
from agentstudy.pricing.cost import CostProblem
from agentstudy.pricing.openai import OpenAiUsage, openai_cost
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP, REPOSITORY_ONLY
from agentstudy.rehearsal.example_study import build_corpus_repository
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER
from agentstudy.transports.cli import CliAttemptBody, CliSettings
from agentstudy.transports.cli_args import arm_tools
from agentstudy.transports.codex import UsageWatch, codex_config, codex_launch

from codex_attempts import HOMES, MODEL, PROMPT, codex_binary, run_codex_attempt


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("codex-corpus") / "harbor-playbook"
    return root, build_corpus_repository("harbor-playbook", root)


def _body(scenario: str, server: object = None, *, settings: CliSettings | None = None) -> CliAttemptBody:
    settings = settings or CliSettings(binary=codex_binary(), model=MODEL, mcp=DEFAULT_MCP_SERVER,
                                       rehearsal_base_url="http://127.0.0.1:9/v1", agent="codex")
    return CliAttemptBody(settings, scenario, arm_tools(scenario, DEFAULT_MCP_SERVER, ()), PROMPT, Decimal("0.10"),
                          server, {}, agent=agent_cli(settings.agent))  # type: ignore[arg-type]


def test_the_arms_argv_env_and_config_differ_only_by_the_mcp_table(corpus: tuple[Path, str], tmp_path: Path) -> None:
    root, pin = corpus
    with ServerCorpora(DEFAULT_MCP_SERVER, {"c": (root, pin)}) as corpora:
        paths = corpora.paths("c")
        control, treatment = _body(REPOSITORY_ONLY), _body(DOC_BRIDGE_MCP, paths)
        control_toml, treatment_toml = tomllib.loads(codex_config(control)), tomllib.loads(codex_config(treatment))
        table = treatment_toml.pop("mcp_servers")
        assert control_toml == treatment_toml
        assert "mcp_servers" not in control_toml
        assert table == {"doc-bridge": {"command": DEFAULT_MCP_SERVER.command[0],
                                        "args": DEFAULT_MCP_SERVER.argv(paths)[1:], "required": True,
                                        "startup_timeout_sec": 20,
                                        "enabled_tools": list(DEFAULT_MCP_SERVER.read_only_tools),
                                        "tools": {tool: {"approval_mode": "approve"}  # each enabled tool approved
                                                  for tool in DEFAULT_MCP_SERVER.read_only_tools}}}
        assert treatment_toml["model_providers"]["rehearsal"]["env_key"] == "AGENTSTUDY_REHEARSAL_KEY"
        assert not any(feature for feature in treatment_toml["features"].values())
        launches = []
        for name, body in (("control", control), ("treatment", treatment)):
            scratch = tmp_path / name
            scratch.mkdir()
            launch = codex_launch(body, tmp_path, scratch, {"PATH": "/usr/bin:/bin", **dict.fromkeys(
                ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"), "sk-SENTINEL")})
            launches.append((launch, scratch))
    (c_launch, c_scratch), (t_launch, t_scratch) = launches
    c_cmd = c_launch.argv[c_launch.argv.index("--") + 1:]
    t_cmd = t_launch.argv[t_launch.argv.index("--") + 1:]
    assert c_cmd == t_cmd
    assert c_cmd[1:9] == ["exec", "--json", "--color", "never", "-s", "read-only", "--ephemeral", "--ignore-rules"]
    assert "--ignore-user-config" not in c_cmd  # it would skip the generated config.toml (docs/codex.md)
    assert {k: v.replace(str(c_scratch), "S") for k, v in c_launch.env.items()} == \
        {k: v.replace(str(t_scratch), "S") for k, v in t_launch.env.items()}
    assert "sk-SENTINEL" not in json.dumps(c_launch.env) and "OPENAI_API_KEY" not in c_launch.env
    assert c_launch.argv[c_launch.argv.index("--uid") + 1] == "65534"  # so Codex's own bwrap can nest


def test_openai_cost_prices_each_part_at_its_own_rate() -> None:
    usage = OpenAiUsage(input_tokens=1_000_000, cached_input_tokens=400_000, cache_write_input_tokens=100_000,
                        output_tokens=200_000, reasoning_output_tokens=50_000)
    cost = openai_cost("gpt-5", usage)
    # 500k uncached x 1.25 + 400k cached x 0.125 + 100k writes x 1.25 + 150k out x 10 + 50k reasoning x 10
    assert cost.usd == Decimal("0.625") + Decimal("0.05") + Decimal("0.125") + Decimal("1.5") + Decimal("0.5")
    assert cost.basis["models"]["gpt-5"]["priceSource"].startswith("genai-prices 0.2.3 bundled snapshot")
    with pytest.raises(CostProblem, match="no OpenAI price for model 'gpt-99'"):
        openai_cost("gpt-99", usage)
    with pytest.raises(CostProblem, match="reasoning_output_tokens exceed output_tokens"):
        OpenAiUsage(10, 0, 0, 5, 6)


def test_codex_settlement_charges_computed_when_completed_else_at_least_the_reservation() -> None:
    reservation = Decimal("0.10")
    assert settle_attempt("completed", reservation, None, Decimal("0.02"), exceeded_above=reservation) == \
        ("completed", Decimal("0.02"))
    assert settle_attempt("failed", reservation, None, Decimal("0.02")) == ("failed", reservation)
    assert settle_attempt("budget-exceeded", reservation, None, Decimal("0.30")) == ("budget-exceeded",
                                                                                     Decimal("0.30"))


def test_the_usage_watch_reads_lines_split_across_chunks() -> None:
    watch = UsageWatch("gpt-5", Decimal("0.01"))
    line = json.dumps({"type": "turn.completed", "usage": {"input_tokens": 10_000, "cached_input_tokens": 0,
                                                           "output_tokens": 1_000, "reasoning_output_tokens": 0}})
    assert watch(b'{"type":"thread.started","thread_id":"t"}\n' + line[:20].encode()) is None
    reason = watch(line[20:].encode() + b"\n")
    assert reason == "the running usage cost 0.0225 USD passed the per-attempt limit of 0.01 USD; the child was stopped"
    assert UsageWatch("gpt-5", Decimal("1"))(line.encode() + b"\n") is None


def test_both_arms_complete_contained_and_only_the_treatment_calls_mcp(corpus: tuple[Path, str]) -> None:
    root, pin = corpus
    control, server = run_codex_attempt(root, pin, REPOSITORY_ONLY)
    assert control.status == "completed", (control.status_reason, control.setup_problems)
    assert set(control.fields["tool_calls_by_name"]) == {"shell:grep", "shell:sed"}  # the nested sandbox ran them
    assert control.fields["containment"] == "bwrap"
    assert control.reported_cost_usd is None and control.computed_cost is not None
    assert control.computed_cost.usd > 0 and control.fields["usage_complete"] is True
    assert control.fields["answer_text"].endswith("(content/handoffs.md:5).")
    assert all(r.has_authorization for r in server.requests)
    treatment, _ = run_codex_attempt(root, pin, DOC_BRIDGE_MCP)
    assert treatment.status == "completed", (treatment.status_reason, treatment.setup_problems)
    calls = treatment.fields["tool_calls_by_name"]
    assert calls.get("mcp__doc-bridge__doc_search", 0) >= 1
    assert not any(name.startswith("shell:") for name in calls)
    assert not list(HOMES.iterdir()), "the per-attempt homes are removed"


def test_an_attempt_over_its_limit_is_stopped_budget_exceeded(corpus: tuple[Path, str]) -> None:
    root, pin = corpus
    limit = Decimal("0.000001")
    result, _ = run_codex_attempt(root, pin, REPOSITORY_ONLY, reservation_usd=limit)
    assert result.status == "budget-exceeded"
    assert result.status_reason is not None and "passed the per-attempt limit of 0.000001 USD" in result.status_reason
    assert result.computed_cost is not None and result.computed_cost.usd > limit
    status, charged = settle_attempt(result.status, limit, None, result.computed_cost.usd)
    assert (status, charged) == ("budget-exceeded", result.computed_cost.usd)
