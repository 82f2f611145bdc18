"""The starter ``agentstudy-study-v1`` file ``agentstudy init`` writes (issue 18 item 2). Pure.

From the repositories' pins and example sources and the server's live ``tools/list`` (names,
descriptions, input schemas, annotations) it decides which tools the treatment arm may call —
exactly those the server annotates ``readOnlyHint: true`` and not ``destructiveHint: true``;
unannotated tools are listed but not chosen — and the freshness probe: the search-like
read-only tool of :mod:`agentstudy.protocol.tool_roles` with a broad term, else a read-only tool
without required arguments. The example tasks (one per repository, ids ``example-…``) are
clearly marked for editing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentstudy.protocol.read_only import ToolHints
from agentstudy.protocol.tool_roles import choose_server_tools

__all__ = ["ListedTool", "StarterError", "ToolChoice", "choose_tools", "server_name_for", "starter_study"]

STUDY_VERSION = "agentstudy-study-v1"
EXAMPLE_MARK = "EXAMPLE - edit me:"
"""Starts every example question, so a study that still has one is easy to spot."""
_NAME_CLEAN = re.compile(r"[^a-z0-9-]+")


class StarterError(ValueError):
    """No starter study can be made (the server offers no usable read-only tool); one line."""


@dataclass(frozen=True)
class ListedTool:
    """One tool from the server's ``tools/list``: ``name``, ``description``, ``input_schema`` and ``hints``."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    hints: ToolHints


@dataclass(frozen=True)
class ToolChoice:
    """What init chose: ``read_only`` (annotated read-only, in listed order), ``unannotated``
    (listed without ``readOnlyHint``: not chosen), ``denied`` (everything else listed), the
    ``probe`` tool and its ``probe_arguments``."""

    read_only: tuple[str, ...]
    unannotated: tuple[str, ...]
    denied: tuple[str, ...]
    probe: str
    probe_arguments: Mapping[str, Any]


def choose_tools(listed: Sequence[ListedTool]) -> ToolChoice:
    """Choose the read-only tools and the probe from the live listing.

    Raises:
        StarterError: no tool is annotated read-only, or none of them can be probed with safe
            arguments (no search-like tool, none without required arguments).
    """
    read_only = tuple(t.name for t in listed if t.hints.read_only is True and t.hints.destructive is not True)
    unannotated = tuple(t.name for t in listed if t.hints.read_only is None and t.name not in read_only)
    denied = tuple(t.name for t in listed if t.name not in read_only and t.name not in unannotated)
    if not read_only:
        raise StarterError("the MCP server annotates no tool readOnlyHint: true; name its read-only tools in "
                           "study.json by hand (arms.treatment.tools)")
    definitions = {t.name: {"description": t.description, "input_schema": t.input_schema} for t in listed}
    search = choose_server_tools(definitions, read_only).search
    if search is not None:
        return ToolChoice(read_only, unannotated, denied, search.name, search.arguments("the", broad=True))
    for tool in listed:
        required = tool.input_schema.get("required")
        if tool.name in read_only and not required:
            return ToolChoice(read_only, unannotated, denied, tool.name, {})
    raise StarterError("no read-only tool of the MCP server can be probed with safe arguments; set "
                       "arms.treatment.probe in study.json by hand")


def server_name_for(command: Sequence[str]) -> str:
    """A server name from its command line: the package-like word (the command, or its first
    argument after ``node``/``npx``/``python``/``uvx``…) without ``mcp-server-`` / ``server-`` /
    ``-mcp`` and extensions, lowercased to ``[a-z0-9-]``; ``"server"`` when nothing is left."""
    words = list(command)
    launchers = {"node", "npx", "python", "python3", "uvx", "uv", "bunx", "deno", "pipx"}
    word = words[0]
    rest = [w for w in words[1:] if not w.startswith("-") and "{" not in w]
    if word.rsplit("/", 1)[-1] in launchers and rest:
        word = rest[0]
    base = word.rstrip("/").rsplit("/", 1)[-1].rsplit("@", 1)[0].lower()
    base = re.sub(r"\.(js|mjs|cjs|py|ts)$", "", base)
    for prefix in ("mcp-server-", "server-", "mcp_server_"):
        base = base.removeprefix(prefix)
    base = base.removesuffix("-mcp").removesuffix("-server")
    cleaned = _NAME_CLEAN.sub("-", base).strip("-")
    return cleaned or "server"


def _example_task(name: str, source: str, topic: str | None) -> dict[str, Any]:
    asked = (f"what is said about {topic} in {source}?" if topic else
             f"what does {source} say this project is for?")
    return {
        "id": f"example-{name}",
        "repository": name,
        "category": "example",
        "question": f"{EXAMPLE_MARK} {asked} Cite the file with line numbers.",
        "sources": [source],
        "expected": [f"{EXAMPLE_MARK} the facts a correct answer states, each with its line in {source}"],
    }


def starter_study(
    repositories: Mapping[str, tuple[str, str, str | None]],
    server: str,
    command: Sequence[str],
    choice: ToolChoice,
    *,
    repetitions: int = 2,
    sandbox_binds: Sequence[str] = (),
) -> dict[str, Any]:
    """The starter study file (a JSON object) for ``repositories`` (name -> ``(40-hex pin,
    example source path, a word of that source to ask about or None)``), the MCP server named
    ``server`` run as ``command`` and the tools ``choice``. ``serverConfigCandidates`` is ``[]``
    (no config file needed)."""
    return {
        "version": STUDY_VERSION,
        "repetitions": repetitions,
        "repositories": {name: pin for name, (pin, _, _) in repositories.items()},
        "arms": {
            "control": {"id": "repository-only", "label": "Repository tools only"},
            "treatment": {
                "id": f"{server}-mcp",
                "label": f"Repository tools + the {server} MCP server",
                "mcpConfig": {"mcpServers": {server: {"command": command[0], "args": list(command[1:])}}},
                "tools": list(choice.read_only),
                "probe": {"tool": choice.probe, "arguments": dict(choice.probe_arguments)},
                "serverConfigCandidates": [],
                "sandboxBinds": list(sandbox_binds),
            },
        },
        "tasks": [_example_task(name, source, topic) for name, (_, source, topic) in repositories.items()],
    }
