"""Booby-trapped git checkouts for the hardening tests (issue 15: "hermetic attempts").

Each trap makes a repository's own config or attributes name a command, a small shell script
that appends to a canary file under ``canaries/`` and fails. A git that honours the trap
writes the canary; hardened git never does. ``TRAPS`` names every kind; ``arm`` installs some
of them into a checkout without changing its commit (attributes go to ``$GIT_DIR/info``).
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

TRAPS: tuple[str, ...] = (
    "fsmonitor",
    "clean-filter",
    "process-filter",
    "included-filter",
    "conditional-filter",
    "hooks-path",
    "default-hooks",
)
HOOKS: tuple[str, ...] = ("post-index-change", "reference-transaction", "post-checkout", "pre-commit", "pre-auto-gc")


def unhardened_env() -> dict[str, str]:
    """The environment of the tests' own, unhardened git (no user or system config)."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CONFIG_NOSYSTEM": "1", "HOME": os.devnull}


def plain_git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Unhardened ``git -C root args`` (exit status not checked): what a naive tool would run."""
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, env=unhardened_env(),
                          timeout=60, check=False)


def _script(path: Path, canary: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\necho "$0 $*" >> "{canary}"\nexit 1\n', encoding="utf-8")
    path.chmod(0o755)
    return str(path)


def _config(root: Path, key: str, value: str, file: Path | None = None) -> None:
    where = ["--file", str(file)] if file else []
    subprocess.run(["git", "-C", str(root), "config", *where, key, value], env=unhardened_env(), check=True)


def _attribute(git_dir: Path, line: str) -> None:
    info = git_dir / "info"
    info.mkdir(parents=True, exist_ok=True)
    with (info / "attributes").open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")


def arm(root: Path, traps: tuple[str, ...], workspace: Path) -> Path:
    """Install ``traps`` into the checkout ``root``; return the (empty) canary directory.

    Scripts live in ``workspace/scripts``; each trap writes ``workspace/canaries/<trap>``.
    Every tracked file is then made stat-dirty, so ``git status`` must re-read it through
    whatever filter applies.
    """
    canaries = workspace / "canaries"
    canaries.mkdir(parents=True, exist_ok=True)
    git_dir = Path(plain_git(root, "rev-parse", "--absolute-git-dir").stdout.strip())
    scripts = workspace / "scripts"

    def script(trap: str, name: str | None = None) -> str:
        return _script(scripts / (name or trap), canaries / trap)

    for trap in traps:
        if trap == "fsmonitor":
            _config(root, "core.fsmonitor", script(trap))
        elif trap == "clean-filter":
            _config(root, "filter.trap.clean", script(trap, "clean"))
            _config(root, "filter.trap.smudge", script(trap, "smudge"))
            _config(root, "filter.trap.required", "true")
            _attribute(git_dir, "* filter=trap")
        elif trap == "process-filter":
            _config(root, "filter.Proc.Ess.process", script(trap))
            _config(root, "filter.Proc.Ess.required", "true")
            _attribute(git_dir, "*.md filter=Proc.Ess")
        elif trap == "included-filter":
            extra = workspace / "included.cfg"
            _config(root, "filter.inc.clean", script(trap), file=extra)
            _config(root, "include.path", str(extra))
            _attribute(git_dir, "README.md filter=inc")
        elif trap == "conditional-filter":
            extra = workspace / "conditional.cfg"
            _config(root, "filter.cond.clean", script(trap), file=extra)
            _config(root, f"includeIf.gitdir:{root.resolve()}/.path", str(extra))
            _attribute(git_dir, "*.txt filter=cond")
            _attribute(git_dir, "*.json filter=cond")
        elif trap == "hooks-path":
            for hook in HOOKS:
                _script(workspace / "hooks" / hook, canaries / trap)
            _config(root, "core.hooksPath", str(workspace / "hooks"))
        elif trap == "default-hooks":
            for hook in HOOKS:
                _script(git_dir / "hooks" / hook, canaries / trap)
        else:
            raise ValueError(trap)
    make_stat_dirty(root)
    return canaries


def make_stat_dirty(root: Path) -> None:
    """Move the mtime of every file outside ``.git`` so the index no longer vouches for it (no git runs)."""
    later = time.time() + 120
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            path = Path(directory) / name
            if path.is_file() and not path.is_symlink():
                os.utime(path, (later, later))


def fired(canaries: Path) -> set[str]:
    """The traps whose canary exists."""
    return {p.name for p in canaries.iterdir()} if canaries.exists() else set()
