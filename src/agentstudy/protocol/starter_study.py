"""The starter ``agentstudy-study-v1`` file ``agentstudy init`` writes (issue 18 item 2). Pure.

From the repositories' pins and example sources and the server's live ``tools/list`` (names,
descriptions, input schemas, annotations) it proposes which tools the treatment arm may call —
those the server annotates ``readOnlyHint: true`` (not ``destructiveHint: true``, not
``openWorldHint: true`` unless let through) and those the operator declares read-only — and the
freshness probe (:mod:`agentstudy.protocol.tool_proposal`, issue 32). It always gives a draft:
what it cannot decide is listed in ``arms.treatment.undecided``, which a run refuses until it
is settled. The example tasks (one per repository, ids ``example-…``) are clearly marked for editing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from agentstudy.protocol.read_only import ToolHints
from agentstudy.protocol.tool_proposal import (
    Decision,
    ProposalError,
    ToolRole,
    needs_preparation,
    prepare_candidates,
    prepare_decision,
    prepare_step,
    probe_decision,
    probe_suggestions,
    propose_probe,
    reach_decision,
    tool_roles,
    tools_decision,
    touch_decision,
)

__all__ = ["ListedTool", "StarterError", "ToolChoice", "choose_tools", "description_comparison", "server_arm",
           "server_comparison", "server_name_for", "starter_study"]

STUDY_VERSION = "agentstudy-study-v1"
EXAMPLE_MARK = "EXAMPLE - edit me:"
"""Starts every example question, so a study that still has one is easy to spot."""
_NAME_CLEAN = re.compile(r"[^a-z0-9-]+")


class StarterError(ValueError):
    """An operator's choice (``--tool``, ``--probe``, ``--allow-open-world``) contradicts the listing; one line."""


@dataclass(frozen=True)
class ListedTool:
    """One tool from the server's ``tools/list``: ``name``, ``description``, ``input_schema`` and ``hints``."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    hints: ToolHints


@dataclass(frozen=True)
class ToolChoice:
    """What init chose: ``read_only`` (the allowed tools, in listed order), ``unannotated``
    (listed without ``readOnlyHint`` and not declared: not chosen), ``denied`` (everything else
    listed), the ``probe`` tool (``None``: undecided) and its ``probe_arguments``, every tool's
    proposed ``roles`` and the decisions left open (``undecided``), plus the operator's
    ``declared`` tools, the open-world tools let through (``open_world``) and the preparation steps
    (``prepare``: ``{"tool", "arguments"}`` objects, issue 32)."""

    read_only: tuple[str, ...]
    unannotated: tuple[str, ...]
    denied: tuple[str, ...]
    probe: str | None
    probe_arguments: Mapping[str, Any]
    roles: tuple[ToolRole, ...] = ()
    undecided: tuple[Decision, ...] = ()
    declared: tuple[str, ...] = ()
    open_world: tuple[str, ...] = ()
    prepare: tuple[Mapping[str, Any], ...] = ()
    suggestions: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    """Probe calls built from the allowed tools' schemas (``protocol.tool_proposal.probe_suggestions``)."""

    def with_failed_probe(self, answer: str) -> ToolChoice:
        """This choice with the probe's failure (its answer ``answer``) as an open decision (and the preparation
        as another when the answer says the server is not ready: :meth:`with_probe_answer`)."""
        if self.probe is None:
            return self
        decision = probe_decision(self.read_only, (self.probe, self.probe_arguments, answer), self.suggestions)
        return replace(self, undecided=(*self.undecided, decision)).with_probe_answer(answer)

    def with_probe_answer(self, answer: str) -> ToolChoice:
        """This choice with ``arms.treatment.prepare`` as an open decision when no step was declared and the
        probe's ``answer`` (an error or not) says the server is not ready while it lists tools that build its
        own state (``protocol.tool_proposal.needs_preparation``; issue 32)."""
        candidates = prepare_candidates(self.roles)
        if self.prepare or not needs_preparation(answer, candidates):
            return self
        named = [name for name in candidates if name in answer] + [name for name in candidates if name not in answer]
        return replace(self, undecided=(*self.undecided, prepare_decision(named, None)))

    def with_probe_reach(self, answer: str, word: str, names: Sequence[str], roots: Sequence[str] = ()) -> ToolChoice:
        """This choice with ``arms.treatment.probe`` as an open decision when the probe answered but never touched
        the repository (``protocol.tool_proposal.touch_decision``: ``word`` a corpus word, ``names`` the corpus's
        relative paths, ``roots`` where the server saw it; issue 39 item 6)."""
        if self.probe is None:
            return self
        decision = touch_decision(self.probe, self.probe_arguments, answer, word, names, roots)
        return self if decision is None else replace(self, undecided=(*self.undecided, decision))

    def with_failed_prepare(self, answer: str) -> ToolChoice:
        """This choice with a failed preparation step (the server's words ``answer``) as an open decision."""
        decision = prepare_decision([str(step["tool"]) for step in self.prepare], answer)
        return replace(self, undecided=(*self.undecided, decision))


def choose_tools(
    listed: Sequence[ListedTool],
    *,
    declared: Sequence[str] = (),
    allow_open_world: Sequence[str] = (),
    probe: str | None = None,
    probe_arguments: Mapping[str, Any] | None = None,
    word: str = "the",
    prepare: Sequence[str] = (),
) -> ToolChoice:
    """Propose the draft's tools and probe from the live listing (``protocol.tool_proposal``).

    Never refuses for want of a usable tool: what cannot be decided is an open decision. The
    operator's ``probe`` (with ``probe_arguments``, else arguments proposed from its schema)
    replaces the proposal; ``word`` (a word of the corpus) fills a proposed query. ``prepare``
    names the tools to call once per checkout before any reservation (issue 32), arguments proposed
    from their schemas.

    Raises:
        StarterError: ``declared`` or ``allow_open_world`` contradict the listing
            (:func:`~agentstudy.protocol.tool_proposal.tool_roles`), ``probe`` is not an allowed tool, or
            ``prepare`` names a tool the server does not list.
    """
    try:
        roles = tuple(tool_roles([(t.name, t.description, t.input_schema, t.hints) for t in listed],
                                 declared, allow_open_world))
    except ProposalError as error:
        raise StarterError(str(error)) from None
    read_only = tuple(r.name for r in roles if r.allowed)
    hints = {t.name: t.hints for t in listed}
    unannotated = tuple(r.name for r in roles if not r.allowed and hints[r.name].read_only is None
                        and hints[r.name].destructive is not True and hints[r.name].open_world is not True)
    denied = tuple(r.name for r in roles if not r.allowed and r.name not in unannotated)
    schemas = {t.name: (t.description, t.input_schema) for t in listed}
    for name in prepare:
        if name not in schemas:
            raise StarterError(f"--prepare names {name}, which the server does not list")
    steps = tuple(prepare_step(name, schemas, word) for name in prepare)
    undecided: list[Decision] = []
    decision = tools_decision(roles) or reach_decision(roles)
    if decision is not None:
        undecided.append(decision)
    chosen: tuple[str, dict[str, Any]] | None
    if probe is not None:
        if probe not in read_only:
            raise StarterError(f"--probe {probe} is not one of the allowed tools ({', '.join(read_only) or 'none'}); "
                               "declare it read-only with --tool if the server does not annotate it")
        proposed = propose_probe([r for r in roles if r.name == probe], schemas, word)
        chosen = (probe, dict(probe_arguments) if probe_arguments is not None else
                  proposed[1] if proposed else {})
    else:
        chosen = propose_probe(roles, schemas, word)
        if chosen is None and read_only:
            undecided.append(probe_decision(read_only, None))
    return ToolChoice(read_only, unannotated, denied, chosen[0] if chosen else None, chosen[1] if chosen else {},
                      roles, tuple(undecided), tuple(d for d in declared if d in read_only), tuple(allow_open_world),
                      steps, probe_suggestions(roles, schemas, word))


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


def server_arm(arm_id: str, label: str, server: str, command: Sequence[str], choice: ToolChoice,
               sandbox_binds: Sequence[str] = ()) -> dict[str, Any]:
    """One arm of a starter study running the MCP server named ``server`` as ``command`` with the tools
    ``choice`` (its open decisions under ``undecided``)."""
    return {
        "id": arm_id,
        "label": label,
        "mcpConfig": {"mcpServers": {server: {"command": command[0], "args": list(command[1:])}}},
        "tools": list(choice.read_only),
        "probe": ({"tool": choice.probe, "arguments": dict(choice.probe_arguments)}
                  if choice.probe is not None else None),
        "serverConfigCandidates": [],
        "sandboxBinds": list(sandbox_binds),
        **({"allowOpenWorld": list(choice.open_world)} if choice.open_world else {}),
        **({"prepare": [dict(step) for step in choice.prepare]} if choice.prepare else {}),
        **({"undecided": [d.record() for d in choice.undecided]} if choice.undecided else {}),
    }


def description_comparison(study: Mapping[str, Any], server: str, descriptions: Mapping[str, str]
                           ) -> dict[str, Any]:
    """``study`` (a :func:`starter_study`) turned into one server against its own description rewrite (issue 44):
    the control arm runs the treatment's server with the server's own descriptions, the treatment the same
    server with ``descriptions`` (``toolDescriptions``)."""
    treatment = dict(study["arms"]["treatment"])
    control = {**treatment, "id": "own-descriptions", "label": f"Repository tools + {server}, its own descriptions"}
    control.pop("undecided", None)  # one list of open decisions, the treatment's
    rewritten = {**treatment, "id": "rewritten-descriptions", "label": f"Repository tools + {server}, rewritten "
                 "descriptions", "toolDescriptions": dict(descriptions)}
    return {**study, "arms": {"control": control, "treatment": rewritten}}


def server_comparison(study: Mapping[str, Any], control: Mapping[str, Any]) -> dict[str, Any]:
    """``study`` (a :func:`starter_study`) with ``control`` (a :func:`server_arm`: the second server) as its control
    arm: server A against server B, or a version against the next (issue 44)."""
    return {**study, "arms": {"control": dict(control), "treatment": study["arms"]["treatment"]}}


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
            "treatment": server_arm(f"{server}-mcp", f"Repository tools + the {server} MCP server", server, command,
                                    choice, sandbox_binds),
        },
        "tasks": [_example_task(name, source, topic) for name, (_, source, topic) in repositories.items()],
    }
