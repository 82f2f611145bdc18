"""Run the MCP server's preparation steps once per checkout, in its own sandbox, and keep its prepared state (issue 32).

A study's ``arms.treatment.prepare`` (``protocol.prepare_steps``) lists tool calls of the server
and commands. They run during preflight, before any reservation, exactly where the server runs
(``io.server_world.server_world``: its sandbox, the read-only snapshot as working directory,
the allowlisted environment) with a fresh private HOME and TMPDIR; tool calls go to one server
session in order. What the steps wrote there is copied into the checkout's state directory (the
run's private corpus directory, never the repository or the snapshot, both read-only to the
server) and hashed; every later server of that checkout starts with a fresh copy of it
(``io.mcp_child.seed_state``). The first failing step (an ``isError`` answer, a start or protocol
failure, a command's non-zero exit or timeout) raises :class:`PrepareError` with the server's own
words through ``io.mcp_child.server_text`` (one line, bounded, secrets redacted). A state over the study's
cap (``prepareLimits``: files and apparent bytes, counted before copying) is refused the same way, and the
state is hashed streaming (issue 40).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from agentstudy.io.containment import ContainmentMode
from agentstudy.io.mcp_child import McpChild, mcp_child, server_text
from agentstudy.io.mcp_client import failure_text, load_mcp_sdk
from agentstudy.io.process import run_bounded
from agentstudy.io.server_world import server_world
from agentstudy.protocol.mcp_spec import McpServerSpec, ServerPaths
from agentstudy.protocol.prepare_steps import (
    PreparedStateCap,
    PrepareOutcome,
    PrepareStep,
    step_label,
    steps_record,
)

if TYPE_CHECKING:
    from mcp.client.stdio import StdioServerParameters

HASH_CHUNK_BYTES = 1 << 20
"""Bytes read at a time while hashing the prepared state."""
PREPARE_TIMEOUT_S = 600.0
"""The most all of one checkout's preparation steps may take (s): an index of a large repository takes minutes."""


class PrepareError(RuntimeError):
    """A preparation step failed (one line naming the step and quoting the server's bounded, redacted words)."""


async def _call_tools(params: StdioServerParameters, errlog_path: str, steps: Sequence[PrepareStep],
                      secrets: Sequence[str], open_world: Sequence[str]) -> tuple[int, str] | None:
    """Call each tool step in one session; ``(index, why)`` of the first step the server does not list, that is
    annotated ``openWorldHint: true`` and not let through (``open_world``), or whose answer is an error
    (``answered an error: `` and the server's words), else None."""
    import anyio  # the MCP SDK loads when a server is prepared, not with the command (issue 42)
    from mcp import Client
    from mcp.client.stdio import stdio_client

    with anyio.fail_after(PREPARE_TIMEOUT_S):
        with open(errlog_path, "w", encoding="utf-8") as errlog:
            async with Client(stdio_client(params, errlog=errlog), mode="legacy", cache=None) as client:
                listed = {tool.name: tool for tool in (await client.list_tools()).tools}
                for index, step in enumerate(steps):
                    assert step.tool is not None
                    tool = listed.get(step.tool)
                    if tool is None:
                        return index, "is not a tool the server lists"
                    if tool.annotations is not None and tool.annotations.open_world_hint is True \
                            and step.tool not in open_world:
                        return index, ("is annotated openWorldHint: true: it may reach outside the pinned corpus "
                                       "over the shared network (arms.treatment.allowOpenWorld lets it through)")
                    result = await client.call_tool(step.tool, dict(step.arguments))
                    if result.is_error:
                        texts = [getattr(block, "text", "") for block in result.content]
                        said = server_text(" ".join(t for t in texts if t), secrets)
                        return index, f"answered an error: {said or '(no text)'}"
    return None


def _tool_steps(steps: Sequence[PrepareStep], argv: list[str], child: McpChild, cwd: Path,
                open_world: Sequence[str]) -> None:
    load_mcp_sdk()
    import anyio
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=argv[0], args=argv[1:], env=child.env, cwd=cwd)
    try:
        failed = anyio.run(_call_tools, params, str(child.stderr_path), steps, child.secrets, open_world)
    except Exception as raised:  # the SDK raises many kinds; the operator needs one line
        raise PrepareError(f"preparation step {step_label(steps[0]) if len(steps) == 1 else 'call'} failed: "
                           f"{failure_text(raised, child)}") from None
    if failed is not None:
        index, why = failed
        raise PrepareError(f"preparation step {step_label(steps[index])} {_arguments(steps[index])} {why}")


def _arguments(step: PrepareStep) -> str:
    """The step's arguments as JSON (filled), at most 200 characters."""
    return json.dumps(dict(step.arguments), ensure_ascii=False)[:200]


def _command_step(spec: McpServerSpec, paths: ServerPaths, step: PrepareStep, containment: ContainmentMode,
                  child: McpChild, deadline: float, parent_env: Mapping[str, str]) -> None:
    assert step.command is not None
    world = server_world(replace(spec, command=tuple(step.command), prepare=()), paths, child.home, child.tmpdir,
                         parent_env)
    result = run_bounded(world.command(containment, list(step.command)), world.env, world.cwd,
                         max(1.0, deadline - time.monotonic()), 64 * 1024, keep_stderr=2048)
    if result.started and result.exit_code == 0 and not result.timed_out:
        return
    said = server_text(result.stderr_tail.decode("utf-8", "replace") or
                       result.stdout.decode("utf-8", "replace")[-2048:], child.secrets)
    why = ("could not be started" if not result.started else "timed out" if result.timed_out
           else f"exited {result.exit_code}")
    raise PrepareError(f"preparation step {step_label(step)} {why}" + (f": {said}" if said else ""))


def state_digest(state: Path) -> tuple[str, int, int]:
    """``(sha256 hex, files, bytes)`` of a state directory: every regular file's relative path and bytes, and
    every symbolic link's path and target, in path order (what a later server is given, byte for byte)."""
    digest = hashlib.sha256()
    files = size = 0
    entries: list[Path] = []
    for directory, dirs, names in os.walk(state):
        dirs.sort()
        entries.extend(Path(directory) / name for name in names)
        entries.extend(Path(directory) / name for name in dirs if (Path(directory) / name).is_symlink())
    for path in sorted(entries, key=lambda p: p.relative_to(state).as_posix()):
        relative = path.relative_to(state).as_posix().encode("utf-8", "surrogateescape")
        if path.is_symlink():
            digest.update(b"L" + relative + b"\0" + os.readlink(path).encode("utf-8", "surrogateescape") + b"\0")
            continue
        if not path.is_file():
            continue
        length = path.stat().st_size
        digest.update(b"F" + relative + b"\0" + str(length).encode() + b"\0")
        with path.open("rb") as handle:  # streamed (issue 40): never a whole file in memory
            for chunk in iter(lambda: handle.read(HASH_CHUNK_BYTES), b""):
                digest.update(chunk)
        files, size = files + 1, size + length
    return digest.hexdigest(), files, size


def check_state_cap(sources: Sequence[Path], cap: PreparedStateCap) -> None:
    """Count the files and apparent bytes under ``sources`` (symbolic links not followed) against ``cap``,
    stopping at the first excess, before anything is copied (issue 40).

    Raises:
        PrepareError: over the cap (the message names it).
    """
    files = size = 0
    for source in sources:
        for directory, _dirs, names in os.walk(source):
            for name in names:
                info = os.lstat(os.path.join(directory, name))
                if not stat.S_ISREG(info.st_mode):
                    continue
                files, size = files + 1, size + info.st_size
                why = cap.over(files, size)
                if why is not None:
                    raise PrepareError(f"the prepared state {why}: the run is refused before any reservation")


def run_prepare(
    spec: McpServerSpec,
    repository: str,
    paths: ServerPaths,
    containment: ContainmentMode,
    parent_env: Mapping[str, str],
    state: Path,
) -> PrepareOutcome:
    """Run ``spec.prepare`` for one checkout (``repository``) and keep what it wrote in ``state`` (``home/``,
    ``tmp/``, which must not exist yet inside the existing directory ``state``).

    Consecutive tool steps share one server session; a command step runs alone in the same sandbox view,
    environment and private HOME/TMPDIR.

    Raises:
        PrepareError: a step failed (its words, bounded and redacted), the steps took longer than
            :data:`PREPARE_TIMEOUT_S`, or the state could not be kept.
        ContainmentError: bubblewrap was asked for and is missing, or the view is refused.
    """
    started = time.monotonic()
    deadline = started + PREPARE_TIMEOUT_S
    steps = [spec.prepare_step_for(step, paths) for step in spec.prepare]
    with mcp_child(spec.env, parent_env) as child:
        index = 0
        while index < len(steps):
            if steps[index].command is not None:
                _command_step(spec, paths, steps[index], containment, child, deadline, parent_env)
                index += 1
                continue
            run = [index]
            while run[-1] + 1 < len(steps) and steps[run[-1] + 1].tool is not None:
                run.append(run[-1] + 1)
            world = server_world(replace(spec, prepare=()), paths, child.home, child.tmpdir, parent_env)
            _tool_steps([steps[i] for i in run], world.command(containment), replace(child, env=world.env),
                        world.cwd, spec.open_world_tools)
            index = run[-1] + 1
        check_state_cap([child.home, child.tmpdir], spec.prepared_cap)
        try:
            for part, source in (("home", child.home), ("tmp", child.tmpdir)):
                shutil.copytree(source, state / part, symlinks=True)
        except OSError as error:
            raise PrepareError(f"the prepared state could not be kept: {error}") from None
    sha, files, size = state_digest(state)
    return PrepareOutcome(repository=repository, steps=steps_record(steps, [True] * len(steps)),
                          state_sha256=sha, state_files=files, state_bytes=size,
                          duration_ms=round((time.monotonic() - started) * 1000))

