"""Capture real Codex CLI 0.171.0 ``exec --json`` transcripts for each setup rule (issue 21).

Runs the pinned binary (.tools/codex) against the scripted Responses API server
(``rehearsal.responses_server``) and the bundled MCP server, once per scenario, and writes the
sanitised streams (machine paths replaced by ``<repo>`` / ``<home>`` etc., thread ids kept) to
``tests/transcripts/codex-0.171.0/<scenario>.jsonl``. Re-run:
``.venv/bin/python scripts/capture_codex_transcripts.py [--out DIR] [SCENARIO ...]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agentstudy.rehearsal.policy import ScriptedReply
from agentstudy.rehearsal.responses_server import (
    REHEARSAL_KEY,
    REHEARSAL_KEY_ENV,
    ResponsesRehearsalServer,
    responses_policy,
)
from agentstudy.transports.codex_args import (
    REHEARSAL_MODEL,
    CodexMcpServer,
    RehearsalProvider,
    codex_arguments,
    codex_environment,
    config_toml,
)

ROOT = Path(__file__).resolve().parent.parent
CODEX = ROOT / ".tools" / "codex" / "node_modules" / ".bin" / "codex"
PIN = "0" * 40
PROMPT = "What does the frobnicate flag enable? Cite the file and line."
README = "# Widgets\n\nSome intro text.\n\nThe frobnicate flag enables the widget cache.\n"


def _mcp(repo: Path, tools: tuple[str, ...] = ("doc.search", "doc.get"), *, broken: bool = False) -> CodexMcpServer:
    root = repo.parent / "missing" if broken else repo
    command = (sys.executable, "-I", "-m", "agentstudy.rehearsal.mcp_server", "--root", str(root), "--pin", PIN)
    return CodexMcpServer("doc-bridge", command, {}, tools)


def _search_only_errors(body: Mapping[str, Any]) -> ScriptedReply:
    """The careful agent, but every MCP call names a file that does not exist (doc.get errors)."""
    reply = responses_policy(body)
    for block in reply.content:
        if block.get("type") == "tool_use" and block["name"].endswith("doc_search"):
            block["name"] = block["name"].replace("doc_search", "doc_get")
            block["input"] = {"path": "no/such/file.md"}
    return reply


def _turn_failed(body: Mapping[str, Any]) -> ScriptedReply:
    raise ValueError("scripted rehearsal failure")


SCENARIOS: dict[str, dict[str, Any]] = {
    "control-completed": {"mcp": None},
    "treatment-completed": {"mcp": "ok"},
    "treatment-required-server-fails": {"mcp": "broken"},
    "treatment-cancelled-call": {"mcp": "write"},
    "treatment-all-calls-error": {"mcp": "ok", "policy": _search_only_errors},
    "turn-failed": {"mcp": None, "fail_with_status": 400},
}


def sanitise(text: str, replacements: Mapping[str, str]) -> str:
    """Replace every machine path (longest first) by its placeholder."""
    for path, placeholder in sorted(replacements.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(path, placeholder)
    return re.sub(r"/tmp/[A-Za-z0-9_.-]+", "<tmp>", text)  # noqa: S108 - a pattern, not a file


def run(name: str, out: Path) -> Path:
    spec = SCENARIOS[name]
    chosen: Callable[[Mapping[str, Any]], ScriptedReply] = spec.get("policy", responses_policy)
    if spec["mcp"] == "write":
        chosen = _write_policy
    bodies: list[Mapping[str, Any]] = []

    def policy(body: Mapping[str, Any]) -> ScriptedReply:
        bodies.append(body)
        return chosen(body)

    scratch = ROOT / ".tools" / "capture-tmp"  # Codex refuses helper aliases in a CODEX_HOME under a temp dir
    scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="cx-", dir=scratch) as tmp:
        base = Path(tmp)
        repo, home, codex_home, tmpdir = base / "repo", base / "home", base / "codex-home", base / "tmp"
        for d in (repo, home, codex_home, tmpdir):
            d.mkdir()
        (repo / "README.md").write_text(README)
        kind = spec["mcp"]
        mcp = None if kind is None else _mcp(repo, ("doc.write",) if kind == "write" else ("doc.search", "doc.get"),
                                             broken=kind == "broken")
        with ResponsesRehearsalServer(policy=policy, fail_with_status=spec.get("fail_with_status")) as server:
            provider = RehearsalProvider(server.provider_base_url, REHEARSAL_KEY_ENV)
            (codex_home / "config.toml").write_text(config_toml(model=REHEARSAL_MODEL, provider=provider, mcp=mcp))
            env = codex_environment(os.environ, home=str(home), tmpdir=str(tmpdir), codex_home=str(codex_home),
                                    provider_key=(REHEARSAL_KEY_ENV, REHEARSAL_KEY))
            done = subprocess.run([str(CODEX), *codex_arguments(export_dir=str(repo), prompt=PROMPT)],
                                  stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env,
                                  timeout=180, check=False)
        replacements = {str(repo): "<repo>", str(home): "<home>", str(codex_home): "<codex-home>",
                        str(base): "<tmp>", sys.executable: "<python>", str(ROOT): "<project>"}
        target = out / f"{name}.jsonl"
        target.write_text(sanitise(done.stdout, replacements))
        (out / f"{name}.exit").write_text(f"{done.returncode}\n")
        errors = [line for line in sanitise(done.stderr, replacements).splitlines() if line.startswith("Error:")]
        (out / f"{name}.stderr").write_text("".join(f"{line}\n" for line in errors))
        sys.stderr.write(f"{name}: exit {done.returncode}\n{sanitise(done.stderr, replacements)[-2000:]}\n")
        if os.environ.get("CAPTURE_DUMP"):
            Path(os.environ["CAPTURE_DUMP"]).write_text(json.dumps(bodies, indent=1))
        return target


def _write_policy(body: Mapping[str, Any]) -> ScriptedReply:
    """Call the unannotated-for-reads ``doc.write`` once, then answer."""
    reply = responses_policy(body)
    tools = [t for t in body.get("tools", []) if isinstance(t, Mapping) and t.get("name") == "mcp__doc_bridge"]
    if tools and not any(isinstance(i, Mapping) and i.get("type") == "function_call_output" for i in body["input"]):
        return ScriptedReply([{"type": "text", "text": "I will try the write tool."},
                              {"type": "tool_use", "id": "call_write_1", "name": "mcp__doc_bridge__doc_write",
                               "input": {"path": "NOTES.md", "text": "x"}}], "tool_use", reply.usage)
    return reply


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "transcripts" / "codex-0.171.0")
    parser.add_argument("scenario", nargs="*", default=list(SCENARIOS))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.scenario:
        print(run(name, args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
