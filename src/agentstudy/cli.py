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
    "provider": "provider",
    "export": "export",
    "view": "view_web",
}
"""Command name -> its module in ``agentstudy.commands`` (the click command is the module's attribute of
the same name, dashes as underscores)."""


SHORT_HELP: dict[str, str] = {
    "adjudicate": "Adjudicate a finished study run, blind to the arm.",
    "adjudicate-controlled": "Adjudicate a controlled-study ledger.",
    "demo": "Free rehearsal pilot of the bundled study.",
    "diagrams": "Rewrite the state-machine drawings in docs/.",
    "export": "Export attempts: ATIF, Parquet or CSV.",
    "init": "Write a starter study file for your MCP server.",
    "ledger": "Verify a ledger (either kind) and summarise it.",
    "metrics": "Metrics of a controlled-study ledger.",
    "minimal": "An alias of study.",
    "plan": "Verify and describe a controlled-study run plan.",
    "power": "Plan a study's size from a pilot or full ledger.",
    "provider": "Answer a controlled-study request with an agent.",
    "report": "Report a ledger (text, md, html or json).",
    "run": "Run a controlled-study plan's attempts.",
    "schema": "Print the JSON Schema of a contract.",
    "study": "Run a paired study from a study file.",
    "suite": "Verify and describe a task suite.",
    "transcript": "Check a saved Claude Code or Codex transcript.",
    "view": "Look inside a study in a local web page.",
}
"""Each command's line in ``agentstudy --help`` (at most 50 characters, so an 80-column terminal shows it
whole; click would cut the docstring's first sentence at 45 with "...")."""


class LazyCommands(click.Group):
    """A click group that imports a subcommand's module only when that command is asked for.

    A run imports what it uses, not every command's dependencies (issue 19: the fixed start-up
    cost of every run; ``agentstudy --help`` lists them from :data:`SHORT_HELP` without importing any).
    Python's cyclic collector is paused during the import: building the MCP SDK's pydantic
    models makes nothing collectable, and collections were about a quarter of that import's CPU.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command name, sorted (click's listing order)."""
        return sorted(COMMANDS)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """List every command with its :data:`SHORT_HELP` line (no module is imported for it)."""
        rows = [(name, SHORT_HELP.get(name, "")) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

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
