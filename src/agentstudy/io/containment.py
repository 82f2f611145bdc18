"""OS-level containment of the processes agentstudy starts: bubblewrap command lines from a view (issue 15).

A ``SandboxView`` says, as data, what one contained process may see: paths bound read-only,
paths bound writable (a private HOME and TMPDIR), files mounted at another place (a login
credential inside the private HOME), and the working directory. ``bwrap_argv`` turns it into a
bubblewrap command line (pure); ``contain`` applies the chosen mechanism. Under ``bwrap`` the
child runs in new mount, pid, ipc, uts, user and cgroup namespaces with the network shared (it
must reach the API or the rehearsal server): it sees ``/usr`` (and the ``/bin``, ``/lib*``,
``/sbin`` links) read-only, the few ``/etc`` files name resolution and TLS need, a fresh
``/proc`` and ``/dev``, its view — and nothing else of the host: no host ``/tmp``, no user
HOME, no other attempt's export. ``--die-with-parent`` and the pid namespace end every
descendant when the child ends, ``setsid`` or not. Under ``restricted`` the argv is unchanged
and only the agent's own file-tool confinement (``--restricted``) holds; ``not_achieved``
says what is missing then.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

ContainmentMode = Literal["bwrap", "restricted"]
CONTAINMENT_MODES: tuple[ContainmentMode, ...] = ("bwrap", "restricted")
SYSTEM_DIRS: tuple[str, ...] = ("/usr",)
"""Bound read-only in every sandbox: the system runtime."""
SYSTEM_LINKS: tuple[str, ...] = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
"""Mirrored as the host has them: a symlink (merged /usr) becomes the same symlink, a directory a read-only bind."""
ETC_FILES: tuple[str, ...] = (
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/localtime",
    "/etc/ld.so.cache",
)
"""The only parts of ``/etc`` a sandbox sees (when present): name resolution, TLS roots, time zone, linker cache."""
BWRAP_SEARCH_PATH = "/usr/bin:/bin:/usr/local/bin"
SANDBOX_UID = 65534
"""The uid (and gid) an agent runs as inside our bubblewrap sandbox: not root, so a bubblewrap nested in it
(Codex's own sandbox, the MCP server's launcher) can map its user namespace (``SandboxView.uid``; measured,
docs/codex.md)."""
CHECK_TIMEOUT_S = 10.0


class ContainmentError(RuntimeError):
    """The requested containment cannot run on this machine (one-line reason)."""


@dataclass(frozen=True)
class SandboxView:
    """What one contained process may see (all paths absolute; bound at the same path unless mounted).

    Attributes:
        cwd: the working directory (must be among ``read_only`` or ``writable``).
        read_only: directories or files bound read-only.
        writable: directories bound read-write (the private HOME and TMPDIR).
        mounted: ``(source, target)`` files bound read-only at another path (a credential
            file inside the private HOME).
        uid: when set, the child runs as this uid and gid inside its user namespace (``--uid``/``--gid``),
            never as root there. Codex's own bubblewrap sandbox nests inside ours only so: run as uid 0
            with every capability dropped, the inner bwrap fails with "setting up uid map: Operation
            not permitted" (measured as root with bwrap 0.8.0, issue 21).
    """

    cwd: Path
    read_only: tuple[Path, ...] = ()
    writable: tuple[Path, ...] = ()
    mounted: tuple[tuple[Path, Path], ...] = field(default=())
    uid: int | None = None

    def with_read_only(self, paths: Iterable[Path]) -> SandboxView:
        """This view plus more read-only paths."""
        return SandboxView(self.cwd, (*self.read_only, *paths), self.writable, self.mounted, self.uid)


def _depth(path: Path) -> int:
    return len(path.parts)


def _under(path: Path, parents: Iterable[Path]) -> bool:
    return any(path == parent or parent in path.parents for parent in parents)


def bwrap_argv(bwrap: str, view: SandboxView, command: Sequence[str], *, proc: bool = True) -> list[str]:
    """The bubblewrap command line running ``command`` in ``view`` (pure; reads no file).

    ``proc`` False leaves ``/proc`` out: a sandbox nested in another cannot mount a fresh one, and
    the outer one's would show every process's environment (the MCP server's launcher, issue 29).

    Binds are ordered parents first so a path bound inside another keeps its own mode; a path
    under ``/usr`` is not bound again. ``/etc`` entries use ``--ro-bind-try`` (absent ones are
    skipped); everything of the view must exist.
    """
    argv = [
        bwrap,
        "--unshare-all",
        "--share-net",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        *(["--uid", str(view.uid), "--gid", str(view.uid)] if view.uid is not None else []),
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    for link in SYSTEM_LINKS:
        argv += _system_link(link)
    for entry in ETC_FILES:
        argv += ["--ro-bind-try", entry, entry]
    argv += [*(["--proc", "/proc"] if proc else []), "--dev", "/dev"]
    binds: dict[Path, str] = {}
    read_only = set(view.read_only)
    for path in view.read_only:
        covered = _under(path, map(Path, SYSTEM_DIRS)) or any(p in read_only for p in path.parents)
        if not covered:
            binds.setdefault(path, "--ro-bind")
    for path in view.writable:
        binds[path] = "--bind"
    for path in sorted(binds, key=lambda p: (_depth(p), str(p))):
        argv += [binds[path], str(path), str(path)]
    for source, target in view.mounted:
        argv += ["--ro-bind", str(source), str(target)]
    argv += ["--chdir", str(view.cwd), "--", *command]
    return argv


def _system_link(link: str) -> list[str]:
    path = Path(link)
    if path.is_symlink():
        return ["--symlink", os.readlink(path), link]
    if path.is_dir():
        return ["--ro-bind", link, link]
    return []


def find_bwrap() -> str | None:
    """The bubblewrap executable on the system search path, or ``None``."""
    return shutil.which("bwrap", path=BWRAP_SEARCH_PATH)


def contain(mode: ContainmentMode, view: SandboxView, command: Sequence[str], *, proc: bool = True) -> list[str]:
    """``command`` wrapped for ``mode``: the bwrap command line, or ``command`` itself under ``restricted``.

    ``proc``: whether the sandbox has a ``/proc`` (``bwrap_argv``).

    Raises:
        ContainmentError: ``bwrap`` was asked for and is not installed.
    """
    if mode == "restricted":
        return list(command)
    bwrap = find_bwrap()
    if bwrap is None:
        raise ContainmentError(
            "bubblewrap (bwrap) is not installed: run scripts/setup.sh as root or `apt-get install bubblewrap`"
        )
    return bwrap_argv(bwrap, view, command, proc=proc)


BROAD_DIRS: tuple[str, ...] = ("/", "/tmp", "/var/tmp", "/home", "/root", "/work", "/srv", "/opt",  # noqa: S108
                               "/mnt", "/media")
"""Never bound whole (nor any ancestor of them): they hold other attempts' exports, checkouts, homes."""


def too_broad(path: Path, home: str | None = None) -> bool:
    """Whether binding ``path`` would show more than one install: a shared root, HOME, or an ancestor of either."""
    guarded = [Path(d) for d in BROAD_DIRS] + [Path(tempfile.gettempdir())]
    if home:
        guarded.append(Path(home))
    return any(path == g or path in g.parents for g in guarded)


def _is_install(prefix: Path, via: str) -> bool:
    """Whether ``prefix`` (the parent of a ``bin``/``.bin``) is one installation, not a user's directory."""
    if via == ".bin" and prefix.name == "node_modules":
        return True
    if (prefix / "pyvenv.cfg").is_file() or (prefix / "package.json").is_file():
        return True
    return any(lib.is_dir() and (lib / "os.py").is_file() for lib in prefix.glob("lib/python3*"))


def shows(path: Path, guarded: Path) -> bool:
    """Whether binding ``path`` would show ``guarded``: it is ``guarded``, inside it, or an ancestor of it."""
    return path == guarded or guarded in path.parents or path in guarded.parents


def _install_of(candidate: Path, home: str | None, guarded: Sequence[Path]) -> Path:
    """The directory to bind for ``candidate``, or the file alone when that directory is a shared root
    or would show a ``guarded`` path (a studied checkout beside the command, issue 29)."""
    parent = candidate.parent

    def fits(directory: Path) -> bool:
        resolved = directory.resolve()
        return not too_broad(directory, home) and not any(shows(resolved, g) for g in guarded)

    if parent.name in ("bin", ".bin"):
        prefix = parent.parent
        if _is_install(prefix, parent.name) and fits(prefix):
            return prefix
        return candidate
    return parent if fits(parent) else candidate


def command_paths(
    executable: str, path_env: str | None = None, *, guarded: Sequence[Path] = (), _depth_left: int = 2
) -> tuple[Path, ...]:
    """What must be bound read-only for ``executable`` to run in a sandbox.

    The executable as named and as resolved; for each, its installation when it lives in a
    ``bin`` or ``.bin`` directory whose parent is one (a virtualenv, a Python installation, an
    npm package or ``node_modules``), else the file alone; an executable outside ``bin`` binds
    its directory unless that is ``too_broad`` (then the file alone). Never HOME, ``/tmp`` or
    another shared root, and never a directory that would show a ``guarded`` path (resolved
    absolute paths: the live checkouts) — then the file alone. Then the same for the interpreter
    of a ``#!`` script (``/usr/bin/env NAME`` resolves ``NAME`` on ``path_env``). A bare name
    not found on ``path_env`` gives ``()``.
    """
    found = executable if os.sep in executable else shutil.which(executable, path=path_env or os.defpath)
    if found is None:
        return ()
    home = os.environ.get("HOME")
    named = Path(os.path.abspath(found))
    paths = [_install_of(candidate, home, guarded) for candidate in (named, named.resolve())]
    if _depth_left > 0:
        interpreter = _shebang(named)
        if interpreter:
            paths += command_paths(interpreter, path_env, guarded=guarded, _depth_left=_depth_left - 1)
    return tuple(dict.fromkeys(p for p in paths if p != Path("/")))


def _shebang(path: Path) -> str | None:
    try:
        with path.open("rb") as handle:
            head = handle.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    parts = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if not parts:
        return None
    if Path(parts[0]).name == "env" and len(parts) > 1:
        return next((p for p in parts[1:] if not p.startswith("-")), None)
    return parts[0]


def check_containment(mode: ContainmentMode, env: Mapping[str, str]) -> str:
    """Prove that ``mode`` works here by running ``/usr/bin/true`` in an empty sandbox; return a description.

    Returns:
        ``"bwrap <version>"`` or ``"restricted"``.

    Raises:
        ContainmentError: bubblewrap is missing or cannot create its namespaces here (one line,
            naming ``--containment restricted`` as the operator's way out).
    """
    if mode == "restricted":
        return "restricted"
    hint = "; pass --containment restricted to run without it (the ledger and report then say so)"
    bwrap = find_bwrap()
    if bwrap is None:
        raise ContainmentError("bubblewrap (bwrap) is not installed (apt-get install bubblewrap)" + hint)
    with tempfile.TemporaryDirectory(prefix="agentstudy-sandbox-check-") as scratch:
        view = SandboxView(cwd=Path(scratch), writable=(Path(scratch),))
        try:
            result = subprocess.run(
                bwrap_argv(bwrap, view, ["/usr/bin/true"]),
                env=dict(env), stdin=subprocess.DEVNULL, capture_output=True, timeout=CHECK_TIMEOUT_S, check=False,
            )
            version = subprocess.run(
                [bwrap, "--version"], env=dict(env), stdin=subprocess.DEVNULL, capture_output=True,
                timeout=CHECK_TIMEOUT_S, check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise ContainmentError(f"bubblewrap could not run: {error.__class__.__name__}{hint}") from None
    if result.returncode != 0:
        detail = result.stderr.decode("utf-8", "replace").strip().splitlines()
        reason = "".join(c for c in (detail[-1] if detail else f"exit {result.returncode}") if c.isprintable())
        raise ContainmentError(f"bubblewrap cannot create its sandbox here ({reason[:200]}){hint}")
    line = version.stdout.decode("utf-8", "replace").strip()
    return line.replace("bubblewrap", "bwrap", 1) if line else "bwrap"


BWRAP_ACHIEVED: tuple[str, ...] = (
    "bubblewrap: new mount, pid, ipc, uts, user and cgroup namespaces; the network is shared",
    "the child and every descendant see only the export (read-only, cwd), the agent's install, the MCP "
    "server's relay (its interpreter read-only, a private socket directory), /usr, name-resolution and TLS "
    "files of /etc, /proc, /dev and a private HOME and TMPDIR; no host /tmp, no user HOME, no other export",
    "every descendant ends with the attempt (--die-with-parent and the pid namespace), setsid or not",
)
NETWORK_NOT_ACHIEVED = (
    "the network is shared (the API, a gateway or the rehearsal server must be reachable): the child can reach "
    "services listening on the host's loopback and abstract unix sockets; only the CLI's non-essential traffic "
    "is switched off"
)
"""Recorded on every attempt, whatever the mechanism (a hostile-tester finding of issue 15)."""
RESTRICTED_NOT_ACHIEVED: tuple[str, ...] = (
    "no OS sandbox (--containment restricted): the agent process and the MCP server can see the whole "
    "machine; only the agent's file tools are confined to the export",
    "a descendant that leaves the process group (setsid) can outlive the attempt",
)


def containment_sentences(mode: ContainmentMode) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(achieved, not_achieved)`` sentences of ``mode`` for the attempt records."""
    if mode == "bwrap":
        return BWRAP_ACHIEVED, ()
    return (), RESTRICTED_NOT_ACHIEVED
