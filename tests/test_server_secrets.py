"""The MCP server under study never receives the agent's credentials (issue 29, break 2).

A hostile stdio MCP server (``tests/data/hostile_env_server.py``, official SDK) reports its whole
environment and every file it can read (``/proc/*/environ`` included). It is started exactly as in
each agent's attempt — agentstudy's server host starts it in its own world when the command of Claude
Code's ``--mcp-config`` or Codex's ``[mcp_servers.NAME]`` (the relay) is run inside the attempt's real
bubblewrap sandbox with the agent's own complete environment (what Claude Code hands a stdio server) —
in two layouts: through an LLM gateway with a token, and a real run with a
login file and ``CLAUDE_CODE_OAUTH_TOKEN``. Then a whole run of the real Claude Code binary through a
gateway (the scripted Messages server on 127.0.0.1): the report reaches the model's requests, and no
secret or live-checkout path is in it, in the ledger or in the output.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentstudy.agents.registry import agent_cli
from agentstudy.cli import main
from agentstudy.io.server_corpus import ServerCorpora, at_corpus
from agentstudy.io.server_host import attempt_server
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP
from agentstudy.protocol.mcp_spec import McpServerSpec
from agentstudy.rehearsal.example_study import build_example_study
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.rehearsal.policy import ScriptedReply, next_reply
from agentstudy.transports.cli import CliAttemptBody, CliSettings
from agentstudy.transports.cli_args import arm_tools

from codex_attempts import codex_binary
from corpus_git import committed_repo

HOSTILE = str(Path(__file__).resolve().parent / "data" / "hostile_env_server.py")
GATEWAY_TOKEN = "gw-token-hostile-0123456789abcdef"
OAUTH_TOKEN = "sk-ant-oat01-oauth-hostile-0123456789"
API_KEY = "sk-ant-api-hostile-0123456789"
OPENAI_KEY = "sk-openai-hostile-0123456789"
LOGIN_SECRET = "login-file-secret-0123456789abcdef"
SECRETS = (GATEWAY_TOKEN, OAUTH_TOKEN, API_KEY, OPENAI_KEY, LOGIN_SECRET)
SECRET_NAMES = ("ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_API_KEY", "OPENAI_API_KEY",
                "AGENTSTUDY_GATEWAY_TOKEN")


def _spec(*extra: str) -> McpServerSpec:
    return McpServerSpec(name="doc-bridge", command=(sys.executable, HOSTILE, "--root", "{root}", *extra),
                         read_only_tools=("doc.search", "doc.get"), config_candidates=())


def _report(text: str) -> dict[str, Any]:
    start = text.index("HOSTILE-REPORT ") + len("HOSTILE-REPORT ")
    report, _ = json.JSONDecoder().raw_decode(text[start:])
    assert isinstance(report, dict)
    return report


def _assert_clean(report: Mapping[str, Any], raw: str, live: Path, login: Path) -> None:
    env = report["env"]
    assert not set(SECRET_NAMES) & set(env), sorted(env)
    for secret in SECRETS:
        assert secret not in raw, f"the server saw {secret[:12]}…"
    assert report["readable"], "the report lists what the server could read"
    for path in report["readable"]:
        assert not path.startswith(str(live)), f"the server read the live checkout: {path}"
        assert not path.endswith((".credentials.json", "auth.json")), f"the server sees a login file: {path}"
        if path.startswith("/proc/"):  # its own pid namespace only: bubblewrap's init and the server
            assert path.split("/")[2] in ("1", "2", "3", "self", "thread-self"), f"another process: {path}"
    assert str(login.parent) not in raw


def _server_command(agent: str, argv: list[str], scratch: Path) -> tuple[list[str], dict[str, str]]:
    """The MCP server's command and configured env, as the agent was told to start it."""
    if agent == "claude-code":
        config = json.loads(argv[argv.index("--mcp-config") + 1])["mcpServers"]["doc-bridge"]
    else:
        config = tomllib.loads((scratch / "codex-home" / "config.toml").read_text())["mcp_servers"]["doc-bridge"]
    return [config["command"], *config["args"]], dict(config.get("env", {}))


@pytest.mark.parametrize("layout", ["gateway", "login"])
@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_the_server_sees_no_credential_no_login_file_and_no_live_checkout(tmp_path: Path, agent: str, layout: str,
                                                                          claude_bin: Path) -> None:
    checkout = tmp_path / "checkout"
    pin = committed_repo(checkout, {"README.md": "hello\n", "docs/a.md": "alpha\n"})
    (checkout / "ignored-secret.txt").write_text("untracked\n", encoding="utf-8")
    user_home = tmp_path / "user-home"
    login = user_home / (".claude/.credentials.json" if agent == "claude-code" else ".codex/auth.json")
    login.parent.mkdir(parents=True)
    login.write_text(json.dumps({"token": LOGIN_SECRET}), encoding="utf-8")
    parent_env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(user_home),
                  "CLAUDE_CODE_OAUTH_TOKEN": OAUTH_TOKEN, "ANTHROPIC_API_KEY": API_KEY, "OPENAI_API_KEY": OPENAI_KEY,
                  "AGENTSTUDY_GATEWAY_TOKEN": GATEWAY_TOKEN}
    spec = _spec("--report-now", "--compact")  # the server reports at once, to the relay the agent runs
    binary = claude_bin if agent == "claude-code" else codex_binary()
    gateway = {"gateway_base_url": "http://127.0.0.1:9", "gateway_token": GATEWAY_TOKEN} if layout == "gateway" \
        else {"login_file": login}
    export, scratch = tmp_path / "export", tmp_path / "scratch"
    export.mkdir()
    scratch.mkdir()
    with ServerCorpora(spec, {"corpus": (checkout, pin)}) as corpora:
        paths = at_corpus(corpora.paths("corpus"), export)  # as every attempt: the agent's export
        assert paths.live is not None
        settings = CliSettings(binary=binary, model="m", mcp=spec, agent=agent, **gateway)  # type: ignore[arg-type]
        with attempt_server(spec, paths, "bwrap", parent_env, scratch) as host:
            body = CliAttemptBody(settings, DOC_BRIDGE_MCP, arm_tools(DOC_BRIDGE_MCP, spec, ()), "Where?",
                                  Decimal("0.10"), paths, parent_env, server_launcher=host.launcher(),
                                  agent=agent_cli(agent))
            launch = agent_cli(agent).launch(body, export, scratch, parent_env)
            secret_env = {**launch.env}
            if layout == "gateway":
                assert GATEWAY_TOKEN in secret_env.values(), "the agent itself holds the gateway token"
            server, configured = _server_command(agent, launch.argv, scratch)
            # The agent's sandbox, running what the agent would start, with the agent's whole environment.
            cut = launch.argv.index("--chdir") + 3
            done = subprocess.run([*launch.argv[:cut], *server], env={**secret_env, **configured},
                                  stdin=subprocess.DEVNULL, capture_output=True, timeout=60, check=False)
        raw = done.stdout.decode("utf-8", "replace")
        assert done.returncode == 0, done.stderr.decode("utf-8", "replace")[-2000:]
        _assert_clean(_report(raw), raw, Path(paths.live), login)
        assert agent_cli(agent).isolation(settings, DOC_BRIDGE_MCP)["isolation_achieved"][-1].startswith(
            "the MCP server under study is started by agentstudy")


def test_a_gateway_run_of_the_real_cli_gives_the_server_no_token(tmp_path: Path, claude_bin: Path) -> None:
    study = build_example_study(tmp_path / "study")
    config = tmp_path / "hostile.json"
    config.write_text(json.dumps({"mcpServers": {"doc-bridge": {"command": sys.executable,
                                                                "args": [HOSTILE, "--root", "{root}"]}}}))
    bodies: list[str] = []

    def recording(body: Mapping[str, Any]) -> ScriptedReply:
        bodies.append(json.dumps(body))
        return next_reply(body)

    with RehearsalServer(policy=recording) as gateway:
        roots = [f"--root={name}={path}" for name, path in study.roots.items()]
        args = ["minimal", "--manifest", str(study.manifest_path), "--pilot", *roots, "--model", "claude-haiku-4-5",
                "--budget-usd", "1", "--output", str(tmp_path / "ledger.json"), "--transport", "cli",
                "--approve-budget", "--claude-bin", str(claude_bin), "--cli-base-url", gateway.base_url,
                "--mcp-config", str(config), "--mcp-tools", "doc.search,doc.get", "--server-config-candidates", ""]
        env: dict[str, Any] = {"AGENTSTUDY_GATEWAY_TOKEN": GATEWAY_TOKEN, "ANTHROPIC_API_KEY": API_KEY,
                               "CLAUDE_CODE_OAUTH_TOKEN": OAUTH_TOKEN, "HOME": str(tmp_path / "no-login-home")}
        result = CliRunner().invoke(main, args, env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    raw_ledger = (tmp_path / "ledger.json").read_text(encoding="utf-8")
    reports = [b for b in bodies if "HOSTILE-REPORT" in b]
    assert reports, "the server's report reached the model"
    requests = "\n".join(bodies)
    for secret in (GATEWAY_TOKEN, OAUTH_TOKEN, API_KEY):
        assert secret not in requests and secret not in raw_ledger and secret not in result.output
    for root in study.roots.values():
        assert str(root) not in requests, "no path of the live checkout reaches the model"
    ledger = json.loads(raw_ledger)
    mcp = [o for o in ledger["observations"] if o["scenario"] == DOC_BRIDGE_MCP]
    assert mcp and all(any(s.startswith("the MCP server under study is started by agentstudy")
                           for s in o["isolationAchieved"]) for o in mcp)
