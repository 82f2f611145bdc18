"""Task ids become file names injectively (issue 40 break 8): ``"lantern discovery"`` and
``"lantern_discovery"`` (both legal) no longer share a transcript file; a real run of a study file with both
keeps one transcript per attempt, each matching its observation."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from agentstudy.cli import main
from agentstudy.io.transcripts import transcript_dir, transcript_name
from agentstudy.protocol.file_names import colliding_ids, file_name_part
from agentstudy.rehearsal.example_study import build_example_study

from study_files import EXAMPLE_STUDY


def test_the_two_ids_of_the_break_get_two_names() -> None:
    names = {transcript_name(task, "doc-bridge-mcp", 1, None, "jsonl")
             for task in ("lantern discovery", "lantern_discovery", "lantern/discovery", "lantern--discovery")}
    assert len(names) == 4
    assert "lantern_discovery--doc-bridge-mcp--r1.jsonl" in names  # a safe id keeps its own name
    assert colliding_ids(["lantern discovery", "lantern_discovery", "lantern discovery!"]) is None
    assert all("/" not in name and not name.startswith(".") for name in names)


@settings(deadline=None, max_examples=300)
@given(st.lists(st.text(min_size=1, max_size=20), min_size=2, max_size=8, unique=True))
def test_distinct_ids_map_to_distinct_safe_parts(ids: list[str]) -> None:
    parts = [file_name_part(each) for each in ids]
    assert len(set(parts)) == len(parts)
    for part in parts:
        assert part and "/" not in part and "--" not in part and part not in (".", "..")
        assert part.isascii() and not part.startswith((".", "-"))


def test_a_run_with_both_ids_keeps_every_observation_and_transcript(tmp_path: Path) -> None:
    study = build_example_study(tmp_path / "study")
    document = json.loads(EXAMPLE_STUDY.read_text())
    first = document["tasks"][0]
    document["tasks"] = [{**first, "id": "lantern discovery"}, {**first, "id": "lantern_discovery"},
                         *document["tasks"][2::2]]
    document["repetitions"] = 1
    manifest = tmp_path / "study.json"
    manifest.write_text(json.dumps(document))
    output = tmp_path / "ledger.json"
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    result = CliRunner().invoke(main, ["study", "--manifest", str(manifest), "--run", "--transport", "http",
                                       "--rehearsal", *roots, "--output", str(output), "--model", "claude-haiku-5-5",
                                       "--budget-usd", "1"], env={"ANTHROPIC_API_KEY": None},
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    ledger = json.loads(output.read_bytes())
    assert ledger["status"] == "awaiting-adjudication" and len(ledger["observations"]) == 8
    files = [o["transcriptFile"] for o in ledger["observations"]]
    assert len(set(files)) == 8
    assert sorted(p.name for p in transcript_dir(output).iterdir()) == sorted(files)
    assert CliRunner().invoke(main, ["ledger", str(output)]).exit_code == 0
