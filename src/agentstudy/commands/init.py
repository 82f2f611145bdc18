"""``agentstudy init``: write a starter study file for your own MCP server (issue 18 item 2)."""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from agentstudy.commands.common import fail, stops_on_signals
from agentstudy.commands.containment_options import containment_option

if TYPE_CHECKING:
    from agentstudy.runners.server_inspection import ServerInspection

STUDY_NAME = "study.json"
TOOLS_NAME = "server-tools.json"
_REPOSITORY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_SERVER_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,40}$")
_SCAN_BLOBS = 200


def _repositories(values: tuple[str, ...]) -> dict[str, Path]:
    """``NAME=PATH`` pairs to checkout top levels; exit 2 on a malformed, repeated or non-checkout one."""
    from agentstudy.io.git import GitError, toplevel
    found: dict[str, Path] = {}
    for value in values:
        name, sep, raw = value.partition("=")
        if not sep or not raw or not _REPOSITORY_NAME.match(name):
            fail(f"--repo must be NAME=PATH with NAME of letters, digits, '.', '_' or '-', got {value!r}")
        if name in found:
            fail(f"--repo {name} is given twice")
        path = Path(raw).expanduser().resolve()
        if not path.is_dir():
            fail(f"--repo {name}: {raw} is not a directory")
        try:
            top = toplevel(path)
        except GitError as error:
            fail(f"--repo {name}: {raw} is not a git checkout ({error})")
        if top != path:
            fail(f"--repo {name}: give the checkout's top level {top}, not {raw}")
        found[name] = path
    if not found:
        fail("give at least one --repo NAME=PATH")
    return found


def _check_writable(directory: Path) -> None:
    """Exit 2 before any server starts when DIRECTORY cannot be created or written (its nearest existing
    ancestor must be a writable directory)."""
    existing = directory.absolute()
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        reason = ("it already exists and is not a directory" if existing == directory.absolute()
                  else "a component of the path is not a directory")
        fail(f"cannot write {directory}: {reason}")
    if not os.access(existing, os.W_OK | os.X_OK):
        fail(f"cannot write {directory}: {existing} is not writable")


def _example_source(checkout: Path, pin: str) -> tuple[str, str | None] | None:
    """A README at the top (any case), else the first public UTF-8 text file at ``pin``, with a
    word of its first prose line to ask about (the term the rehearsal agent would search for, so
    the example rehearses a real lookup); None when there is no such file."""
    from agentstudy.io.git import list_tree, read_blobs
    from agentstudy.protocol.corpus_filter import is_public_blob
    from agentstudy.protocol.task import is_safe_source_path
    from agentstudy.rehearsal.policy import pick_term
    blobs = [e for e in list_tree(checkout, pin)
             if e.kind == "blob" and is_public_blob(e.mode, e.kind, e.size, e.path) and is_safe_source_path(e.path)]
    readmes = [e for e in blobs if "/" not in e.path and e.path.lower().startswith("readme")]
    candidates = (readmes + [e for e in blobs if e not in readmes])[:_SCAN_BLOBS]
    contents = read_blobs(checkout, [e.oid for e in candidates])
    for entry in candidates:
        data = contents.get(entry.oid, b"")
        if not data.strip() or b"\0" in data:
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        prose = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
        return entry.path, pick_term(prose[0]) if prose else None
    return None


def _command(raw: str) -> list[str]:
    try:
        words = shlex.split(raw)
    except ValueError as error:
        fail(f"--mcp-command cannot be split into words: {error}")
    if not words:
        fail("--mcp-command is empty")
    if os.sep in words[0] and not os.path.isabs(words[0]):
        if not os.path.exists(words[0]):
            fail(f"--mcp-command: {words[0]} does not exist")
        words[0] = os.path.abspath(words[0])  # the server starts in its snapshot, not here
    return words


def _refuse_inside_checkout(directory: Path, roots: dict[str, Path]) -> None:
    """Exit 2 when DIRECTORY is a studied checkout or inside one: the study files would leave it dirty,
    and a run refuses a dirty checkout (issue 29, break 15)."""
    target = directory.resolve()
    for repository, checkout in roots.items():
        top = checkout.resolve()
        if target == top or top in target.parents:
            fail(f"{directory} is inside the checkout of --repo {repository} ({checkout}); the study files would "
                 "leave it dirty and a run refuses a dirty checkout: choose a DIRECTORY outside it")


def _tool_rows(inspection: ServerInspection) -> list[dict[str, object]]:
    """server-tools.json's rows: every listed tool with its annotations, input schema and proposed role."""
    choice = inspection.choice
    roles = {role.name: role for role in choice.roles}
    rows: list[dict[str, object]] = []
    for tool in inspection.listed:
        chosen = ("read-only (chosen)" if tool.name in choice.read_only else
                  "unannotated (not chosen)" if tool.name in choice.unannotated else "denied")
        role = roles[tool.name]
        rows.append({"name": tool.name, "readOnlyHint": tool.hints.read_only,
                     "destructiveHint": tool.hints.destructive, "openWorldHint": tool.hints.open_world,
                     "choice": chosen, "role": role.role, "reason": role.reason,
                     "description": tool.description.split("\n", 1)[0][:200],
                     "inputSchema": dict(tool.input_schema)})
    return rows


def _probe_arguments(raw: str | None, probe: str | None) -> dict[str, object] | None:
    """``--probe-arguments`` as a JSON object (exit 2 when malformed or given without ``--probe``)."""
    from agentstudy.protocol.mcp_spec import PLACEHOLDERS, json_strings, unknown_placeholders
    if raw is None:
        return None
    if probe is None:
        fail("--probe-arguments needs --probe NAME")
    try:
        value = json.loads(raw)
    except ValueError as error:
        fail(f"--probe-arguments is not JSON: {error}")
    if not isinstance(value, dict):
        fail("--probe-arguments must be a JSON object")
    unknown = unknown_placeholders(json_strings(value))
    if unknown:
        fail(f"--probe-arguments: unknown placeholders {' '.join(unknown)} (known: {' '.join(PLACEHOLDERS)})")
    return value



def _descriptions(path: Path) -> dict[str, str]:
    """``--descriptions FILE``: a JSON object of strings (exit 2 with one line otherwise)."""
    from agentstudy.protocol.json_input import JsonInputError, describe_os_error, load_json, refuse_duplicate_keys
    try:
        value = load_json(path.read_text(encoding="utf-8"), object_pairs_hook=refuse_duplicate_keys)
    except OSError as error:
        fail(f"--descriptions {path}: {describe_os_error(error)}")
    except (JsonInputError, UnicodeDecodeError) as error:
        fail(f"--descriptions {path}: {error}")
    if not isinstance(value, dict) or not value:
        fail(f"--descriptions {path} must be a non-empty JSON object {{TOOL: DESCRIPTION}}")
    for tool, text in value.items():
        if not isinstance(text, str) or not text.strip():
            fail(f"--descriptions {path}: {tool} must map to the description's text (only a description can be "
                 "replaced; a tool's name, input schema and annotations are the server's)")
    return dict(value)


def _check_overrides(overrides: dict[str, str], inspection: ServerInspection) -> None:
    """Every overridden tool is listed by the server and offered to the agent (exit 2 otherwise)."""
    listed = {row["name"] for row in _tool_rows(inspection)}
    for tool in overrides:
        if tool not in listed:
            fail(f"--descriptions names {tool}, a tool the server does not list")
        if tool not in inspection.choice.read_only:
            fail(f"--descriptions names {tool}, which the agent is not offered (not among the allowed tools)")


def _second_arm(command: list[str], first: str, pinned: dict[str, tuple[str, str, str | None]],
                roots: dict[str, Path], containment: str, sandbox_binds: tuple[str, ...]) -> dict[str, Any]:
    """The control arm of ``--compare-mcp-command``: the second server, probed and drafted as the first was."""
    from agentstudy.commands.containment_options import containment_mode
    from agentstudy.protocol.mcp_spec import McpConfigError, parse_mcp_config
    from agentstudy.protocol.starter_study import server_arm, server_name_for
    from agentstudy.runners.server_inspection import InspectionError, inspect_server
    name = server_name_for(command)
    try:
        spec = parse_mcp_config({"mcpServers": {name: {"command": command[0], "args": command[1:]}}},
                                ("-",), "-", {}, ())
    except McpConfigError as error:
        fail(f"--compare-mcp-command: {error}")
    repository = next(iter(roots))
    try:
        inspection = inspect_server(replace(spec, sandbox_binds=sandbox_binds), repository, roots[repository],
                                    pinned[repository][0], containment_mode(containment), os.environ,
                                    word=pinned[repository][2] or "the")
    except InspectionError as error:
        fail(f"--compare-mcp-command: {error}")
    if inspection.choice.undecided:
        decision = inspection.choice.undecided[0]
        fail(f"--compare-mcp-command: the second server leaves {decision.field} open ({decision.question}); "
             "draft it alone with agentstudy init to settle it")
    arm_id = f"{name}-control" if name != first else f"{name}-baseline"
    return server_arm(arm_id, f"Repository tools + the {name} MCP server (control)", name, command,
                      inspection.choice, sandbox_binds)

@click.command()
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--repo", "repos", multiple=True, metavar="NAME=PATH",
              help="A repository to study: NAME and the top level of its git checkout, pinned at its HEAD "
                   "(repeatable).")
@click.option("--mcp-command", required=True, metavar='"COMMAND ARGS…"',
              help="The MCP server's stdio command line (shell words). Placeholders: {root} a read-only snapshot "
                   "of the repository at its pin, {pin}, {git} a private pinned clone, {checkout} the live checkout.")
@click.option("--server-name", help="The server's name in tool names mcp__NAME__TOOL (default: from the command).")
@click.option("--repetitions", type=click.IntRange(1, 100), default=2, show_default=True,
              help="Repetitions of every task in each arm.")
@click.option("--sandbox-bind", "sandbox_binds", multiple=True, metavar="PATH",
              help="An absolute path the server needs read-only inside its sandbox (repeatable).")
@click.option("--tool", "declared", multiple=True, metavar="NAME",
              help="Declare a tool the server does not annotate readOnlyHint read-only, on your word (repeatable; "
                   "recorded as declared by the operator).")
@click.option("--probe", metavar="NAME", help="The freshness probe: one of the allowed tools, called once now and "
                                              "before every run.")
@click.option("--probe-arguments", metavar="JSON",
              help='The probe\'s arguments, a JSON object; strings may use {root} (the snapshot the server reads) '
                   'and {cwd} (its working directory), e.g. \'{"path": "{root}"}\'.')
@click.option("--prepare", "prepare", multiple=True, metavar="NAME",
              help="A tool that builds the server's own state (an index) before its read tools answer: called once "
                   "per checkout before any reservation, in the server's sandbox; what it writes stays in the "
                   "server's private state, never in the repository (repeatable, in order).")
@click.option("--allow-open-world", "open_world", multiple=True, metavar="NAME",
              help="Let through a tool annotated openWorldHint: true (denied by default: it may reach outside the "
                   "pinned corpus); recorded as isolation not achieved (repeatable).")
@click.option("--compare-mcp-command", metavar='"COMMAND ARGS…"',
              help="A second server for the control arm (server A against server B, a version against the next): "
                   "probed and drafted like --mcp-command, with its own read-only tools and probe.")
@click.option("--descriptions", "descriptions_file", type=click.Path(path_type=Path), metavar="FILE",
              help="A JSON object {TOOL: DESCRIPTION} of description overrides for the treatment arm; the control "
                   "arm runs the same server with its own descriptions.")
@containment_option
@stops_on_signals
def init(directory: Path, repos: tuple[str, ...], mcp_command: str, server_name: str | None, repetitions: int,
         sandbox_binds: tuple[str, ...], declared: tuple[str, ...], probe: str | None, probe_arguments: str | None,
         open_world: tuple[str, ...], prepare: tuple[str, ...], compare_mcp_command: str | None,
         descriptions_file: Path | None, containment: str) -> None:
    """Write DIRECTORY/study.json, a draft agentstudy-study-v1 file for your MCP server.

    Pins every --repo at its HEAD, starts the server once (contained, over a read-only snapshot
    of the first repository) to list its tools with their annotations, proposes a role for each
    (search, read, list, prepare, denied), allows the tools annotated readOnlyHint: true and those
    you declare with --tool, proposes a probe from their schemas and calls it once, and writes one
    example task per repository to edit. DIRECTORY/server-tools.json keeps the listing. What it
    cannot decide is listed under arms.treatment.undecided and here, each with the flag that
    settles it; a run refuses the study until none is left. Never overwrites either file; bad
    input is one line and exit 2.

    A comparison study: --compare-mcp-command gives the control arm a second server of its own
    (probed and drafted the same way), --descriptions FILE gives the treatment arm rewritten tool
    descriptions while the control arm runs the same server with its own (docs/comparing.md).
    """
    from agentstudy.commands.containment_options import containment_mode
    from agentstudy.io.git import GitError, head, is_clean
    from agentstudy.io.ledger_store import OutputExistsError, OutputPathError, create_new_file
    from agentstudy.io.signals import raise_if_stopped
    from agentstudy.protocol.json_input import describe_os_error
    from agentstudy.protocol.mcp_spec import McpConfigError, parse_mcp_config
    from agentstudy.protocol.sandbox_binds import kernel_bind_problem
    from agentstudy.protocol.starter_study import (
        description_comparison,
        server_comparison,
        server_name_for,
        starter_study,
    )
    from agentstudy.runners.server_inspection import InspectionError, inspect_server
    study_path, tools_path = directory / STUDY_NAME, directory / TOOLS_NAME
    for path in (study_path, tools_path):
        if os.path.lexists(path):
            fail(f"{path} exists; init never overwrites it (choose another DIRECTORY)")
    _check_writable(directory)
    roots = _repositories(repos)
    _refuse_inside_checkout(directory, roots)
    command = _command(mcp_command)
    probe_values = _probe_arguments(probe_arguments, probe)
    if compare_mcp_command is not None and descriptions_file is not None:
        fail("--compare-mcp-command and --descriptions exclude each other (one comparison per study)")
    overrides = None if descriptions_file is None else _descriptions(descriptions_file)
    second = None if compare_mcp_command is None else _command(compare_mcp_command)
    name = server_name or server_name_for(command)
    if not _SERVER_NAME.match(name):
        fail(f"--server-name must be [a-z0-9][a-z0-9-]* (at most 41 characters), got {name!r}")
    for bind in sandbox_binds:
        if not os.path.isabs(bind) or not os.path.lexists(bind):
            fail(f"--sandbox-bind must be an existing absolute path, got {bind!r}")
        problem = kernel_bind_problem(bind)
        if problem is not None:
            fail(problem)
    try:
        spec = parse_mcp_config({"mcpServers": {name: {"command": command[0], "args": command[1:]}}},
                                ("-",), "-", {}, ())
    except McpConfigError as error:
        fail(f"--mcp-command: {error}")
    pinned: dict[str, tuple[str, str, str | None]] = {}
    for repository, checkout in roots.items():
        try:
            pin = head(checkout)
            source = _example_source(checkout, pin)
            clean = is_clean(checkout)
        except GitError as error:
            fail(f"--repo {repository}: {error}")
        if source is None:
            fail(f"--repo {repository}: no public text file at HEAD {pin[:12]} to write an example task about")
        pinned[repository] = (pin, *source)
        if not clean:
            click.echo(f"agentstudy: warning: --repo {repository} has uncommitted or untracked changes; the study "
                       f"pins HEAD {pin[:12]}, which does not hold them", err=True)
    first = next(iter(roots))
    try:
        inspection = inspect_server(replace(spec, sandbox_binds=sandbox_binds), first, roots[first],
                                    pinned[first][0], containment_mode(containment), os.environ,
                                    declared=declared, allow_open_world=open_world, probe=probe,
                                    probe_arguments=probe_values, word=pinned[first][2] or "the",
                                    prepare=prepare)
    except InspectionError as error:
        fail(str(error))
    study = starter_study(pinned, name, command, inspection.choice, repetitions=repetitions,
                          sandbox_binds=sandbox_binds)
    if overrides is not None:
        _check_overrides(overrides, inspection)
        study = description_comparison(study, name, overrides)
    if second is not None:
        study = server_comparison(study, _second_arm(second, name, pinned, roots, containment, sandbox_binds))
    listing = {"server": name, "command": command, "tools": _tool_rows(inspection),
               "probe": {"tool": inspection.choice.probe, "arguments": dict(inspection.choice.probe_arguments),
                         "answered": inspection.probe_text}}
    raise_if_stopped("nothing was written")  # a stop during the server's start writes no file
    try:
        directory.mkdir(parents=True, exist_ok=True)
        create_new_file(study_path, (json.dumps(study, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
        try:
            create_new_file(tools_path, (json.dumps(listing, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
        except (OutputExistsError, OutputPathError):
            study_path.unlink()
            raise
    except (OutputExistsError, OutputPathError) as error:
        fail(f"cannot write {directory}: {error}")
    except FileExistsError:  # mkdir met a file where DIRECTORY should be
        fail(f"cannot write {directory}: it already exists and is not a directory")
    except OSError as error:  # the directory itself: one plain reason, not Python's errno repr
        fail(f"cannot write {directory}: {describe_os_error(error)}")
    _print_result(study_path, tools_path, inspection, name, roots, containment)


def _print_result(study_path: Path, tools_path: Path, inspection: ServerInspection, name: str,
                  roots: dict[str, Path], containment: str) -> None:
    repositories = "1 repository" if len(roots) == 1 else f"{len(roots)} repositories"
    tasks = "1 example task" if len(roots) == 1 else f"{len(roots)} example tasks"
    click.echo(f"wrote {study_path} (server {name}, {repositories} pinned at HEAD, {tasks}) and {tools_path}")
    click.echo(f"tools of {name}:")
    for row in _tool_rows(inspection):
        allowed = "allowed" if row["choice"] == "read-only (chosen)" else "not allowed"
        click.echo(f"  {row['name']:<28} {row['role']:<8} {allowed:<12} {row['reason']}")
    choice = inspection.choice
    candidates = [role.name for role in choice.roles if role.role == "prepare"]
    if choice.prepare:
        click.echo(f"prepare: {', '.join(str(step['tool']) for step in choice.prepare)} runs once per checkout "
                   "before any reservation (arms.treatment.prepare)")
    elif candidates:
        click.echo(f"prepare: {', '.join(candidates)} may build the server's own state; if its read tools answer "
                   "only after one ran, rerun init with --prepare NAME")
    if choice.probe is not None:
        verdict = "answered" if inspection.probe_ok else "failed with"
        click.echo(f"probe: {choice.probe} {json.dumps(dict(choice.probe_arguments))} {verdict} "
                   f"{inspection.probe_text[:200]!r}")
    if choice.undecided:
        click.echo(f"open decisions ({len(choice.undecided)}; a run refuses the study until each is settled):")
        for decision in choice.undecided:
            click.echo(f"  {decision.field}: {decision.question}")
            click.echo(f"    settle: rerun init (into a new DIRECTORY) with {decision.flag}")
            click.echo(f"    or edit study.json: {decision.edit}")
    # every flag that shaped the study and is not kept in study.json (--sandbox-bind and --allow-open-world are)
    root_flags = " ".join(f"--root {shlex.quote(f'{n}={p}')}" for n, p in roots.items()) + (
        f" --containment {containment}" if containment != "bwrap" else "")
    click.echo("next: replace the example tasks in study.json (question, sources, expected; ids example-…), "
               "then check and rehearse:")
    click.echo(f"  agentstudy study --manifest {shlex.quote(str(study_path))} --dry-run --probe {root_flags}")
    click.echo(f"  agentstudy study --manifest {shlex.quote(str(study_path))} --pilot --rehearsal --transport cli "
               f"{root_flags} --model claude-haiku-5-5 --budget-usd 1 "
               f"--output {shlex.quote(str(study_path.parent / 'pilot-ledger.json'))}")
