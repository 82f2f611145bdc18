"""The tools offered to the Messages API agent (digest 2.2 and 2.3): repository tools, plus MCP tools in one arm.

Both arms get ``repo_list``, ``repo_read`` and ``repo_search`` over the pinned blobs. The
``doc-bridge-mcp`` arm also gets the MCP server's configured read-only tools, listed live
from a fresh server started for the attempt, exposed with dots replaced by underscores
(``doc.search`` -> ``doc_search``) and dispatched under their exact MCP names; the server is
closed when the attempt ends. A tool definition is ``{name, description, input_schema}``
(repository tools first). Every result is compact JSON text; any refusal or failure of ours
is the one fixed error text, never an exception message.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from agentstudy.io.containment import ContainmentError, ContainmentMode
from agentstudy.io.export import CorpusBlobs
from agentstudy.io.mcp_client import McpProbeError
from agentstudy.io.mcp_sandbox import contained_server
from agentstudy.io.mcp_session import McpSession
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP
from agentstudy.protocol.mcp_spec import McpServerSpec, ServerPaths
from agentstudy.protocol.read_only import ReadOnlyError, read_only_evidence
from agentstudy.protocol.treatment import text_bytes
from agentstudy.transports.repo_tools import DEFINITIONS, TOOL_ERROR, RepositoryTools, ToolResult

__all__ = ["AgentTools", "ToolSetupError", "agent_tools", "exposed_name"]


class ToolSetupError(RuntimeError):
    """The attempt's tools could not be prepared (MCP server down, a read-only tool missing, a name clash)."""


def exposed_name(mcp_name: str) -> str:
    """The name the model sees for an MCP tool: dots replaced by underscores (``doc.get`` -> ``doc_get``)."""
    return mcp_name.replace(".", "_")


class AgentTools:
    """The tool set of one attempt.

    Args:
        repository: the repository tools at the pin.
        mcp: an open MCP session (``doc-bridge-mcp`` arm) or ``None``.
        read_only: the MCP tools to expose, as the server lists them (ignored without ``mcp``).
        open_world: the tools annotated ``openWorldHint: true`` the study lets through.

    Raises:
        ToolSetupError: a read-only tool is not listed by the server, the server's word on it changed since
            the preflight (issue 40: annotated ``readOnlyHint: false``, ``destructiveHint: true`` or an
            ``openWorldHint: true`` not let through, by the preflight's own rule), so no tool is called, or two
            exposed names clash.
    """

    def __init__(
        self, repository: RepositoryTools, mcp: McpSession | None = None, read_only: Sequence[str] = (),
        open_world: Sequence[str] = (),
    ) -> None:
        self._repository, self._mcp = repository, mcp
        self._definitions: list[dict[str, Any]] = [dict(d) for d in DEFINITIONS]
        self._mcp_names: dict[str, str] = {}
        if mcp is None:
            return
        try:
            listed = {tool.name: tool for tool in mcp.list_tools()}
        except McpProbeError:
            raise ToolSetupError("the MCP server did not list its tools") from None
        try:  # the preflight's rule, again on what this attempt is offered (issue 40)
            read_only_evidence(read_only, {name: tool.hints for name, tool in listed.items()}, open_world)
        except ReadOnlyError as error:
            raise ToolSetupError(f"invalid setup: the MCP server changed its word since the preflight: {error}; "
                                 "no tool of it was called") from None
        for name in read_only:
            tool = listed.get(name)
            if tool is None:
                raise ToolSetupError(f"the MCP server does not list {name}")
            exposed = exposed_name(name)
            if exposed in self.names:
                raise ToolSetupError(f"the MCP tool name {exposed} clashes with another tool")
            self._mcp_names[exposed] = name
            self._definitions.append({"name": exposed, "description": tool.description,
                                      "input_schema": dict(tool.input_schema)})

    @property
    def definitions(self) -> list[dict[str, Any]]:
        """The request's ``tools``: ``{name, description, input_schema}`` each, repository tools first."""
        return [dict(d) for d in self._definitions]

    @property
    def names(self) -> list[str]:
        """The names offered to the model, in request order."""
        return [str(d["name"]) for d in self._definitions]

    def mcp_name(self, name: str) -> str | None:
        """The exact MCP name behind an exposed name, or ``None`` for a repository or unknown tool."""
        return self._mcp_names.get(name)

    def call(self, name: str, arguments: Any) -> ToolResult:
        """Run one tool call; never raises.

        Repository tools answer as in :mod:`agentstudy.transports.repo_tools`. An MCP tool's
        answer is the compact JSON string of its text blocks joined by newlines, with
        ``is_error`` as the server set it; an unknown name, a non-object input or a failed MCP
        call gets the fixed error text.
        """
        exact = self._mcp_names.get(name)
        if exact is None:
            try:
                return self._repository.call(name, arguments)
            except Exception:  # a tool failure is a tool result, never a crash of the attempt
                return ToolResult(TOOL_ERROR, True)
        if self._mcp is None or not isinstance(arguments, Mapping):
            return ToolResult(TOOL_ERROR, True)
        try:
            result = self._mcp.call_tool(exact, arguments)
        except Exception:  # McpProbeError and anything the SDK raises: the same fixed text
            return ToolResult(TOOL_ERROR, True)
        return ToolResult(json.dumps(result.text, ensure_ascii=False), result.is_error, text_bytes(result.text))


@contextmanager
def agent_tools(
    scenario: str,
    root: Path,
    pin: str,
    spec: McpServerSpec,
    server: ServerPaths | None = None,
    containment: ContainmentMode = "bwrap",
    parent_env: Mapping[str, str] | None = None,
    corpus: CorpusBlobs | None = None,
    served: bool | None = None,
) -> Iterator[AgentTools]:
    """The tools of one attempt of ``scenario``; a fresh MCP server in the ``doc-bridge-mcp`` arm, closed after.

    The server runs ``spec.argv(server)`` contained as in preflight (``io.mcp_sandbox``): in its
    sandbox, with an allowlisted environment plus ``spec.env`` (never ``ANTHROPIC_API_KEY``). With
    ``corpus`` (a Ray worker, issue 20) the repository tools read its blobs instead of ``root``.

    Raises:
        ToolSetupError: the repository tools or the MCP server could not be prepared.
    """
    try:
        repository = RepositoryTools(root, pin) if corpus is None else RepositoryTools.from_corpus(corpus)
    except Exception:
        raise ToolSetupError("the repository tools could not read the pinned tree") from None
    if not (scenario == DOC_BRIDGE_MCP if served is None else served):  # served: the arm's own server (issue 44)
        yield AgentTools(repository)
        return
    if server is None:
        raise ToolSetupError("the MCP arm has no corpus snapshot for its server")
    with ExitStack() as stack:
        try:
            argv, child, cwd = stack.enter_context(contained_server(spec, server, containment, parent_env or {}))
            session = stack.enter_context(McpSession(argv[0], argv[1:], child, cwd))
        except (McpProbeError, ContainmentError):
            raise ToolSetupError("the MCP server did not start") from None
        yield AgentTools(repository, session, spec.read_only_tools, spec.open_world_tools)
