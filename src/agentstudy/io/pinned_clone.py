"""A private, read-only bare clone holding only a pin's history (issue 15: servers that read git).

A server that needs a git repository (the ``{git}`` placeholder) gets this clone instead of
the user's checkout: a bare repository created from an empty template (no hooks, no
description, no ``info/``), one branch ``refs/heads/pinned`` at the pin with ``HEAD`` on it,
no tags, no other branch, nothing from the source's working tree or config. The fetch runs
under the hardening of ``agentstudy.io.git`` on both sides (the source's ``upload-pack`` gets
the same ``-c`` overrides), over the local file transport only. Then every file ends at 0444
and every directory at 0555.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from agentstudy.io.export import remove_export
from agentstudy.io.git import HARDENING_OVERRIDES, GitError, run_git

PINNED_REF = "refs/heads/pinned"
"""The clone's only ref; ``HEAD`` points to it."""
FETCH_TIMEOUT_S = 300.0
"""Wall-clock bound of the fetch (a corpus's whole history up to the pin); other steps use ``GIT_TIMEOUT_S``."""
_FULL_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
FETCH_OVERRIDES: tuple[str, ...] = (
    "protocol.version=2",
    "protocol.allow=never",
    "protocol.file.allow=always",
    "transfer.unpackLimit=1",
    "fetch.recurseSubmodules=false",
    "fetch.writeCommitGraph=false",
)
"""Client-side settings of the fetch: protocol v2 over the file transport only, one pack kept."""


def upload_pack_command() -> str:
    """The ``--upload-pack`` command run in the source (a shell string): hardened, and any commit may be asked for."""
    settings = (*HARDENING_OVERRIDES, "uploadpack.allowAnySHA1InWant=true")
    return shlex.join(["git", *(arg for setting in settings for arg in ("-c", setting)), "upload-pack"])


def make_pinned_clone(root: Path, pin: str, dest: Path) -> Path:
    """Create the read-only bare clone of ``root`` at ``pin`` in ``dest`` (which must not exist).

    Args:
        root: a git checkout (or repository) holding the commit ``pin``.
        pin: the full commit id (40 or 64 lowercase hex).
        dest: the new clone's path; its parent must exist.

    Returns:
        ``dest``: a bare repository whose ``git rev-list --all`` is ``git rev-list pin`` of the
        source, read-only (files 0444, directories 0555).

    Raises:
        GitError: a malformed pin, an existing ``dest``, a failed git step, or a clone whose
            ``HEAD`` is not the pin; nothing is left at ``dest``.
    """
    if not _FULL_SHA.fullmatch(pin):
        raise GitError("the pin must be a full lowercase hex commit id")
    if dest.exists() or dest.is_symlink():
        raise GitError(f"refusing to overwrite existing path {dest}")
    source = str(root.resolve())
    try:
        run_git(dest, "init", "--quiet", "--bare", "--template=", f"--initial-branch={PINNED_REF.rsplit('/', 1)[1]}",
                bare=True)
        overrides = [arg for setting in FETCH_OVERRIDES for arg in ("-c", setting)]
        run_git(dest, *overrides, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules",
                "--no-auto-gc", f"--upload-pack={upload_pack_command()}", "--", source, f"{pin}:{PINNED_REF}",
                bare=True, timeout_s=FETCH_TIMEOUT_S)
        if run_git(dest, "rev-parse", "--verify", "HEAD^{commit}", bare=True).decode().strip() != pin:
            raise GitError(f"the clone's HEAD is not the pin {pin}")
        seal(dest)
    except BaseException:
        remove_pinned_clone(dest)
        raise
    return dest


def seal(directory: Path) -> None:
    """Make every file under ``directory`` 0444 and every directory (``directory`` included) 0555."""
    for path in sorted(directory.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if path.is_symlink():
            continue
        path.chmod(0o555 if path.is_dir() else 0o444)
    directory.chmod(0o555)


def remove_pinned_clone(path: Path) -> None:
    """Restore write permission on every directory of a clone, then remove it (absent: no-op)."""
    remove_export(path)
