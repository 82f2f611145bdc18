"""Hostile inputs the house promises to refuse (attack of issues 18 and 19): one line, exit 2, nothing overwritten.

- a study file or seed manifest giving a key twice (``json.loads`` keeps the last silently, so
  the study run would not be the one the reader of the file sees);
- ``agentstudy report LEDGER --output LEDGER.journal``: the journal is read beside the ledger
  (issue 19), so writing the report there would destroy a crashed run's settlements.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.protocol.manifest import ManifestError, parse_manifest

from study_files import EXAMPLE_STUDY


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("key", ["repetitions", "version"])
def test_a_study_file_giving_a_key_twice_is_refused(tmp_path: Path, key: str) -> None:
    text = EXAMPLE_STUDY.read_text(encoding="utf-8")
    value = json.dumps(json.loads(text)[key])
    hostile = text.replace("{", "{" + f'"{key}": {value}, ', 1)
    assert json.loads(hostile) == json.loads(text)  # what the standard parser would silently accept
    with pytest.raises(ManifestError, match=f"manifest has a duplicated key '{key}'"):
        parse_manifest(hostile)
    path = tmp_path / "study.json"
    path.write_text(hostile, encoding="utf-8")
    code, out, err = _invoke("study", "--manifest", str(path), "--dry-run")
    assert code == 2 and out == "" and err.strip().splitlines() == [
        f"agentstudy: error: manifest has a duplicated key '{key}'"]


def test_a_key_twice_deep_inside_the_arms_is_refused() -> None:
    text = EXAMPLE_STUDY.read_text(encoding="utf-8")
    hostile = text.replace('"query": "the"', '"query": "the", "query": "rm"', 1)
    assert hostile != text
    with pytest.raises(ManifestError, match="duplicated key 'query'"):
        parse_manifest(hostile)


def test_the_report_never_overwrites_the_ledger_journal(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.json"
    ledger.write_text("{}", encoding="utf-8")
    journal = tmp_path / "ledger.json.journal"
    for existing in (True, False):
        if existing:
            journal.write_bytes(b'{"kind": "start"}\n')
        code, out, err = _invoke("report", str(ledger), "--output", str(journal))
        assert code == 2 and out == "" and "is one of the inputs" in err and len(err.strip().splitlines()) == 1
        assert journal.read_bytes() == b'{"kind": "start"}\n' if existing else not journal.exists()
        journal.unlink(missing_ok=True)
