"""What a user reads cites no issue number of our tracker (a user has none): every command's ``--help``
(subcommands too), every JSON Schema ``agentstudy schema`` prints, the README and every page of docs/.
Code comments and developers' docstrings may cite them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from agentstudy.cli import COMMANDS, main
from agentstudy.protocol.schemas import SCHEMAS

REPO = Path(__file__).resolve().parents[1]
ISSUE = re.compile(r"\bissues? #?\d+|\(#\d+\)", re.IGNORECASE)


def _help_paths() -> list[list[str]]:
    """``[command, subcommand…]`` for every command and every subcommand of a command group."""
    paths: list[list[str]] = []
    context = click.Context(main)
    for name in sorted(COMMANDS):
        stack = [([name], main.get_command(context, name))]
        while stack:
            path, command = stack.pop()
            assert command is not None, path
            paths.append(path)
            if isinstance(command, click.Group):
                stack.extend(([*path, sub], command.commands[sub]) for sub in sorted(command.commands))
    return paths


def test_the_top_level_help_cites_no_issue() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0 and not ISSUE.search(result.output)


@pytest.mark.parametrize("path", _help_paths(), ids=" ".join)
def test_every_commands_help_cites_no_issue(path: list[str]) -> None:
    result = CliRunner().invoke(main, [*path, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "Usage: " in result.output
    assert not ISSUE.findall(result.output), f"agentstudy {' '.join(path)} --help: {ISSUE.findall(result.output)}"


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_schema_cites_no_issue(name: str) -> None:
    result = CliRunner().invoke(main, ["schema", name])
    assert result.exit_code == 0, result.output
    assert isinstance(json.loads(result.output), dict)
    assert not ISSUE.findall(result.output), f"agentstudy schema {name}: {ISSUE.findall(result.output)}"


@pytest.mark.parametrize("page", [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))],
                         ids=lambda page: str(page.relative_to(REPO)))
def test_the_readme_and_docs_cite_no_issue(page: Path) -> None:
    found = [line for line in page.read_text(encoding="utf-8").splitlines() if ISSUE.search(line)]
    assert found == [], f"{page.relative_to(REPO)} cites issue numbers: {found[:5]}"
