"""Real full and read-only filesystems for tests: a small tmpfs mounted in the test's directory.

This machine and CI run as root, so ``mount -t tmpfs`` works; a refused mount fails the test
loudly (never a skip). ``fill`` writes a filler file until the filesystem answers ENOSPC.
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def small_tmpfs(directory: Path, size: str = "64k") -> Iterator[Path]:
    """Mount a tmpfs of ``size`` (``mount -o size=``) on ``directory`` (created); unmount afterwards."""
    directory.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(directory)],
                             capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs on {directory} (tests run as root): {mounted.stderr.strip()}")
    try:
        yield directory
    finally:
        subprocess.run(["umount", "-l", str(directory)], check=True)


def fill(directory: Path, name: str = "filler") -> Path:
    """Write ``directory/name`` until the filesystem is full (ENOSPC); the filler's path."""
    path = directory / name
    block = b"\0" * 4096
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o600)
    try:
        while True:
            os.write(fd, block)
    except OSError as error:
        if error.errno != errno.ENOSPC:
            raise
    finally:
        os.close(fd)
    return path


def remount_read_only(directory: Path) -> None:
    """Remount the tmpfs on ``directory`` read-only (EROFS for every later write)."""
    subprocess.run(["mount", "-o", "remount,ro", str(directory)], check=True)
