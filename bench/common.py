"""Shared helpers of the benchmarks: interleaved timing, min/median/max, ratios, machine facts.

Every benchmark compares our code with a floor (and sometimes an alternative) *in the same
run on the same machine*: the methods are interleaved round by round (the order rotates each
round, so no method always runs first or last) and each reports min, median and max. Ratios
are medians over medians. Nothing here is an assertion: benchmarks never fail on a number.
"""

from __future__ import annotations

import gc
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

Timer = Callable[[], float]
"""One timed run: does its own untimed setup and cleanup and returns the timed seconds."""

PROJECT_ROOT = Path(__file__).resolve().parents[1]
TRANSCRIPTS = PROJECT_ROOT.parent / "shared" / "transcripts" / "claude-code-2.1.296"


class Skipped(Exception):
    """A benchmark, or one column of it, cannot run on this machine (the message says why)."""


@dataclass(frozen=True)
class Stats:
    """Min, median and max of repeated timings, in seconds."""

    runs: int
    min: float
    median: float
    max: float

    @classmethod
    def of(cls, values: list[float]) -> Stats:
        """Summarise ``values`` (at least one)."""
        return cls(len(values), min(values), statistics.median(values), max(values))

    def to_json(self) -> dict[str, Any]:
        """Seconds, rounded to the microsecond, plus the run count."""
        return {"runs": self.runs, "min_s": round(self.min, 6), "median_s": round(self.median, 6),
                "max_s": round(self.max, 6)}


def timed(action: Callable[[], object], cleanup: Callable[[], object] | None = None) -> float:
    """Run ``action`` once (after a ``gc.collect()``), return its wall time in seconds, then ``cleanup`` untimed."""
    gc.collect()
    start = time.perf_counter()
    action()
    elapsed = time.perf_counter() - start
    if cleanup is not None:
        cleanup()
    return elapsed


def interleave(methods: Mapping[str, Timer], repeats: Mapping[str, int]) -> dict[str, Stats]:
    """Run every method ``repeats[name]`` times, one run of each per round, rotating the order.

    Round ``r`` runs each method that still has runs left, starting with method ``r mod n``:
    A B C, B C A, C A B … so slow drifts of the machine's load hit every method alike.
    """
    names = list(methods)
    timings: dict[str, list[float]] = {name: [] for name in names}
    for round_number in range(max(repeats[name] for name in names)):
        shift = round_number % len(names)
        for name in names[shift:] + names[:shift]:
            if round_number < repeats[name]:
                timings[name].append(methods[name]())
    return {name: Stats.of(values) for name, values in timings.items()}


def ratio(numerator: Stats, denominator: Stats) -> float:
    """Median over median, rounded to 3 decimals."""
    return round(numerator.median / denominator.median, 3)


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages (empty where the OS has none)."""
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except OSError:
        return []


def _first_line(argv: list[str]) -> str | None:
    try:
        completed = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = completed.stdout.strip().splitlines()
    return lines[0].strip() if completed.returncode == 0 and lines else None


def package_version(name: str) -> str | None:
    """The installed version of distribution ``name``, ``None`` when it is not installed."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def machine() -> dict[str, Any]:
    """Core count, CPU, OS and the load average when the run started."""
    cpu = None
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "cpu": cpu or platform.processor() or None,
        "platform": platform.platform(),
        "load_average_at_start": load_average(),
    }


def versions(claude_binary: Path | None) -> dict[str, Any]:
    """Versions of everything measured: Python, agentstudy (and its git revision), the SDK, the CLI, git, tar."""
    revision = _first_line(["git", "-C", str(PROJECT_ROOT), "rev-parse", "--short", "HEAD"])
    dirty = _first_line(["git", "-C", str(PROJECT_ROOT), "status", "--porcelain", "--", "src"])
    return {
        "python": sys.version.split()[0],
        "agentstudy": package_version("agentstudy"),
        "agentstudy_revision": (f"{revision}{' (src modified)' if dirty else ''}" if revision else None),
        "claude_agent_sdk": package_version("claude-agent-sdk"),
        "claude_code": _first_line([str(claude_binary), "--version"]) if claude_binary else None,
        "git": _first_line(["git", "--version"]),
        "tar": _first_line(["tar", "--version"]),
        "pydantic": package_version("pydantic"),
    }
