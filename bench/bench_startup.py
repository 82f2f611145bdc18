"""Start-up cost of the command line (issue 42): CPU seconds of ``agentstudy --help`` and of every
``agentstudy COMMAND --help``, and the CPU a rehearsal pilot has spent when its first ledger byte lands.

Each measurement is a fresh child interpreter; its cost is the user + system CPU seconds of that child
(``os.wait4``'s resource usage), so the load of other processes on the machine changes it far less
than wall time. With ``--baseline REV`` the same commands also run from the sources of git revision
``REV`` (``git archive REV src`` into a temp dir, put first on ``PYTHONPATH``), interleaved round by
round with the working tree's, so "before" and "after" are measured side by side on the same machine.
The pilot runs from the working tree only (its MCP server child gets no ``PYTHONPATH``): measure a
revision's pilot from a checkout of it.

The pilot: ``agentstudy demo``'s study in rehearsal (``minimal --pilot --rehearsal --transport cli``)
with the real pinned Claude Code binary; the ledger path is polled every millisecond and, the moment it holds
a byte, the CPU read twice: the pilot's own process (``/proc/PID/stat`` utime + stime), and it with every
descendant (the MCP probe's process and the server, the agent's version probe, the containment proof, git):
the live tree's own and reaped CPU plus the orphans this process reaped as their subreaper. The child is then
stopped (SIGTERM, as an operator would) and reaped.

Run on its own: ``.venv/bin/python -m bench.bench_startup [--baseline main] [--repeats 5]``; prints a
Markdown table and writes ``bench/results-startup.json``. Nothing here asserts a number.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import PROJECT_ROOT, load_average, machine

COMMANDS: tuple[str, ...] = (
    "", "minimal", "study", "demo", "init", "diagrams", "transcript", "plan", "suite", "ledger", "schema",
    "adjudicate", "report", "run", "adjudicate-controlled", "metrics", "power", "provider", "export", "view",
)
"""``agentstudy [COMMAND] --help`` for each (``""``: the group's own help)."""

ENTRY = "import sys; from agentstudy.cli import main; sys.argv[0] = 'agentstudy'; main()"
"""The console script's body, so a ``PYTHONPATH`` source tree is what runs."""

TICKS = os.sysconf("SC_CLK_TCK")
DEFAULT_OUTPUT = PROJECT_ROOT / "bench" / "results-startup.json"


def _environment(source: Path | None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}
    if source is not None:
        env["PYTHONPATH"] = str(source)
    return env


def help_cpu_seconds(command: str, source: Path | None) -> float:
    """User + system CPU seconds of one ``agentstudy [command] --help`` child (exit 0 required).

    Raises:
        RuntimeError: the child failed.
    """
    argv = [sys.executable, "-c", ENTRY, *([command] if command else []), "--help"]
    child = subprocess.Popen(argv, env=_environment(source), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"agentstudy {command} --help exited {child.returncode}")
    return usage.ru_utime + usage.ru_stime


def _stat_fields(pid: int) -> list[str]:
    """The fields of ``/proc/PID/stat`` after the command name (field 3, the state, is index 0)."""
    return Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rpartition(")")[2].split()


def _proc_cpu_seconds(pid: int) -> float:
    fields = _stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / TICKS


def _tree_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and of its live descendants: each one's own (``utime`` + ``stime``)
    and what it has reaped (``cutime`` + ``cstime``), read from ``/proc`` at once (``task/*/children``)."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            fields = _stat_fields(current)
            tasks = list(Path(f"/proc/{current}/task").iterdir())
        except (OSError, ValueError):
            continue  # ended while we looked
        total += sum(int(value) for value in fields[11:15])
        for task in tasks:
            try:
                todo.extend(int(child) for child in (task / "children").read_text(encoding="ascii").split())
            except OSError:
                continue
    return total / TICKS


_PR_SET_CHILD_SUBREAPER = 36


def _become_subreaper() -> None:
    """Make this process the reaper of the pilot's orphans (``prctl(PR_SET_CHILD_SUBREAPER)``), so a descendant
    whose parent ended before it (a server whose sandbox was killed) is reaped here and its CPU counted."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def _reap_orphans(keep: int) -> float:
    """Reap every ended child of this process but ``keep``; return their CPU seconds (with what they reaped)."""
    cpu = 0.0
    while True:
        try:
            ended = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return cpu
        if ended is None or ended.si_pid in (0, keep):
            return cpu
        _, _, usage = os.wait4(ended.si_pid, 0)
        cpu += usage.ru_utime + usage.ru_stime


def pilot_first_byte_cpu(source: Path | None, work: Path) -> tuple[float, float]:
    """CPU seconds when the pilot's ledger first held a byte: ``(its own process, it and every descendant)``
    (the descendants: the server probes and the servers, the agent's version probe, the containment proof,
    git): the live tree's (:func:`_tree_cpu_seconds`, with what each reaped) plus the orphans this process
    reaped as their subreaper (:func:`_reap_orphans`).

    Raises:
        RuntimeError: the pilot ended (or 120 s passed) before writing a ledger byte.
    """
    _become_subreaper()
    orphans = 0.0
    run_dir = Path(tempfile.mkdtemp(dir=work))
    ledger = run_dir / "ledger.json"
    argv = [sys.executable, "-c", ENTRY, "demo", "--output-dir", str(run_dir / "out")]
    child = subprocess.Popen(argv, env=_environment(source), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             cwd=run_dir)
    target = run_dir / "out" / ledger.name
    deadline = time.monotonic() + 120
    cpu: tuple[float, float] | None = None
    journal = target.with_name(target.name + ".journal")
    while time.monotonic() < deadline and child.poll() is None:
        if any(path.exists() and path.stat().st_size > 0 for path in (target, journal)):
            cpu = (_proc_cpu_seconds(child.pid), _tree_cpu_seconds(child.pid) + orphans + _reap_orphans(child.pid))
            break
        orphans += _reap_orphans(child.pid)
        time.sleep(0.001)
    if child.poll() is None:
        child.send_signal(signal.SIGTERM)
    try:
        child.wait(timeout=60)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
    _reap_orphans(child.pid)
    if cpu is None:
        raise RuntimeError("the pilot wrote no ledger byte")
    return cpu


def _sources(baseline: str | None, work: Path) -> dict[str, Path | None]:
    sources: dict[str, Path | None] = {"working tree": None}
    if baseline is not None:
        archive = work / "baseline.tar"
        with archive.open("wb") as out:
            subprocess.run(["git", "-C", str(PROJECT_ROOT), "archive", baseline, "src"], stdout=out, check=True)
        with tarfile.open(archive) as tar:
            tar.extractall(work / "baseline", filter="data")
        sources = {f"{baseline}": work / "baseline" / "src", **sources}
    return sources


def _summary(values: Sequence[float]) -> dict[str, float]:
    return {"min_s": round(min(values), 3), "median_s": round(statistics.median(values), 3),
            "max_s": round(max(values), 3)}


def measure(baseline: str | None, repeats: int, pilot_repeats: int) -> dict[str, Any]:
    """Every command's ``--help`` CPU and the pilot's first-byte CPU, per source, interleaved round by round."""
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        work = Path(tmp)
        sources = _sources(baseline, work)
        helps: dict[str, dict[str, list[float]]] = {name: {c: [] for c in COMMANDS} for name in sources}
        pilots: dict[str, list[float]] = {name: [] for name in sources}
        trees: dict[str, list[float]] = {name: [] for name in sources}
        for round_number in range(repeats):
            order = list(sources) if round_number % 2 == 0 else list(reversed(sources))
            for name in order:
                for command in COMMANDS:
                    helps[name][command].append(help_cpu_seconds(command, sources[name]))
                if round_number < pilot_repeats and sources[name] is None:
                    own, tree = pilot_first_byte_cpu(None, work)
                    pilots[name].append(own)
                    trees[name].append(tree)
        return {
            "machine": machine(), "load_average_after": load_average(), "repeats": repeats,
            "help_cpu": {name: {c or "(group)": _summary(v) for c, v in per.items()} for name, per in helps.items()},
            "pilot_first_ledger_byte_cpu": {name: _summary(v) for name, v in pilots.items() if v},
            "pilot_first_ledger_byte_cpu_with_children": {name: _summary(v) for name, v in trees.items() if v},
        }


def table(results: dict[str, Any]) -> str:
    """A Markdown table: one row per command, one column per source (median CPU seconds)."""
    names = list(results["help_cpu"])
    lines = ["| command | " + " | ".join(f"{n} (CPU s, median)" for n in names) + " |",
             "|---|" + "---|" * len(names)]
    for command in results["help_cpu"][names[0]]:
        label = f"`agentstudy {command} --help`" if command != "(group)" else "`agentstudy --help`"
        lines.append(f"| {label} | " + " | ".join(f"{results['help_cpu'][n][command]['median_s']:.2f}"
                                                for n in names) + " |")
    for key, label in (("pilot_first_ledger_byte_cpu", "rehearsal pilot (`demo`): its CPU at its first ledger byte"),
                       ("pilot_first_ledger_byte_cpu_with_children",
                        "rehearsal pilot (`demo`): its and its children's CPU at its first ledger byte")):
        pilot = results.get(key) or {}
        if pilot:
            lines.append(f"| {label} | "
                         + " | ".join(f"{pilot[n]['median_s']:.2f}" if n in pilot else "—" for n in names) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``--baseline REV``, ``--repeats N``, ``--pilot-repeats N``, ``--output PATH``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--baseline", help="a git revision to measure side by side (e.g. main)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--pilot-repeats", type=int, default=3)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args(argv)
    results = measure(args.baseline, args.repeats, args.pilot_repeats)
    args.output.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
