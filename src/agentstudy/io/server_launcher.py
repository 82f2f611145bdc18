"""The command an agent CLI runs to start the MCP server under study: our own launcher, not the agent's environment.

Claude Code hands a stdio MCP server its own environment (``ANTHROPIC_AUTH_TOKEN``,
``CLAUDE_CODE_OAUTH_TOKEN``…) and HOME (the mounted login file); Codex hands it ``CODEX_HOME``'s
neighbourhood. So the command written into ``--mcp-config`` / ``[mcp_servers.NAME]`` is never the
server itself but this launcher (issue 29, break 2):

- ``/usr/bin/env -i -- NAME=VALUE… SERVER ARGS…``: the server's complete environment is set by us —
  the allowlist of ``io.environment`` copied from *our* parent environment, a private ``HOME`` and
  ``TMPDIR`` of its own, ``SHELL``, then the server's configured ``env`` — and nothing the agent had
  (no gateway token, OAuth token or API key);
- under ``bwrap``, that inside a nested bubblewrap sandbox whose view is the server's alone
  (``server_view``: the snapshot, what its command needs, its private HOME and TMPDIR; no ``/proc``,
  so no other process's environment): the agent's HOME, the login file and the export are not in it.

The same view (``server_view``) is the one the preflight and the http transport start the server in
(``io.mcp_sandbox``), so what is checked is what runs.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path

from agentstudy.io.containment import (
    WARM_UP_MODULE,
    ContainmentError,
    ContainmentMode,
    SandboxView,
    contain,
    server_read_only_paths,
)
from agentstudy.io.environment import allowlisted_environment
from agentstudy.io.mcp_child import seed_state
from agentstudy.protocol.mcp_spec import McpServerSpec, ServerPaths

ENV_PROGRAM = "/usr/bin/env"
"""The launcher that replaces the agent's environment with ours (coreutils, under ``/usr``: in every sandbox)."""
SERVER_SHELL = "/bin/sh"
SERVER_HOME = "server-home"
SERVER_TMP = "server-tmp"
"""The server's private HOME and TMPDIR, made in the attempt's private directory."""
SERVER_ACHIEVED_BWRAP = (
    "the MCP server under study is started by agentstudy's launcher, not with the agent's environment: its "
    "environment is an allowlist set by agentstudy with its own private HOME and TMPDIR (no gateway token, OAuth "
    "token, API key or login file), in a nested sandbox that sees only its snapshot, what its command needs, "
    "/usr and its private HOME and TMPDIR (no /proc, not the agent's HOME, the login file or the export)"
)
SERVER_ACHIEVED_RESTRICTED = (
    "the MCP server under study is started by agentstudy's launcher, not with the agent's environment: its "
    "environment is an allowlist set by agentstudy with its own private HOME and TMPDIR (no gateway token, OAuth "
    "token or API key)"
)
"""``isolationAchieved`` sentences of the MCP arm, by containment mode."""


def server_view(spec: McpServerSpec, paths: ServerPaths, home: Path, tmp: Path, path_env: str | None) -> SandboxView:
    """What the MCP server under study sees in its own sandbox: the snapshot (cwd) and
    ``server_read_only_paths`` read-only, ``home`` and ``tmp`` writable.

    Raises:
        ContainmentError: a path the server needs is too broad or shows the live checkout
            (``io.containment.server_read_only_paths``).
    """
    snapshot = Path(paths.root)
    read_only = tuple(dict.fromkeys((snapshot, *server_read_only_paths(spec, paths, path_env))))
    return SandboxView(cwd=snapshot, read_only=read_only, writable=(home, tmp))


def served(spec: McpServerSpec, paths: ServerPaths, home: Path, tmp: Path, path_env: str | None
           ) -> tuple[list[str], SandboxView]:
    """The server's argv and sandbox view for one corpus: ``spec.argv(paths)`` in ``server_view``, or, when the
    study has preparation steps of ``"scope": "server"`` or the arm rewrites tool descriptions
    (``McpServerSpec.relayed``), that argv behind the ``io.warm_up`` relay (run by this interpreter, ``-I -m``),
    which replays the steps before the client's first call and rewrites the listed descriptions (the view shows
    the interpreter and our package then: ``io.containment.server_read_only_paths``).

    Raises:
        ContainmentError: as :func:`server_view`.
    """
    view = server_view(spec, paths, home, tmp, path_env)
    if not spec.relayed:
        return spec.argv(paths), view
    steps = [spec.prepare_step_for(step, paths) for step in spec.prepare if step.scope == "server"]
    encoded = json.dumps({"steps": [{"tool": step.tool, "arguments": step.arguments} for step in steps],
                          "descriptions": dict(spec.tool_descriptions)})
    return [sys.executable, "-I", "-m", WARM_UP_MODULE, encoded, "--", *spec.argv(paths)], view


def server_environment(spec: McpServerSpec, parent_env: Mapping[str, str], home: Path, tmp: Path) -> dict[str, str]:
    """The server's complete environment: ``io.environment``'s allowlist from ``parent_env`` (ours, never
    the agent's), ``HOME``/``TMPDIR`` = ``home``/``tmp``, ``SHELL``, then ``spec.env``; never an API key."""
    return allowlisted_environment(parent_env, home=str(home), tmpdir=str(tmp),
                                   extra={"SHELL": SERVER_SHELL, **spec.env})


def launcher_command(
    spec: McpServerSpec,
    paths: ServerPaths,
    containment: ContainmentMode,
    parent_env: Mapping[str, str],
    scratch: Path,
) -> list[str]:
    """The argv an agent CLI is told to run as the MCP server (program first); makes ``scratch/server-home``
    and ``scratch/server-tmp`` (mode 0700), which the attempt's sandbox must bind writable, holding a fresh
    copy of the checkout's prepared state when ``paths.state`` is set (issue 32).

    Raises:
        ContainmentError: ``bwrap`` was asked for and is missing, or the server's view is refused
            (``server_view``).
    """
    home, tmp = scratch / SERVER_HOME, scratch / SERVER_TMP
    for directory in (home, tmp):
        directory.mkdir(mode=0o700, exist_ok=True)
    try:
        seed_state(paths.state, home, tmp)
    except OSError as error:
        raise ContainmentError(f"the MCP server's prepared state could not be copied: {error}") from None
    env = server_environment(spec, parent_env, home, tmp)
    argv, view = served(spec, paths, home, tmp, env.get("PATH"))
    inner = [ENV_PROGRAM, "-i", "--", *(f"{name}={value}" for name, value in sorted(env.items())),
             *_program(argv[0]), *argv[1:]]
    if containment == "restricted":
        return inner
    return contain(containment, view, inner, proc=False)


def server_dirs(scratch: Path) -> tuple[Path, Path]:
    """The server's private HOME and TMPDIR under an attempt's ``scratch`` (made by ``launcher_command``)."""
    return scratch / SERVER_HOME, scratch / SERVER_TMP


def _program(name: str) -> list[str]:
    """``[name]``; ``env`` would take a program name containing ``=`` for an assignment.

    Raises:
        ContainmentError: ``name`` contains ``=``.
    """
    if "=" in name:
        raise ContainmentError(f"the MCP server's command {name!r} contains '=': it cannot be started by the "
                               "launcher; rename or link it")
    return [name]
