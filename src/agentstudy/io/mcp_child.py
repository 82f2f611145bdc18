"""The private surroundings of one MCP server child: its environment, HOME, TMPDIR and stderr file.

The SDK's stdio client would start the server with ``HOME``, ``SHELL``, ``USER``… copied from
our own environment; instead the child gets ``io.environment.allowlisted_environment`` with a
fresh private ``HOME`` and ``TMPDIR`` (removed with the scratch directory) plus the server's
configured ``env``. The SDK lays its defaults *under* the given environment, so every name it
would copy is set here (``SHELL`` to ``/bin/sh``): the child sees exactly this environment.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from agentstudy.io.environment import allowlisted_environment

STDERR_TAIL_BYTES = 500
"""How much of the end of the server's stderr an error message quotes."""
CHILD_SHELL = "/bin/sh"
"""The child's ``SHELL``: set so that the SDK cannot copy ours."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")


@dataclass(frozen=True)
class McpChild:
    """Where one server child lives.

    Attributes:
        env: the child's complete environment.
        home: its private ``HOME``; ``tmpdir`` its private ``TMPDIR`` (both exist while open).
        stderr_path: the file its stderr is written to.
    """

    env: dict[str, str]
    home: Path
    tmpdir: Path
    stderr_path: Path


@contextmanager
def mcp_child(extra: Mapping[str, str] | None = None, parent: Mapping[str, str] | None = None) -> Iterator[McpChild]:
    """A scratch directory with ``home/``, ``tmp/`` and ``stderr.log``, and the child's environment.

    Args:
        extra: the server's configured ``env`` (set last; the API keys are dropped whatever it says).
        parent: where allowlisted names are copied from (default ``os.environ``).

    Yields:
        The :class:`McpChild`; the whole scratch directory is removed on exit.

    Raises:
        OSError: the scratch directory cannot be created.
    """
    scratch = Path(tempfile.mkdtemp(prefix="agentstudy-mcp-"))
    try:
        home, tmpdir = scratch / "home", scratch / "tmp"
        home.mkdir()
        tmpdir.mkdir()
        env = allowlisted_environment(
            os.environ if parent is None else parent,
            home=str(home),
            tmpdir=str(tmpdir),
            extra={"SHELL": CHILD_SHELL, **(extra or {})},
        )
        yield McpChild(env, home, tmpdir, scratch / "stderr.log")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def stderr_tail(path: Path, limit: int = STDERR_TAIL_BYTES) -> str:
    """The last ``limit`` bytes of ``path`` as one line: control characters become spaces; ``""`` if none.

    Never raises: a missing or unreadable file gives ``""``.
    """
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - limit))
            data = handle.read(limit)
    except OSError:
        return ""
    return " ".join(_CONTROL.sub(" ", data.decode("utf-8", "replace")).split())
