"""``agentstudy schema NAME``: print the JSON Schema of a registered contract (``agentstudy.protocol.schemas``)."""

from __future__ import annotations

import json

import click

from agentstudy.commands.common import fail


@click.command()
@click.argument("name", required=False)
def schema(name: str | None) -> None:
    """Print the JSON Schema of contract NAME (for example controlled-study-run-plan).

    Without NAME, list the names, one per line.
    """
    from agentstudy.protocol.schemas import SCHEMAS, json_schema
    if name is None:
        click.echo("\n".join(sorted(SCHEMAS)))
        return
    if name not in SCHEMAS:
        fail(f"unknown schema {name!r}; known: {', '.join(sorted(SCHEMAS))}")
    click.echo(json.dumps(json_schema(name), ensure_ascii=False, indent=2))
