"""Capture the stored Gemini CLI 0.61.0 fixtures in tests/data/gemini: real streams and session files.

Run from the checkout root: ``.venv/bin/python scripts/capture_gemini_transcripts.py``. Each case is one real,
contained attempt of the pinned binary (``.tools/gemini-cli``) against the scripted Gemini API on 127.0.0.1
(tests/gemini_attempts.py), on the bundled example corpus: the stream (``NAME.stream.jsonl``), the session file
the attempt read after the child (``NAME.session.jsonl``) and ``NAME.facts.json`` (the first request's tool
list and the refused requests from the telemetry file, which is too large to keep, and the tokens the server
served per answered request).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, "tests")

from agentstudy.agents.gemini_cli import GeminiCliAgent
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP, REPOSITORY_ONLY
from agentstudy.rehearsal.example_study import build_corpus_repository
from agentstudy.stream.gemini_records import telemetry_facts
from agentstudy.transports.cli import CliAttemptBody, RawAttempt
from agentstudy.transports.cli_evaluation import CliEvaluation

from gemini_attempts import run_gemini_attempt

OUT = Path("tests/data/gemini")
CASES = (("control", REPOSITORY_ONLY, None), ("treatment", DOC_BRIDGE_MCP, None),
         ("retried", REPOSITORY_ONLY, "1:429"), ("persistent-429", REPOSITORY_ONLY, "*:429"))


def main() -> None:
    """Write every case's three files (overwriting the stored ones)."""
    seen: dict[str, RawAttempt] = {}
    evaluate = GeminiCliAgent.evaluate

    def keep(self: GeminiCliAgent, body: CliAttemptBody, raw: RawAttempt) -> CliEvaluation:
        seen["raw"] = raw
        return evaluate(self, body, raw)

    GeminiCliAgent.evaluate = keep  # type: ignore[method-assign]
    root = Path(tempfile.mkdtemp()) / "harbor-playbook"
    pin = build_corpus_repository("harbor-playbook", root)
    for name, scenario, faults in CASES:
        result, server = run_gemini_attempt(root, pin, scenario, faults=faults, max_retries=1)
        raw = seen["raw"]
        (OUT / f"{name}.stream.jsonl").write_bytes(raw.stdout)
        if "session" in raw.agent_files:
            (OUT / f"{name}.session.jsonl").write_bytes(raw.agent_files["session"])
        facts = telemetry_facts(raw.agent_files.get("telemetry", b"").decode("utf-8", "replace"))
        record: dict[str, Any] = {
            "scenario": scenario, "faults": faults, "firstTools": facts.first_tools,
            "errorStatuses": facts.error_statuses, "status": result.status,
            "served": [[r.served_input_tokens, r.served_output_tokens] for r in server.requests if r.status == 200]}
        (OUT / f"{name}.facts.json").write_text(json.dumps(record, indent=1) + "\n")
        print(name, result.status)


if __name__ == "__main__":
    main()
