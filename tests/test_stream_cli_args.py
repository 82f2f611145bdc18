"""Tests for the CLI arguments and the child environment (``agentstudy.transports.cli_args``)."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from agentstudy.pricing.budget import format_max_budget, reservation_for
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP, REPOSITORY_ONLY
from agentstudy.protocol.mcp_spec import ServerPaths
from agentstudy.transports.cli_args import (
    REHEARSAL_TOKEN,
    McpServerSpec,
    arm_tools,
    child_environment,
    cli_arguments,
    mcp_config,
    mcp_tool_name,
)

MODEL = "claude-haiku-5-5"
BUILTIN = ("Read", "Grep", "Glob")
DOC_BRIDGE_NAMES = (
    "mcp__doc-bridge__doc_search",
    "mcp__doc-bridge__doc_get",
    "mcp__doc-bridge__handoff_resolve",
)
D_TOOLS = (*BUILTIN, *DOC_BRIDGE_NAMES)
STATIC_DENY = ("Bash", "Edit", "MultiEdit", "Write", "NotebookEdit", "WebFetch", "WebSearch", "Task", "Agent")


# --------------------------------------------------------------------------- arguments and environment

SPEC = McpServerSpec(
    name="doc-bridge",
    command=("/usr/bin/node", "/opt/engine/cli.js", "mcp", "--config", "{root}/doc-bridge.config.json"),
)
EXTRA_DENIED = ("mcp__doc-bridge__doc_write", "mcp__doc-bridge__gate_status")
PATHS = ServerPaths(root="/corpora/harbor", pin="a" * 40)


def both_arms(prompt: str = "What does the handoff say?") -> tuple[list[str], list[str]]:
    budget = format_max_budget(reservation_for(Decimal("0.10")))
    args = []
    for scenario in (REPOSITORY_ONLY, DOC_BRIDGE_MCP):
        args.append(
            cli_arguments(
                model=MODEL,
                max_budget_usd=budget,
                tools=arm_tools(scenario, SPEC, EXTRA_DENIED),
                mcp_config_json=mcp_config(scenario, SPEC, PATHS),
                prompt=prompt,
            )
        )
    return args[0], args[1]


def value_of(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


def test_arms_differ_only_at_allowed_tools_and_mcp_config() -> None:
    r_args, d_args = both_arms()
    assert len(r_args) == len(d_args)
    differing = [i for i, (a, b) in enumerate(zip(r_args, d_args, strict=True)) if a != b]
    assert differing == [r_args.index("--allowedTools") + 1, r_args.index("--mcp-config") + 1]
    assert value_of(r_args, "--allowedTools") == "Read,Grep,Glob"
    assert value_of(d_args, "--allowedTools") == ",".join(D_TOOLS)
    assert json.loads(value_of(r_args, "--mcp-config")) == {"mcpServers": {}}
    d_config = json.loads(value_of(d_args, "--mcp-config"))
    assert d_config == {
        "mcpServers": {
            "doc-bridge": {
                "type": "stdio",
                "command": "/usr/bin/node",
                "args": ["/opt/engine/cli.js", "mcp", "--config", "/corpora/harbor/doc-bridge.config.json"],
            }
        }
    }
    with pytest.raises(ValueError):
        mcp_config(DOC_BRIDGE_MCP, SPEC, None)


def test_common_flags() -> None:
    r_args, d_args = both_arms()
    for args in (r_args, d_args):
        assert args[0] == "-p"
        assert value_of(args, "--model") == MODEL
        assert value_of(args, "--output-format") == "stream-json"
        assert "--verbose" in args
        assert "--no-session-persistence" in args
        assert "--strict-mcp-config" in args
        assert "--disable-slash-commands" in args
        assert "--restricted" in args
        assert value_of(args, "--permission-mode") == "dontAsk"
        assert value_of(args, "--tools") == "Read,Grep,Glob"
        assert value_of(args, "--disallowedTools") == ",".join((*STATIC_DENY, *EXTRA_DENIED))
        assert args.count("--") == 1


def test_max_budget_has_six_decimals() -> None:
    r_args, _ = both_arms()
    assert value_of(r_args, "--max-budget-usd") == "0.100000"
    assert format_max_budget(reservation_for(Decimal("0.12345678"))) == "0.123456"
    assert format_max_budget(Decimal("2")) == "2.000000"


def test_prompt_is_last_after_double_dash() -> None:
    prompt = "--model evil -p what?"
    r_args, d_args = both_arms(prompt)
    for args in (r_args, d_args):
        assert args[-1] == prompt
        assert args[-2] == "--"


def test_prompt_over_8_kib_raises() -> None:
    both_arms("a" * 8192)
    with pytest.raises(ValueError):
        both_arms("a" * 8193)
    with pytest.raises(ValueError):
        both_arms("\u00e9" * 4097)  # 4097 characters, 8194 bytes in UTF-8


def test_arm_tools() -> None:
    r_tools = arm_tools(REPOSITORY_ONLY, SPEC, EXTRA_DENIED)
    d_tools = arm_tools(DOC_BRIDGE_MCP, SPEC, EXTRA_DENIED)
    assert r_tools.expected == r_tools.allowed == BUILTIN
    assert r_tools.mcp_server is None
    assert d_tools.expected == d_tools.allowed == D_TOOLS
    assert d_tools.mcp_server == "doc-bridge"
    assert r_tools.denied == d_tools.denied == (*STATIC_DENY, *EXTRA_DENIED)
    assert SPEC.allowed_names() == DOC_BRIDGE_NAMES
    listed = ["doc.search", "doc.get", "handoff.resolve", "gate.status", "memory.promoteDraft"]
    assert SPEC.denied_names(listed) == ("mcp__doc-bridge__gate_status", "mcp__doc-bridge__memory_promoteDraft")
    assert mcp_tool_name("doc-bridge", "a.b.c") == "mcp__doc-bridge__a_b_c"


PARENT_ENV = {
    "PATH": "/custom/bin:/usr/bin",
    "USER": "alice",
    "LOGNAME": "alice",
    "LANG": "en_US.UTF-8",
    "TERM": "xterm",
    "HOME": "/home/alice",
    "ANTHROPIC_API_KEY": "sk-ant-secret",
    "ANTHROPIC_BASE_URL": "https://proxy.example",
    "AWS_SECRET_ACCESS_KEY": "aws",
    "PYTHONPATH": "/x",
}


@pytest.mark.parametrize("base_url", [None, "http://127.0.0.1:4000"])
def test_child_environment_never_has_the_api_key(base_url: str | None) -> None:
    token = None if base_url is None else REHEARSAL_TOKEN
    env = child_environment(PARENT_ENV, home="/h", tmpdir="/t", base_url=base_url, auth_token=token)
    assert "ANTHROPIC_API_KEY" not in env
    assert "AWS_SECRET_ACCESS_KEY" not in env
    assert "PYTHONPATH" not in env
    assert "sk-ant-secret" not in env.values()
    assert env["PATH"] == "/custom/bin:/usr/bin"
    assert env["USER"] == "alice"
    assert env["HOME"] == "/h"
    assert env["TMPDIR"] == "/t"
    assert env["CLAUDE_CODE_MAX_RETRIES"] == "2"
    if base_url is None:
        assert "ANTHROPIC_BASE_URL" not in env
        assert "ANTHROPIC_AUTH_TOKEN" not in env
    else:
        assert env["ANTHROPIC_BASE_URL"] == base_url
        assert env["ANTHROPIC_AUTH_TOKEN"] == REHEARSAL_TOKEN


def test_child_environment_defaults() -> None:
    env = child_environment({}, home="/h", tmpdir="/t")
    assert env["PATH"]
    assert env["LANG"] == "C.UTF-8"
    assert set(env) == {
        "PATH",
        "LANG",
        "HOME",
        "TMPDIR",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
        "DISABLE_TELEMETRY",
        "DISABLE_AUTOUPDATER",
        "DISABLE_ERROR_REPORTING",
        "CLAUDE_CODE_MAX_RETRIES",
    }
