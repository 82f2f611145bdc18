"""``agentstudy --help``: every command on one whole line (a fresh user read "Write docs/attempt-machine.mmd
and..." and "Check a saved stream-json transcript exactly as..." cut by click at 45 characters)."""

from __future__ import annotations

from click.testing import CliRunner

from agentstudy.cli import COMMANDS, SHORT_HELP, main


def test_every_command_has_a_whole_line_in_the_top_level_help() -> None:
    assert set(SHORT_HELP) == set(COMMANDS)
    result = CliRunner().invoke(main, ["--help"], terminal_width=80)
    assert result.exit_code == 0
    assert "..." not in result.output.split("Commands:")[1]
    for name, line in SHORT_HELP.items():
        assert f"  {name.ljust(21)}  {line}\n" in result.output
