"""What the MCP server under study needs bound read-only in its sandbox, and which binds are refused (issue 15).

Its command and interpreter, the absolute paths among its filled arguments, the operator's
``--sandbox-bind`` paths, and, for a study with ``"scope": "server"`` preparation steps, the
``io.warm_up`` relay's interpreter and package. Refused: a shared root, HOME or an ancestor of
either, the live checkout (unless ``{checkout}`` was written), and the host's ``/proc``, ``/sys``
and ``/dev`` (``protocol.sandbox_binds``; issue 39). ``io.server_world`` builds the whole view.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from agentstudy.io.containment import ContainmentError, command_paths, shows, too_broad
from agentstudy.protocol.mcp_spec import McpServerSpec, ServerPaths
from agentstudy.protocol.sandbox_binds import kernel_bind_problem


def absolute_existing(arguments: Iterable[str]) -> tuple[Path, ...]:
    """Every argument (or ``--flag=value`` value) that is an absolute path to something that exists."""
    paths: list[Path] = []
    for argument in arguments:
        value = argument.split("=", 1)[1] if argument.startswith("-") and "=" in argument else argument
        if value.startswith("/") and "\0" not in value and os.path.lexists(value):
            paths.append(Path(os.path.abspath(value)))
    return tuple(dict.fromkeys(paths))


WARM_UP_MODULE = "agentstudy.io.warm_up"
"""The stdio relay that replays a study's ``"scope": "server"`` preparation calls in each server (issue 32)."""


def server_read_only_paths(spec: McpServerSpec, paths: ServerPaths, path_env: str | None) -> tuple[Path, ...]:
    """What the MCP server under study needs read-only in a sandbox (issue 15, deliverable 2).

    Its command and the interpreter's prefix (``command_paths``), every existing absolute path
    among its filled arguments (the snapshot, the private clone, the config file, the live
    checkout when ``{checkout}`` was written), and ``spec.sandbox_binds`` that exist; with preparation steps of
    ``"scope": "server"``, also this interpreter and our package, which run the ``io.warm_up`` relay.

    Raises:
        ContainmentError: an argument path or sandbox bind is ``too_broad`` or a kernel file system
            (``protocol.sandbox_binds``), or shows the live
            checkout (itself, inside it or an ancestor) when the command does not name ``{checkout}``.
    """
    argv = spec.argv(paths)
    binds = [Path(p) for p in spec.sandbox_binds if os.path.isabs(p) and os.path.lexists(p)]
    arguments = absolute_existing(argv[1:])
    for bind in spec.sandbox_binds:
        problem = kernel_bind_problem(bind)
        if problem is not None:
            raise ContainmentError(problem)
    for path in (*arguments, *binds):
        _refuse_broad_bind(path, paths, spec.reads_live_checkout)
    guarded = () if spec.reads_live_checkout or paths.live is None else (Path(paths.live).resolve(),)
    command = [*command_paths(argv[0], path_env, guarded=guarded), *own_module_paths(argv)]
    if spec.relayed:  # the io.warm_up relay runs first (issues 32, 44)
        relay = [sys.executable, "-I", "-m", WARM_UP_MODULE]
        command += [*command_paths(sys.executable, path_env, guarded=guarded), *own_module_paths(relay)]
    for path in command:
        _refuse_live_command(path, paths, spec.reads_live_checkout)
    found = [*command, *arguments, *binds]
    return tuple(dict.fromkeys(found))


def _refuse_broad_bind(path: Path, paths: ServerPaths, live_allowed: bool) -> None:
    """Refuse a server bind that would show a shared root, HOME, or the live checkout without ``{checkout}``."""
    if too_broad(path.resolve(), os.environ.get("HOME")):
        raise ContainmentError(f"the MCP server's argument or --sandbox-bind {path} is too broad to bind into "
                               "the sandbox (a shared root, HOME or an ancestor); name something narrower")
    if paths.live is not None and not live_allowed and shows(path.resolve(), Path(paths.live).resolve()):
        raise ContainmentError(f"the MCP server's argument or --sandbox-bind {path} would show the live "
                               "checkout; write {checkout} to hand it over deliberately (recorded)")


def _refuse_live_command(path: Path, paths: ServerPaths, live_allowed: bool) -> None:
    """Refuse a server whose command, interpreter or module would show the live checkout (issue 29, break 3).

    ``command_paths`` already binds the file alone where its directory would show the checkout
    (a script beside it); what is left is inside the checkout, or a shared root.
    """
    if too_broad(path.resolve(), os.environ.get("HOME")) and path.is_dir():
        raise ContainmentError(f"the MCP server's command directory {path} is too broad to bind into the sandbox "
                               "(a shared root, HOME or an ancestor); install the server somewhere narrower")
    if paths.live is not None and not live_allowed and shows(path.resolve(), Path(paths.live).resolve()):
        raise ContainmentError(f"the MCP server's command {path} lives inside the studied checkout {paths.live}: "
                               "it would show the live checkout; install it elsewhere, or write {checkout} to "
                               "hand the checkout over deliberately (recorded)")


def own_module_paths(argv: Sequence[str]) -> tuple[Path, ...]:
    """For ``<this interpreter> [-flags] -m package.module …``: where ``package`` is imported from.

    An editable install keeps a package's source outside the interpreter's prefix; a server
    run as a module of our own interpreter (the bundled one, from any ``--mcp-config``) needs it.
    """
    if "-m" not in argv[:-1] or Path(argv[0]).resolve() != Path(sys.executable).resolve():
        return ()
    package = argv[list(argv).index("-m") + 1].split(".")[0]
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return ()
    if spec is None:
        return ()
    locations = spec.submodule_search_locations or ([str(Path(spec.origin).parent)] if spec.origin else [])
    return tuple(Path(location).resolve() for location in locations if os.path.isabs(location))


