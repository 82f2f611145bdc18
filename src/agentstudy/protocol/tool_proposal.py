"""The draft study's proposal for an unknown MCP server's tools: roles, the probe, the open decisions. Pure.

Issue 32 item 1: ``agentstudy init`` writes a draft for any server that starts. Every listed
tool gets a proposed role — ``search`` (a required query-like string), ``read`` (a required
path, uri or id), ``list`` (a name that lists, or no required argument), ``prepare`` (a tool
that builds the server's own state, such as an index) or ``denied`` — with the reason, and
whether the treatment arm may call it (``allowed``): a tool is allowed when the server
annotates it ``readOnlyHint: true`` (and not ``destructiveHint: true``), or when the operator
declared it read-only (``--tool``) and the server does not contradict that; a tool annotated
``openWorldHint: true`` is allowed only when the operator let it through (item 3).

The freshness probe is proposed from the schemas: a required path-like argument gets ``{root}``
(the snapshot the server reads), a required query-like string gets a word that occurs in the
corpus. What cannot be decided from the listing is an open :class:`Decision`, each with the
exact flag and the exact study-file edit that settles it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentstudy.protocol.read_only import ToolHints
from agentstudy.protocol.tool_roles import BROAD_GLOB, takes_glob

__all__ = ["ROLES", "Decision", "ProposalError", "ToolRole", "needs_preparation", "prepare_candidates",
           "prepare_decision", "prepare_step", "probe_decision", "probe_suggestions", "propose_probe", "reach_decision",
           "tool_roles", "tools_decision", "touch_decision"]

ROLES = ("search", "read", "list", "prepare", "denied")
"""The roles a draft proposes, in the order the probe prefers them (search first)."""
_QUERY_KEYS = ("query", "q", "pattern", "text", "search", "term", "keyword", "keywords", "regex")
_PATH_WORDS = re.compile(r"path|dir|directory|folder|root|file|uri|cwd|base|location")
_LIST_WORDS = re.compile(r"list|tree|dir|ls\b|browse|outline|structure")
_PREPARE_WORDS = re.compile(r"build|index|refresh|sync|prepare|initiali[sz]e|setup|warm|load")


class ProposalError(ValueError):
    """An operator's choice contradicts the server's listing (one line naming the flag and the tool)."""


@dataclass(frozen=True)
class ToolRole:
    """One listed tool's proposal: ``name``, ``role`` (one of :data:`ROLES`), ``reason`` (one
    sentence) and ``allowed`` (the treatment arm may call it)."""

    name: str
    role: str
    reason: str
    allowed: bool


@dataclass(frozen=True)
class Decision:
    """A decision the draft leaves open: the study-file ``field`` it concerns, the ``question``,
    the ``flag`` of ``agentstudy init`` that settles it and the ``edit`` of study.json that does."""

    field: str
    question: str
    flag: str
    edit: str

    def record(self) -> dict[str, str]:
        """``{"field", "decision", "settleWith", "edit"}`` as written into ``arms.treatment.undecided``."""
        return {"field": self.field, "decision": self.question, "settleWith": self.flag, "edit": self.edit}


def _schema(tool_schema: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    props = tool_schema.get("properties")
    required = tool_schema.get("required")
    return (dict(props) if isinstance(props, Mapping) else {},
            [r for r in required if isinstance(r, str)] if isinstance(required, list) else [])


def _is_string(spec: Any) -> bool:
    return isinstance(spec, Mapping) and spec.get("type") in ("string", None) and "enum" not in spec


def _path_like(key: str, spec: Any) -> bool:
    described = spec.get("description", "") if isinstance(spec, Mapping) else ""
    return _is_string(spec) and bool(_PATH_WORDS.search(key.lower()) or
                                     (isinstance(described, str) and "absolute path" in described.lower()))


def _query_like(key: str, spec: Any) -> bool:
    return _is_string(spec) and key.lower() in _QUERY_KEYS


def _function(name: str, description: str, schema: Mapping[str, Any]) -> tuple[str, str]:
    """The role a tool would play and why, from its name, description and input schema."""
    props, required = _schema(schema)
    short = name.lower()
    if _PREPARE_WORDS.search(short):
        return "prepare", "its name says it builds the server's own state"
    if any(_query_like(key, props.get(key)) for key in required):
        return "search", "it takes a required query-like string"
    if _LIST_WORDS.search(short) or not required:
        return "list", "its name lists, or it needs no argument" if required else "it needs no argument"
    if any(_path_like(key, props.get(key)) for key in required) or "read" in description.lower():
        return "read", "it takes a required path, uri or id"
    return "read", "it answers from its arguments"


def tool_roles(
    listed: Sequence[tuple[str, str, Mapping[str, Any], ToolHints]],
    declared: Sequence[str] = (),
    allow_open_world: Sequence[str] = (),
) -> list[ToolRole]:
    """Every listed tool ``(name, description, input schema, hints)``'s proposal, in listed order.

    ``declared``: the tools the operator declares read-only (``--tool``); ``allow_open_world``:
    the ``openWorldHint: true`` tools the operator lets through (``--allow-open-world``).

    Raises:
        ProposalError: a declared or let-through tool is not listed, a declared tool is annotated
            ``destructiveHint: true`` or ``readOnlyHint: false``, a let-through tool is not annotated
            ``openWorldHint: true``, or a declared open-world tool was not let through.
    """
    hints = {name: hint for name, _, _, hint in listed}
    for flag, names in (("--tool", declared), ("--allow-open-world", allow_open_world)):
        for name in names:
            if name not in hints:
                raise ProposalError(f"{flag} names {name}, which the server does not list")
    for name in allow_open_world:
        if hints[name].open_world is not True:
            raise ProposalError(f"--allow-open-world names {name}, which the server does not annotate "
                                "openWorldHint: true")
    roles: list[ToolRole] = []
    for name, description, schema, hint in listed:
        role, why = _function(name, description, schema)
        if hint.destructive is True or hint.read_only is False:
            said = "destructiveHint: true" if hint.destructive is True else "readOnlyHint: false"
            if name in declared:
                raise ProposalError(f"--tool names {name}, which the server annotates {said}")
            role = "prepare" if role == "prepare" else "denied"
            roles.append(ToolRole(name, role, f"annotated {said}: never offered to the agent"
                                  + (f" ({why})" if role == "prepare" else ""), False))
            continue
        if hint.open_world is True and name not in allow_open_world:
            if name in declared:
                raise ProposalError(f"--tool names {name}, which the server annotates openWorldHint: true; "
                                    f"let it through with --allow-open-world {name} as well")
            roles.append(ToolRole(name, "denied", "annotated openWorldHint: true: it may reach outside the pinned "
                                  f"corpus (--allow-open-world {name} lets it through)", False))
            continue
        if hint.read_only is True:
            roles.append(ToolRole(name, role, f"{why}; annotated read-only by the server", True))
        elif name in declared:
            roles.append(ToolRole(name, role, f"{why}; declared read-only by the operator (--tool)", True))
        else:
            roles.append(ToolRole(name, role, f"{why}; not annotated readOnlyHint, so denied unless declared "
                                  f"read-only (--tool {name})", False))
    return roles


def _fill(schema: Mapping[str, Any], description: str, word: str) -> dict[str, Any] | None:
    props, required = _schema(schema)
    arguments: dict[str, Any] = {}
    for key in required:
        spec = props.get(key)
        if _query_like(key, spec):  # a glob matches names: every file answers
            arguments[key] = BROAD_GLOB if takes_glob(key, props, description) else word
        elif _path_like(key, spec):
            arguments[key] = "{root}"
        else:
            return None
    return arguments


def propose_probe(
    roles: Sequence[ToolRole], tools: Mapping[str, tuple[str, Mapping[str, Any]]], word: str
) -> tuple[str, dict[str, Any]] | None:
    """The probe among the allowed tools (``tools``: name -> ``(description, input schema)``):
    the first ``search`` one, else ``list``, else ``read``, whose every required argument can be
    filled (path-like → ``{root}``, query-like → ``word``, or ``**/*`` when that argument takes a
    glob pattern, which matches file names: ``tool_roles.takes_glob``); ``None`` when no allowed tool can
    be called that way."""
    for wanted in ROLES[:3]:
        for role in roles:
            if role.allowed and role.role == wanted:
                arguments = _fill(tools[role.name][1], tools[role.name][0], word)
                if arguments is not None:
                    return role.name, arguments
    return None


def tools_decision(roles: Sequence[ToolRole]) -> Decision | None:
    """The open decision when no tool is allowed (``arms.treatment.tools``), else ``None``."""
    if any(role.allowed for role in roles):
        return None
    candidates = [r.name for r in roles if r.role in ("search", "read", "list") and "--tool" in r.reason]
    names = candidates or ["NAME"]
    return Decision(
        "arms.treatment.tools",
        "the server annotates no tool readOnlyHint: true; which of its tools are read-only? "
        + (f"unannotated: {', '.join(candidates)}" if candidates else "none can be declared"),
        " ".join(f"--tool {name}" for name in names) + " (only the tools you vouch never write)",
        f"set \"tools\": {json.dumps(names)} in arms.treatment (only tools you vouch never write) "
        "and remove this entry from arms.treatment.undecided")


FRONT_DOOR_TOOLS = 5
"""At most this many listed tools, or one named like a guide, menu or tier, looks like a reduced front door."""
_FRONT_DOOR_WORDS = re.compile(r"guide|menu|tier|help|start|discover|toolset|capabilit", re.IGNORECASE)


def reach_decision(roles: Sequence[ToolRole]) -> Decision | None:
    """The open decision when tools are allowed but none can search or read files (no allowed ``search`` or
    ``read`` role; issue 39 item 6), else ``None``. When the listing looks like a reduced front door (at most
    :data:`FRONT_DOOR_TOOLS` tools, or a tool named like a guide, menu or tier), it says the server may need an
    option or environment variable to list its full tool set."""
    allowed = [role for role in roles if role.allowed]
    if not allowed or any(role.role in ("search", "read") for role in allowed):
        return None
    front = len(roles) <= FRONT_DOOR_TOOLS or any(_FRONT_DOOR_WORDS.search(role.name) for role in roles)
    hint = ("; the listing looks like a reduced front door: the server may need an option or environment "
            "variable (see its documentation) to list its full tool set" if front else "")
    return Decision(
        "arms.treatment.tools",
        f"none of the allowed tools ({', '.join(role.name for role in allowed)}) can search or read files, so "
        f"the treatment may never touch the repository{hint}",
        "--tool NAME for a tool that searches or reads, or rerun init with the server's command or env set to "
        "list its full tool set",
        "add a tool that searches or reads to \"tools\" in arms.treatment (or keep the tools if they do reach "
        "the repository) and remove this entry from arms.treatment.undecided")


def probe_suggestions(roles: Sequence[ToolRole], tools: Mapping[str, tuple[str, Mapping[str, Any]]],
                      word: str) -> tuple[tuple[str, dict[str, Any]], ...]:
    """Every allowed tool whose required arguments can be filled from its schema as a probe's are
    (:func:`propose_probe`'s order: search, list, read), with those arguments (issue 39 item 6)."""
    found: list[tuple[str, dict[str, Any]]] = []
    for wanted in ROLES[:3]:
        for role in roles:
            if role.allowed and role.role == wanted and role.name in tools:
                arguments = _fill(tools[role.name][1], tools[role.name][0], word)
                if arguments is not None:
                    found.append((role.name, arguments))
    return tuple(found)


def probe_decision(allowed: Sequence[str], failed: tuple[str, Mapping[str, Any], str] | None,
                   suggestions: Sequence[tuple[str, Mapping[str, Any]]] = ()) -> Decision:
    """The open decision about the probe (``arms.treatment.probe``): none could be proposed
    (``failed`` None), or the proposed ``(tool, arguments, answer)`` answered an error.

    The suggested call is the first of ``suggestions`` (:func:`probe_suggestions`: arguments from the tool's
    own schema) that is not the call that failed (issue 39 item 6); without one, the tool's name with a
    ``{"path": "{root}"}`` placeholder to edit."""
    others = [(name, dict(arguments)) for name, arguments in suggestions
              if failed is None or (name, dict(arguments)) != (failed[0], dict(failed[1]))]
    if others:
        tool, example = others[0][0], json.dumps(others[0][1])
        return _probe_decision(tool, example, failed)
    tool = next((name for name in allowed if failed is None or name != failed[0]), None) \
        or (failed[0] if failed else "NAME")
    return _probe_decision(tool, '{"path": "{root}"}', failed)


def _probe_decision(tool: str, example: str, failed: tuple[str, Mapping[str, Any], str] | None) -> Decision:
    question = ("no allowed tool can be called with arguments read from its schema; which call shows the "
                "server answers?" if failed is None else
                f"the probe {failed[0]} {json.dumps(dict(failed[1]))} answered an error: "
                f"{failed[2][:160]!r}; which call shows the server answers?")
    return Decision(
        "arms.treatment.probe",
        question,
        f"--probe {tool} --probe-arguments '{example}' (arguments may use {{root}} and {{cwd}})",
        f"set \"probe\": {{\"tool\": \"{tool}\", \"arguments\": {example}}} in arms.treatment and remove this "
        "entry from arms.treatment.undecided")


def prepare_candidates(roles: Sequence[ToolRole]) -> list[str]:
    """The listed tools whose proposed role is ``prepare`` (they build the server's own state), in listed order."""
    return [role.name for role in roles if role.role == "prepare"]


def prepare_step(name: str, tools: Mapping[str, tuple[str, Mapping[str, Any]]], word: str) -> dict[str, Any]:
    """A draft's preparation step calling tool ``name`` (issue 32): ``{"tool": name, "arguments": {...}, "scope":
    "server"}`` with its required arguments filled as a probe's are (path-like → ``{root}``, query-like →
    ``word``), or none when they cannot be filled (the operator edits them). ``"server"``: the call is also
    replayed in every server the study starts, which works whether the server keeps what it built on disk or
    in memory only (``"checkout"`` is the cheaper choice for a server that reloads its state from disk)."""
    description, schema = tools[name]
    return {"tool": name, "arguments": _fill(schema, description, word) or {}, "scope": "server"}


_NOT_READY = re.compile(r"not (?:yet )?(?:built|ready|indexed|initiali[sz]ed|loaded)|no index|index (?:is )?missing|"
                        r"needs?[_ ]\w*index", re.IGNORECASE)


def needs_preparation(answer: str, candidates: Sequence[str]) -> bool:
    """Whether a probe's ``answer`` says the server is not ready: it names one of the ``candidates`` (tools that
    build the server's own state) or says its index is not built / not ready (issue 32). Only asked when the
    server lists such tools."""
    return bool(candidates) and (any(name in answer for name in candidates) or bool(_NOT_READY.search(answer)))


def prepare_decision(candidates: Sequence[str], failed: str | None) -> Decision:
    """The open decision about ``arms.treatment.prepare`` (issue 32): the server lists tools that build its own
    state (``candidates``) and the probe answered an error, or a declared step ``failed`` (its answer)."""
    tool = candidates[0] if candidates else "NAME"
    question = (f"the preparation step answered an error: {failed[:160]!r}; which step builds the server's state?"
                if failed is not None else
                f"the probe's answer says the server is not ready and it lists tools that build its own state "
                f"({', '.join(candidates)}); must one run before its read tools answer?")
    return Decision(
        "arms.treatment.prepare",
        question,
        f"--prepare {tool} (runs once per checkout before any reservation, in the server's sandbox; what it "
        "writes stays in the server's private state)",
        f"set \"prepare\": [{{\"tool\": \"{tool}\", \"arguments\": {{}}, \"scope\": \"server\"}}] in arms.treatment "
        "and remove this entry from arms.treatment.undecided")


_PLACEHOLDERS = ("{root}", "{cwd}")
_MIN_MARK = 4
"""The shortest corpus word or file base name counted as a mark of the corpus (characters)."""


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def _marks(text: str, word: str, names: Sequence[str]) -> bool:
    """Whether ``text`` holds ``word`` (a whole word, any case) or a corpus path (the whole relative path, or a
    base name of at least :data:`_MIN_MARK` characters; not as a part of a longer name)."""
    if len(word) >= _MIN_MARK and re.search(rf"\b{re.escape(word)}\b", text, re.IGNORECASE):
        return True
    for name in names:
        base = name.rsplit("/", 1)[-1]
        for mark in (name, base) if len(base) >= _MIN_MARK else (name,):
            if mark in text and re.search(rf"(?<![\w.-]){re.escape(mark)}(?![\w-])", text):
                return True
    return False


def touch_decision(tool: str, arguments: Mapping[str, Any], answer: str, word: str,
                   names: Sequence[str], roots: Sequence[str] = ()) -> Decision | None:
    """The open decision when the accepted probe ``tool`` never touches the repository (issue 39 item 6), else
    ``None``: its ``arguments`` name no ``{root}``/``{cwd}`` path, no corpus path and not the corpus ``word``,
    and its ``answer`` shows nothing of the corpus (not the word, no corpus path of ``names`` — relative paths
    at the pin — and none of ``roots``, the absolute paths the server saw it at)."""
    values = _strings(dict(arguments))
    if any(p in v for v in values for p in _PLACEHOLDERS) or any(_marks(v, word, names) for v in values):
        return None
    if _marks(answer, word, names) or any(root and root in answer for root in roots):
        return None
    return Decision(
        "arms.treatment.probe",
        f"the probe {tool} {json.dumps(dict(arguments))} answered, but its arguments name no {{root}} or {{cwd}} "
        "path and no word of the corpus, and its answer shows nothing of the corpus: it may pass while the server "
        "cannot read the repository; which call shows the server reads it?",
        f"--probe {tool} --probe-arguments '{{\"path\": \"{{root}}\"}}' (a call whose arguments or answer "
        "name the repository; arguments may use {root} and {cwd})",
        f"set \"probe\" in arms.treatment to a call that reads the repository (or keep {tool} if it does) and "
        "remove this entry from arms.treatment.undecided")
