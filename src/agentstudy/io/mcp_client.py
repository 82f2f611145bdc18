"""Talk to the MCP server under study through the official ``mcp`` client SDK (stdio).

Used before any reservation: list the server's live tools (``tools/list``) with their safety
annotations, let the caller vet them, then call the freshness probe (``tools/call``), so that
the deny list comes from what the server really exposes, a tool that is not read-only is
refused before anything is called, and a broken server refuses the run with nothing charged.
The server runs in a private environment (``io.mcp_child``); what it said explains a failure:
its stderr tail, a protocol error's message, or a failed probe's ``isError`` text, always
through ``io.mcp_child.server_text`` (one line, at most 2 KiB, secrets redacted; issue 18).
"""

from __future__ import annotations

import gc
import importlib
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentstudy.io.mcp_child import McpChild, server_text, stderr_tail
from agentstudy.protocol.read_only import ToolHints
from agentstudy.protocol.server_words import with_cause
from agentstudy.protocol.treatment import tool_set_sha256

if TYPE_CHECKING:
    from mcp.client.stdio import StdioServerParameters

MCP_PROBE_TIMEOUT_S = 30.0

logging.getLogger("mcp").addHandler(logging.NullHandler())
"""The SDK logs a server's unparsable stdout line with its traceback (``logger.exception``);
with no handler configured Python would print it to our stderr. Refusals stay one line."""


def load_mcp_sdk() -> None:
    """Import the MCP SDK's client (and anyio) now, once per process, with Python's cyclic collector paused.

    The SDK is imported when a server is first probed, prepared or started, never with a command (issue 42):
    it is most of a command's start-up CPU (about a second). Building its pydantic models makes nothing
    collectable, and the collections during that import were a tenth to a fifth of its CPU.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        importlib.import_module("mcp.client.stdio")
    finally:
        if was_enabled:
            gc.enable()


class McpProbeError(RuntimeError):
    """The MCP server could not be started, listed or probed."""


@dataclass(frozen=True)
class McpListing:
    """The live ``tools/list``: ``tools`` (names as listed, e.g. ``doc.search``) and each one's ``hints``."""

    tools: tuple[str, ...]
    hints: Mapping[str, ToolHints]


@dataclass(frozen=True)
class McpProbe:
    """What the server showed: its tool names, their annotations, and whether the probe call succeeded.

    Attributes:
        tools: the listed names, in the server's order.
        hints: ``{name: ToolHints(readOnlyHint, destructiveHint)}`` for every listed tool.
        probe_ok: ``False`` when the probe answered ``isError``; ``True`` also when no probe was asked.
        probe_error: the failed probe's own text (``server_text``: one line, bounded, secrets
            redacted); ``""`` when it succeeded.
        annotations: every listed tool's annotations as sent, camelCase keys
            (``{"readOnlyHint": True, "title": "…"}``; ``{}`` when none).
        listing_sha256: SHA-256 of the whole ``tools/list`` as the client saw it (every tool's name, description,
            input schema and annotations; ``protocol.treatment.tool_set_sha256``; issue 44); ``""`` when unknown.
        descriptions: every listed tool's description as the client saw it (issue 44).
        server_version: ``serverInfo.version`` of the server's ``initialize`` answer (issue 44); ``None`` when
            it sent none.
    """

    tools: tuple[str, ...]
    hints: Mapping[str, ToolHints]
    probe_ok: bool
    probe_error: str = ""
    annotations: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    listing_sha256: str = ""
    descriptions: Mapping[str, str] = field(default_factory=dict)
    server_version: str | None = None


ListingCheck = Callable[[McpListing], object]
"""Vets a listing before the probe is called; raises to refuse it."""


@dataclass(frozen=True)
class _Refused:
    error: Exception


def _hints(tool: Any) -> ToolHints:
    return ToolHints.of(tool.annotations)


def leaf_error(error: BaseException) -> BaseException:
    """The first error inside (nested) exception groups: what the task group's failure really was."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def _server_name(command: str, args: Sequence[str]) -> str:
    """The server's own command: the one after bwrap's ``--`` when it runs contained."""
    return args[list(args).index("--") + 1] if Path(command).name == "bwrap" and "--" in args else command


def failure_text(raised: BaseException, child: McpChild) -> str:
    """Why a server could not be started or probed, safe to show: the first real error's class and
    message, then the server's last stderr output when it wrote any (both through ``server_text``:
    one line, bounded, secrets redacted; issue 18 item 5)."""
    error = leaf_error(raised)
    said = server_text(stderr_tail(child.stderr_path), child.secrets)
    own = server_text(str(error), child.secrets, limit=500)
    text = error.__class__.__name__ + (f": {own}" if own else "") + (f" (server stderr: {said})" if said else "")
    return with_cause(text, f"{own}\n{said}")


def _annotations(tool: Any) -> dict[str, Any]:
    if tool.annotations is None:
        return {}
    dumped: dict[str, Any] = tool.annotations.model_dump(by_alias=True, exclude_none=True, mode="json")
    return dumped


async def _probe(
    params: StdioServerParameters,
    errlog_path: str,
    secrets: Sequence[str],
    probe_tool: str | None,
    probe_arguments: Mapping[str, Any],
    check: ListingCheck | None,
) -> McpProbe | _Refused:
    import anyio  # the MCP SDK and anyio load when a server is probed, not with the command (issue 42)
    from mcp import Client
    from mcp.client.stdio import stdio_client

    with anyio.fail_after(MCP_PROBE_TIMEOUT_S):
        with open(errlog_path, "w", encoding="utf-8") as errlog:  # the SDK wants a text stream with a file
            async with Client(stdio_client(params, errlog=errlog), mode="legacy", cache=None) as client:
                listed = await client.list_tools()
                names = tuple(tool.name for tool in listed.tools)
                hints = {tool.name: _hints(tool) for tool in listed.tools}
                if check is not None:
                    try:
                        check(McpListing(names, hints))
                    except Exception as error:  # re-raised unchanged once the server has stopped
                        return _Refused(error)
                ok, said = True, ""
                if probe_tool is not None:
                    result = await client.call_tool(probe_tool, dict(probe_arguments))
                    ok = not result.is_error
                    if not ok:
                        texts = [getattr(block, "text", "") for block in result.content]
                        said = server_text(" ".join(t for t in texts if t), secrets)
                listing = [tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in listed.tools]
                return McpProbe(names, hints, ok, said, {tool.name: _annotations(tool) for tool in listed.tools},
                                tool_set_sha256(listing), {tool.name: tool.description or "" for tool in listed.tools},
                                client.server_info.version if client.server_info is not None else None)


def probe_mcp_server(
    command: str,
    args: Sequence[str],
    child: McpChild,
    probe_tool: str | None = None,
    probe_arguments: Mapping[str, Any] | None = None,
    check: ListingCheck | None = None,
    cwd: Path | None = None,
) -> McpProbe:
    """Start ``command args…`` over stdio, list its tools, vet them with ``check``, then call ``probe_tool``.

    The server runs with exactly ``child.env`` (an allowlisted environment with a private
    ``HOME``/``TMPDIR``, ``io.mcp_child``) in ``cwd``; its stderr goes to ``child.stderr_path``.
    ``command`` is usually the bubblewrap command line of ``io.mcp_sandbox.contained_server``.

    Args:
        check: called with the listing after ``tools/list``; whatever it raises is re-raised
            unchanged after the server stopped, and the probe is never called.

    Raises:
        McpProbeError: on any start, protocol or timeout failure (one line: the error's own
            message, then the server's last stderr output when it wrote any, both through
            ``server_text``).
        Exception: whatever ``check`` raised.
    """
    load_mcp_sdk()
    import anyio
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=command, args=list(args), env=child.env, cwd=cwd)
    try:
        outcome = anyio.run(
            _probe, params, str(child.stderr_path), child.secrets, probe_tool, probe_arguments or {}, check
        )
    except Exception as raised:  # the SDK raises many kinds; the caller needs one
        raise McpProbeError(f"MCP server {_server_name(command, args)} could not be probed: "
                            f"{failure_text(raised, child)}") from None
    if isinstance(outcome, _Refused):
        raise outcome.error
    return outcome
