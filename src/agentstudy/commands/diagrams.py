"""``agentstudy diagrams``: write the state diagrams of the run and attempt machines (Mermaid) into a folder."""

from __future__ import annotations

from pathlib import Path

import click

from agentstudy.commands.common import fail


@click.command()
@click.option("--output-dir", type=click.Path(path_type=Path), default=Path("docs"), show_default=True,
              help="Folder that receives <machine>.mmd files (must exist).")
def diagrams(output_dir: Path) -> None:
    """Write docs/attempt-machine.mmd and docs/run-machine.mmd from the machines themselves."""
    from agentstudy.fsm.diagrams import DIAGRAMS, mermaid
    if not output_dir.is_dir():
        fail(f"--output-dir {output_dir} is not a directory")
    for name in DIAGRAMS:
        path = output_dir / f"{name}.mmd"
        path.write_text(mermaid(name), encoding="utf-8")
        click.echo(str(path))
