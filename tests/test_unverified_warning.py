"""``report --allow-unverified`` of a changed ledger names a few problems and counts the rest (issue 40 break 12):
a ledger with every one of its 200 observations altered gives one bounded warning line, not one clause per
observation; ``agentstudy ledger --allow-unverified`` words it the same way."""

from __future__ import annotations

import json
from pathlib import Path

from bench.large_ledger import large_ledger
from click.testing import CliRunner

from agentstudy.cli import main


def test_the_warning_of_a_ledger_changed_everywhere_is_one_bounded_line(tmp_path: Path) -> None:
    document = large_ledger(200)
    for observation in document["observations"]:
        observation["answer"] = "changed after the run"
    path = tmp_path / "changed.json"
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    for command in (["report", str(path), "--allow-unverified", "--format", "json"],
                    ["ledger", str(path), "--allow-unverified", "--json"]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 0, result.output
        warnings = [line for line in result.stderr.splitlines() if line.startswith("agentstudy: warning:")]
        assert len(warnings) == 1 and "more" in warnings[0] and len(warnings[0]) < 1000, warnings
