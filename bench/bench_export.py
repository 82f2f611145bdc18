"""Benchmark: export a 5,000-file repository at its pin, against ``git archive | tar -x`` of the same pin.

Run: ``.venv/bin/python bench/bench_export.py``. Builds the repository in a temp dir, then
times each method 3 times and prints the best; no assertion (speed lives here, not in tests).
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from agentstudy.io.export import export_corpus, remove_export
from agentstudy.io.git import git_env, head

FILES = 5_000


def build(root: Path) -> str:
    """A repository of FILES small Markdown files in 50 folders, one commit; returns the pin."""
    root.mkdir()
    for index in range(FILES):
        folder = root / f"d{index % 50:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{index:05d}.md").write_text(f"# File {index}\n\n" + "text line\n" * 20, encoding="utf-8")
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@example.com", "-c", "commit.gpgsign=false", "-C", str(root)]
    subprocess.run([*git, "init", "-q"], check=True, env=git_env())
    subprocess.run([*git, "add", "-A"], check=True, env=git_env())
    subprocess.run([*git, "commit", "-q", "-m", "bench"], check=True, env=git_env())
    return head(root)


def best_of(runs: int, action: Callable[[], None]) -> float:
    """Best wall time in seconds of ``runs`` calls of ``action``."""
    timings = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        timings.append(time.perf_counter() - start)
    return min(timings)


def main() -> None:
    """Print both timings."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "repo"
        pin = build(root)

        def ours() -> None:
            remove_export(export_corpus(root, pin, Path(scratch)))

        def archive() -> None:
            target = Path(tempfile.mkdtemp(dir=scratch))
            tar = subprocess.Popen(["tar", "-x", "-C", str(target)], stdin=subprocess.PIPE)
            subprocess.run(["git", "-C", str(root), "archive", pin], stdout=tar.stdin, check=True, env=git_env())
            assert tar.stdin is not None
            tar.stdin.close()
            tar.wait()
            subprocess.run(["rm", "-rf", str(target)], check=True)

        print(f"{FILES} files: export_corpus best {best_of(3, ours) * 1000:.0f} ms; "
              f"git archive | tar -x best {best_of(3, archive) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
