"""The state diagrams in docs/ (the .mmd files and the state-machines page) are the ones the machines draw today."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.fsm.diagrams import DIAGRAMS, mermaid

REPO = Path(__file__).resolve().parents[1]


def test_docs_hold_the_current_diagrams() -> None:
    page = (REPO / "docs" / "state-machines.md").read_text(encoding="utf-8")
    for name in DIAGRAMS:
        drawing = mermaid(name)
        assert (REPO / "docs" / f"{name}.mmd").read_text(encoding="utf-8") == drawing, "run agentstudy diagrams"
        assert drawing in page, f"docs/state-machines.md lacks the current {name} diagram"


def test_diagrams_command_writes_both_files(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["diagrams", "--output-dir", str(tmp_path)])
    assert result.exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{name}.mmd" for name in DIAGRAMS)
    assert "stateDiagram-v2" in (tmp_path / "run-machine.mmd").read_text(encoding="utf-8")
    missing = CliRunner().invoke(main, ["diagrams", "--output-dir", str(tmp_path / "nope")])
    assert missing.exit_code == 2
