"""Read-only is verified, not typed (issue 15, deliverable 5). Pure.

The operator names the tools the agent may call (``--mcp-tools``); the live ``tools/list``
says how the server annotates each. A named tool annotated ``readOnlyHint: false`` or
``destructiveHint: true`` refuses the run (destructive wins over a ``readOnlyHint: true``).
A named tool annotated ``readOnlyHint: true`` is read-only on the server's word; a named tool
without ``readOnlyHint`` is read-only on the operator's word, and the ledger says which.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ANNOTATED_BY_SERVER = "annotated read-only by the server"
"""Evidence for a tool the server annotates ``readOnlyHint: true`` (and not ``destructiveHint: true``)."""
DECLARED_BY_OPERATOR = "declared read-only by the operator"
"""Evidence for a tool the server leaves without ``readOnlyHint``: only the operator's ``--mcp-tools`` says so."""


class ReadOnlyError(ValueError):
    """A tool the operator named read-only is not (one-line reason naming the tool)."""


@dataclass(frozen=True)
class ToolHints:
    """A listed tool's safety annotations as the server sent them; ``None`` means not annotated.

    Attributes:
        read_only: the tool's ``readOnlyHint``.
        destructive: the tool's ``destructiveHint``.
        open_world: the tool's ``openWorldHint`` (``True``: it may reach outside the pinned corpus).
    """

    read_only: bool | None = None
    destructive: bool | None = None
    open_world: bool | None = None

    @classmethod
    def of(cls, annotations: Any) -> ToolHints:
        """The hints of an MCP SDK ``ToolAnnotations`` object (``None``: nothing annotated)."""
        if annotations is None:
            return cls()
        return cls(getattr(annotations, "read_only_hint", None), getattr(annotations, "destructive_hint", None),
                   getattr(annotations, "open_world_hint", None))


def read_only_evidence(
    named: Sequence[str], hints: Mapping[str, ToolHints], open_world: Sequence[str] = ()
) -> dict[str, str]:
    """Why each tool in ``named`` counts as read-only, in ``named`` order.

    Args:
        named: the operator's read-only tools (``--mcp-tools``), as the server lists them.
        hints: every listed tool's annotations (the live ``tools/list``).
        open_world: the tools annotated ``openWorldHint: true`` the operator let through (issue 32).

    Returns:
        ``{tool: ANNOTATED_BY_SERVER | DECLARED_BY_OPERATOR}`` for every named tool.

    Raises:
        ReadOnlyError: naming the first tool of ``named`` that the server does not list, or
            annotates ``destructiveHint: true`` or ``readOnlyHint: false``, or annotates
            ``openWorldHint: true`` without being in ``open_world``.
    """
    evidence: dict[str, str] = {}
    for tool in named:
        if tool not in hints:
            raise ReadOnlyError(f"--mcp-tools names {tool}, which the server does not list")
        hint = hints[tool]
        if hint.destructive is True:
            raise ReadOnlyError(f"--mcp-tools names {tool}, which the server annotates destructiveHint: true")
        if hint.read_only is False:
            raise ReadOnlyError(f"--mcp-tools names {tool}, which the server annotates readOnlyHint: false")
        if hint.open_world is True and tool not in open_world:
            raise ReadOnlyError(f"--mcp-tools names {tool}, which the server annotates openWorldHint: true (it may "
                                "reach outside the pinned corpus); let it through with the study file's "
                                f"arms.treatment.allowOpenWorld (agentstudy init --allow-open-world {tool})")
        evidence[tool] = ANNOTATED_BY_SERVER if hint.read_only is True else DECLARED_BY_OPERATOR
    return evidence


def require_probe_allowed(
    probe_tool: str, named: Sequence[str], probe_name: str = "--mcp-probe", tools_name: str = "--mcp-tools"
) -> None:
    """The freshness probe must be one of the operator's read-only tools (it is called before the run).

    ``probe_name`` and ``tools_name`` word the error (a study file names its own fields; issue 18).

    Raises:
        ReadOnlyError: ``probe_tool`` is not in ``named``.
    """
    if probe_tool not in named:
        raise ReadOnlyError(f"{probe_name} {probe_tool} is not one of {tools_name} ({','.join(named)})")
