"""Setup checks of a CLI attempt from its transcript (seed 000, "Setup is checked from the stream-json").

An attempt's answer counts only if the agent ran with exactly the configured model, tool
set and MCP servers, called only allowed tools, and lost no treatment. Returns problems;
never raises.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentstudy.protocol.treatment import TREATMENT_LOST
from agentstudy.stream.transcript import Transcript

BUILTIN_READ_TOOLS: tuple[str, ...] = ("Read", "Grep", "Glob")


@dataclass(frozen=True)
class SetupExpectations:
    """What the attempt's configuration promises.

    Attributes:
        model: the ``--model`` value the init event must echo.
        tools: the exact tool set init must list (full names, e.g. ``mcp__doc-bridge__doc_search``).
        mcp_server: the one MCP server that must be ``connected`` (doc-bridge arm), or ``None``
            when no server and no ``mcp__`` tool may appear (repository-only arm).
    """

    model: str
    tools: tuple[str, ...]
    mcp_server: str | None
    lost: str = TREATMENT_LOST
    """The problem's words when every call to ``mcp_server`` errored (``protocol.treatment.server_lost``)."""


def _check_init(init: dict[str, Any] | None, expected: SetupExpectations) -> list[str]:
    if init is None:
        return ["no init event"]
    problems: list[str] = []
    if init.get("model") != expected.model:
        problems.append(f"init model {init.get('model')!r} is not {expected.model!r}")
    tools = init.get("tools")
    if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
        problems.append("init tools is not a list of names")
    else:
        duplicates = sorted(name for name, n in Counter(tools).items() if n > 1)
        missing = sorted(set(expected.tools) - set(tools))
        extra = sorted(set(tools) - set(expected.tools))
        if duplicates:
            problems.append(f"duplicate tools {duplicates}")
        if missing:
            problems.append(f"missing tools {missing}")
        if extra:
            problems.append(f"unexpected tools {extra}")
        if expected.mcp_server is None and any(t.startswith("mcp__") for t in tools):
            problems.append("an MCP tool is present in the repository-only arm")
    servers = init.get("mcp_servers")
    if not isinstance(servers, list):
        problems.append("init mcp_servers is not a list")
    elif expected.mcp_server is None:
        if servers:
            problems.append("an MCP server is present in the repository-only arm")
    else:
        states = [(s.get("name"), s.get("status")) for s in servers if isinstance(s, dict)]
        if states != [(expected.mcp_server, "connected")] or len(servers) != 1:
            listed = ", ".join(f"{name} ({status})" for name, status in states) or "none"
            problems.append(f"MCP servers {listed} are not exactly one connected {expected.mcp_server!r}")
    return problems


def _check_denials(transcript: Transcript) -> list[str]:
    raw = transcript.result.get("permission_denials") if transcript.result else None
    problems: list[str] = []
    if raw is not None and not isinstance(raw, list):
        problems.append("result permission_denials is not a list")
    elif isinstance(raw, list) and not all(isinstance(entry, Mapping) for entry in raw):
        problems.append("a permission denial is not an object")
    denials = transcript.permission_denials()
    denied = sorted({str(d["tool_name"]) for d in denials if d["tool_name"] not in BUILTIN_READ_TOOLS})
    if denied:
        problems.append(f"permission denials of {denied}")
    return problems


def check_setup(
    transcript: Transcript, expected: SetupExpectations, allowed_tools: Sequence[str]
) -> list[str]:
    """Every setup problem of an attempt, shape problems first (seed 000, "Setup is checked ...").

    In order: the stream's shape problems; the init event (present, ``model``, the exact tool
    set without duplicates, MCP servers: exactly one ``connected`` ``expected.mcp_server`` in
    the MCP arm, none and no ``mcp__`` tool without one); every ``tool_use`` inside
    ``allowed_tools``; every permission denial a built-in read (``Read``, ``Grep``, ``Glob``;
    those are recorded by the caller, not problems); in the MCP arm, not every call of that
    server answered with ``is_error: true`` (zero calls are no problem, ARCHITECTURE decision 3).

    Args:
        transcript: the parsed stream.
        expected: the init expectations of the attempt's arm.
        allowed_tools: the full names the agent may call (the arm's ``--allowedTools``).

    Returns:
        One line per problem (empty when the setup held); never raises.
    """
    problems = list(transcript.shape_problems)
    problems.extend(_check_init(transcript.init, expected))
    allowed = set(allowed_tools)
    outside = sorted({use.name for use in transcript.tool_uses.values() if use.name not in allowed})
    if outside:
        problems.append(f"tool calls outside the allowed set {outside}")
    problems.extend(_check_denials(transcript))
    if expected.mcp_server is not None:
        prefix = f"mcp__{expected.mcp_server}__"
        mcp_ids = [i for i, use in transcript.tool_uses.items() if use.name.startswith(prefix)]
        if mcp_ids and all(i in transcript.tool_errors for i in mcp_ids):
            said = transcript.tool_error_texts.get(mcp_ids[0], "")
            problems.append(expected.lost + (f": the server answered {said!r}" if said else ""))
    return problems
