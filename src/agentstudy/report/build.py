"""From files to a rendered report: load, join, analyse, lay out, render, and write safely.

:func:`build_report` is what ``agentstudy report`` and the demo call. Plots are drawn only for
HTML; ``json`` is the machine-readable view of the same analysis. Reports are written atomically
with mode 0600 (the ledger is private; the report holds no answer, but it describes a private run).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

from agentstudy.pricing.price_file import PriceFile, PriceFileError, parse_price_file
from agentstudy.report.agents import agent_analyses, multi_agent_document
from agentstudy.report.analysis import Analysis, analyse
from agentstudy.report.content import build_document
from agentstudy.report.document import Document
from agentstudy.report.input_bytes import read_input
from agentstudy.report.load import load_study
from agentstudy.report.model import ReportInputError, Study
from agentstudy.report.render import FORMATS, render

REPORT_FORMATS = (*FORMATS, "json")
"""The document formats plus ``json`` (:mod:`agentstudy.report.json_view`, issue 17 item 7)."""


def load_prices(path: Path) -> PriceFile:
    """Read and validate a ``--prices`` file (format: :mod:`agentstudy.pricing.price_file`).

    Raises:
        ReportInputError: the file cannot be read or is not a valid price file.
    """
    data = read_input(path, "price file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ReportInputError(f"cannot read the price file {path}: {error}") from None
    try:
        return parse_price_file(text)
    except PriceFileError as error:
        raise ReportInputError(f"the price file {path} is not valid: {error}") from None


def document_for(analysis: Analysis, output_format: str) -> Document:
    """The report's document; with the three plots when ``output_format`` is ``html`` (matplotlib is
    imported only then)."""
    if output_format != "html":
        return build_document(analysis)
    from agentstudy.report.plots import all_figures
    from agentstudy.report.sequential_plot import sequential_figures

    return build_document(analysis, (*sequential_figures(analysis.study), *all_figures(analysis)))


def build_report(
    ledger: Path,
    adjudication: Path | None = None,
    prices: Path | None = None,
    output_format: str = "text",
    *,
    allow_unverified: bool = False,
) -> str:
    """The report of ``ledger`` (joined with ``adjudication``, re-priced with ``prices``) in ``output_format``.

    A ledger that does not verify is refused unless ``allow_unverified`` (the report then says
    it is unverified).

    Raises:
        NotSupportedYet: a controlled-study ledger.
        ReportInputError: an unreadable, invalid or (without ``allow_unverified``) unverified
            ledger, an invalid companion or price file, a companion bound to another ledger, or
            an unknown format.
    """
    if output_format not in REPORT_FORMATS:
        raise ReportInputError(f"unknown format {output_format!r}")
    return render_study(load_study(ledger, adjudication, allow_unverified=allow_unverified), prices, output_format)


def render_study(study: Study, prices: Path | None, output_format: str) -> str:
    """The report of a loaded ``study`` (re-priced with ``prices``) in ``output_format`` (one of
    :data:`REPORT_FORMATS`).

    Raises:
        ReportInputError: an invalid price file or an unknown format.
    """
    if output_format not in REPORT_FORMATS:
        raise ReportInputError(f"unknown format {output_format!r}")
    price_file = load_prices(prices) if prices is not None else None
    if len(study.agents) > 1:
        return with_view_hint(_render_agents(study, price_file, output_format))
    analysis = analyse(study, price_file)
    if output_format == "json":
        from agentstudy.report.json_view import render_json

        return render_json(analysis)
    return with_view_hint(render(document_for(analysis, output_format), output_format))


VIEW_HINT = ('<footer id="view-hint"><p>Each task\'s two arms, side by side and step by step: run '
             "<code>agentstudy view LEDGER</code> and open the page it prints (served on 127.0.0.1 only); "
             "there the task names of this report link to their pairs.</p></footer>")
"""What an HTML report says about the pair pages when it is not served by ``agentstudy view`` (issue 43 item 3)."""


def with_view_hint(text: str) -> str:
    """An HTML report with :data:`VIEW_HINT` before ``</body>``; any other text unchanged."""
    return text.replace("</body>", VIEW_HINT + "</body>", 1) if text.rstrip().endswith("</html>") else text


def _render_agents(study: Study, prices: PriceFile | None, output_format: str) -> str:
    """A several-agent study (issue 21 item 6): each agent analysed alone (``report.agents``); JSON is
    ``{"type": "minimal-study-report-by-agent", "agents": {name: that agent's one-agent JSON view}}``."""
    analyses = agent_analyses(study, prices)
    if output_format == "json":
        from agentstudy.report.json_view import report_json

        views = {agent: report_json(analysis) for agent, analysis in analyses.items()}
        return json.dumps({"type": "minimal-study-report-by-agent", "version": 1, "agents": views},
                          ensure_ascii=False, indent=2, allow_nan=False) + "\n"
    document = multi_agent_document(study, analyses, lambda analysis: document_for(analysis, output_format))
    return render(document, output_format)


def write_report(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (temporary file in the same directory, then rename), mode 0600.

    Raises:
        OSError: the directory is missing or not writable (nothing is left behind).
    """
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fchmod(handle.fileno(), 0o600)
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
