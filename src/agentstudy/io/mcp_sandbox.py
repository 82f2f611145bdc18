"""Start the MCP server under study the way an attempt does: its world, contained, for one corpus (issue 15).

Used by the MCP preflight (``tools/list``, the probe, the freshness check), the preparation steps
and the http transport's per-attempt session. The command line comes from ``io.server_world`` — the
same builder ``io.server_host`` starts every agent attempt's server with — so what is checked is
what runs (issue 39).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from agentstudy.io.containment import ContainmentMode
from agentstudy.io.mcp_child import McpChild, mcp_child
from agentstudy.io.server_world import server_world
from agentstudy.protocol.mcp_spec import McpServerSpec, ServerPaths


@contextmanager
def contained_server(
    spec: McpServerSpec, paths: ServerPaths, containment: ContainmentMode, parent_env: Mapping[str, str]
) -> Iterator[tuple[list[str], McpChild, Path]]:
    """The MCP server's contained command line, its private surroundings and working directory for one corpus.

    ``io.server_world.server_world`` builds the world in ``io.mcp_child``'s private HOME and TMPDIR (removed on
    exit; a fresh copy of the checkout's prepared state when ``paths.state`` is set, issue 32); the child's
    ``env`` is the world's. Yields ``(argv, child, cwd)``: run ``argv`` with ``child.env`` in ``cwd``.

    Raises:
        ContainmentError: bubblewrap was asked for and is missing, or the world is refused.
    """
    with mcp_child(spec.env, parent_env, paths.state) as child:
        world = server_world(spec, paths, child.home, child.tmpdir, parent_env)
        yield world.command(containment), dataclasses.replace(child, env=world.env), world.cwd
