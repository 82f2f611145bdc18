"""``agentstudy view LEDGER…``: a study's local web page (the terminal's live view is ``commands.view``)."""

from __future__ import annotations

import secrets
from pathlib import Path

import click

from agentstudy.commands.common import fail
from agentstudy.commands.run_options import partial_chain_option

FIRST_SCREEN_WAIT_S = 30.0
"""How long the command waits for the report's first screen before it prints the URL (it keeps computing)."""


@click.command("view")
@click.argument("ledgers", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--adjudication", "adjudications", multiple=True, type=click.Path(path_type=Path, dir_okay=False),
              help="The adjudication companion (one per ledger of a chain): adds the adjudicator's verdicts.")
@click.option("--port", type=click.IntRange(1, 65535), help="Serve on this port of 127.0.0.1 (default: a free one).")
@click.option("--blind", is_flag=True,
              help='Show the two sides of each pair as "A" and "B" in a seeded random order, naming no arm.')
@click.option("--seed", type=click.IntRange(0), help="The blind order's seed (default: a random one).")
@partial_chain_option
def view_web(ledgers: tuple[Path, ...], adjudications: tuple[Path, ...], port: int | None, blind: bool,
         seed: int | None, partial_chain: bool) -> None:
    """Look inside a study in a local web page, live while it runs.

    Prints the page's URL (127.0.0.1, a random token in it) as the first line on stdout and serves it until
    Ctrl-C or SIGTERM. Only 127.0.0.1 is served and every request needs the token (403 without it); nothing
    is fetched from elsewhere.

    The study page shows the report's first screen and the task × arm grid (each repetition's status,
    correctness, tokens, USD, time, server calls and errors) and, while the run is going, follows its ledger:
    attempts as they settle, spend against the cap, attempts running now, the ETA. A pair page shows one
    task and repetition's two arms side by side, step by step: the server's calls highlighted, errors
    marked, the first step where the arms differ marked. Several ledgers are a chain of runs, oldest first.

    Exit codes: 0 stopped; 2 bad input (an unreadable ledger, a port that cannot be bound).
    """
    from agentstudy.report.model import NotSupportedYet, ReportInputError
    from agentstudy.web.app import LOOPBACK, StudySource, bind_loopback, build_app, serve
    from agentstudy.web.first_screen import first_screen_html
    from agentstudy.web.study_page import ViewOptions

    source = StudySource(list(ledgers), list(adjudications), first_screen_html, partial_chain=partial_chain)
    try:
        source.current()
    except (ReportInputError, NotSupportedYet) as error:
        fail(str(error))
    source.screen(wait_s=FIRST_SCREEN_WAIT_S)  # a finished study's first page shows it
    token = secrets.token_urlsafe(24)
    options = ViewOptions(token=token, blind=blind, seed=secrets.randbelow(2**31) if seed is None else seed)
    try:
        sock = bind_loopback(port or 0)
    except OSError as error:
        fail(f"cannot listen on {LOOPBACK}:{port or 0}: {error.strerror or error}")
    bound = sock.getsockname()[1]
    click.echo(f"http://{LOOPBACK}:{bound}/?token={token}")
    serve(build_app(source, options), sock)
