"""Every module of ``src/agentstudy`` stays within 400 lines (the house rule; issue 42): a module past it is split
along its seams, its public names re-exported where callers import them."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "agentstudy"
MAX_LINES = 400


def _oversized(root: Path) -> list[str]:
    """``path: N lines`` of every ``*.py`` under ``root`` longer than ``MAX_LINES`` lines, sorted by path."""
    found = []
    for path in sorted(root.rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES:
            found.append(f"{path.relative_to(root)}: {lines} lines")
    return found


def test_no_module_of_src_passes_400_lines() -> None:
    modules = list(PACKAGE.rglob("*.py"))
    assert len(modules) > 200  # the walk saw the package
    assert _oversized(PACKAGE) == []


def test_the_check_sees_a_long_module(tmp_path: Path) -> None:
    """The same check over a tree holding a 401-line module names it, and passes one of exactly 400 lines."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "long.py").write_text("x = 1\n" * (MAX_LINES + 1), encoding="utf-8")
    (tmp_path / "pkg" / "edge.py").write_text("x = 1\n" * MAX_LINES, encoding="utf-8")
    assert _oversized(tmp_path) == [f"{Path('pkg') / 'long.py'}: 401 lines"]
