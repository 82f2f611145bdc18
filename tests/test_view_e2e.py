"""``agentstudy view`` end to end in a real headless Chromium (issue 43, Must show): a rehearsal study at
``--concurrency 2`` followed while it runs, its pair page after it ends, the token, the loopback-only socket,
a clean stop on SIGTERM, and ``--blind``."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest

from agentstudy.io.chromium import served_dom
from export_study import run_args, small_study

LABELS = ("Repository tools only", "Repository tools + doc-bridge MCP", "repository-only", "doc-bridge-mcp")


@dataclass
class View:
    """A running ``agentstudy view``: its process and the URL it printed."""

    process: subprocess.Popen[str]
    url: str

    @property
    def base(self) -> str:
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}/"

    @property
    def token(self) -> str:
        return self.url.split("token=", 1)[1]

    def page(self, path: str, **params: object) -> str:
        return f"{self.base}{path}?{urlencode({**params, 'token': self.token})}"


def start_view(*args: str) -> View:
    process = subprocess.Popen([sys.executable, "-m", "agentstudy", "view", *args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:"), (url, process.stderr.read() if process.poll() is not None else "")
    return View(process, url)


def stop(view: View) -> int:
    view.process.send_signal(signal.SIGTERM)
    return view.process.wait(timeout=20)


@dataclass
class Watched:
    """The run, what the browser saw while it ran, and the ledger."""

    ledger: Path
    live_dom: str
    run_exit: int
    view: View


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Watched]:
    base = tmp_path_factory.mktemp("view")
    study, roots = small_study(base, ["claude-code"])
    ledger = base / "ledger.json"
    run = subprocess.Popen([sys.executable, "-m", "agentstudy", *run_args(
        study, roots, ledger, 2, 2, "--concurrency", "2", "--rehearsal-latency-ms", "400")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not ledger.exists() and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ledger.exists(), run.stderr.read() if run.stderr else ""
    view = start_view(str(ledger))
    try:
        live = served_dom(view.url, budget_ms=90_000)
        run_exit = run.wait(timeout=300)
        yield Watched(ledger, live, run_exit, view)
    finally:
        if run.poll() is None:
            run.kill()
        if view.process.poll() is None:
            view.process.kill()


def test_the_settled_count_rises_without_reload_and_reaches_the_total(watched: Watched) -> None:
    assert watched.run_exit == 0
    seen = [int(n) for n in re.findall(r"<li>(\d+)</li>", watched.live_dom.split('id="seen"', 1)[1].split("</ol>")[0])]
    assert seen == sorted(seen) and seen[-1] == 8, seen
    assert seen[0] < 8 and len(seen) >= 3, seen  # watched while it ran: several counts, each shown as it came
    assert re.search(r'id="settled">8<', watched.live_dom) and re.search(r'id="total">8<', watched.live_dom)
    assert 'id="task-grid"' in watched.live_dom and "first divergence" not in watched.live_dom


def test_the_pair_page_shows_both_arms_with_server_calls_and_the_divergence(watched: Watched) -> None:
    dom = served_dom(watched.view.page("pair", agent="claude-code", task="lantern-discovery", repetition=1))
    steps = dom.split('id="steps"', 1)[1]
    header = steps.split("</thead>")[0]
    assert header.index("Repository tools only") < header.index("Repository tools + doc-bridge MCP")
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", steps.split("<tbody>", 1)[1], flags=re.S)
    cells = [re.findall(r"<td([^>]*)>(.*?)</td>", row, flags=re.S) for row in rows]
    left = [c[1] for c in cells if len(c) == 3]
    right = [c[2] for c in cells if len(c) == 3]
    assert any("tool call" in content for _, content in left)  # the control arm's own tool calls
    assert any("tool call" in content for _, content in right)
    assert not any('class="server' in attrs for attrs, _ in left)
    highlighted = [content for attrs, content in right if "server" in attrs]
    assert any("mcp__doc-bridge__" in content for content in highlighted)
    assert steps.count("first divergence") == 1 and 'class="diverge"' in steps


def test_no_token_is_403_and_only_127_0_0_1_is_bound(watched: Watched) -> None:
    for url in (watched.view.base, watched.view.base + "state", watched.view.base + "pair?token=wrong",
                watched.view.page("pair", agent="x").replace(watched.view.token, "x" * len(watched.view.token))):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url, timeout=10)
        assert refused.value.code == 403
    with urllib.request.urlopen(watched.view.url, timeout=10) as answer:
        assert answer.status == 200
    port = urlsplit(watched.view.url).port
    assert port is not None
    others = {"127.0.0.2"} | {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)
                              if info[4][0] != "127.0.0.1"}
    for address in others:
        with pytest.raises(OSError), socket.create_connection((address, port), timeout=5):
            pass
    listening = [line.split() for line in Path("/proc/net/tcp").read_text().splitlines()[1:]]
    mine = [fields[1] for fields in listening if fields[3] == "0A" and int(fields[1].split(":")[1], 16) == port]
    assert mine == [f"0100007F:{port:04X}"]  # 127.0.0.1 only


def test_sigterm_and_ctrl_c_stop_a_view_cleanly(watched: Watched) -> None:
    for signum in (signal.SIGTERM, signal.SIGINT):
        view = start_view(str(watched.ledger))
        with urllib.request.urlopen(view.url, timeout=10) as answer:
            assert answer.status == 200
        view.process.send_signal(signum)
        assert view.process.wait(timeout=20) == 0
        assert view.process.stderr is not None and view.process.stderr.read() == ""
        with pytest.raises(OSError):
            urllib.request.urlopen(view.url, timeout=5)


def test_the_served_report_links_task_rows_to_pairs_and_the_file_says_how(watched: Watched) -> None:
    with urllib.request.urlopen(watched.view.page("report"), timeout=120) as answer:
        served = answer.read().decode()
    pair = watched.view.page("pair", agent="claude-code", task="lantern-discovery", repetition=1)
    assert f'<a href="{pair.replace(watched.view.base, "").replace("&", "&amp;")}">lantern-discovery</a>' in served
    assert "agentstudy view LEDGER" not in served
    static = subprocess.run([sys.executable, "-m", "agentstudy", "report", str(watched.ledger), "--format", "html"],
                            capture_output=True, text=True, timeout=300, check=True).stdout
    assert "<code>agentstudy view LEDGER</code>" in static and 'href="pair?' not in static


def test_blind_names_no_arm_anywhere(watched: Watched) -> None:
    view = start_view(str(watched.ledger), "--blind", "--seed", "7")
    try:
        pages = [served_dom(view.url, budget_ms=3000)]
        for task in ("lantern-discovery", "lantern-architecture"):
            for repetition in (1, 2):
                pages.append(served_dom(view.page("pair", agent="claude-code", task=task, repetition=repetition),
                                        budget_ms=1000))
    finally:
        assert stop(view) == 0
    assert all("no such pair" not in dom for dom in pages)
    for dom in pages:
        for label in LABELS:
            assert label not in dom
        assert "control" not in dom.lower() and "treatment" not in dom.lower()
    for dom in pages[1:]:
        header = dom.split('id="steps"', 1)[1].split("</thead>")[0]
        assert re.findall(r"<th>([AB])<p>", header) == ["A", "B"]
    assert len(pages) == 5
