"""The private read-only pinned clone (``agentstudy.io.pinned_clone``) over real git repositories.

The source is a trapped checkout with history after the pin, another branch, tags, an
untracked file and its own config keys; the clone must hold the pin's history and nothing else,
be read-only, stay readable with hardened git, and no trap may fire while it is made.
"""

from __future__ import annotations

import os
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentstudy.io.git import GitError, run_git
from agentstudy.io.pinned_clone import PINNED_REF, make_pinned_clone, remove_pinned_clone, upload_pack_command

from git_traps import TRAPS, arm, fired, plain_git, unhardened_env

UNTRACKED = b"untracked, never committed\n"


def _git(root: Path, *args: str) -> str:
    identity = ["-c", "user.name=x", "-c", "user.email=x@example.com", "-c", "commit.gpgsign=false"]
    completed = subprocess.run(["git", "-C", str(root), *identity, *args], capture_output=True, text=True,
                               env=unhardened_env(), check=True)
    return completed.stdout.strip()


def _commit(root: Path, name: str, text: str) -> str:
    (root / name).write_text(text, encoding="utf-8")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", name)
    return _git(root, "rev-parse", "HEAD")


@dataclass(frozen=True)
class Source:
    root: Path
    first: str
    pin: str
    later: str
    side: str
    dangling: str
    canaries: Path


@pytest.fixture
def source(tmp_path: Path) -> Source:
    root = tmp_path / "source"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    first = _commit(root, "README.md", "# Source\n")
    pin = _commit(root, "docs.md", "pinned docs\n")
    _git(root, "tag", "-a", "-m", "at pin", "v-pin")
    later = _commit(root, "later.md", "after the pin\n")
    _git(root, "tag", "v-later")
    _git(root, "checkout", "-q", "-b", "side", first)
    side = _commit(root, "side.md", "side branch\n")
    _git(root, "checkout", "-q", "main")
    _git(root, "reset", "-q", "--hard", pin)
    dangling = _git(root, "commit-tree", "-m", "dangling", f"{pin}^{{tree}}")
    (root / "untracked.md").write_bytes(UNTRACKED)
    _git(root, "config", "agentstudy.planted", "source-only")
    canaries = arm(root, TRAPS, tmp_path / "traps")
    return Source(root, first, pin, later, side, dangling, canaries)


def _clone_git(clone: Path, *args: str) -> str:
    return run_git(clone, *args, bare=True).decode().strip()


def _source_rev_list(source: Source, pin: str) -> list[str]:
    return plain_git(source.root, "rev-list", pin).stdout.split()


def test_the_clone_holds_the_pin_history_and_nothing_else(source: Source, tmp_path: Path) -> None:
    clone = make_pinned_clone(source.root, source.pin, tmp_path / "clone")
    try:
        assert clone == tmp_path / "clone"
        assert _clone_git(clone, "rev-list", "--all").split() == _source_rev_list(source, source.pin)
        assert _clone_git(clone, "rev-parse", "HEAD") == source.pin
        assert _clone_git(clone, "symbolic-ref", "HEAD") == PINNED_REF
        assert _clone_git(clone, "for-each-ref", "--format=%(refname)").split() == [PINNED_REF]
        for absent in (source.later, source.side, source.dangling):
            with pytest.raises(GitError):
                run_git(clone, "cat-file", "-e", absent, bare=True)
        untracked_oid = plain_git(source.root, "hash-object", "--no-filters", "untracked.md").stdout.strip()
        with pytest.raises(GitError):
            run_git(clone, "cat-file", "-e", untracked_oid, bare=True)
        assert run_git(clone, "cat-file", "-p", f"{source.pin}:README.md", bare=True) == b"# Source\n"
        assert run_git(clone, "cat-file", "-p", f"{source.pin}:docs.md", bare=True) == b"pinned docs\n"
    finally:
        remove_pinned_clone(clone)
    assert not clone.exists()
    assert fired(source.canaries) == set()


def test_the_clone_has_no_template_hooks_or_source_config(source: Source, tmp_path: Path) -> None:
    clone = make_pinned_clone(source.root, source.pin, tmp_path / "clone")
    try:
        assert {p.name for p in clone.iterdir()} == {"HEAD", "config", "objects", "refs"}
        assert not (clone / "hooks").exists() and not (clone / "description").exists()
        names = [p.name for p in clone.rglob("*")]
        assert "untracked.md" not in names and "FETCH_HEAD" not in names
        keys = set(plain_git(clone, "config", "--file", str(clone / "config"), "--list", "--name-only").stdout.split())
        assert keys == {"core.repositoryformatversion", "core.filemode", "core.bare"}
        assert "fsmonitor" not in (clone / "config").read_text(encoding="utf-8")
        assert "planted" not in (clone / "config").read_text(encoding="utf-8")
    finally:
        remove_pinned_clone(clone)


def test_the_clone_is_read_only_and_readable(source: Source, tmp_path: Path) -> None:
    clone = make_pinned_clone(source.root, source.pin, tmp_path / "clone")
    try:
        for directory, _dirs, files in os.walk(clone):
            assert stat.S_IMODE(Path(directory).stat().st_mode) == 0o555, directory
            for name in files:
                path = Path(directory) / name
                assert not path.is_symlink()
                assert stat.S_IMODE(path.stat().st_mode) == 0o444, path
        plain = subprocess.run(["git", "--git-dir", str(clone), "cat-file", "-p", f"{source.pin}:README.md"],
                               capture_output=True, env=unhardened_env(), check=True)
        assert plain.stdout == b"# Source\n"
    finally:
        remove_pinned_clone(clone)
    assert not clone.exists()


@pytest.mark.parametrize("which", ["first", "side", "dangling"])
def test_any_commit_of_the_source_can_be_pinned(source: Source, tmp_path: Path, which: str) -> None:
    pin = getattr(source, which)
    clone = make_pinned_clone(source.root, pin, tmp_path / "clone")
    try:
        assert _clone_git(clone, "rev-parse", "HEAD") == pin
        assert _clone_git(clone, "rev-list", "--all").split() == _source_rev_list(source, pin)
    finally:
        remove_pinned_clone(clone)
    assert fired(source.canaries) == set()


@pytest.mark.parametrize("pin", ["0" * 40, "abc123", "HEAD", "--upload-pack=x", "A" * 40])
def test_a_bad_pin_raises_and_leaves_nothing(source: Source, tmp_path: Path, pin: str) -> None:
    with pytest.raises(GitError):
        make_pinned_clone(source.root, pin, tmp_path / "clone")
    assert not (tmp_path / "clone").exists()


def test_an_existing_destination_is_refused_untouched(source: Source, tmp_path: Path) -> None:
    dest = tmp_path / "clone"
    dest.mkdir()
    (dest / "keep").write_bytes(b"mine\n")
    with pytest.raises(GitError, match="existing"):
        make_pinned_clone(source.root, source.pin, dest)
    assert (dest / "keep").read_bytes() == b"mine\n"


def test_a_non_repository_source_raises_and_leaves_nothing(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(GitError):
        make_pinned_clone(plain, "1" * 40, tmp_path / "clone")
    assert not (tmp_path / "clone").exists()


def test_remove_pinned_clone_of_a_missing_path_is_a_no_op(tmp_path: Path) -> None:
    remove_pinned_clone(tmp_path / "never")
    assert not (tmp_path / "never").exists()


def test_upload_pack_command_is_hardened() -> None:
    command = upload_pack_command()
    assert command.startswith("git -c core.fsmonitor=false -c core.hooksPath=/dev/null")
    assert command.endswith("-c uploadpack.allowAnySHA1InWant=true upload-pack")
