"""The MCP server's world: the one place its sandbox view, working directory, /proc and environment are built.

``server_world`` turns the study's ``McpServerSpec`` (a parameter: either arm's server) and one
corpus's ``ServerPaths`` into a ``ServerWorld``; ``ServerWorld.command`` wraps its argv for the run's
containment. Every server agentstudy starts comes from here (issue 39): the preflight's probe
and the preparation steps (``io.mcp_sandbox.contained_server``), the http transport's session, and
every agent attempt (``io.server_host``, which starts the server outside the agent's sandbox for
each connection of the agent's relay). So a property of the world changed here changes the probe
and the attempt alike, and a server that passes the probe starts in an attempt.

The world, under bubblewrap:

- the corpus (``{root}``, also ``{cwd}``) read-only, and it is the working directory; in an attempt
  that is the agent's own export, at the same absolute path the agent sees (``transports.cli``);
- its command, interpreter, absolute argument paths and ``--sandbox-bind`` paths read-only
  (``io.server_binds``);
- a private HOME and TMPDIR, writable, with a fresh copy of the prepared state when there is one;
- a private ``/proc`` of its own pid namespace (never the host's, never the agent's) and a minimal ``/dev``;
- the environment: ``io.environment``'s allowlist from *our* environment, HOME/TMPDIR, ``SHELL``, then
  the server's configured ``env`` — no gateway token, OAuth token or API key.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from agentstudy.io.containment import ContainmentMode, SandboxView, contain
from agentstudy.io.environment import FORBIDDEN, allowlisted_environment
from agentstudy.io.server_binds import WARM_UP_MODULE, server_read_only_paths
from agentstudy.protocol.mcp_spec import McpServerSpec, ServerPaths

SERVER_SHELL = "/bin/sh"
"""The server's ``SHELL``."""
SERVER_PROC = True
"""Whether the server's sandbox has a ``/proc`` (always its own pid namespace's; issue 39)."""
SERVER_ACHIEVED_BWRAP = (
    "the MCP server under study is started by agentstudy, outside the agent's sandbox, in a sandbox of its own "
    "built by the same code as the preflight's probe: its environment is an allowlist set by agentstudy with "
    "its own private HOME and TMPDIR (no gateway token, OAuth token, API key or login file); it sees the "
    "attempt's export at the agent's path (read-only, its working directory), what its command needs, /usr, a "
    "private /proc of its own pid namespace and its private HOME and TMPDIR (not the agent's HOME or the "
    "login file); the agent reaches it through a relay on a private socket"
)
SERVER_ACHIEVED_RESTRICTED = (
    "the MCP server under study is started by agentstudy, not with the agent's environment: its "
    "environment is an allowlist set by agentstudy with its own private HOME and TMPDIR (no gateway token, OAuth "
    "token or API key)"
)
"""``isolationAchieved`` sentences of the MCP arm, by containment mode."""


@dataclass(frozen=True)
class ServerWorld:
    """Everything the MCP server under study is started with, for one corpus.

    Attributes:
        argv: the server's own argv (behind the ``io.warm_up`` relay when the study has
            ``"scope": "server"`` preparation steps), placeholders filled.
        env: its complete environment.
        view: what it sees under bubblewrap; ``view.cwd`` (the corpus) is its working directory in every mode.
        proc: whether its sandbox mounts a private ``/proc``.
        secrets: values never shown from what it says (its configured ``env`` values, our API keys).
    """

    argv: list[str]
    env: dict[str, str] = field(repr=False)
    view: SandboxView
    proc: bool = True
    secrets: tuple[str, ...] = field(default=(), repr=False)

    @property
    def cwd(self) -> Path:
        """The server's working directory: the corpus."""
        return self.view.cwd

    def command(self, containment: ContainmentMode, argv: list[str] | None = None) -> list[str]:
        """The argv that starts the server (or ``argv``, another program of its world: a preparation command)
        under ``containment``: the bwrap command line, or the argv itself; run it with ``env`` in ``cwd``.

        Raises:
            ContainmentError: bubblewrap was asked for and is not installed.
        """
        return contain(containment, self.view, self.argv if argv is None else argv, proc=self.proc)


def server_world(spec: McpServerSpec, paths: ServerPaths, home: Path, tmp: Path,
                 parent_env: Mapping[str, str]) -> ServerWorld:
    """The world of server ``spec`` on the corpus of ``paths``, with private ``home`` and ``tmp`` (existing
    directories the caller made and removes): the one builder of every server's world (issue 39).

    ``parent_env``: where the allowlisted names are copied from (ours, never the agent's).

    Raises:
        ContainmentError: a path the server needs is too broad, a kernel file system, or shows the live
            checkout (``io.server_binds.server_read_only_paths``).
    """
    env = allowlisted_environment(parent_env, home=str(home), tmpdir=str(tmp),
                                  extra={"SHELL": SERVER_SHELL, **spec.env})
    corpus = Path(paths.root)
    read_only = tuple(dict.fromkeys((corpus, *server_read_only_paths(spec, paths, env.get("PATH")))))
    view = SandboxView(cwd=corpus, read_only=read_only, writable=(home, tmp))
    argv = spec.argv(paths)
    if spec.relayed:  # preparation steps to replay, descriptions to rewrite (issues 32, 44)
        steps = [spec.prepare_step_for(step, paths) for step in spec.prepare if step.scope == "server"]
        encoded = json.dumps({"steps": [{"tool": step.tool, "arguments": step.arguments} for step in steps],
                              "descriptions": dict(spec.tool_descriptions)})
        argv = [sys.executable, "-I", "-m", WARM_UP_MODULE, encoded, "--", *argv]
    secrets = (*spec.env.values(), *(parent_env[name] for name in FORBIDDEN if name in parent_env))
    return ServerWorld(argv, env, view, proc=SERVER_PROC, secrets=tuple(s for s in secrets if s))
