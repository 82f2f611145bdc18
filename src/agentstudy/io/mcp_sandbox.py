"""Start the MCP server under study the way an attempt does: contained, allowlisted, in its snapshot (issue 15).

Used by the MCP preflight (``tools/list`` and the freshness probe) and by the http
transport's per-attempt session, so the server is checked in exactly the sandbox it later runs in.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from agentstudy.io.containment import ContainmentMode, SandboxView, contain, server_read_only_paths
from agentstudy.io.environment import allowlisted_environment
from agentstudy.protocol.mcp_spec import McpServerSpec, ServerPaths


@contextmanager
def contained_server(
    spec: McpServerSpec, paths: ServerPaths, containment: ContainmentMode, parent_env: Mapping[str, str]
) -> Iterator[tuple[list[str], dict[str, str], Path]]:
    """The MCP server's contained command line, allowlisted environment and working directory for one corpus.

    The server runs as it does inside an attempt: in the sandbox (``containment``), seeing its
    command, its filled arguments' paths and the snapshot read-only, with a private HOME and
    TMPDIR (removed on exit) and ``spec.env``; its working directory is the snapshot.
    Yields ``(argv, env, cwd)``.

    Raises:
        ContainmentError: bubblewrap was asked for and is missing.
    """
    with tempfile.TemporaryDirectory(prefix="agentstudy-mcp-") as scratch:
        home, tmp = Path(scratch) / "home", Path(scratch) / "tmp"
        home.mkdir()
        tmp.mkdir()
        env = allowlisted_environment(parent_env, home=str(home), tmpdir=str(tmp), extra=spec.env)
        snapshot = Path(paths.root)
        read_only = (snapshot, *server_read_only_paths(spec, paths, env.get("PATH")))
        view = SandboxView(cwd=snapshot, read_only=read_only, writable=(home, tmp))
        yield contain(containment, view, spec.argv(paths)), env, snapshot
