"""Read-only git access at a pin: HEAD, cleanliness, the tree listing and blobs.

Git runs as ``git -C <root> …`` with argv lists, a sanitised environment (no user or
system config), a timeout and an output bound. Reads come from the object database at the
pin, so edits in the working tree are invisible.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

GIT_TIMEOUT_S = 10.0
GIT_OUTPUT_LIMIT = 4 * 1024 * 1024


class GitError(RuntimeError):
    """A git command failed, timed out or printed more than its bound."""


def git_env() -> dict[str, str]:
    """The environment git runs with: PATH only, user and system config ignored."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "LC_ALL": "C",
    }


def run_git(root: Path, *args: str, stdin: bytes | None = None, limit: int = GIT_OUTPUT_LIMIT) -> bytes:
    """Run ``git -C root args…`` and return its stdout.

    Raises:
        GitError: on a non-zero exit, a timeout, a missing git, or output over ``limit`` bytes.
    """
    try:
        completed = subprocess.run(
            ["git", "-C", str(root), *args],
            input=stdin,
            capture_output=True,
            env=git_env(),
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise GitError(f"git {args[0]} failed in {root}: {error.__class__.__name__}") from None
    if completed.returncode != 0:
        raise GitError(f"git {args[0]} failed in {root} (exit {completed.returncode})")
    if len(completed.stdout) > limit:
        raise GitError(f"git {args[0]} printed more than {limit} bytes")
    return completed.stdout


def head(root: Path) -> str:
    """The 40-hex commit of HEAD."""
    return run_git(root, "rev-parse", "HEAD").decode().strip()


def is_clean(root: Path) -> bool:
    """Whether ``git status --porcelain`` is empty (no changes, no untracked files)."""
    return run_git(root, "status", "--porcelain").strip() == b""


@dataclass(frozen=True)
class TreeEntry:
    """One ``git ls-tree -r -l`` line: ``mode``, ``kind`` (blob/commit), ``oid``, ``size`` (bytes or None), ``path``."""

    mode: str
    kind: str
    oid: str
    size: int | None
    path: str


def list_tree(root: Path, pin: str) -> list[TreeEntry]:
    """Every entry of the tree at ``pin`` (recursive, with blob sizes).

    Entries whose path is not valid UTF-8 are left out: no study tool can name them.
    """
    raw = run_git(root, "ls-tree", "-r", "-l", "-z", "--full-tree", pin)
    entries: list[TreeEntry] = []
    for record in raw.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, kind, oid, size = meta.decode().split()
        try:
            name = path.decode("utf-8")
        except UnicodeDecodeError:
            continue
        entries.append(TreeEntry(mode, kind, oid, int(size) if size.isdigit() else None, name))
    return entries


def read_blobs(root: Path, oids: list[str]) -> dict[str, bytes]:
    """Contents of blobs by object id, read with one ``git cat-file --batch``.

    Raises:
        GitError: if an object is missing or the output is malformed.
    """
    if not oids:
        return {}
    total_limit = GIT_OUTPUT_LIMIT * 64
    raw = run_git(root, "cat-file", "--batch", stdin="".join(f"{o}\n" for o in oids).encode(), limit=total_limit)
    blobs: dict[str, bytes] = {}
    offset = 0
    for oid in oids:
        newline = raw.index(b"\n", offset)
        header = raw[offset:newline].decode().split()
        if len(header) != 3 or header[0] != oid:
            raise GitError(f"object {oid} is missing")
        size = int(header[2])
        blobs[oid] = raw[newline + 1 : newline + 1 + size]
        offset = newline + 1 + size + 1
    return blobs


def commit_exists(root: Path, pin: str) -> bool:
    """Whether ``pin`` names a commit in the repository at ``root``."""
    try:
        run_git(root, "cat-file", "-e", f"{pin}^{{commit}}")
    except GitError:
        return False
    return True


def path_exists_at(root: Path, pin: str, path: str) -> bool:
    """Whether ``path`` is a blob in the tree at ``pin``."""
    try:
        kind = run_git(root, "cat-file", "-t", f"{pin}:{path}").decode().strip()
    except GitError:
        return False
    return kind == "blob"


def make_pinned_clone(root: Path, pin: str, dest: Path) -> Path:  # TEMP stub until the hardening branch lands
    raise GitError("not yet")


def remove_pinned_clone(path: Path) -> None:  # TEMP stub
    return None
