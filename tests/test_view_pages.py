"""``agentstudy view``'s pages without a browser (issue 43): the blind order, the pair page's marks over real
Codex transcripts, the live state of a ledger, and the command's refusals."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.report.model import BASELINE, TREATMENT
from agentstudy.stream.steps import codex_steps
from agentstudy.web.pair_page import Side, blind_order, pair_page, step_html
from agentstudy.web.study_page import ViewOptions

CODEX = Path(__file__).parent / "transcripts" / "codex-0.171.0"


def test_the_blind_order_is_seeded_per_pair() -> None:
    pairs = [(f"task-{i}", r, "claude-code") for i in range(20) for r in (1, 2)]
    orders = [blind_order(5, *pair) for pair in pairs]
    assert {tuple(o) for o in orders} == {(BASELINE, TREATMENT), (TREATMENT, BASELINE)}
    assert orders == [blind_order(5, *pair) for pair in pairs]  # the same seed, the same order
    assert orders != [blind_order(6, *pair) for pair in pairs]


def test_step_cells_mark_server_calls_and_errors() -> None:
    steps = codex_steps((CODEX / "treatment-all-calls-error.jsonl").read_bytes())
    call, result = steps[1], steps[2]
    classes, content = step_html(call, "text?x")
    assert classes == "server" and "doc.get" in content and "no/such/file.md" in content
    classes, content = step_html(result, "text?x")
    assert classes == "server error" and "✗ error" in content
    long_text = type(result)("text", text="x" * 5000)
    _, content = step_html(long_text, "text?whole")
    assert 'href="text?whole"' in content and "5,000 characters" in content and "x" * 1300 not in content


class _Study:
    """Just what ``pair_page`` reads of a study: its agents."""

    class study:  # mirrors ObservedStudy.study
        agents = ("codex",)


def test_the_pair_page_marks_the_first_divergence_once() -> None:
    control = codex_steps((CODEX / "control-completed.jsonl").read_bytes())
    treatment = codex_steps((CODEX / "treatment-completed.jsonl").read_bytes())
    options = ViewOptions(token="t0k")
    html = pair_page(_Study(), options, "t", 1, "codex",  # type: ignore[arg-type]
                     [Side("Left arm", None, control), Side("Right arm", None, treatment)])
    rows = html.split("<tbody>")[1].split("</tr>")
    assert html.count("first divergence") == 1 and "first divergence" in rows[1]  # step 2: grep vs doc.search
    assert "The arms first differ at step 2." in html
    assert rows[1].count('class="server"') == 1 and 'class="server"' not in rows[0]
    assert "token=t0k" in html


def test_bad_input_exits_2_with_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["view", str(tmp_path / "missing.json")])
    assert result.exit_code == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and "cannot read" in result.stderr
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"observations": [{"taskId": "t"}]}))
    result = CliRunner().invoke(main, ["view", str(broken)])
    assert result.exit_code == 2 and result.stdout == ""


def test_a_taken_port_exits_2(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.json"
    ledger.write_text(json.dumps({"observations": []}))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = CliRunner().invoke(main, ["view", str(ledger), "--port", str(port)])
    assert result.exit_code == 2 and result.stdout == "", result.output
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
