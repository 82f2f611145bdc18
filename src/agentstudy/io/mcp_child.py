"""The private surroundings of one MCP server child: its environment, HOME, TMPDIR and stderr file.

The SDK's stdio client would start the server with ``HOME``, ``SHELL``, ``USER``… copied from
our own environment; instead the child gets ``io.environment.allowlisted_environment`` with a
fresh private ``HOME`` and ``TMPDIR`` (removed with the scratch directory) plus the server's
configured ``env``. The SDK lays its defaults *under* the given environment, so every name it
would copy is set here (``SHELL`` to ``/bin/sh``): the child sees exactly this environment.

What the server says (its stderr, an ``isError`` probe answer) is shown to the operator only
through :func:`server_text`: one line, at most ``SERVER_TEXT_BYTES``, with the values of its
configured ``env`` and of our API keys, and ``token=…``-like assignments, replaced by
``[redacted]`` (issue 18, item 5).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from agentstudy.io.environment import FORBIDDEN, allowlisted_environment
from agentstudy.io.scratch import owned_mkdtemp, release
from agentstudy.protocol.redaction import REDACTED

STDERR_TAIL_BYTES = 2048
"""How much of the end of the server's stderr an error message quotes (bytes)."""
SERVER_TEXT_BYTES = 2048
"""The most of the server's own text (bytes, UTF-8) an error message quotes (issue 18, item 5)."""

MIN_SECRET_CHARS = 4
"""Shorter configured values (``1``, ``on``) are not treated as secrets: replacing them would garble the text."""
CHILD_SHELL = "/bin/sh"
"""The child's ``SHELL``: set so that the SDK cannot copy ours."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")
_ASSIGNED_SECRET = re.compile(
    r"((?:(?:api[_-]?key|token|password|passwd|secret)[\"']?\s*[:=]\s*[\"']?)|(?:bearer\s+))"
    r"(?!\[redacted\])([^\s\"',;)}\]]+)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class McpChild:
    """Where one server child lives.

    Attributes:
        env: the child's complete environment.
        home: its private ``HOME``; ``tmpdir`` its private ``TMPDIR`` (both exist while open).
        stderr_path: the file its stderr is written to.
        secrets: values never to be shown from what the server says: its configured ``env``
            values and our API keys (see :func:`server_text`).
    """

    env: dict[str, str]
    home: Path
    tmpdir: Path
    stderr_path: Path
    secrets: tuple[str, ...] = ()


def seed_state(state: str | None, home: Path, tmpdir: Path) -> None:
    """Copy a checkout's prepared state (``state/home`` and ``state/tmp``, issue 32) into a server's fresh
    private ``home`` and ``tmpdir``; nothing when ``state`` is ``None``. Symbolic links are copied as links.

    Raises:
        OSError: the state cannot be copied.
    """
    if state is None:
        return
    for part, target in (("home", home), ("tmp", tmpdir)):
        source = Path(state) / part
        if source.is_dir():
            shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)


@contextmanager
def mcp_child(extra: Mapping[str, str] | None = None, parent: Mapping[str, str] | None = None,
              state: str | None = None) -> Iterator[McpChild]:
    """A scratch directory with ``home/``, ``tmp/`` and ``stderr.log``, and the child's environment.

    Args:
        extra: the server's configured ``env`` (set last; the API keys are dropped whatever it says).
        parent: where allowlisted names are copied from (default ``os.environ``).
        state: a checkout's prepared state, copied into ``home/`` and ``tmp/`` (:func:`seed_state`).

    Yields:
        The :class:`McpChild`; the whole scratch directory (``agentstudy-mcp-…``, owner-marked by
        ``io.scratch``) is removed on exit, then its marker.

    Raises:
        OSError: the scratch directory cannot be created.
    """
    scratch = owned_mkdtemp("mcp")  # owner-marked: swept after a SIGKILL (issue 29, break 10)
    try:
        home, tmpdir = scratch / "home", scratch / "tmp"
        home.mkdir()
        tmpdir.mkdir()
        seed_state(state, home, tmpdir)
        source = os.environ if parent is None else parent
        env = allowlisted_environment(
            source,
            home=str(home),
            tmpdir=str(tmpdir),
            extra={"SHELL": CHILD_SHELL, **(extra or {})},
        )
        secrets = (*(extra or {}).values(), *(source[name] for name in FORBIDDEN if name in source))
        yield McpChild(env, home, tmpdir, scratch / "stderr.log", tuple(s for s in secrets if s))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        release(scratch)


def stderr_tail(path: Path, limit: int = STDERR_TAIL_BYTES) -> str:
    """The last ``limit`` bytes of ``path`` as one line: control characters become spaces; ``""`` if none.

    When the file is longer, the first (cut) word is dropped, so no fragment of a secret that
    straddles the cut survives :func:`server_text`. Never raises: a missing or unreadable file gives ``""``.
    """
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            start = max(0, size - limit - 1)
            handle.seek(start)
            data = handle.read(limit + 1)
    except OSError:
        return ""
    cut = False
    if start > 0 or size > limit:
        before, data = data[:1], data[1:]
        cut = not before.isspace() and not data[:1].isspace()
    words = _CONTROL.sub(" ", data.decode("utf-8", "replace")).split()
    return " ".join(words[1:] if cut else words)


def server_text(text: str, secrets: Sequence[str] = (), limit: int = SERVER_TEXT_BYTES) -> str:
    """What the server said, safe to show: one line, secrets redacted, at most ``limit`` bytes (UTF-8).

    Every occurrence of a value of ``secrets`` (at least ``MIN_SECRET_CHARS`` long, longest
    first) and the value of every ``token=…``, ``api_key: …``, ``password=…``, ``secret=…`` and
    ``Bearer …`` becomes ``[redacted]``; control characters and runs of white
    space become one space; a longer text is cut at a character boundary and ends with ``…``.
    Pure; never raises.
    """
    for secret in sorted((s for s in secrets if len(s) >= MIN_SECRET_CHARS), key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    text = _ASSIGNED_SECRET.sub(lambda m: m.group(1) + REDACTED, text)
    text = " ".join(_CONTROL.sub(" ", text).split())
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[: max(0, limit - len("…".encode()))].decode("utf-8", "ignore") + "…"
