"""Start the MCP server under study the way an attempt does: contained, allowlisted, in its snapshot (issue 15).

Used by the MCP preflight (``tools/list`` and the freshness probe) and by the http
transport's per-attempt session, so the server is checked in exactly the sandbox it later runs in.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from agentstudy.io.containment import ContainmentMode, contain
from agentstudy.io.mcp_child import McpChild, mcp_child
from agentstudy.io.server_launcher import served
from agentstudy.protocol.mcp_spec import McpServerSpec, ServerPaths


@contextmanager
def contained_server(
    spec: McpServerSpec, paths: ServerPaths, containment: ContainmentMode, parent_env: Mapping[str, str]
) -> Iterator[tuple[list[str], McpChild, Path]]:
    """The MCP server's contained command line, its private surroundings and working directory for one corpus.

    The server runs as it does inside an attempt: in the sandbox (``containment``), seeing its
    command, its filled arguments' paths and the snapshot read-only (``io.server_launcher.server_view``,
    no ``/proc``: the view an agent's launcher gives it), with the allowlisted
    environment and private HOME and TMPDIR of ``io.mcp_child`` (removed on exit; a fresh copy of the
    checkout's prepared state when ``paths.state`` is set, issue 32) plus ``spec.env``, behind the
    ``io.warm_up`` relay when the study has ``"scope": "server"`` steps (``io.server_launcher.served``);
    its working directory is the snapshot. Yields ``(argv, child, cwd)``.

    Raises:
        ContainmentError: bubblewrap was asked for and is missing.
    """
    with mcp_child(spec.env, parent_env, paths.state) as child:
        argv, view = served(spec, paths, child.home, child.tmpdir, child.env.get("PATH"))
        yield contain(containment, view, argv, proc=False), child, view.cwd
