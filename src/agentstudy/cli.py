"""The ``agentstudy`` command line: the click group; each subcommand lives in ``agentstudy.commands``.

Exit codes: 0 done; 1 a run ended ``blocked``; 2 bad input or a run refused before any
reservation (see ``agentstudy.commands.common``).
"""

from __future__ import annotations

import click

from agentstudy.commands.demo import demo
from agentstudy.commands.minimal import minimal


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="agentstudy")
def main() -> None:
    """Controlled, paired, budget-safe studies of coding agents.

    Every attempt's money is reserved before it can be spent, every transcript is checked
    for a broken setup before its answer counts, and every observation lands in a private
    crash-safe ledger. Start with `agentstudy demo` (zero spend).
    """


main.add_command(minimal)
main.add_command(demo)
