"""``agentstudy report`` end to end, and the demo's reports from a real demo run (real Claude Code, zero spend)."""

from __future__ import annotations

import json
import re
import stat
from decimal import Decimal
from pathlib import Path

from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.pricing.sums import display_usd
from agentstudy.report.demo import write_demo_reports
from agentstudy.runners.demo import run_demo
from agentstudy.runners.progress import SilentProgress
from test_report_builders import ANSWER_MARKER, companion, full_study, ledger, markdown_tables, write
from test_report_html import Structure

ORIGINAL_LEDGER = (Path(__file__).resolve().parents[2] / "shared" / "reference" / "original-artifacts"
                   / "observation-ledger-v1.json")


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["report", *args])
    return result.exit_code, result.stdout, result.stderr


def test_text_to_stdout_by_default(tmp_path: Path) -> None:
    write(tmp_path / "ledger.json", ledger(full_study()))
    code, out, err = _invoke(str(tmp_path / "ledger.json"))
    assert code == 0 and err == ""
    assert out.startswith("Paired report: doc-bridge on repo-one (full)\n")  # the server and the study
    assert "Task-level paired differences per metric" in out and ANSWER_MARKER not in out


def test_a_report_with_its_companion_reads_adjudicated(tmp_path: Path) -> None:
    """The run ended awaiting adjudication; reported with its companion, the report says it was adjudicated."""
    data = write(tmp_path / "ledger.json", ledger(full_study()))
    code, out, _ = _invoke(str(tmp_path / "ledger.json"))
    assert code == 0 and re.search(r"^run status +awaiting-adjudication$", out, re.MULTILINE)
    (tmp_path / "c.json").write_text(json.dumps(companion(data, {0: "correct", 1: "incorrect"})))
    code, out, _ = _invoke(str(tmp_path / "ledger.json"), "--adjudication", str(tmp_path / "c.json"))
    assert code == 0
    status = re.search(r"^run status +(.*)$", out, re.MULTILINE)
    assert status is not None and status.group(1).startswith("adjudicated (")
    assert "scored" in status.group(1) and status.group(1).endswith("the run ended awaiting-adjudication)")


def test_output_file_is_private_and_formats_differ(tmp_path: Path) -> None:
    data = write(tmp_path / "ledger.json", ledger(full_study()))
    (tmp_path / "c.json").write_text(json.dumps(companion(data, {0: "correct", 1: "incorrect"})))
    for output_format in ("md", "html"):
        target = tmp_path / f"report.{output_format}"
        code, out, err = _invoke(str(tmp_path / "ledger.json"), "--adjudication", str(tmp_path / "c.json"),
                                 "--format", output_format, "--output", str(target))
        assert code == 0 and out == "" and f"report written: {target}" in err
        assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert (tmp_path / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert (tmp_path / "report.md").read_text().startswith("# Paired report")


def test_a_controlled_ledger_is_rendered_as_its_metrics_report() -> None:
    # The original ledger has two observations whose own hashes do not verify: refused by default...
    code, out, err = _invoke(str(ORIGINAL_LEDGER))
    assert code == 2 and out == ""
    assert "observation 237" in err and "observation 283" in err and len(err.strip().splitlines()) == 1
    # ...reported with --allow-unverified, with the same counts as `agentstudy metrics`.
    code, out, err = _invoke(str(ORIGINAL_LEDGER), "--allow-unverified", "--format", "md")
    assert code == 0, err
    assert out.startswith("# Controlled-study metrics")
    assert "448 observations, 11 run ids" in out and "NOT VERIFIED (observations 237, 283)" in out
    metrics = CliRunner().invoke(main, ["metrics", str(ORIGINAL_LEDGER), "--allow-unverified"])
    assert metrics.stdout.splitlines()[0].split(None, 1)[1] in out, "the metrics line, in the summary table"
    assert "WARNING: the scenarios ran different tasks" in out and "<svg" not in out
    code, page, _ = _invoke(str(ORIGINAL_LEDGER), "--allow-unverified", "--format", "html")
    assert code == 0 and page.startswith("<!DOCTYPE html>") and "<script" not in page
    assert page.count("<svg") == 3 and '<table id="groups">' in page


def test_bad_inputs_exit_2_with_one_line(tmp_path: Path) -> None:
    data = write(tmp_path / "ledger.json", ledger(full_study()))
    record = companion(data, {0: "correct"}) | {"ledgerSha256": "0" * 64}
    (tmp_path / "c.json").write_text(json.dumps(record))
    (tmp_path / "p.json").write_text(json.dumps({"priceAs": "m", "models": {"m": {"tiers": []}}}))
    cases = [
        ([str(tmp_path / "absent.json")], "cannot read the ledger"),
        ([str(tmp_path / "ledger.json"), "--adjudication", str(tmp_path / "c.json")], "bound to ledger SHA-256"),
        ([str(tmp_path / "ledger.json"), "--prices", str(tmp_path / "p.json")], "lacks source"),
        ([str(tmp_path / "ledger.json"), "--output", str(tmp_path / "no-dir" / "r.txt")], "cannot write"),
    ]
    for args, message in cases:
        code, out, err = _invoke(*args)
        assert code == 2 and out == "", args
        assert message in err and len(err.strip().splitlines()) == 1, err


def test_help_documents_the_price_file() -> None:
    result = CliRunner().invoke(main, ["report", "--help"])
    assert result.exit_code == 0
    for needle in ('"priceAs"', "tierThresholdTokens", "agentstudy metrics", "x 18", "x 4.5", "sign-flip",
                   "--format json"):
        assert needle in result.stdout


def test_the_demo_writes_both_reports_beside_its_ledger(tmp_path: Path, claude_bin: Path) -> None:
    summary = run_demo(tmp_path, claude_bin, progress=SilentProgress())
    assert summary.status == "awaiting-adjudication"
    written = write_demo_reports(tmp_path, tmp_path / "ledger.json", None)
    assert written == [tmp_path / "report.html", tmp_path / "report.md"]
    assert all(stat.S_IMODE(path.stat().st_mode) == 0o600 for path in written)
    page = Structure()
    page.feed(written[0].read_text())
    page.close()
    assert page.problems == [] and page.stack == [] and page.tags["svg"] == 3
    tables = markdown_tables(written[1].read_text())
    extrapolation = {r["figure"]: r["USD"] for r in tables["What the full study might cost, from this pilot (USD)"]}
    expected = display_usd(Decimal(repr(summary.line["extrapolatedFullRunUsd"])))
    assert extrapolation["full run, charged spend × 18"] == expected
    summary_rows = {r["metric"]: r for r in tables["Task-level paired differences per metric"]}
    assert summary_rows["input tokens"]["design"] == "1 task × 1 repetition"
    interval = summary_rows["input tokens"]["95 % interval (inverted test of the mean)"]
    assert interval == "not computable with 1 task (needs at least 2)"
    ledger_answers = [o["answer"] for o in json.loads((tmp_path / "ledger.json").read_text())["observations"]]
    for answer in filter(None, ledger_answers):
        assert answer not in written[0].read_text() and answer not in written[1].read_text()


def test_the_report_never_overwrites_its_inputs(tmp_path: Path) -> None:
    data = write(tmp_path / "ledger.json", ledger(full_study()))
    (tmp_path / "c.json").write_text(json.dumps(companion(data, {0: "correct"})))
    for target in ("ledger.json", "c.json"):
        code, out, err = _invoke(str(tmp_path / "ledger.json"), "--adjudication", str(tmp_path / "c.json"),
                                 "--output", str(tmp_path / "sub" / ".." / target))
        assert code == 2 and out == "" and "is one of the inputs" in err
    assert (tmp_path / "ledger.json").read_bytes() == data


def test_a_warning_about_many_problems_counts_them_and_quotes_the_first_few(tmp_path: Path) -> None:
    """Every observation of a changed ledger breaks its hash: the warning names how many, quotes three."""
    data = json.loads(write(tmp_path / "ledger.json", ledger(full_study())))
    for observation in data["observations"]:
        observation["toolCalls"] = observation["toolCalls"] + 1
    (tmp_path / "ledger.json").write_text(json.dumps(data))
    result = CliRunner().invoke(main, ["report", str(tmp_path / "ledger.json"), "--allow-unverified"])
    assert result.exit_code == 0
    warning = [line for line in result.stderr.splitlines() if "warning: unverified" in line]
    assert len(warning) == 1
    count = re.search(r": (\d+) problems, the first 3: ", warning[0])
    assert count is not None and int(count.group(1)) >= len(data["observations"]) > 3
    assert warning[0].count("; ") == 3 and warning[0].endswith(f"; and {int(count.group(1)) - 3} more")
