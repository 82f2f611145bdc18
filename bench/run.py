"""The one entry point: ``.venv/bin/python -m bench`` runs every benchmark, prints a table, writes results.

Prints a Markdown table (the README's performance section is this table) and writes
``bench/results.json`` with every timing, the machine (cores, load, how busy it was) and the
versions used. Each benchmark compares our code with its floor (and the alternative) in the
same run, interleaved; ratios are medians over medians. Benchmarks never fail on a number.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import bench_attempt, bench_checkpoint, bench_containment, bench_export, bench_stream
from bench.common import PROJECT_ROOT, Skipped, load_average, machine, versions
from bench.pilot import claude_binary, pilot

BENCHMARKS = ("stream", "attempt", "containment", "checkpoint", "export")
DEFAULT_OUTPUT = PROJECT_ROOT / "bench" / "results.json"


def _cpu_ticks() -> tuple[int, int] | None:
    """(busy, total) jiffies of all CPUs since boot, from ``/proc/stat``; ``None`` elsewhere."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text(encoding="ascii").splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields[:8]) - idle, sum(fields[:8])


def _own_cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _fmt(seconds: float, unit: str) -> str:
    return f"{seconds * 1000:.1f}" if unit == "ms" else f"{seconds:.3f}"


def _triple(stats: dict[str, Any], unit: str, extra: str = "") -> str:
    text = " / ".join(_fmt(stats[k], unit) for k in ("min_s", "median_s", "max_s"))
    return f"{text} {unit}{extra}"


def _row(name: str, ours: dict[str, Any], other_name: str, other: dict[str, Any], unit: str,
         ratio: float | None, target: str, met: bool | None, ours_extra: str = "", other_extra: str = "",
         ratio_text: str | None = None) -> dict[str, Any]:
    if "skipped" in other:
        return {"benchmark": name, "ours": _triple(ours, unit, ours_extra), "compared_with": other_name,
                "theirs": other["skipped"], "ratio": "—", "target": target, "verdict": "skipped"}
    return {
        "benchmark": name,
        "ours": _triple(ours, unit, ours_extra),
        "compared_with": other_name,
        "theirs": _triple(other, unit, other_extra),
        "ratio": ratio_text or (f"{ratio:.2f}" if ratio is not None else "—"),
        "target": target,
        "verdict": "—" if met is None else ("met" if met else "missed"),
    }


def table_rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per comparison, in the README's order."""
    rows: list[dict[str, Any]] = []
    stream = results.get("stream")
    if isinstance(stream, dict) and "ours" in stream:
        size = f"{stream['input']['bytes'] / 1048576:.2f} MiB"

        def rate(section: dict[str, Any]) -> str:
            return f" ({section['mb_per_s_median']} MB/s)"

        rows.append(_row(f"stream validation, {size}", stream["ours"], "bare json.loads loop", stream["json_loads"],
                         "ms", stream["ratio_ours_to_json_loads"], "≤ 2×", stream["ratio_ours_to_json_loads"] <= 2.0,
                         rate(stream["ours"]), rate(stream["json_loads"])))
        sdk = stream["sdk"]
        rows.append(_row(f"stream validation, {size}", stream["ours"],
                         " ".join(filter(None, ("claude-agent-sdk", results["versions"].get("claude_agent_sdk"),
                                                "parser"))),
                         sdk, "ms", stream["ratio_ours_to_sdk"], "< 1× (faster)",
                         None if stream["ratio_ours_to_sdk"] is None else stream["ratio_ours_to_sdk"] < 1.0,
                         rate(stream["ours"]), rate(sdk) if "mb_per_s_median" in sdk else ""))
    export = results.get("export")
    if isinstance(export, dict):
        for place in export.values():
            if not isinstance(place, dict) or "ours" not in place:
                continue
            where = f"{place['input']['directory']} ({place['input']['filesystem']})"
            name = f"export {place['input']['files']:,} files, {where}"
            rows.append(_row(name, place["ours"], "git archive | tar -x", place["git_archive_tar"], "s",
                             place["ratio_ours_to_git_archive_tar"], "≤ 1.5×",
                             place["ratio_ours_to_git_archive_tar"] <= 1.5))
            speedup = place["speedup_ours_over_git_show_per_file"]
            rows.append(_row(name, place["ours"], "one git show per file", place["git_show_per_file"], "s",
                             1 / speedup, "≥ 20× faster", speedup >= 20.0, ratio_text=f"{speedup:.1f}× faster"))
    attempt = results.get("attempt")
    if isinstance(attempt, dict):
        for scenario, section in attempt.items():
            if not isinstance(section, dict) or "ours" not in section:
                continue
            rows.append(_row(f"cli attempt, {scenario}", section["ours"], "bare claude -p, same args and server",
                             section["bare_cli"], "s", section["ratio_ours_to_bare_cli"], "≤ 1.15×",
                             section["ratio_ours_to_bare_cli"] <= 1.15))
    containment = results.get("containment")
    if isinstance(containment, dict) and "arms" in containment:
        for scenario, section in containment["arms"].items():
            checks = section["checks"]
            row = _row(f"cli attempt under bwrap, {scenario}", section["bwrap"],
                       "same attempt, --containment restricted", section["restricted"], "s",
                       section["ratio_bwrap_to_restricted"], "—", None,
                       ratio_text=f"{section['ratio_bwrap_to_restricted']:.2f} "
                       f"({section['overhead_ms_median']:+.0f} ms)")
            if not (checks["all_completed"] and checks["same_api_requests"]):
                row["verdict"] = "invalid: statuses or API requests differ (results.json)"
            rows.append(row)
        micro = containment["true_micro"]
        rows.append(_row("bwrap (an MCP attempt's view) -- /usr/bin/true", micro["bwrap_true"], "/usr/bin/true",
                         micro["true"], "ms", micro["ratio_bwrap_true_to_true"], "—", None,
                         ratio_text=f"{micro['ratio_bwrap_true_to_true']:.1f} ({micro['overhead_ms_median']:+.1f} ms)"))
    checkpoint = results.get("checkpoint")
    if isinstance(checkpoint, dict):
        sized = [section for section in checkpoint.values() if isinstance(section, dict) and "journal" in section]
        for section in sized:
            size, kilobytes = section["observations"], section["bytes"] / 1024
            rows.append(_row(f"ledger checkpoint (journal record), {size:,} observations ({kilobytes:,.0f} KiB)",
                             section["journal"], "the old full rewrite (seal + encode + replace)",
                             section["full_rewrite"], "ms", 1 / section["ratio_full_rewrite_to_journal"], "—", None,
                             ratio_text=f"{section['ratio_full_rewrite_to_journal']:.0f}× faster"))
            rows.append(_row(f"ledger snapshot (ledger hash + replace), {size:,} observations", section["snapshot"],
                             "write + fsync of the same bytes", section["write_fsync"], "ms",
                             section["ratio_snapshot_to_write_fsync"], "—", None))
        growth = checkpoint.get("journal_growth")
        if isinstance(growth, dict) and len(sized) >= 2:
            first, last = sized[0], sized[-1]
            value = growth["ratio_journal_10000_to_100"]
            rows.append(_row(f"journal record at {last['observations']:,} vs {first['observations']:,} observations",
                             last["journal"], f"the journal record at {first['observations']:,}", first["journal"],
                             "ms", value, f"≤ {growth['target_max']:g}×", value <= growth["target_max"]))
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table (min / median / max of each side)."""
    header = ("Benchmark", "Ours (min / median / max)", "Compared with", "Theirs (min / median / max)",
              "Ratio (medians)", "Target", "Verdict")
    keys = ("benchmark", "ours", "compared_with", "theirs", "ratio", "target", "verdict")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(row[k]).replace("|", "\\|") for k in keys) + " |" for row in rows]
    return "\n".join(lines)


def _section(name: str, action: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    print(f"running {name} …", file=sys.stderr, flush=True)
    start, load = time.monotonic(), load_average()
    try:
        result = action()
    except Skipped as why:
        result = {"skipped": str(why)}
    result["_run"] = {"seconds": round(time.monotonic() - start, 1), "load_average_before": load,
                      "load_average_after": load_average()}
    return result


def main(argv: list[str] | None = None) -> int:
    """Run the chosen benchmarks, print the table and write the results file."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--only", action="append", choices=BENCHMARKS, help="run only this benchmark (repeatable)")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="results file (default bench/results.json)")
    parser.add_argument("--quick", action="store_true", help="few repeats: a smoke run, not a measurement")
    args = parser.parse_args(argv)
    chosen = args.only or list(BENCHMARKS)
    quick = args.quick
    try:
        binary: Path | None = claude_binary()
    except Skipped:
        binary = None
    results: dict[str, Any] = {
        "command": " ".join(["python -m bench", *(argv if argv is not None else sys.argv[1:])]),
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "versions": versions(binary),
        "method": "methods interleaved round by round, order rotated each round; min / median / max of the runs; "
        "ratios are median over median",
    }
    ticks, own = _cpu_ticks(), _own_cpu_seconds()
    wall = time.monotonic()
    if "stream" in chosen:
        results["stream"] = _section("stream", lambda: bench_stream.run(5 if quick else 21))
    if {"attempt", "containment", "checkpoint"} & set(chosen):
        try:
            with pilot() as example:
                if "attempt" in chosen:
                    results["attempt"] = _section("attempt", lambda: bench_attempt.run(example, 2 if quick else 9))
                if "containment" in chosen:
                    results["containment"] = _section(
                        "containment", lambda: bench_containment.run(example, 2 if quick else 9, 5 if quick else 51))
                if "checkpoint" in chosen:
                    results["checkpoint"] = _section(
                        "checkpoint", lambda: bench_checkpoint.run(example.ledger, 5 if quick else 15))
        except Skipped as why:
            for name in ("attempt", "containment", "checkpoint"):
                if name in chosen:
                    results[name] = {"skipped": str(why)}
    # Last: its 100,000 created and removed files would slow file creation in what followed.
    if "export" in chosen:
        results["export"] = _section("export", lambda: bench_export.run(2 if quick else 7, 1 if quick else 3))
    end_ticks, elapsed = _cpu_ticks(), time.monotonic() - wall
    busy: dict[str, Any] = {"load_average_at_end": load_average(), "wall_seconds": round(elapsed, 1)}
    if ticks and end_ticks and end_ticks[1] > ticks[1]:
        cores = results["machine"]["cores"] or 1
        all_busy = (end_ticks[0] - ticks[0]) / (end_ticks[1] - ticks[1])
        ours = (_own_cpu_seconds() - own) / (elapsed * cores)
        # Share of all cores' time: the whole machine; this process and the children it reaped;
        # the rest: other users' processes plus grandchildren never reaped by us (MCP servers).
        busy["cpu_busy_fraction_all"] = round(all_busy, 3)
        busy["cpu_busy_fraction_this_benchmark"] = round(min(ours, all_busy), 3)
        busy["cpu_busy_fraction_rest"] = round(max(all_busy - ours, 0.0), 3)
    results["machine"].update(busy)
    results["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    rows = table_rows(results)
    results["table"] = rows
    args.output.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    m, v = results["machine"], results["versions"]
    print(f"`{results['command']}` — {results['started_at']}, {m['cores']} cores ({m['cpu']}), "
          f"load {m['load_average_at_start']} → {m['load_average_at_end']}, "
          f"cores busy {m.get('cpu_busy_fraction_all', '?')} of the time "
          f"(this benchmark {m.get('cpu_busy_fraction_this_benchmark', '?')}, "
          f"rest {m.get('cpu_busy_fraction_rest', '?')})")
    print(f"Python {v['python']}, agentstudy {v['agentstudy']} {v['agentstudy_revision']}, "
          f"claude-agent-sdk {v['claude_agent_sdk'] or 'not installed'}, Claude Code {v['claude_code']}, "
          f"{v['git']}, {v['tar']}")
    print()
    print(markdown(rows))
    print(f"\nresults: {args.output}", file=sys.stderr)
    return 0
