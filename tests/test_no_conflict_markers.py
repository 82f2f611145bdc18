"""No merge-conflict marker anywhere in the tracked tree (a marker once landed inside a module docstring)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MARKER = re.compile(rb"^(<{7}|={7}|>{7})( |$)", re.MULTILINE)


def tracked_files() -> list[Path]:
    """Every file git tracks in this checkout (paths relative to the repository root)."""
    listing = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, check=True, capture_output=True
    ).stdout.decode().split("\0")
    return [REPO / name for name in listing if name]


def markers_in(data: bytes) -> list[int]:
    """1-based line numbers of the conflict markers in ``data``."""
    return [data.count(b"\n", 0, match.start()) + 1 for match in MARKER.finditer(data)]


def test_the_marker_pattern_finds_a_marker() -> None:
    seven = b"<" * 7
    assert markers_in(b"a\n" + seven + b" HEAD\nb\n" + b"=" * 7 + b"\n") == [2, 4]
    assert markers_in(b"x = '<' * 7\n") == []


def test_no_tracked_file_holds_a_conflict_marker() -> None:
    found = []
    for path in tracked_files():
        if not path.is_file():
            continue
        lines = markers_in(path.read_bytes())
        if lines:
            found.append(f"{path.relative_to(REPO)}:{lines[0]}")
    assert found == []
