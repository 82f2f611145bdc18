"""The demo's reports: ``report.html`` and ``report.md`` written beside the demo's ledger."""

from __future__ import annotations

from pathlib import Path

from agentstudy.report.analysis import analyse
from agentstudy.report.build import document_for, write_report
from agentstudy.report.load import load_study
from agentstudy.report.render import render


def write_demo_reports(directory: Path, ledger: Path, adjudication: Path | None) -> list[Path]:
    """Write ``directory/report.html`` and ``directory/report.md`` (mode 0600) for ``ledger``.

    The ledger is read once; ``adjudication`` (a companion bound to it) is joined when given.
    Returns the two paths, HTML first.

    Raises:
        ReportInputError: the ledger or companion cannot be used (see ``report.load``).
        OSError: ``directory`` is not writable.
    """
    analysis = analyse(load_study(ledger, adjudication))
    written = []
    for name, output_format in (("report.html", "html"), ("report.md", "md")):
        path = directory / name
        write_report(path, render(document_for(analysis, output_format), output_format))
        written.append(path)
    return written
