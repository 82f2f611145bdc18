"""What one agent CLI attempt's sandbox shows and what its record says about containment (issue 15).

``attempt_view`` is the agent's own sandbox (the export, the agent's install, private HOME and TMPDIR, the
login file, the MCP server's relay); the server itself runs in its own world outside it
(``io.server_host``). ``isolation`` gives the record's ``containment`` / ``isolationAchieved`` /
``isolationNotAchieved`` fields; the agents add their own sentences (``agents``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentstudy.io.containment import (
    NETWORK_NOT_ACHIEVED,
    SANDBOX_UID,
    SandboxView,
    command_paths,
    containment_sentences,
)
from agentstudy.io.server_world import SERVER_ACHIEVED_BWRAP, SERVER_ACHIEVED_RESTRICTED

if TYPE_CHECKING:
    from agentstudy.io.server_host import ServerLauncher
    from agentstudy.transports.cli import CliSettings


LOGIN_TARGET = Path(".claude") / ".credentials.json"
"""Where the CLI's own credentials file appears inside the private HOME (real runs only)."""


def attempt_view(
    settings: CliSettings,
    export: Path,
    home: Path,
    tmp: Path,
    path_env: str | None,
    relay: ServerLauncher | None = None,
) -> SandboxView:
    """What one attempt's child may see (issue 15, deliverable 2): the export (cwd), the agent's
    install, the private HOME and TMPDIR, the login file, and in the MCP arm what the server's relay needs
    (``relay``: our interpreter and package read-only, the socket's directory writable; the server itself runs
    in its own world outside, ``io.server_host``). The child runs as ``SANDBOX_UID`` (Codex nests its own
    sandbox)."""
    read_only = [export, *command_paths(str(settings.binary), path_env), *(relay.read_only if relay else ())]
    mounted: tuple[tuple[Path, Path], ...] = ()
    if settings.login_file is not None and settings.base_url is None:
        mounted = ((settings.login_file, home / LOGIN_TARGET),)
    return SandboxView(cwd=export, read_only=tuple(dict.fromkeys(read_only)),
                       writable=(home, tmp, *(relay.writable if relay else ())), mounted=mounted, uid=SANDBOX_UID)


def link_login(settings: CliSettings, home: Path) -> None:
    """Without bwrap the login file is a symlink in the private HOME (the file itself is never copied)."""
    if settings.login_file is not None and settings.base_url is None:
        target = home / LOGIN_TARGET
        target.parent.mkdir(mode=0o700)
        target.symlink_to(settings.login_file)


ISOLATION_ACHIEVED: tuple[str, ...] = (
    "working directory is a fresh export of the pinned blobs only (no .git, no dotfiles, no lockfiles, "
    "no build output), files 0444 and directories 0555, removed after the attempt",
    "Read, Grep and Glob confined to the export (--restricted); refused paths are listed in permissionDenials",
    "stdin closed; argv only, no shell",
    "environment rebuilt from an allowlist; ANTHROPIC_API_KEY never passed",
    "private HOME and TMPDIR per attempt, removed afterwards (a real run's login file mounted read-only)",
    "own process group, killed after the attempt",
    "user, project and local settings not loaded (--setting-sources ''); slash commands disabled",
    "tools limited to Read, Grep, Glob (plus the MCP server's read-only tools); write, shell, web and "
    "agent tools denied; permission mode dontAsk",
)
ISOLATION_NOT_ACHIEVED: tuple[str, ...] = (
    NETWORK_NOT_ACHIEVED,
)


def isolation(
    settings: CliSettings,
    scenario: str,
    agent_achieved: Sequence[str] = ISOLATION_ACHIEVED,
    agent_not_achieved: Sequence[str] = ISOLATION_NOT_ACHIEVED,
) -> dict[str, Any]:
    """The containment of an attempt of ``scenario`` with ``settings``, as plain record fields.

    ``agent_achieved`` / ``agent_not_achieved``: the agent's own sentences (Claude Code's by
    default; ``transports.codex`` passes Codex's), followed by those of the containment mode.
    """
    contained, missing_by_mode = containment_sentences(settings.containment)
    achieved = [*agent_achieved, *contained]
    spec = settings.arm_mcp(scenario)  # the arm's own server (issue 44)
    if spec is not None:
        achieved.append(SERVER_ACHIEVED_BWRAP if settings.containment == "bwrap" else SERVER_ACHIEVED_RESTRICTED)
    missing = [*agent_not_achieved, *missing_by_mode]
    if spec is not None:
        missing.extend(spec.isolation_notes())
    return {"containment": settings.containment, "isolation_achieved": achieved, "isolation_not_achieved": missing}
