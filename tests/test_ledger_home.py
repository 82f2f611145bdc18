"""The ledger's home (issue 16, deliverable 5): ``--root`` is a checkout's top level, and the ledger
never lands in the work tree of a root or of any checkout that contains one.

Everything is real: git checkouts built in ``tmp_path``, the ``agentstudy`` command as a
subprocess, the fake ``claude`` (``--containment restricted`` via the fixture).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from agentstudy.io import git, ledger_store
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study

from checkout_run import run_agentstudy
from fakes import FakeClaude


def _pilot_repository(study: ExampleStudy) -> str:
    manifest = json.loads(study.manifest_path.read_text(encoding="utf-8"))
    return str(manifest["tasks"][0]["repository"])


def _minimal(study: ExampleStudy, fake: FakeClaude, output: Path, roots: dict[str, Path],
             *extra: str) -> subprocess.CompletedProcess[str]:
    return run_agentstudy(
        "minimal", "--manifest", str(study.manifest_path), "--pilot", "--transport", "cli", "--approve-budget",
        *(f"--root={name}={path}" for name, path in roots.items()), "--output", str(output),
        "--claude-bin", str(fake.path), "--model", "claude-haiku-5-5", "--budget-usd", "1", *extra,
    )


def _refused(result: subprocess.CompletedProcess[str], fake: FakeClaude, *needles: str) -> None:
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    for needle in needles:
        assert needle in result.stderr, result.stderr
    assert fake.records == [], "no attempt was started"


def _git_init(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(directory)], check=True)


def test_a_root_inside_a_checkout_cannot_put_the_ledger_in_that_checkout(
    tmp_path: Path, fake_claude: FakeClaude
) -> None:
    """The break: ``--root`` at a subdirectory let the ledger be written at the checkout's top level."""
    study = build_example_study(tmp_path / "study")
    name = _pilot_repository(study)
    checkout = study.roots[name]
    roots = {**study.roots, name: checkout / "docs"}
    output = checkout / "ledger.json"
    _refused(_minimal(study, fake_claude, output, roots), fake_claude, f"outside {checkout}")
    assert not output.exists()
    assert not list(checkout.glob(".ledger.json*")), "no temporary file either"


def test_a_root_that_is_not_its_checkouts_top_level_is_refused_naming_it(
    tmp_path: Path, fake_claude: FakeClaude
) -> None:
    study = build_example_study(tmp_path / "study")
    name = _pilot_repository(study)
    checkout = study.roots[name]
    roots = {**study.roots, name: checkout / "docs"}
    output = tmp_path / "ledger.json"
    _refused(_minimal(study, fake_claude, output, roots), fake_claude,
             f"--root {checkout / 'docs'} is not the top level of its checkout {checkout}")
    assert not output.exists()


def test_the_dry_run_refuses_a_root_below_the_top_level(tmp_path: Path) -> None:
    study = build_example_study(tmp_path / "study")
    name = _pilot_repository(study)
    subdirectory = study.roots[name] / "docs"
    result = run_agentstudy("minimal", "--manifest", str(study.manifest_path), "--dry-run", "--pilot",
                            f"--root={name}={subdirectory}")
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        f"agentstudy: error: {name}: --root {subdirectory} is not the top level of its checkout {study.roots[name]}"
    ]


def test_the_dry_run_names_a_missing_root_and_a_non_checkout_as_such(tmp_path: Path) -> None:
    study = build_example_study(tmp_path / "study")
    name = _pilot_repository(study)
    plain = tmp_path / "plain"
    plain.mkdir()
    for root, says in [(tmp_path / "missing", "is not a directory"), (plain, "is not a git checkout")]:
        result = run_agentstudy("minimal", "--manifest", str(study.manifest_path), "--dry-run", "--pilot",
                                f"--root={name}={root}")
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr.strip().splitlines() == [f"agentstudy: error: {name}: --root {root} {says}"]


def test_a_root_given_through_a_symlink_to_its_top_level_is_accepted(tmp_path: Path) -> None:
    study = build_example_study(tmp_path / "study")
    name = _pilot_repository(study)
    link = tmp_path / "via-link"
    link.symlink_to(study.roots[name])
    result = run_agentstudy("minimal", "--manifest", str(study.manifest_path), "--dry-run", "--pilot",
                            f"--root={name}={link}")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["repositoriesChecked"] == [name]


def test_the_ledger_stays_out_of_a_checkout_that_contains_a_root(tmp_path: Path, fake_claude: FakeClaude) -> None:
    """Corpus checkouts nested in another checkout: the outer work tree is forbidden too."""
    outer = tmp_path / "outer"
    _git_init(outer)
    study = build_example_study(outer / "study")
    for output in (outer / "ledger.json", outer / "results" / "ledger.json"):
        output.parent.mkdir(exist_ok=True)
        _refused(_minimal(study, fake_claude, output, study.roots), fake_claude, f"outside {outer}")
        assert not output.exists()


def test_a_ledger_beside_the_checkouts_is_still_written(tmp_path: Path, fake_claude: FakeClaude) -> None:
    study = build_example_study(tmp_path / "study")
    output = tmp_path / "study" / "ledger.json"
    result = _minimal(study, fake_claude, output, study.roots)
    assert result.returncode == 0, result.stderr
    assert json.loads(output.read_text(encoding="utf-8"))["status"] == "awaiting-adjudication"


def test_enclosing_checkouts_climb_from_a_subdirectory_through_nested_checkouts(tmp_path: Path) -> None:
    outer, inner = tmp_path / "outer", tmp_path / "outer" / "vendor" / "inner"
    _git_init(outer)
    _git_init(inner)
    (inner / "docs").mkdir()
    assert git.toplevel(inner / "docs") == inner.resolve()
    assert git.enclosing_checkouts(inner / "docs") == (inner.resolve(), outer.resolve())
    assert git.enclosing_checkouts(tmp_path) == ()
    expected = ((inner / "docs").resolve(), inner.resolve(), outer.resolve())
    assert ledger_store.forbidden_trees([inner / "docs"]) == expected
    (outer / "notes").mkdir()
    with pytest.raises(ledger_store.OutputPathError, match=f"outside {outer.resolve()}"):
        ledger_store.resolve_output(outer / "notes" / "ledger.json", [inner])
    assert ledger_store.resolve_output(tmp_path / "ledger.json", [inner]) == tmp_path.resolve() / "ledger.json"
