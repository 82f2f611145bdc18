"""The ``agentstudy`` command line: the click group; each subcommand lives in ``agentstudy.commands``.

Exit codes: 0 done; 1 a run ended ``blocked``; 2 bad input or a run refused before any
reservation; 128 + n a long command stopped by signal n (see ``agentstudy.commands.common``).
"""

from __future__ import annotations

import gc
import importlib

import click

COMMANDS: dict[str, str] = {
    "minimal": "minimal",
    "study": "minimal",  # issue 18: the general name, the same command object
    "demo": "demo",
    "init": "init",
    "diagrams": "diagrams",
    "transcript": "transcript",
    "plan": "plan",
    "suite": "suite",
    "ledger": "ledger",
    "schema": "schema",
    "adjudicate": "adjudicate",
    "report": "report",
    "run": "run",
    "adjudicate-controlled": "adjudicate_controlled",
    "metrics": "metrics",
    "power": "power",
}
"""Command name -> its module in ``agentstudy.commands`` (the click command is the module's attribute of
the same name, dashes as underscores)."""


class LazyCommands(click.Group):
    """A click group that imports a subcommand's module only when that command is asked for.

    A run imports what it uses, not every command's dependencies (issue 19: the fixed start-up
    cost of every run; ``agentstudy --help`` still imports them all to list their help lines).
    Python's cyclic collector is paused during the import: building the MCP SDK's pydantic
    models makes nothing collectable, and collections were about a quarter of that import's CPU.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command name, sorted (click's listing order)."""
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command ``cmd_name`` (its module imported now), or ``None`` for an unknown name."""
        module_name = COMMANDS.get(cmd_name)
        if module_name is None:
            return None
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            module = importlib.import_module(f"agentstudy.commands.{module_name}")
        finally:
            if was_enabled:
                gc.enable()
        command = getattr(module, module_name)
        if not isinstance(command, click.Command):
            raise TypeError(f"agentstudy.commands.{module_name}.{module_name} is not a click command")
        return command


@click.group(cls=LazyCommands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="agentstudy")
def main() -> None:
    """Controlled, paired, budget-safe studies of coding agents.

    Every attempt's money is reserved before it can be spent, every transcript is checked
    for a broken setup before its answer counts, and every observation lands in a private
    crash-safe ledger. Start with `agentstudy demo` (zero spend).
    """
