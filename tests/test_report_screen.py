"""The HTML report's first screen in a real headless Chromium (issue 17, item 4).

A test-only copy of each report gets a small script that writes, into the DOM, the title of
every section in order, the first section's bounding box, and the rendered pixel size of the
smallest text in every SVG figure; Chromium (the Debian package, installed by
scripts/setup.sh) renders it at 1400 × 900 with ``--dump-dom``. The report itself carries no
script.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentstudy.io.chromium import WINDOW, ChromiumError, rendered_dom, screenshot
from agentstudy.report.build import build_report
from test_report_builders import TASKS, cli_obs, companion, full_study, ledger, write

MEASURE = """<script>
(function () {
  var sections = Array.prototype.slice.call(document.querySelectorAll("body > section"));
  var box = sections[0].getBoundingClientRect();
  var fonts = [];
  document.querySelectorAll("figure svg").forEach(function (svg) {
    var view = svg.viewBox.baseVal;
    var scale = svg.getBoundingClientRect().width / (view && view.width ? view.width : 1);
    svg.querySelectorAll("text").forEach(function (t) {
      if (!t.textContent.trim()) { return; }
      var size = parseFloat(getComputedStyle(t).fontSize) * scale;
      fonts.push({figure: svg.parentNode.id, text: t.textContent.trim(), px: size});
    });
  });
  var out = {titles: sections.map(function (s) { return s.querySelector("h2").textContent; }),
             first: {top: box.top, left: box.left, bottom: box.bottom, right: box.right},
             viewport: [window.innerWidth, window.innerHeight], fonts: fonts};
  document.documentElement.setAttribute("data-measure", JSON.stringify(out));
})();
</script>"""
MEASURED = re.compile(r'<html[^>]* data-measure="([^"]*)"')


def _measure(tmp_path: Path, page: str) -> dict[str, Any]:
    assert "<script" not in page, "the report itself must carry no script"
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    dom = rendered_dom(probe)
    found = MEASURED.search(dom)
    assert found, dom[:500]
    result: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return result


def _full(tmp_path: Path) -> str:
    data = write(tmp_path / "ledger.json", ledger(full_study()))
    (tmp_path / "companion.json").write_text(json.dumps(companion(data, {
        i: ("correct", "partial", "incorrect")[i % 3] for i in range(36)})))
    return build_report(tmp_path / "ledger.json", tmp_path / "companion.json", output_format="html")


def _pilot_ledger(tmp_path: Path) -> Path:
    observations = [cli_obs(TASKS[0], "repository-only", 1, input_tokens=12000, tool_calls=5),
                    cli_obs(TASKS[0], "doc-bridge-mcp", 1, input_tokens=9000, tool_calls=3)]
    document = ledger(observations, mode="pilot", rehearsal=True)
    document["cli"]["baseUrl"] = "http://127.0.0.1:40001"
    write(tmp_path / "ledger.json", document)
    return tmp_path / "ledger.json"


def _pilot(tmp_path: Path) -> str:
    return build_report(_pilot_ledger(tmp_path), output_format="html")


def _blocked_ledger(tmp_path: Path) -> Path:
    observations = full_study()[:4]
    observations.append(cli_obs(TASKS[2], "repository-only", 1, status="invalid-setup", charged=0.1,
                                setupProblem="tool Bash outside the allowed set", exitCode=1))
    write(tmp_path / "ledger.json", ledger(observations, status="blocked", planned=36,
                                           stopReason="attempt 5 ended invalid-setup"))
    return tmp_path / "ledger.json"


def _blocked(tmp_path: Path) -> str:
    return build_report(_blocked_ledger(tmp_path), output_format="html")


def _unverified(tmp_path: Path) -> str:
    document = ledger(full_study())
    write(tmp_path / "ledger.json", document)
    tampered = json.loads((tmp_path / "ledger.json").read_text())
    tampered["observations"][0]["inputTokens"] += 1
    (tmp_path / "ledger.json").write_text(json.dumps(tampered, indent=2))
    return build_report(tmp_path / "ledger.json", output_format="html", allow_unverified=True)


@pytest.fixture(scope="module")
def full_measured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The full study's report measured once in Chromium: the first-screen and the plot-text tests both read it."""
    directory = tmp_path_factory.mktemp("full")
    return _measure(directory, _full(directory))


@pytest.mark.parametrize("build", [_full, _pilot, _blocked, _unverified], ids=["full", "pilot", "blocked",
                                                                                 "unverified"])
def test_the_result_at_a_glance_is_the_first_section_and_fits_the_first_screen(
        tmp_path: Path, build: Any, request: pytest.FixtureRequest) -> None:
    measured = request.getfixturevalue("full_measured") if build is _full else _measure(tmp_path, build(tmp_path))
    # Layout depends on the width only; --dump-dom's window keeps some height for the browser's frame, while
    # --screenshot captures exactly 1400 × 900 of the page, so the box is checked against the window size.
    assert measured["viewport"][0] == WINDOW[0]
    assert measured["titles"][0] == "Result at a glance"
    assert measured["titles"][-1] == "Appendix: provenance"
    first = measured["first"]
    assert first["top"] >= 0 and first["left"] >= 0
    assert first["bottom"] <= WINDOW[1] and first["right"] <= WINDOW[0], first


def test_every_text_of_every_plot_renders_at_11_px_or_more(full_measured: dict[str, Any]) -> None:
    fonts = full_measured["fonts"]
    figures = {f["figure"] for f in fonts}
    assert {"plot-differences", "plot-distributions", "plot-status"} <= figures
    small = [f for f in fonts if f["px"] < 11]
    assert not small, small[:5]


def test_a_screenshot_is_a_1400_by_900_png(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    page.write_text(_pilot(tmp_path), encoding="utf-8")
    assert _png_size(screenshot(page, tmp_path / "report.png")) == WINDOW


def test_only_existing_local_files_are_opened(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        rendered_dom(tmp_path / "missing.html")
    with pytest.raises(ChromiumError):
        rendered_dom(tmp_path)


SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "screenshot_reports.py"


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_the_screenshot_script_renders_given_ledgers_and_overwrites_nothing(tmp_path: Path) -> None:
    pilot, blocked = tmp_path / "pilot", tmp_path / "blocked"
    pilot.mkdir()
    blocked.mkdir()
    _pilot_ledger(pilot)  # the script builds the reports itself
    _blocked_ledger(blocked)
    out = tmp_path / "screens"
    command = [sys.executable, str(SCRIPT), str(out), "--kinds", "pilot,blocked",
               "--ledger", f"pilot={pilot / 'ledger.json'}", "--ledger", f"blocked={blocked / 'ledger.json'}"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["blocked.html", "blocked.png", "pilot.html", "pilot.png"]
    assert _png_size(out / "pilot.png") == WINDOW and _png_size(out / "blocked.png") == WINDOW
    assert "Result at a glance" in (out / "blocked.html").read_text(encoding="utf-8")
    before = (out / "pilot.png").read_bytes()
    again = subprocess.run(command, capture_output=True, text=True, check=False)
    assert again.returncode == 2 and again.stderr.count("\n") == 1 and "not an empty directory" in again.stderr
    assert (out / "pilot.png").read_bytes() == before
    wrong = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "other"), "--kinds", "nope"],
                           capture_output=True, text=True, check=False)
    assert wrong.returncode == 2 and not (tmp_path / "other").exists()
