"""Corpus export: a generated 5,000-file git repository, three ways to lay out the same pin.

- ours: ``io.export.export_pinned_corpus`` — ``git ls-tree`` and one ``git cat-file --batch``,
  the filter, the files written, 0444 files and 0555 directories, the tree digest;
- floor: ``git archive PIN | tar -x`` into a fresh directory (no filter, no permissions, no
  digest: the least any export of the pin must do);
- per file: the original's approach, ``git ls-tree`` then one ``git show PIN:path`` process per
  exported file, each written and sealed like ours.

Only laying out the export is timed. Every export is kept until the location's runs are over,
then all are removed at once: removing one run's files before the next run would make that
run pay for the removal (see below); our attempt removes its export at about the cost of
``rm -rf``. Before timing, the three exports are checked to hold the same 5,000 paths with the
same bytes. The repository's objects are packed, as in a clone.

Each way runs in two places: the default temp directory (where an attempt's export goes) and,
when there is one, the ``/dev/shm`` tmpfs. The second takes the file system out of the
comparison: on a disk file system creating 5,000 inodes can cost more than everything else
(on an ext4 without a journal, as on the machine of the README's table, inodes freed in the
last minutes are skipped one by one when new ones are allocated, so a run right after an
``rm -rf`` of 5,000 files pays seconds for it).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from agentstudy.io.export import export_pinned_corpus, is_exported
from agentstudy.io.git import git_env, head, list_tree
from bench.common import Timer, interleave, ratio, timed

FILES = 5_000


def build(root: Path) -> str:
    """A repository of FILES small Markdown files in 50 folders, one commit, objects packed; returns the pin."""
    root.mkdir()
    for index in range(FILES):
        folder = root / f"d{index % 50:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{index:05d}.md").write_text(f"# File {index}\n\n" + "text line\n" * 20, encoding="utf-8")
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@example.com", "-c", "commit.gpgsign=false", "-C", str(root)]
    subprocess.run([*git, "init", "-q"], check=True, env=git_env())
    subprocess.run([*git, "add", "-A"], check=True, env=git_env())
    subprocess.run([*git, "commit", "-q", "-m", "bench"], check=True, env=git_env())
    subprocess.run([*git, "repack", "-a", "-d", "-q"], check=True, env=git_env())  # packed, as a clone is
    return head(root)


def archive(root: Path, pin: str, target: Path) -> None:
    """``git archive PIN | tar -x -C target``."""
    tar = subprocess.Popen(["tar", "-x", "-C", str(target)], stdin=subprocess.PIPE)
    assert tar.stdin is not None
    try:
        subprocess.run(["git", "-C", str(root), "archive", pin], stdout=tar.stdin, check=True, env=git_env())
    finally:
        tar.stdin.close()
        if tar.wait() != 0:
            raise RuntimeError("tar -x failed")


def per_file(root: Path, pin: str, target: Path) -> None:
    """The original's approach: ``git ls-tree``, then one ``git show PIN:path`` per exported file, sealed."""
    for entry in sorted((e for e in list_tree(root, pin) if is_exported(e)), key=lambda e: e.path):
        content = subprocess.run(
            ["git", "-C", str(root), "show", f"{pin}:{entry.path}"], capture_output=True, check=True, env=git_env()
        ).stdout
        path = target / entry.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        path.chmod(0o444)
    for directory, _dirs, _files in os.walk(target, topdown=False):
        Path(directory).chmod(0o555)


def _remove(target: Path) -> None:
    for directory, _dirs, _files in os.walk(target):
        Path(directory).chmod(stat.S_IRWXU)
    shutil.rmtree(target)


def _contents(target: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(target)): path.read_bytes() for path in sorted(target.rglob("*")) if path.is_file()
    }


def locations() -> dict[str, Path]:
    """Where to export: the default temp directory (where attempts export), and ``/dev/shm`` when it is a tmpfs."""
    found = {"default_tmp": Path(tempfile.gettempdir())}
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK) and _filesystem(shm) == "tmpfs":
        found["tmpfs"] = shm
    return found


def _filesystem(path: Path) -> str | None:
    """The type of the file system mounted at or above ``path`` (Linux ``/proc/mounts``), else ``None``."""
    mounts = Path("/proc/mounts")
    if not mounts.exists():
        return None
    best, kind = "", None
    resolved = str(path.resolve())
    for line in mounts.read_text(encoding="utf-8", errors="replace").splitlines():
        fields = line.split()
        inside = len(fields) >= 3 and (resolved == fields[1] or resolved.startswith(fields[1].rstrip("/") + "/"))
        if inside and len(fields[1]) > len(best):
            best, kind = fields[1], fields[2]
    return kind


def _creation_probe(target: Path, files: int = 500) -> float:
    """Microseconds per small file created in ``target`` now: how the file system is doing before the runs."""
    start = time.perf_counter()
    for index in range(files):
        (target / f"p{index:04d}").write_bytes(b"x" * 200)
    return round((time.perf_counter() - start) / files * 1e6, 1)


def run(repeats: int, per_file_repeats: int) -> dict[str, Any]:
    """Build the repository once, then time the three ways in every location of ``locations()``."""
    with tempfile.TemporaryDirectory(prefix="agentstudy-bench-repo-") as repo_scratch:
        root = Path(repo_scratch) / "repo"
        pin = build(root)
        return {name: _run_in(root, pin, base, repeats, per_file_repeats) for name, base in locations().items()}


def _run_in(root: Path, pin: str, base: Path, repeats: int, per_file_repeats: int) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix="agentstudy-bench-export-", dir=base))
    try:

        def fresh() -> Path:
            return Path(tempfile.mkdtemp(dir=scratch))

        probe = _creation_probe(fresh())
        exported = export_pinned_corpus(root, pin, scratch)
        archived, shown = fresh(), fresh()
        archive(root, pin, archived)
        per_file(root, pin, shown)
        reference = _contents(exported.path)
        if not (len(reference) == FILES and _contents(archived) == reference and _contents(shown) == reference):
            raise RuntimeError("the three exports differ")

        def ours() -> float:
            return timed(lambda: export_pinned_corpus(root, pin, scratch))

        def floor() -> float:
            target = fresh()
            return timed(lambda: archive(root, pin, target))

        def one_process_per_file() -> float:
            target = fresh()
            return timed(lambda: per_file(root, pin, target))

        methods: dict[str, Timer] = {"ours": ours, "git_archive_tar": floor, "git_show_per_file": one_process_per_file}
        counts = {"ours": repeats, "git_archive_tar": repeats, "git_show_per_file": per_file_repeats}
        stats = interleave(methods, counts)
    finally:
        _remove(scratch)
    return {
        "input": {"files": FILES, "bytes": exported.bytes, "folders": 50, "objects": "packed",
                  "directory": str(base), "filesystem": _filesystem(base),
                  "file_creation_probe_us_per_file": probe},
        **{name: stat_.to_json() for name, stat_ in stats.items()},
        "ratio_ours_to_git_archive_tar": ratio(stats["ours"], stats["git_archive_tar"]),
        "target_ratio_ours_to_git_archive_tar_max": 1.5,
        "speedup_ours_over_git_show_per_file": ratio(stats["git_show_per_file"], stats["ours"]),
        "target_speedup_ours_over_git_show_per_file_min": 20.0,
    }
