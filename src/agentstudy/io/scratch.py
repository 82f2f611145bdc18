"""Temporary directories that name their owner, and the sweep of those whose owner died (issue 20, item 4).

An attempt's export, its private HOME/TMPDIR and the MCP server's snapshot are ``mkdtemp``
directories removed when the attempt ends. A process killed mid-attempt (a Ray worker getting
``SIGKILL``, an OOM kill) cannot remove them. So each one made by ``owned_mkdtemp`` gets a marker
file beside it, ``<directory>.owner``, holding ``<pid namespace inode>_<pid>_<start time in clock
ticks>`` of the process that made it; ``release`` removes the marker with the directory. The
directory's own name is unchanged (``agentstudy-<kind>-<random>``, the same length for every
process: the agent sees its working directory, so a longer or varying name would change the
tokens of an attempt). ``sweep_stale`` removes, in the temporary directory, every marked directory
of this user whose owner is in this pid namespace and no longer runs (no such pid, or a pid reused
by a process that started at another time), and markers left without their directory. A directory
of a live process, of another pid namespace (a container sharing ``/tmp``) or without a marker is
never touched. Without ``/proc`` the owner is ``x`` and nothing is ever swept.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from functools import cache
from pathlib import Path

_OWNER = re.compile(r"^(?P<ns>\d+)_(?P<pid>\d+)_(?P<start>\d+)$")
MARKER = ".owner"


def _start_ticks(pid: int) -> str | None:
    """Field 22 of ``/proc/<pid>/stat`` (the start time in clock ticks since boot), or ``None`` if no such pid."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[19]


@cache
def _namespace() -> str | None:
    with contextlib.suppress(OSError, ValueError):
        return str(os.stat("/proc/self/ns/pid").st_ino)
    return None


def owner_token() -> str:
    """This process's ``<pid namespace inode>_<pid>_<start ticks>``, or ``x`` without ``/proc``."""
    namespace, start = _namespace(), _start_ticks(os.getpid())
    return "x" if namespace is None or start is None else f"{namespace}_{os.getpid()}_{start}"


def owned_mkdtemp(kind: str, parent: Path | None = None) -> Path:
    """A fresh ``mkdtemp`` directory ``agentstudy-<kind>-…`` (mode 0700) in ``parent`` or the temp dir, marked
    with this process as its owner (``<directory>.owner``).

    ``kind`` is lower-case letters (``export``, ``attempt``, …). Remove it, then ``release`` it.
    Raises ``OSError`` if the disk refuses.
    """
    made = Path(tempfile.mkdtemp(prefix=f"agentstudy-{kind}-", dir=parent))
    try:
        _marker(made).write_text(owner_token(), encoding="ascii")
    except BaseException:  # a full disk can leave the marker created but empty: neither is left behind
        with contextlib.suppress(OSError):
            _marker(made).unlink()
        made.rmdir()
        raise
    return made


def release(directory: Path) -> None:
    """Remove the owner marker of ``directory`` (after the directory itself); nothing if there is none."""
    with contextlib.suppress(FileNotFoundError):
        _marker(directory).unlink()


def _marker(directory: Path) -> Path:
    return directory.with_name(directory.name + MARKER)


def _dead(token: str) -> bool:
    match = _OWNER.match(token.strip())
    if match is None or match["ns"] != _namespace():
        return False
    return _start_ticks(int(match["pid"])) != match["start"]


def _remove_tree(directory: Path) -> None:
    for path, _dirs, _files in os.walk(directory):
        with contextlib.suppress(OSError):
            Path(path).chmod(stat.S_IRWXU)  # a sealed export's directories
    shutil.rmtree(directory)


def sweep_stale(directory: Path | None = None) -> list[Path]:
    """Remove the marked directories of dead owners in ``directory`` (default: the temp dir); return them.

    Sealed exports (directories 0555) get write permission back first. Never raises: a
    directory that cannot be removed is left (and not returned).
    """
    where = Path(directory or tempfile.gettempdir())
    removed: list[Path] = []
    try:
        markers = [entry for entry in where.iterdir()
                   if entry.name.startswith("agentstudy-") and entry.name.endswith(MARKER)]
    except OSError:
        return removed
    for marker in markers:
        with contextlib.suppress(OSError, UnicodeDecodeError):
            if marker.is_symlink() or marker.stat().st_uid != os.getuid() or not _dead(marker.read_text("ascii")):
                continue
            owned = marker.with_name(marker.name[: -len(MARKER)])
            if owned.is_dir() and not owned.is_symlink():
                _remove_tree(owned)
                removed.append(owned)
            marker.unlink()
    return sorted(removed)


__all__ = ["MARKER", "owned_mkdtemp", "owner_token", "release", "sweep_stale"]
