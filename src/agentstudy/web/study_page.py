"""The study page of ``agentstudy view``: the report's first screen, the live state, the task × arm grid.

Pure rendering from a loaded :class:`agentstudy.report.observed.ObservedStudy` to HTML strings and the
live-state JSON the page's script polls. Nothing here names an arm when the view is blind: the grid then
lists each task's pairs without per-arm columns and the report's first screen (which names the arms) is
left out.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from agentstudy.report.model import BASELINE, TREATMENT, Attempt
from agentstudy.report.observed import ObservedStudy

CSS = """
body{font-family:system-ui,sans-serif;margin:1.2rem;color:#1b1b1b;max-width:1600px}
table{border-collapse:collapse;margin:.8rem 0;font-size:.85rem}
th,td{border:1px solid #d0d0d0;padding:.25rem .45rem;vertical-align:top;text-align:left}
th{background:#f2f2f2}caption{text-align:left;font-weight:600}
.status-completed{color:#1d6b2a}.status-other{color:#a00020;font-weight:600}
.live{background:#f5f7fb;border:1px solid #c9d3e6;padding:.5rem .8rem;border-radius:4px}
.warning{border:3px solid #b00020;background:#fdecea;padding:.6rem .9rem}
.server{background:#fff3c4}.error{background:#fde0e0}.error .mark{color:#a00020;font-weight:700}
tr.diverge td{border-top:3px solid #7b2cbf}.diverge-mark{color:#7b2cbf;font-weight:700}
pre{white-space:pre-wrap;word-break:break-word;margin:.2rem 0;font-size:.8rem;max-width:70ch}
.kind{font-size:.75rem;color:#555;text-transform:uppercase}
""".strip()

LIVE_SCRIPT = """
(function(){
  const token = document.body.dataset.token;
  const seen = document.getElementById('seen');
  function show(s){
    document.getElementById('settled').textContent = s.settled;
    document.getElementById('total').textContent = s.total;
    document.getElementById('spent').textContent = s.spent;
    document.getElementById('running').textContent = s.running;
    document.getElementById('eta').textContent = s.eta;
    document.getElementById('state').textContent = s.status;
    document.getElementById('grid').innerHTML = s.grid;
    if (!seen.lastElementChild || seen.lastElementChild.textContent !== String(s.settled)) {
      const item = document.createElement('li'); item.textContent = s.settled; seen.appendChild(item);
    }
  }
  function poll(after){
    fetch('state?' + new URLSearchParams({token: token, after: after}))
      .then(function(r){ if (!r.ok) throw new Error(r.status); return r.json(); })
      .then(function(s){ show(s); if (!s.finished) setTimeout(function(){ poll(s.settled); }, 500); })
      .catch(function(){ setTimeout(function(){ poll(after); }, 1000); });
  }
  poll(Number(document.getElementById('settled').textContent));
})();
""".strip()


@dataclass(frozen=True)
class ViewOptions:
    """How the pages are drawn: the request ``token`` every link carries, ``blind`` (no arm named), the
    blinding ``seed``, and whether the study page follows the ledger live."""

    token: str
    blind: bool = False
    seed: int = 0
    live: bool = True


def link(path: str, options: ViewOptions, **params: Any) -> str:
    """A same-origin link carrying the token (``path`` relative to the page's directory)."""
    return f"{path}?{urlencode({**params, 'token': options.token})}"


def usd(value: Any) -> str:
    """USD to 6 decimals (as the terminal and the report show spend)."""
    return "—" if value is None else f"{float(value):.6f}"


def count(value: int | None) -> str:
    """A whole number with thousands separators, ``—`` when not recorded."""
    return "—" if value is None else f"{value:,}"


def _status(attempt: Attempt) -> str:
    klass = "status-completed" if attempt.completed else "status-other"
    return f'<span class="{klass}">{html.escape(attempt.status)}</span>'


def _cell_line(attempt: Attempt) -> str:
    treatment = attempt.treatment
    server = (f" · {treatment.server_calls} server calls ({treatment.server_call_errors} errors)"
              if treatment is not None and treatment.server else "")
    correct = f" · correctness {attempt.correctness:g}" if attempt.correctness is not None else ""
    seconds = "—" if attempt.wall_time_ms is None else f"{attempt.wall_time_ms / 1000:.1f} s"
    return (f"r{attempt.repetition} {_status(attempt)}{correct} · {count(attempt.input_tokens)} in / "
            f"{count(attempt.output_tokens)} out · {usd(attempt.charged_usd)} USD · {seconds}{server}")


def grid_html(observed: ObservedStudy, options: ViewOptions) -> str:
    """The task × arm grid (blind: task × pairs): every repetition's line, linking to its pair page."""
    study = observed.study
    cells: dict[tuple[str, str], dict[str, list[Attempt]]] = {}
    for item in observed.attempts:
        attempt = item.attempt
        cells.setdefault((attempt.agent, attempt.task_id), {}).setdefault(attempt.scenario, []).append(attempt)
    several = len(study.agents) > 1
    arms = (BASELINE, TREATMENT)
    head = "<th>agent</th>" if several else ""
    if options.blind:
        head += "<th>task</th><th>pairs</th>"
    else:
        head += "<th>task</th>" + "".join(f"<th>{html.escape(study.arm_name(arm))}</th>" for arm in arms)
    rows = []
    for (agent, task), by_arm in cells.items():
        first = f"<td>{html.escape(agent)}</td>" if several else ""
        repetitions = sorted({a.repetition for arm in by_arm.values() for a in arm})
        pairs = [f'<a href="{html.escape(link("pair", options, agent=agent, task=task, repetition=r))}">pair '
                 f"r{r}</a>" for r in repetitions]
        if options.blind:
            rows.append(f"<tr>{first}<td>{html.escape(task)}</td><td>{' · '.join(pairs)}</td></tr>")
            continue
        columns = []
        for arm in arms:
            lines = [f'<a href="{html.escape(link("pair", options, agent=agent, task=task, repetition=a.repetition))}">'
                     f"{_cell_line(a)}</a>" for a in sorted(by_arm.get(arm, []), key=lambda a: a.repetition)]
            columns.append("<td>" + ("<br>".join(lines) or "—") + "</td>")
        rows.append(f"<tr>{first}<td>{html.escape(task)}</td>{''.join(columns)}</tr>")
    body = "".join(rows) or '<tr><td colspan="4">no attempt has settled yet</td></tr>'
    return f'<table id="task-grid"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _started(header: Mapping[str, Any]) -> datetime | None:
    text = header.get("startedAt")
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")) if text else None
    except ValueError:
        return None


def live_state(observed: ObservedStudy, options: ViewOptions, now: datetime | None = None) -> dict[str, Any]:
    """What the page's script shows: settled / total, spend against the cap, attempts running now, the ETA,
    the run's status, whether it has finished, and the grid's HTML."""
    study = observed.study
    last = observed.last_header
    settled = len(study.attempts)
    total = max(study.planned or settled, settled)
    listed = last.get("openReservations")
    running = listed if isinstance(listed, list) else [last["openReservation"]] if isinstance(
        last.get("openReservation"), dict) else []
    now_running = [f"{r.get('taskId')} r{r.get('repetition')}"
                   + ("" if options.blind else f" ({study.arm_name(str(r.get('scenario')))})")
                   for r in running if isinstance(r, dict)]
    status = str(last.get("status") or "unknown")
    finished = status != "running"
    started = _started(last)
    in_last = sum(1 for item in observed.attempts if observed.runs and item.run is observed.runs[-1])
    eta = "—"
    if not finished and in_last and started is not None:  # the running run's own pace
        elapsed = ((now or datetime.now(UTC)) - started).total_seconds()
        eta = f"{max(elapsed / in_last * (total - settled), 0):.0f} s"
    cap = f" of {usd(study.cap_usd)}" if study.cap_usd is not None else ""
    return {"settled": settled, "total": total, "spent": f"{usd(study.spent_usd)}{cap} USD",
            "running": f"{len(now_running)}" + (f": {', '.join(now_running)}" if now_running else ""),
            "eta": "done" if finished else eta, "status": status, "finished": finished,
            "grid": grid_html(observed, options)}


def live_html(state: Mapping[str, Any], live: bool) -> str:
    """The live box (ids the script fills) and the list of settled counts the page has seen."""
    return (f'<div class="live" id="live">run <b id="state">{html.escape(str(state["status"]))}</b> · settled '
            f'<b id="settled">{state["settled"]}</b> of <b id="total">{state["total"]}</b> · spend '
            f'<span id="spent">{html.escape(str(state["spent"]))}</span> · running now <span id="running">'
            f'{state["running"]}</span> · ETA <span id="eta">{html.escape(str(state["eta"]))}</span>'
            f'{" · following the ledger" if live else ""}<ol id="seen" hidden><li>{state["settled"]}</li></ol>'
            "</div>")


def page(title: str, body: str, options: ViewOptions, script: str = "") -> str:
    """A whole HTML page: inline CSS, the token on ``body`` for the script, no external resource."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{CSS}</style></head>"
            f'<body data-token="{html.escape(options.token)}"><h1>{html.escape(title)}</h1>{body}'
            + (f"<script>{script}</script>" if script else "") + "</body></html>\n")


def study_page(observed: ObservedStudy, options: ViewOptions, first_screen: str) -> str:
    """The study page: the report's first screen (``first_screen``, HTML; empty when blind), the live box and
    the grid."""
    state = live_state(observed, options)
    warning = ""
    if observed.study.unverified:
        warning = (f'<div class="warning">The ledger does not verify (yet): '
                   f"{html.escape(observed.study.unverified[0])}</div>")
    if observed.study.chain_missing:
        warning += (f'<div class="warning">PARTIAL CHAIN: {len(observed.study.chain_missing)} earlier run(s) of this '
                    "study were not given.</div>")
    grid = f'<h2>Tasks</h2><div id="grid">{state["grid"]}</div>'
    whole = "" if options.blind else (f'<p><a href="{html.escape(link("report", options))}">The whole report</a> '
                                      "(its task rows link to their pairs).</p>")
    body = warning + live_html(state, options.live) + ("" if options.blind else first_screen) + whole + grid
    return page(f"Study {observed.study.file_name}", body, options, LIVE_SCRIPT if options.live else "")


__all__ = ["CSS", "ViewOptions", "count", "grid_html", "link", "live_state", "page", "study_page", "usd"]
