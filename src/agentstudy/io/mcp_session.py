"""A live MCP session usable from synchronous code: one fresh server per attempt (official ``mcp`` SDK, stdio).

The SDK is asynchronous; the session runs in a background event loop (anyio blocking
portal) so the Messages API loop can list tools once and call them one by one. The server
runs in a private environment (``io.mcp_child``: allowlisted names, its own ``HOME`` and
``TMPDIR``, plus the configured ``env``); it is stopped and its directories removed when the
session closes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from agentstudy.io.mcp_child import McpChild
from agentstudy.io.mcp_client import McpProbeError, failure_text, load_mcp_sdk
from agentstudy.protocol.read_only import ToolHints

if TYPE_CHECKING:
    from anyio.from_thread import BlockingPortal
    from mcp import Client

CALL_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class McpTool:
    """A listed tool: its exact MCP ``name``, ``description``, JSON ``input_schema`` and safety
    annotations ``hints`` (``readOnlyHint`` / ``destructiveHint``, None when not annotated)."""

    name: str
    description: str
    input_schema: dict[str, Any]
    hints: ToolHints = field(default_factory=ToolHints)


@dataclass(frozen=True)
class McpCallResult:
    """A ``tools/call`` answer: the text of its content blocks joined, and whether it is an error."""

    text: str
    is_error: bool


class McpSession(AbstractContextManager["McpSession"]):
    """Start ``command args…`` as an MCP stdio server and keep a client session open.

    The server runs with exactly ``child.env`` (an allowlisted environment with a private
    ``HOME``/``TMPDIR``, ``io.mcp_child``) in ``cwd``; its stderr goes to ``child.stderr_path``
    (its tail is shown, bounded and redacted, when it fails to start). ``command`` is usually the
    bubblewrap command line of ``io.mcp_sandbox.contained_server``.

    Every request, ``initialize`` included, waits at most ``CALL_TIMEOUT_S`` seconds (a server
    that never answers is refused, not waited on forever; issue 18 attack).

    Raises:
        McpProbeError: if the server cannot be started or initialised (one line: the first
            error inside the SDK's exception group and its message, through ``server_text``).
    """

    def __init__(
        self,
        command: str,
        args: Sequence[str],
        child: McpChild,
        cwd: Path | None = None,
    ) -> None:
        self._command, self._args = command, list(args)
        self._child, self._cwd = child, cwd
        self._stack = contextlib.ExitStack()
        self._portal: BlockingPortal | None = None
        self._client: Client | None = None

    def __enter__(self) -> McpSession:
        load_mcp_sdk()
        from anyio.from_thread import start_blocking_portal  # the SDK loads when a server starts (issue 42)
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters, stdio_client

        try:
            params = StdioServerParameters(command=self._command, args=self._args, env=self._child.env,
                                           cwd=self._cwd)
            self._portal = self._stack.enter_context(start_blocking_portal())
            errlog = self._stack.enter_context(open(self._child.stderr_path, "w", encoding="utf-8"))
            client = Client(stdio_client(params, errlog=errlog), mode="legacy", cache=None,
                            read_timeout_seconds=CALL_TIMEOUT_S)  # a server that never answers is refused
            self._client = self._stack.enter_context(self._portal.wrap_async_context_manager(client))
        except Exception as raised:
            self._stack.close()
            raise McpProbeError(f"MCP server could not be started: {failure_text(raised, self._child)}") from None
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        with contextlib.suppress(Exception):
            self._stack.close()

    def _run(self) -> tuple[BlockingPortal, Client]:
        if self._portal is None or self._client is None:
            raise McpProbeError("the MCP session is not open")
        return self._portal, self._client

    def list_tools(self) -> list[McpTool]:
        """``tools/list``: every tool the server lists, with its annotations."""
        portal, client = self._run()
        listed = portal.call(client.list_tools)
        return [
            McpTool(tool.name, tool.description or "", dict(tool.input_schema or {"type": "object"}),
                    ToolHints.of(tool.annotations))
            for tool in listed.tools
        ]

    def call_tool(self, name: str, arguments: Mapping[str, Any]) -> McpCallResult:
        """``tools/call`` with the exact MCP name; text blocks are joined with newlines.

        Raises:
            McpProbeError: on a protocol failure or after ``CALL_TIMEOUT_S`` seconds.
        """
        portal, client = self._run()
        try:
            result = portal.call(lambda: client.call_tool(name, dict(arguments), read_timeout_seconds=CALL_TIMEOUT_S))
        except Exception as error:
            raise McpProbeError(f"MCP call failed: {error.__class__.__name__}") from None
        texts = [getattr(block, "text", "") for block in result.content]
        return McpCallResult("\n".join(t for t in texts if t), bool(result.is_error))
