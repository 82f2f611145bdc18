"""The Gemini attempt's running limit (``transports.gemini_watch``) over real files: the stored real session file
of a 0.61.0 attempt written out as the CLI grows it, a link, a FIFO, a file that did not grow."""

from __future__ import annotations

import json
import os
import threading
from decimal import Decimal
from pathlib import Path

from agentstudy.pricing.gemini import gemini_cost
from agentstudy.stream.gemini_records import session_usage
from agentstudy.transports.gemini_watch import SessionWatch, newest_session, read_regular

DATA = Path(__file__).parent / "data" / "gemini"
LINE = b'{"type":"tool_result","tool_id":"a","status":"success"}\n'


def _chats(home: Path) -> Path:
    chats = home / ".gemini" / "tmp" / "project" / "chats"
    chats.mkdir(parents=True)
    return chats


def _inflated_session() -> list[str]:
    """The stored treatment session with every answered request at 1,000,000 input tokens (0.10 USD each)."""
    lines = []
    for line in (DATA / "treatment.session.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record.get("type") == "gemini":
            record["tokens"]["input"] = 1_000_000
        lines.append(json.dumps(record))
    return lines


def test_the_watch_stops_once_the_growing_session_passes_the_limit(tmp_path: Path) -> None:
    home = tmp_path / "gemini-home"
    session = _chats(home) / "session-1.jsonl"
    lines = _inflated_session()
    watch = SessionWatch(home, Decimal("0.15"))
    assert watch(LINE) is None and watch.peak_usd is None  # no session file yet
    stops: list[str | None] = []
    written: list[str] = []
    for line in lines:
        written.append(line)
        session.write_text("\n".join(written) + "\n")
        stops.append(watch(b"partial line, no end"))  # looked at only at a line end
        stops.append(watch(LINE))
    first = next(index for index, stop in enumerate(stops) if stop is not None)
    requests, _ = session_usage("\n".join(written[: first // 2 + 1]))
    assert len(requests) == 2, "the second 0.10 USD request passes 0.15 USD"
    assert "passed the per-attempt limit of 0.15 USD" in str(stops[first])
    assert watch.peak_usd == gemini_cost(session_usage("\n".join(lines))[0]).usd  # the largest running cost
    assert stops[0::2] == [None] * len(lines)


def test_the_watch_reads_only_regular_files_and_only_when_they_grew(tmp_path: Path) -> None:
    home = tmp_path / "gemini-home"
    chats = _chats(home)
    secret = tmp_path / "elsewhere.jsonl"
    secret.write_text("\n".join(_inflated_session()) + "\n")
    (chats / "session-1.jsonl").symlink_to(secret)
    watch = SessionWatch(home, Decimal("0.01"))
    assert watch(LINE) is None and watch.peak_usd is None, "a link is never followed"
    assert read_regular(chats / "session-1.jsonl") is None
    (chats / "session-1.jsonl").unlink()
    fifo = chats / "session-2.jsonl"
    os.mkfifo(fifo)
    done = threading.Event()

    def look() -> None:
        watch(LINE)
        done.set()

    threading.Thread(target=look, daemon=True).start()
    assert done.wait(5), "a FIFO never blocks the watcher (the pump loop that enforces the timeout)"
    assert newest_session(home) == fifo and read_regular(fifo) is None
    fifo.unlink()
    session = chats / "session-3.jsonl"
    session.write_text("\n".join(_inflated_session()) + "\n")
    assert watch(LINE) is not None
    assert watch(LINE) is None, "an unchanged file is not read again"
