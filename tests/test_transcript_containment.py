"""``agentstudy transcript``: refused out-of-export reads and the containment echoed from --containment."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentstudy.stream.denials import refused_out_of_export_reads
from test_stream_transcript_command import CLEAN, MODEL, TRANSCRIPTS, invoke, record_of

WRITE_DENIED = TRANSCRIPTS / "08-write-not-allowed-dontAsk.stdout.jsonl"
MCP_DENIED = TRANSCRIPTS / "35-mcp-readonly-tool-not-in-allowedTools.stdout.jsonl"
READ_ID = "toolu_8a53b6f2367440958184af44"  # the clean transcript's one Read, of a file outside its cwd
REFUSAL = ("File /scratch/cp-01-read-readme-apikey-a7dcj6s7/scratch/README.md is outside "
           "/scratch/cp-01-read-readme-apikey-a7dcj6s7/work; --restricted confines the file tools to the working "
           "directory.")


def _refused_read(tmp_path: Path) -> Path:
    """The clean transcript as --restricted would have ended it: its Read refused, listed as a denial."""
    events = [json.loads(line) for line in CLEAN.read_text(encoding="utf-8").splitlines() if line.strip()]
    for event in events:
        content = event.get("message", {}).get("content") if event.get("type") == "user" else None
        for block in content or []:
            if block.get("tool_use_id") == READ_ID:
                block.update(content=REFUSAL, is_error=True)
                event.pop("tool_use_result", None)
        if event.get("type") == "result":
            use = next(b for e in events if e.get("type") == "assistant" for b in e["message"]["content"]
                       if b.get("id") == READ_ID)
            event["permission_denials"] = [{"tool_name": "Read", "tool_use_id": READ_ID, "tool_input": use["input"]}]
    path = tmp_path / "refused-read.stdout.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


def _denials(path: Path) -> list[dict[str, Any]]:
    result = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
              if '"type":"result"' in line.replace(" ", "")]
    denials: list[dict[str, Any]] = result[-1]["permission_denials"]
    return denials


def test_real_denials_of_other_tools_are_not_refused_reads() -> None:
    assert [d["tool_name"] for d in _denials(WRITE_DENIED)] == ["Write"]
    code, record = record_of(str(WRITE_DENIED), "--scenario", "repository-only", "--model", MODEL)
    assert code == 1  # the Write denial is a setup problem, as before
    assert len(record["permissionDenials"]) == 1 and record["refusedOutOfExportReads"] == 0
    assert [d["tool_name"] for d in _denials(MCP_DENIED)] == ["mcp__doc-bridge__doc_search"]
    _, record = record_of(str(MCP_DENIED), "--scenario", "doc-bridge-mcp", "--model", MODEL)
    assert len(record["permissionDenials"]) == 1 and record["refusedOutOfExportReads"] == 0


def test_a_transcript_without_denials_counts_zero() -> None:
    assert _denials(CLEAN) == []
    code, record = record_of(str(CLEAN), "--scenario", "repository-only", "--model", MODEL)
    assert (code, record["refusedOutOfExportReads"], record["containment"]) == (0, 0, "unknown")


def test_a_refused_read_is_counted_and_the_attempt_still_completes(tmp_path: Path) -> None:
    path = _refused_read(tmp_path)
    code, record = record_of(str(path), "--scenario", "repository-only", "--model", MODEL, "--containment", "bwrap")
    assert (code, record["status"], record["setupProblem"]) == (0, "completed", None)
    assert record["refusedOutOfExportReads"] == 1
    assert record["containment"] == "bwrap"
    assert record["toolErrorsByName"] == {"Read": 1}


@pytest.mark.parametrize("containment, note", [
    (None, "unknown (a transcript does not record how the child was confined; pass --containment)"),
    ("bwrap", "bwrap (as given by --containment: bubblewrap namespaces plus --restricted file tools)"),
    ("restricted", "restricted (as given by --containment: --restricted file tools only, no bubblewrap)"),
])
def test_the_text_output_has_a_containment_line_and_the_count(tmp_path: Path, containment: str | None,
                                                              note: str) -> None:
    extra = ("--containment", containment) if containment else ()
    code, out, _ = invoke(str(_refused_read(tmp_path)), "--scenario", "repository-only", "--model", MODEL, *extra)
    assert code == 0
    lines = {line.split()[0]: line.split(None, 1)[1] for line in out.splitlines()}
    assert lines["containment"] == note
    assert lines["refusedOutOfExportReads"] == "1"


def test_a_bad_containment_exits_2() -> None:
    code, out, err = invoke(str(CLEAN), "--scenario", "repository-only", "--model", MODEL, "--containment", "none")
    assert code == 2 and out == "" and "--containment" in err


def test_only_built_in_file_tools_count() -> None:
    denials = [{"tool_name": name} for name in ("Read", "Grep", "Glob", "Bash", "Write", "mcp__doc-bridge__doc_get")]
    assert refused_out_of_export_reads([*denials, "Read", None, {"tool_name": "read"}]) == 3
