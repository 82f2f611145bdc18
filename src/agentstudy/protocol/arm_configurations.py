"""What differs between two configurations of a server: servers, tools, descriptions, tool calls (issue 44). Pure.

A study comparing server A with server B, a version with the next, or one server's tool descriptions with a
rewrite records each arm's server in the ledger's ``arms`` (``protocol.study_arms.arms_record``: ``mcpServer``,
``mcpCommand``, ``serverVersion``, ``offeredTools``, ``shownDescriptions``). :func:`configurations` reads them
back with the observations' server calls by tool; :func:`configuration_sentences` says, first, what differs —
the report's first screen (every format), its JSON ``armDifferences`` and ``agentstudy ledger`` use the same
words. A ledger of an earlier study (no such records) gives an empty :class:`Configurations`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentstudy.protocol.study_arms import DOC_BRIDGE_MCP, REPOSITORY_ONLY, SCENARIOS

ARM_KEYS = {REPOSITORY_ONLY: "control", DOC_BRIDGE_MCP: "treatment"}
"""How the JSON names the two arms."""
SHOWN_CHARS = 160
"""How much of a description a sentence quotes."""


@dataclass(frozen=True)
class Configurations:
    """Both arms' server configurations as the ledger recorded them (issue 44).

    Attributes:
        servers: per scenario, ``{"name", "command", "serverVersion"}`` (``None``: the arm runs no server).
        tools: per scenario, the tools offered (``[]`` without a server).
        descriptions: per tool whose description differs, ``{"control": TEXT, "treatment": TEXT}`` (``None``
            where that arm does not offer the tool).
        tool_calls: per scenario, the server calls by tool over every observation of the arm.
        recorded: whether the ledger recorded any arm's server facts (a comparison study).
        prepare: per scenario, the arm's preparation steps, one line each (``[]`` without any).
        first_request_tokens: per scenario, the mean prompt tokens of the attempts' first requests (the base the
            arm's tool definitions add to; ``None`` when the agent reports none, as Codex: not measurable).
    """

    servers: Mapping[str, Mapping[str, Any] | None] = field(default_factory=dict)
    tools: Mapping[str, Sequence[str]] = field(default_factory=dict)
    descriptions: Mapping[str, Mapping[str, str | None]] = field(default_factory=dict)
    tool_calls: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    recorded: bool = False
    prepare: Mapping[str, Sequence[str]] = field(default_factory=dict)
    first_request_tokens: Mapping[str, float | None] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """``report --format json``'s ``armDifferences``: ``servers``, ``tools`` and ``toolCalls`` keyed
        ``control`` / ``treatment``, and ``descriptions`` (``{TOOL: {"control": TEXT, "treatment": TEXT}}``)."""
        return {
            "servers": {ARM_KEYS[s]: self.servers.get(s) for s in SCENARIOS},
            "tools": {ARM_KEYS[s]: list(self.tools.get(s, ())) for s in SCENARIOS},
            "descriptions": {tool: dict(texts) for tool, texts in self.descriptions.items()},
            "toolCalls": {ARM_KEYS[s]: dict(self.tool_calls.get(s, {})) for s in SCENARIOS},
            "firstRequestTokens": {ARM_KEYS[s]: self.first_request_tokens.get(s) for s in SCENARIOS},
            "preparation": {ARM_KEYS[s]: list(self.prepare.get(s, ())) for s in SCENARIOS},
        }


def _arm_records(arms: Any) -> dict[str, Mapping[str, Any]]:
    return {arm["scenario"]: arm for arm in arms if isinstance(arm, Mapping) and arm.get("scenario") in SCENARIOS} \
        if isinstance(arms, list) else {}


def _strings(value: Any) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def observation_calls(observations: Iterable[Mapping[str, Any]]) -> list[tuple[str, Mapping[str, Any]]]:
    """``(scenario, serverCallsByTool)`` of every ledger observation with a treatment record (read tolerantly)."""
    found: list[tuple[str, Mapping[str, Any]]] = []
    for observation in observations:
        record = observation.get("treatment")
        by_tool = record.get("serverCallsByTool") if isinstance(record, Mapping) else None
        if isinstance(by_tool, Mapping):
            found.append((str(observation.get("scenario")), by_tool))
    return found


def observation_first_tokens(observations: Iterable[Mapping[str, Any]]) -> list[tuple[str, int | None]]:
    """``(scenario, firstRequestInputTokens)`` of every ledger observation (``None`` when not recorded)."""
    found: list[tuple[str, int | None]] = []
    for observation in observations:
        record = observation.get("treatment")
        tokens = record.get("firstRequestInputTokens") if isinstance(record, Mapping) else None
        found.append((str(observation.get("scenario")),
                      tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None))
    return found


def configurations(arms: Any, attempts_calls: Iterable[tuple[str, Mapping[str, Any]]],
                   first_tokens: Iterable[tuple[str, int | None]] = ()) -> Configurations:
    """The :class:`Configurations` of a ledger: its ``arms`` (read tolerantly), each attempt's scenario with
    its server calls by tool (:func:`observation_calls`, or the report's attempts) and with its first request's
    prompt tokens (``first_tokens``; ``None`` when not reported)."""
    records = _arm_records(arms)
    recorded = any("offeredTools" in arm for arm in records.values())
    servers: dict[str, Mapping[str, Any] | None] = {}
    tools: dict[str, list[str]] = {}
    shown: dict[str, dict[str, str]] = {}
    for scenario in SCENARIOS:
        arm = records.get(scenario, {})
        name = arm.get("mcpServer")
        servers[scenario] = None if not isinstance(name, str) else {
            "name": name, "command": _strings(arm.get("mcpCommand")),
            "serverVersion": arm.get("serverVersion") if isinstance(arm.get("serverVersion"), str) else None}
        tools[scenario] = _strings(arm.get("offeredTools"))
        texts = arm.get("shownDescriptions")
        shown[scenario] = {k: v for k, v in texts.items() if isinstance(v, str)} if isinstance(texts, Mapping) else {}
    descriptions: dict[str, dict[str, str | None]] = {}
    for tool in dict.fromkeys([*tools[REPOSITORY_ONLY], *tools[DOC_BRIDGE_MCP]]):
        control, treatment = shown[REPOSITORY_ONLY].get(tool), shown[DOC_BRIDGE_MCP].get(tool)
        if control != treatment:
            descriptions[tool] = {"control": control, "treatment": treatment}
    calls: dict[str, dict[str, int]] = {scenario: {} for scenario in SCENARIOS}
    for scenario, by_tool in attempts_calls:
        counts = calls.get(scenario)
        if counts is None:
            continue
        for tool, number in by_tool.items():
            if isinstance(number, int) and not isinstance(number, bool):
                counts[tool] = counts.get(tool, 0) + number
    sizes: dict[str, list[int]] = {scenario: [] for scenario in SCENARIOS}
    for scenario, tokens in first_tokens:
        if tokens is not None and scenario in sizes:
            sizes[scenario].append(tokens)
    means = {s: (sum(v) / len(v) if v else None) for s, v in sizes.items()}
    prepare = {s: _strings(records.get(s, {}).get("prepareSteps")) for s in SCENARIOS}
    return Configurations(servers, tools, descriptions, calls, recorded, prepare, means)


def _quoted(text: str | None) -> str:
    if text is None:
        return "not offered"
    return f"\"{text[:SHOWN_CHARS]}{'…' if len(text) > SHOWN_CHARS else ''}\""


def _server_text(server: Mapping[str, Any] | None) -> str:
    if server is None:
        return "no server"
    version = f" {server['serverVersion']}" if server.get("serverVersion") else ""
    command = f" ({' '.join(server['command'])})" if server.get("command") else ""
    return f"{server['name']}{version}{command}"


def _calls_text(calls: Mapping[str, int]) -> str:
    return ", ".join(f"{tool} {n}" for tool, n in sorted(calls.items(), key=lambda kv: (-kv[1], kv[0]))) or "none"


def configuration_sentences(found: Configurations, name: Callable[[str], str]) -> tuple[str, ...]:
    """What differs between the arms' configurations, one sentence each, ``()`` for a study that compares none:
    the servers (name, ``serverInfo`` version, command), the tools offered, each differing description, and the
    server calls by tool per arm (which tool the agent chose: the difference a description rewrite aims at).
    ``name``: scenario → the arm's label."""
    if not found.recorded:
        return ()
    control, treatment = REPOSITORY_ONLY, DOC_BRIDGE_MCP
    said: list[str] = []
    servers = {s: _server_text(found.servers.get(s)) for s in SCENARIOS}
    if servers[control] != servers[treatment]:
        said.append(f"The arms run different servers: {name(control)}: {servers[control]}; "
                    f"{name(treatment)}: {servers[treatment]}.")
    else:
        said.append(f"Both arms run the same server: {servers[control]}.")
    if list(found.tools.get(control, ())) != list(found.tools.get(treatment, ())):
        said.append(f"The tools offered differ: {name(control)}: {', '.join(found.tools.get(control, ())) or 'none'}; "
                    f"{name(treatment)}: {', '.join(found.tools.get(treatment, ())) or 'none'}.")
    if list(found.prepare.get(control, ())) != list(found.prepare.get(treatment, ())):
        said.append(f"The preparation differs: {name(control)}: {'; '.join(found.prepare.get(control, ())) or 'none'}; "
                    f"{name(treatment)}: {'; '.join(found.prepare.get(treatment, ())) or 'none'}.")
    for tool, texts in found.descriptions.items():
        said.append(f"The description of {tool} differs: {name(control)}: {_quoted(texts.get('control'))}; "
                    f"{name(treatment)}: {_quoted(texts.get('treatment'))}.")
    said.append(f"Server tool calls by name: {name(control)}: {_calls_text(found.tool_calls.get(control, {}))}; "
                f"{name(treatment)}: {_calls_text(found.tool_calls.get(treatment, {}))}.")
    sizes = [found.first_request_tokens.get(s) for s in SCENARIOS]
    if all(size is not None for size in sizes):
        said.append(f"The first request's prompt, tool definitions included: {name(control)}: ~{sizes[0]:,.0f} "
                    f"tokens; {name(treatment)}: ~{sizes[1]:,.0f} tokens.")
    else:
        said.append("The tokens each arm's tool definitions add are not measurable for this agent (its output "
                    "reports no request's own usage).")
    return tuple(said)


__all__ = ["Configurations", "configuration_sentences", "configurations", "observation_calls",
           "observation_first_tokens"]
