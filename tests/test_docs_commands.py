"""The README's and docs/running.md's commands run as written (issue 42): every ``agentstudy …`` command of
their code blocks and inline code names a real command, and click's own parser of that command accepts its
flags (an unknown flag, a flag missing its value, or an extra argument fails here as it would for a reader).
The cheap ones also run: the dry runs and help of the README's first study, in rehearsal."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from agentstudy.cli import COMMANDS, main

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("README.md", "docs/running.md")


def _code_lines(text: str) -> list[str]:
    """Shell lines of fenced blocks (continuations joined) and inline code spans that start with agentstudy."""
    lines: list[str] = []
    in_block, pending = False, ""
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_block, pending = not in_block, ""
            continue
        if in_block:
            joined = pending + line.strip()
            if joined.endswith("\\"):
                pending = joined[:-1] + " "
                continue
            pending = ""
            lines.append(joined)
        else:
            lines.extend(span for span in re.findall(r"`([^`]+)`", line)
                         if re.match(r"(\.venv/bin/)?agentstudy ", span))
    return lines


def _invocations(line: str) -> list[list[str]]:
    """The argument lists after ``agentstudy`` of every agentstudy command on one shell line."""
    try:
        tokens = shlex.split(line, comments=True)
    except ValueError:  # an unbalanced quote in prose
        return []
    found: list[list[str]] = []
    current: list[str] | None = None
    for token in tokens:
        if token in ("&&", "||", ";", "|"):
            current = None
        elif current is not None:
            current.append(token)
        elif token.endswith("agentstudy") and "/" not in token.removeprefix(".venv/bin/"):
            current = []
            found.append(current)
    return found


def _documented() -> list[tuple[str, list[str]]]:
    found = []
    for page in PAGES:
        for line in _code_lines((ROOT / page).read_text(encoding="utf-8")):
            found.extend((page, argv) for argv in _invocations(line))
    return found


DOCUMENTED = _documented()


def _is_placeholder(word: str) -> bool:
    return word.isupper() or word in ("…", "...")


def test_the_pages_hold_commands() -> None:
    commands = [argv[0] for _page, argv in DOCUMENTED if argv]
    assert {"study", "init", "adjudicate", "report", "demo", "transcript"} <= set(commands)
    assert commands.count("minimal") == 1  # one name for running a study; the alias is said once


@pytest.mark.parametrize(("page", "argv"), DOCUMENTED, ids=[f"{p}: {' '.join(a)[:60]}" for p, a in DOCUMENTED])
def test_a_documented_command_parses(page: str, argv: list[str]) -> None:
    if not argv or argv[0].startswith("-"):
        assert argv in ([], ["--help"], ["-h"], ["--version"]), f"{page}: agentstudy {' '.join(argv)}"
        return
    name, args = argv[0], argv[1:]
    if _is_placeholder(name):
        return
    assert name in COMMANDS, f"{page}: agentstudy {name} is not a command"
    command = main.get_command(click.Context(main), name)
    assert command is not None
    context = click.Context(command, info_name=name)
    parser = command.make_parser(context)
    try:
        _, extra, _ = parser.parse_args([a for a in args if not _is_placeholder(a)])
    except click.UsageError as error:
        pytest.fail(f"{page}: agentstudy {' '.join(argv)}: {error.format_message()}")
    positional = [p for p in command.params if isinstance(p, click.Argument)]
    wanted = sum(1 if p.nargs == 1 else 0 for p in positional)
    assert len(extra) <= wanted or any(p.nargs == -1 for p in positional), \
        f"{page}: agentstudy {' '.join(argv)}: unexpected arguments {extra}"


def test_an_unknown_flag_is_caught() -> None:
    """The same check refuses what click refuses: the parse above can fail."""
    command = main.get_command(click.Context(main), "study")
    assert command is not None
    with pytest.raises(click.UsageError):
        command.make_parser(click.Context(command)).parse_args(["--no-such-flag"])


def test_the_readme_first_study_dry_run_runs(tmp_path: Path) -> None:
    """The README's ``init`` then ``study --dry-run`` on the bundled example corpus, as written (paths filled in)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    steps = [argv for page, argv in DOCUMENTED if page == "README.md" and argv[:1] in (["init"], ["study"])
             and ("--dry-run" in argv or argv[0] == "init")]
    assert len(steps) >= 2 and "--run" in readme
    repo = tmp_path / "repo"
    repo.mkdir()
    runner = CliRunner()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "README.md").write_text("hello\n", encoding="utf-8")
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid",
                    "commit", "-qm", "c"], check=True)
    for argv in steps:
        filled = [a.replace("$REPO", str(repo)).replace("/tmp/my-study", str(tmp_path / "my-study"))
                  for a in argv if a != "--probe"]
        filled = [str(ROOT / a) if a.startswith(".tools/") else a for a in filled]
        done = runner.invoke(main, filled, catch_exceptions=False)
        assert done.exit_code == 0, f"agentstudy {' '.join(filled)}: {done.output[-2000:]}"


@pytest.mark.parametrize("name", sorted(set(COMMANDS) - {"transcript", "provider"}))
def test_help_names_arms_not_the_seed_scenario_ids(name: str) -> None:
    """A reader's help speaks of arms and the server, never the seed's scenario ids (``transcript`` takes one
    as a value of --scenario and ``provider`` reads one in its request's JSON, so they may name them)."""
    done = CliRunner().invoke(main, [name, "--help"], terminal_width=200)
    assert done.exit_code == 0
    assert "doc-bridge-mcp" not in done.output and "repository-only" not in done.output
