"""Tests for the private ledger file and the output-path checks (``agentstudy.io.ledger_store``)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from agentstudy.io.ledger_store import LedgerFile, OutputPathError, resolve_output


def dump(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


FIRST: dict[str, Any] = {"status": "running", "observations": []}


def test_ledger_is_created_with_mode_0600_and_holds_the_first_document(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    old_umask = os.umask(0)
    try:
        ledger = LedgerFile(path, FIRST)
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert ledger.path == path
    assert path.read_text(encoding="utf-8") == dump(FIRST)


def test_ledger_refuses_an_existing_path_without_touching_it(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    path.write_bytes(b"previous run, keep me")
    path.chmod(0o640)
    before = path.stat()
    with pytest.raises(OutputPathError):
        LedgerFile(path, FIRST)
    after = path.stat()
    assert path.read_bytes() == b"previous run, keep me"
    assert stat.S_IMODE(after.st_mode) == 0o640
    assert after.st_size == before.st_size
    assert after.st_mtime_ns == before.st_mtime_ns


def test_ledger_refuses_an_existing_symlink(tmp_path: Path) -> None:
    target = tmp_path / "target.json"
    target.write_bytes(b"target")
    link = tmp_path / "ledger.json"
    link.symlink_to(target)
    with pytest.raises(OutputPathError):
        LedgerFile(link, FIRST)
    assert target.read_bytes() == b"target"
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "nowhere.json")
    with pytest.raises(OutputPathError):
        LedgerFile(dangling, FIRST)
    assert not (tmp_path / "nowhere.json").exists()


def test_checkpoint_writes_pretty_json_with_trailing_newline(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    ledger = LedgerFile(path, FIRST)
    document = {"status": "running", "budget": {"cap": "1.00", "spent": "0.100000"}, "note": "caf\u00e9 \u2713"}
    ledger.checkpoint(document)
    text = path.read_text(encoding="utf-8")
    assert text == dump(document)
    assert text.endswith("}\n")
    assert json.loads(text) == document
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_checkpoint_replaces_atomically_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    ledger = LedgerFile(path, FIRST)
    before = path.stat().st_ino
    long_document = {"observations": [{"i": i, "answer": "x" * 200} for i in range(50)], "status": "running"}
    ledger.checkpoint(long_document)
    assert path.stat().st_ino != before, "a checkpoint renames a new file over the ledger"
    short_document = {"status": "blocked"}
    ledger.checkpoint(short_document)
    assert path.read_bytes() == dump(short_document).encode("utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger.json"]


def test_many_checkpoints_keep_only_the_last(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    ledger = LedgerFile(path, FIRST)
    documents: list[dict[str, Any]] = [{"n": n, "pad": "p" * ((n * 37) % 300)} for n in range(20)]
    for document in documents:
        ledger.checkpoint(document)
        assert path.read_text(encoding="utf-8") == dump(document)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_failed_checkpoint_keeps_the_previous_ledger(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    ledger = LedgerFile(path, FIRST)
    with pytest.raises(TypeError):
        ledger.checkpoint({"not serialisable": object()})
    assert path.read_text(encoding="utf-8") == dump(FIRST)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger.json"]


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    checkout = tmp_path / "checkout"
    (checkout / "sub").mkdir(parents=True)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    outside = tmp_path / "private"
    outside.mkdir()
    return {"checkout": checkout, "corpus": corpus, "outside": outside, "tmp": tmp_path}


def test_resolve_output_accepts_a_new_path_outside_the_roots(layout: dict[str, Path]) -> None:
    target = resolve_output(layout["outside"] / "run.json", [layout["checkout"], layout["corpus"]])
    assert target == (layout["outside"] / "run.json").resolve()
    assert target.is_absolute()
    assert not target.exists()


def test_resolve_output_resolves_the_parent_through_symlinks(layout: dict[str, Path]) -> None:
    alias = layout["tmp"] / "alias"
    alias.symlink_to(layout["outside"])
    target = resolve_output(alias / "run.json", [layout["checkout"]])
    assert target == layout["outside"].resolve() / "run.json"


def test_resolve_output_refuses_an_existing_file(layout: dict[str, Path]) -> None:
    existing = layout["outside"] / "run.json"
    existing.write_text("{}")
    with pytest.raises(OutputPathError):
        resolve_output(existing, [layout["checkout"]])
    assert existing.read_text() == "{}"


def test_resolve_output_refuses_an_existing_symlink_even_dangling(layout: dict[str, Path]) -> None:
    dangling = layout["outside"] / "run.json"
    dangling.symlink_to(layout["outside"] / "nowhere.json")
    with pytest.raises(OutputPathError):
        resolve_output(dangling, [layout["checkout"]])


def test_resolve_output_refuses_a_missing_directory(layout: dict[str, Path]) -> None:
    with pytest.raises(OutputPathError):
        resolve_output(layout["outside"] / "missing" / "run.json", [layout["checkout"]])


def test_resolve_output_refuses_a_parent_that_is_a_file(layout: dict[str, Path]) -> None:
    blocker = layout["outside"] / "file"
    blocker.write_text("x")
    with pytest.raises(OutputPathError):
        resolve_output(blocker / "run.json", [layout["checkout"]])


@pytest.mark.parametrize("inside", ["checkout", "corpus"])
def test_resolve_output_refuses_a_path_inside_a_forbidden_root(layout: dict[str, Path], inside: str) -> None:
    roots = [layout["checkout"], layout["corpus"]]
    with pytest.raises(OutputPathError):
        resolve_output(layout[inside] / "run.json", roots)
    with pytest.raises(OutputPathError):
        resolve_output(layout["checkout"] / "sub" / "run.json", roots)
    assert not (layout[inside] / "run.json").exists()


def test_resolve_output_refuses_the_root_itself_path(layout: dict[str, Path]) -> None:
    new_root = layout["tmp"] / "not-yet"
    with pytest.raises(OutputPathError):
        resolve_output(new_root, [new_root])


def test_resolve_output_refuses_a_parent_symlink_into_a_forbidden_root(layout: dict[str, Path]) -> None:
    link = layout["outside"] / "looks-private"
    link.symlink_to(layout["checkout"] / "sub")
    with pytest.raises(OutputPathError):
        resolve_output(link / "run.json", [layout["checkout"]])
    assert not (layout["checkout"] / "sub" / "run.json").exists()


def test_resolve_output_refuses_when_the_forbidden_root_is_given_through_a_symlink(layout: dict[str, Path]) -> None:
    root_alias = layout["tmp"] / "checkout-alias"
    root_alias.symlink_to(layout["checkout"])
    with pytest.raises(OutputPathError):
        resolve_output(layout["checkout"] / "run.json", [root_alias])


def test_resolve_output_allows_a_sibling_with_a_common_prefix(layout: dict[str, Path]) -> None:
    sibling = layout["tmp"] / "checkout-results"
    sibling.mkdir()
    target = resolve_output(sibling / "run.json", [layout["checkout"]])
    assert target == sibling.resolve() / "run.json"
