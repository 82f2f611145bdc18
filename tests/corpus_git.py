"""Tiny git helpers for tests that build their own corpora: a fixed identity, no user or system config."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

GIT_ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@t.invalid", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t.invalid"}


def git(root: Path, *args: str) -> str:
    """``git -C root args…``; its stdout, stripped (raises on a non-zero exit)."""
    env = {"PATH": os.environ.get("PATH", os.defpath), **GIT_ENV}
    return subprocess.run(["git", "-C", str(root), *args], env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def committed_repo(root: Path, files: dict[str, str]) -> str:
    """A new repository at ``root`` with ``files`` (path -> text) in one commit; the commit's 40-hex id."""
    root.mkdir(parents=True)
    git(root, "init", "-q")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "c")
    return git(root, "rev-parse", "HEAD")
