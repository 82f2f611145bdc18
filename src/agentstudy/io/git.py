"""Read-only git access at a pin: HEAD, cleanliness, the tree listing and blobs.

Git runs hardened against the repositories it reads (issue 15): argv lists only, an
allowlisted environment (``git_env``: no user or system config, no replace objects, no
optional index writes, ``HOME`` an absent directory) and ``-c`` overrides that beat anything
in the repository's own config (``git_argv``): no fsmonitor command, no hooks, no untracked
cache, no global attributes, and every filter driver the repository's config names
(includes followed) emptied and made optional, so ``git status`` runs no clean or process
filter. Nothing a checkout's ``.git/config`` or ``.gitattributes`` says is ever executed.
Reads come from the object database at the pin, so edits in the working tree are invisible.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

GIT_TIMEOUT_S = 10.0
GIT_OUTPUT_LIMIT = 4 * 1024 * 1024
ABSENT_HOME = "/nonexistent"
"""``HOME`` of every git child: a directory that does not exist, so no ``~`` file is read."""
HARDENING_OVERRIDES: tuple[str, ...] = (
    "core.fsmonitor=false",
    f"core.hooksPath={os.devnull}",
    "core.untrackedCache=false",
    f"core.attributesFile={os.devnull}",
    "core.useReplaceRefs=false",
    "safe.bareRepository=explicit",
    "gc.auto=0",
    "maintenance.auto=false",
)
"""``-c`` settings given to every git call; command-line config beats the repository's."""
FILTER_KEYS: tuple[str, ...] = ("clean", "smudge", "process")
"""The ``filter.<driver>.*`` keys that name a command; each is overridden with an empty value."""


class GitError(RuntimeError):
    """A git command failed, timed out or printed more than its bound."""


def git_env() -> dict[str, str]:
    """The complete environment of every git child: ``PATH`` from ours, nothing else inherited.

    Returns:
        ``PATH``, ``HOME`` (``ABSENT_HOME``), ``LC_ALL=C`` and the ``GIT_*`` switches that turn
        off system and global config, system attributes, replace refs, terminal prompts and
        optional locks (``git status`` never rewrites the index, so no index hook can fire).
    """
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": ABSENT_HOME,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_NO_REPLACE_OBJECTS": "1",
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
        "LC_ALL": "C",
    }


def filter_overrides(drivers: Iterable[str]) -> list[str]:
    """``-c`` arguments that disable each named filter driver: empty commands, not required.

    Args:
        drivers: filter driver names (the ``<driver>`` of ``filter.<driver>.clean``).

    Returns:
        ``["-c", "filter.<driver>.clean=", …, "-c", "filter.<driver>.required=false"]`` in
        driver order (4 settings per driver).

    Raises:
        GitError: a name holding ``=`` (``-c`` would split it) or a control character.
    """
    argv: list[str] = []
    for driver in drivers:
        if "=" in driver or any(ord(c) < 32 for c in driver):
            raise GitError(f"filter driver name {driver!r} cannot be neutralised")
        for key in FILTER_KEYS:
            argv += ["-c", f"filter.{driver}.{key}="]
        argv += ["-c", f"filter.{driver}.required=false"]
    return argv


def git_argv(repository: Path, drivers: Iterable[str] = (), *, bare: bool = False) -> list[str]:
    """The hardened argv prefix of a git call on ``repository``; append the subcommand. Pure.

    Args:
        repository: a checkout (``git -C repository``) or, with ``bare``, a bare repository
            (``git --git-dir=repository``; bare repositories are never discovered implicitly).
        drivers: filter driver names to disable (see ``configured_filter_drivers``).

    Returns:
        ``["git", "--no-pager", "-C", repository, "-c", …]`` with ``HARDENING_OVERRIDES`` and
        ``filter_overrides(drivers)``.

    Raises:
        GitError: from ``filter_overrides``.
    """
    where = [f"--git-dir={repository}"] if bare else ["-C", str(repository)]
    overrides = [arg for setting in HARDENING_OVERRIDES for arg in ("-c", setting)]
    return ["git", "--no-pager", *where, *overrides, *filter_overrides(drivers)]


def _run(
    argv: Sequence[str], what: str, where: Path, stdin: bytes | None, limit: int, timeout_s: float = GIT_TIMEOUT_S
) -> bytes:
    """Run a complete git argv with ``git_env()``; its stdout (raises ``GitError``)."""
    try:
        completed = subprocess.run(
            list(argv),
            input=stdin,
            capture_output=True,
            env=git_env(),
            timeout=timeout_s,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise GitError(f"git {what} failed in {where}: {error.__class__.__name__}") from None
    if completed.returncode != 0:
        raise GitError(f"git {what} failed in {where} (exit {completed.returncode})")
    if len(completed.stdout) > limit:
        raise GitError(f"git {what} printed more than {limit} bytes")
    return completed.stdout


def parse_filter_drivers(names: bytes) -> tuple[str, ...]:
    """Driver names in ``git config --list --name-only -z`` output, sorted, each once. Pure.

    A key ``filter.<driver>.<key>`` names ``<driver>`` (which may hold dots); undecodable
    names are kept with replacement characters, so ``filter_overrides`` refuses them.
    """
    drivers: set[str] = set()
    for raw in names.split(b"\0"):
        name = raw.decode("utf-8", "replace")
        section, _, rest = name.partition(".")
        driver, dot, _key = rest.rpartition(".")
        if section.lower() == "filter" and dot and driver:
            drivers.add(driver)
    return tuple(sorted(drivers))


def configured_filter_drivers(repository: Path, *, bare: bool = False) -> tuple[str, ...]:
    """Every filter driver the repository's config names, included files followed.

    ``git config --list`` runs under the same hardening and executes nothing; outside a
    repository (or for a ``bare`` path that does not exist yet) the list is empty.

    Raises:
        GitError: if git fails (e.g. ``repository`` is not a directory, or its config is malformed).
    """
    argv = [*git_argv(repository, bare=bare), "config", "--list", "--name-only", "-z", "--includes"]
    return parse_filter_drivers(_run(argv, "config", repository, None, GIT_OUTPUT_LIMIT))


def run_git(
    root: Path,
    *args: str,
    stdin: bytes | None = None,
    limit: int = GIT_OUTPUT_LIMIT,
    bare: bool = False,
    timeout_s: float = GIT_TIMEOUT_S,
) -> bytes:
    """Run hardened ``git -C root args…`` (``--git-dir=root`` with ``bare``) and return its stdout.

    The repository's filter drivers are listed first and disabled for the call; ``timeout_s``
    bounds the call in seconds, ``limit`` its stdout in bytes.

    Raises:
        GitError: on a non-zero exit, a timeout, a missing git, output over ``limit`` bytes, or
            a filter driver name that cannot be disabled.
    """
    drivers = configured_filter_drivers(root, bare=bare)
    what = next((arg for arg in args if not arg.startswith("-") and "=" not in arg), "command")
    return _run([*git_argv(root, drivers, bare=bare), *args], what, root, stdin, limit, timeout_s)


def head(root: Path) -> str:
    """The 40-hex commit of HEAD."""
    return run_git(root, "rev-parse", "HEAD").decode().strip()


def is_clean(root: Path) -> bool:
    """Whether ``git status --porcelain`` is empty (no changes, no untracked files).

    Untracked files are always listed (whatever ``status.showUntrackedFiles`` says) and
    submodules are not entered (their contents are never exported, and entering one would
    run git under that submodule's own config).
    """
    argv = ("status", "--porcelain", "--untracked-files=all", "--ignore-submodules=all")
    return run_git(root, *argv).strip() == b""


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



def toplevel(path: Path) -> Path:
    """The top level of the checkout holding ``path`` (``git rev-parse --show-toplevel``), resolved.

    Raises:
        GitError: ``path`` is in no checkout (or is no directory), or git fails.
    """
    raw = run_git(path, "rev-parse", "--show-toplevel").decode("utf-8", "surrogateescape").strip()
    if not raw:
        raise GitError(f"git rev-parse --show-toplevel printed nothing in {path}")
    return Path(raw).resolve()


def enclosing_checkouts(path: Path) -> tuple[Path, ...]:
    """Every checkout whose work tree holds ``path``, innermost first (resolved top levels).

    Starts at ``path`` itself (a subdirectory gives its checkout's top level; a top level gives
    itself) and climbs: from each top level's parent, the next enclosing checkout, until git
    finds none. Discovery runs hardened (``run_git``); a directory git refuses to read (for
    example one owned by another user) ends the climb.
    """
    found: list[Path] = []
    current = path
    while True:
        try:
            top = toplevel(current)
        except GitError:
            break
        if top in found:
            break
        found.append(top)
        if top.parent == top:
            break
        current = top.parent
    return tuple(found)
