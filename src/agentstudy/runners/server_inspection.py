"""Start the MCP server under study once, in its sandbox, to see its tools and try a probe (issue 18 item 2).

``agentstudy init`` uses it: the server runs exactly as in a study's preflight — over a
read-only snapshot of one repository at its pin (``io.server_corpus``), contained
(``io.mcp_sandbox``), with the allowlisted environment — lists its tools with their
annotations, the starter study's tools and probe are chosen from that listing
(``protocol.starter_study``), and the chosen probe is called once — after the operator's
preparation steps (``--prepare``, issue 32), run as a run's preflight runs them
(``io.server_prepare``), in a fresh server given their prepared state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agentstudy.io.containment import ContainmentError, ContainmentMode
from agentstudy.io.git import GitError, list_tree
from agentstudy.io.mcp_client import McpProbeError
from agentstudy.io.mcp_sandbox import contained_server
from agentstudy.io.mcp_session import McpSession
from agentstudy.io.server_corpus import ServerCorpora, ServerCorpusError
from agentstudy.io.server_prepare import PrepareError, run_prepare
from agentstudy.protocol.mcp_spec import McpServerSpec, ServerPaths
from agentstudy.protocol.prepare_steps import PrepareStep
from agentstudy.protocol.starter_study import ListedTool, ToolChoice, choose_tools
from agentstudy.protocol.tool_names import listing_problem
from agentstudy.transports.cli_args import tool_lists_problem

__all__ = ["InspectionError", "ServerInspection", "inspect_server"]

PROBE_TEXT_CHARS = 300


class InspectionError(RuntimeError):
    """The server could not be started, listed or probed, or offers nothing to study (one line)."""


@dataclass(frozen=True)
class ServerInspection:
    """What the server showed: every ``listed`` tool, the ``choice`` made from them (a failed
    probe is one of its open decisions), whether the probe call succeeded (``probe_ok``; False
    when no probe was called) and the start of its answer (``probe_text``, at most
    ``PROBE_TEXT_CHARS`` characters; ``""`` when no probe was called)."""

    listed: tuple[ListedTool, ...]
    choice: ToolChoice
    probe_ok: bool
    probe_text: str


def inspect_server(
    spec: McpServerSpec, repository: str, checkout: Path, pin: str, containment: ContainmentMode,
    parent_env: Mapping[str, str], *, declared: Sequence[str] = (), allow_open_world: Sequence[str] = (),
    probe: str | None = None, probe_arguments: Mapping[str, Any] | None = None, word: str = "the",
    prepare: Sequence[str] = (),
) -> ServerInspection:
    """Start ``spec``'s server once over ``checkout`` at ``pin``, list its tools, choose, probe.

    ``declared``, ``allow_open_world``, ``probe``, ``probe_arguments``, ``word`` and ``prepare`` go to
    :func:`~agentstudy.protocol.starter_study.choose_tools`; the probe's arguments are filled
    (``{root}``, ``{cwd}``) as a run's preflight fills them, and it is called once when chosen, after
    the preparation steps (a failed step is an open decision quoting the server's words, and no probe
    is called).

    Raises:
        InspectionError: the snapshot, the sandbox or the server failed (naming ``repository``),
            a listed tool name breaks ``protocol.tool_names``' rule, the agent's argv could not carry
            the tool lists (``transports.cli_args.tool_lists_problem``), or
            :func:`~agentstudy.protocol.starter_study.choose_tools` found nothing usable.
    """
    try:
        with ServerCorpora(spec, {repository: (checkout, pin)}) as corpora:
            paths = corpora.paths(repository)
            with contained_server(spec, paths, containment, parent_env) as (argv, child, cwd), \
                    McpSession(argv[0], argv[1:], child, cwd) as session:
                listed = tuple(ListedTool(t.name, t.description, t.input_schema, t.hints)
                               for t in session.list_tools())
                names = [t.name for t in listed]
                problem = listing_problem(names)  # the loader's and the run's rule (issue 29)
                if problem is not None:
                    raise InspectionError(f"{repository}: {problem}")
                try:
                    choice = choose_tools(listed, declared=declared, allow_open_world=allow_open_world,
                                          probe=probe, probe_arguments=probe_arguments, word=word,
                                          prepare=prepare)
                except ValueError as error:
                    raise InspectionError(str(error)) from None
                if choice.read_only:
                    problem = tool_lists_problem(replace(spec, read_only_tools=choice.read_only), names)
                    if problem is not None:
                        raise InspectionError(f"{repository}: {problem}")
                if choice.probe is None:
                    return ServerInspection(listed, choice, False, "")
                if not choice.prepare:
                    arguments = replace(spec, probe_arguments=choice.probe_arguments).probe_arguments_for(paths)
                    result = session.call_tool(choice.probe, arguments)
            if choice.prepare:
                steps = tuple(PrepareStep.model_validate(dict(step)) for step in choice.prepare)
                probing = replace(spec, prepare=steps, probe_arguments=choice.probe_arguments)
                prepared = _prepared_paths(probing, repository, corpora, containment, parent_env)
                if isinstance(prepared, str):
                    return ServerInspection(listed, choice.with_failed_prepare(prepared), False, "")
                with contained_server(probing, prepared, containment, parent_env) as (argv, child, cwd), \
                        McpSession(argv[0], argv[1:], child, cwd) as session:
                    result = session.call_tool(choice.probe, probing.probe_arguments_for(prepared))
    except (McpProbeError, ContainmentError, ServerCorpusError, OSError) as error:
        raise InspectionError(f"{repository}: {error}") from None
    text = result.text[:PROBE_TEXT_CHARS]
    if result.is_error:
        choice = choice.with_failed_probe(text)
    else:
        try:
            names = [entry.path for entry in list_tree(checkout, pin) if entry.kind == "blob"]
        except GitError as error:
            raise InspectionError(f"{repository}: {error}") from None
        choice = choice.with_probe_answer(result.text).with_probe_reach(result.text, word, names, (paths.root,))
    return ServerInspection(listed, choice, not result.is_error, text)


def _prepared_paths(spec: McpServerSpec, repository: str, corpora: ServerCorpora, containment: ContainmentMode,
                    parent_env: Mapping[str, str]) -> ServerPaths | str:
    """Run ``spec.prepare`` for ``repository`` as a run's preflight does; its paths with the prepared state, or
    the failed step's one-line refusal (the server's bounded, redacted words)."""
    state = corpora.state_directory(repository)
    try:
        run_prepare(spec, repository, corpora.paths(repository), containment, parent_env, state)
    except PrepareError as error:
        return str(error)
    corpora.set_state(repository, state)
    return corpora.paths(repository)
