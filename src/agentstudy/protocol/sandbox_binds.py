"""Which extra paths a server's sandbox may be given (``--sandbox-bind``, ``sandboxBinds``): pure checks.

The kernel's file systems are never bound from the host: ``/proc`` would show every process's
environment and command line, ``/sys`` and ``/dev`` the machine's devices. The server gets a
private ``/proc`` of its own pid namespace and a minimal ``/dev`` instead (``io.server_world``).
"""

from __future__ import annotations

import posixpath
from pathlib import PurePosixPath

KERNEL_DIRS: tuple[str, ...] = ("/proc", "/sys", "/dev")
"""Never bound from the host, nor anything under them."""


def kernel_bind_problem(path: str) -> str | None:
    """Why ``path`` (absolute) may not be a sandbox bind, or ``None``: it is ``/proc``, ``/sys``, ``/dev``
    or under one of them (issue 39). Pure; the path is normalised (``..``, ``//``), not resolved."""
    normal = PurePosixPath(posixpath.normpath("/" + path.lstrip("/")))
    for kernel in map(PurePosixPath, KERNEL_DIRS):
        if normal == kernel or kernel in normal.parents:
            return (f"--sandbox-bind {path} is refused: the host's {kernel} is never shown to the server "
                    "(the server has a private /proc of its own and a minimal /dev already)")
    return None
