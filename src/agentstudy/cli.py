"""The ``agentstudy`` command line: the click group; each subcommand lives in ``agentstudy.commands``.

Exit codes: 0 done; 1 a run ended ``blocked``; 2 bad input or a run refused before any
reservation; 128 + n a long command stopped by signal n (see ``agentstudy.commands.common``).
"""

from __future__ import annotations

import click

from agentstudy.commands.adjudicate import adjudicate
from agentstudy.commands.adjudicate_controlled import adjudicate_controlled
from agentstudy.commands.demo import demo
from agentstudy.commands.diagrams import diagrams
from agentstudy.commands.init import init
from agentstudy.commands.ledger import ledger
from agentstudy.commands.metrics import metrics
from agentstudy.commands.minimal import minimal
from agentstudy.commands.plan import plan
from agentstudy.commands.power import power
from agentstudy.commands.report import report
from agentstudy.commands.run import run
from agentstudy.commands.schema import schema
from agentstudy.commands.suite import suite
from agentstudy.commands.transcript import transcript


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="agentstudy")
def main() -> None:
    """Controlled, paired, budget-safe studies of coding agents.

    Every attempt's money is reserved before it can be spent, every transcript is checked
    for a broken setup before its answer counts, and every observation lands in a private
    crash-safe ledger. Start with `agentstudy demo` (zero spend).
    """


main.add_command(minimal)
main.add_command(minimal, name="study")  # issue 18: the general name, the same command object
main.add_command(demo)
main.add_command(init)
main.add_command(diagrams)
main.add_command(transcript)
main.add_command(plan)
main.add_command(suite)
main.add_command(ledger)
main.add_command(schema)
main.add_command(adjudicate)
main.add_command(report)
main.add_command(run)
main.add_command(adjudicate_controlled)
main.add_command(metrics)
main.add_command(power)
