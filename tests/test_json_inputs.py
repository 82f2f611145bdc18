"""Issue 16, deliverable 4: every reader of a user's JSON is bounded, and every path problem is one line, exit 2.

A document nested 200,000 deep or holding a 5,000-digit integer, handed to each command that
reads JSON, is refused in one line (it printed a ``RecursionError`` or ``ValueError`` traceback);
an ``--output`` / ``--ledger`` name over 255 bytes is refused before anything is written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from agentstudy.cli import main
from agentstudy.rehearsal.controlled.example import ControlledExample, build_controlled_example
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study
from agentstudy.stream.transcript import parse_transcript

from fakes import FakeClaude

DEEP = '{"a": ' + "[" * 200_000 + "]" * 200_000 + "}"
BIG_INTEGER = '{"a": ' + "1" * 5_000 + "}"
LONG_NAME = "x" * 300 + ".json"


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> ExampleStudy:
    return build_example_study(tmp_path_factory.mktemp("json-inputs") / "study")


@pytest.fixture(scope="module")
def controlled(tmp_path_factory: pytest.TempPathFactory) -> ControlledExample:
    return build_controlled_example(tmp_path_factory.mktemp("json-controlled") / "study")


@pytest.fixture(scope="module")
def minimal_ledger(study: ExampleStudy, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real minimal-study ledger: the example pilot, rehearsed over http."""
    ledger = tmp_path_factory.mktemp("json-ledger") / "ledger.json"
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    result = _invoke(["minimal", "--manifest", str(study.manifest_path), "--pilot", "--transport", "http",
                      "--rehearsal", *roots, "--output", str(ledger), "--model", "claude-haiku-5-5",
                      "--budget-usd", "1", "--input-usd-per-million", "1", "--output-usd-per-million", "5"])
    assert result.exit_code == 0, result.output
    return ledger


def _invoke(args: list[str]) -> Result:
    return CliRunner().invoke(main, args, env={"AGENTSTUDY_CONTAINMENT": "restricted"}, catch_exceptions=True)


def _one_line(result: Result, reason: str) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("agentstudy: error: ") and reason in line, line


def _commands(study: ExampleStudy, controlled: ControlledExample, minimal_ledger: Path, hostile: Path,
              tmp: Path) -> dict[str, list[str]]:
    manifest = str(study.manifest_path)
    return {
        "manifest": ["minimal", "--dry-run", "--manifest", str(hostile)],
        "mcp config": ["minimal", "--dry-run", "--manifest", manifest, "--mcp-config", str(hostile)],
        "minimal ledger (report)": ["report", str(hostile)],
        "price file": ["report", str(minimal_ledger), "--prices", str(hostile)],
        "minimal ledger (adjudicate)": ["adjudicate", str(hostile), "--manifest", manifest],
        "controlled ledger": ["ledger", str(hostile)],
        "suite": ["suite", str(hostile)],
        "plan": ["plan", str(hostile)],
        "metrics ledger": ["metrics", str(hostile)],
        "run plan": ["run", str(hostile), str(controlled.suite), "--providers", str(controlled.providers),
                     "--repositories", str(controlled.repositories), "--ledger", str(tmp / "l.json"), "--dry-run"],
        "provider config": ["run", str(controlled.plan), str(controlled.suite), "--providers", str(hostile),
                            "--repositories", str(controlled.repositories), "--ledger", str(tmp / "l.json")],
        "controlled ledger (adjudicate)": ["adjudicate-controlled", str(hostile), str(controlled.suite),
                                           "--adjudicator", str(controlled.providers), "--output", str(tmp / "o.json")],
    }


READERS = ["manifest", "mcp config", "minimal ledger (report)", "price file", "minimal ledger (adjudicate)",
           "controlled ledger", "suite", "plan", "metrics ledger", "run plan", "provider config",
           "controlled ledger (adjudicate)"]


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize(("text", "reason"), [(DEEP, "nested deeper than 64 levels"),
                                              (BIG_INTEGER, "number longer than 100 characters")])
def test_every_json_reader_refuses_hostile_documents_in_one_line(
    tmp_path: Path, study: ExampleStudy, controlled: ControlledExample, minimal_ledger: Path, reader: str, text: str,
    reason: str,
) -> None:
    hostile = tmp_path / "hostile.json"
    hostile.write_text(text, encoding="utf-8")
    commands = _commands(study, controlled, minimal_ledger, hostile, tmp_path)
    assert sorted(commands) == sorted(READERS)
    _one_line(_invoke(commands[reader]), reason)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hostile.json"], "nothing was written"


def test_mcp_probe_arguments_are_bounded(study: ExampleStudy) -> None:
    deep = '{"q": ' + "[" * 100_000 + "]" * 100_000 + "}"
    _one_line(_invoke(["minimal", "--dry-run", "--manifest", str(study.manifest_path), "--mcp-probe-arguments", deep]),
              "nested deeper than 64 levels")


def test_a_transcript_line_too_deep_is_a_shape_problem() -> None:
    transcript = parse_transcript([DEEP, BIG_INTEGER, '{"type": "result"}'])
    assert transcript.shape_problems[:2] == ["line 1 is not JSON", "line 2 is not JSON"]


def test_a_manifest_at_the_limits_still_loads(tmp_path: Path, study: ExampleStudy) -> None:
    document = json.loads(study.manifest_path.read_text(encoding="utf-8"))
    document["tasks"][0]["question"] = "Depth " + "[" * 100 + " and " + "9" * 200 + " inside text are not counted?"
    manifest = tmp_path / "m.json"
    manifest.write_text(json.dumps(document), encoding="utf-8")
    assert _invoke(["minimal", "--dry-run", "--manifest", str(manifest)]).exit_code == 0


# -- paths -----------------------------------------------------------------------------------------------------


def test_an_output_name_too_long_is_refused_before_anything(
    tmp_path: Path, study: ExampleStudy, fake_claude: FakeClaude
) -> None:
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    common = ["minimal", "--manifest", str(study.manifest_path), "--pilot", "--approve-budget", *roots,
              "--model", "claude-haiku-5-5", "--budget-usd", "1", "--output", str(tmp_path / LONG_NAME)]
    cli = _invoke([*common, "--transport", "cli", "--claude-bin", str(fake_claude.path)])
    _one_line(cli, "the file name is too long")
    assert fake_claude.calls == []
    http = _invoke([*common, "--transport", "http", "--rehearsal", "--input-usd-per-million", "1",
                    "--output-usd-per-million", "1"])
    _one_line(http, "the file name is too long")
    dry = _invoke(["minimal", "--dry-run", "--manifest", str(study.manifest_path), "--output",
                   str(tmp_path / LONG_NAME)])
    _one_line(dry, "the file name is too long")
    assert [p.name for p in tmp_path.iterdir()] == ["fake-claude"], "nothing was written"


def test_a_companion_name_too_long_is_refused_before_anything(
    tmp_path: Path, study: ExampleStudy, fake_claude: FakeClaude
) -> None:
    from test_adjudication_support import observation, write_ledger

    ledger = write_ledger(tmp_path / "ledger.json", study, [observation("lantern-discovery", "repository-only", "a")])
    root = f"--root=lantern-cache={study.roots['lantern-cache']}"
    result = _invoke(["adjudicate", str(ledger), "--manifest", str(study.manifest_path), root, "--approve-budget",
                      "--model", "claude-haiku-5-5", "--budget-usd", "1", "--claude-bin", str(fake_claude.path),
                      "--output", str(tmp_path / LONG_NAME)])
    _one_line(result, "the file name is too long")
    assert fake_claude.calls == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fake-claude", "ledger.json"], "nothing was written"


def test_a_controlled_ledger_name_too_long_is_refused_before_anything(
    tmp_path: Path, controlled: ControlledExample
) -> None:
    for extra in (["--dry-run"], []):
        result = _invoke(["run", str(controlled.plan), str(controlled.suite), "--providers", str(controlled.providers),
                          "--repositories", str(controlled.repositories), "--ledger", str(tmp_path / LONG_NAME),
                          *extra])
        _one_line(result, "the file name is too long")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", ["directory", "missing", "name too long"])
def test_user_files_that_cannot_be_read_are_one_line(tmp_path: Path, study: ExampleStudy, kind: str) -> None:
    target = {"directory": tmp_path, "missing": tmp_path / "absent.json", "name too long": tmp_path / LONG_NAME}[kind]
    manifest = str(study.manifest_path)
    for args in (["minimal", "--dry-run", "--manifest", str(target)],
                 ["minimal", "--dry-run", "--manifest", manifest, "--mcp-config", str(target)]):
        result = _invoke(args)
        assert result.exception is None or isinstance(result.exception, SystemExit), (args, repr(result.exception))
        assert result.exit_code == 2, (args, result.output)
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
