"""Writing an export (issue 43 item 2): a new private file or directory, never over anything existing.

A table (CSV, or Parquet through pyarrow, imported only here and only when asked for) is written to a
temporary 0600 file beside the target, fsynced, then hard-linked to the target name (which fails if
anything exists there) and the temporary name removed: a reader sees no file or the whole file. ATIF
trajectories go into a new 0700 directory built under a temporary name and renamed into place only
when every file (0600) is written.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

ARROW_TYPES = {"string": "string", "int64": "int64", "float64": "float64", "bool": "bool_"}


class ExportError(OSError):
    """The output exists, or its directory cannot hold the new file."""


def _refuse_existing(target: Path) -> None:
    if target.exists() or target.is_symlink():
        raise ExportError(f"{target} already exists; an export never replaces a file")
    if not target.parent.is_dir():
        raise ExportError(f"{target.parent} is not a directory")


def _publish(target: Path, write: Callable[[Path], None]) -> None:
    """Write through ``write(temporary)`` then link the temporary file to ``target`` (no replacement)."""
    _refuse_existing(target)
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    temporary = Path(name)
    try:
        os.close(fd)
        os.chmod(temporary, 0o600)
        write(temporary)
        with open(temporary, "rb") as handle:
            os.fsync(handle.fileno())
        try:
            os.link(temporary, target)
        except FileExistsError:
            raise ExportError(f"{target} already exists; an export never replaces a file") from None
    finally:
        temporary.unlink(missing_ok=True)


def _csv_value(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def write_csv(target: Path, names: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> None:
    """``rows`` as CSV with a header line of ``names`` (UTF-8, RFC 4180 quoting, empty cell = not recorded).

    Raises:
        ExportError: ``target`` exists or its directory does not.
        OSError: the disk refused the write (nothing is left behind).
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(names)
    for row in rows:
        writer.writerow([_csv_value(row.get(name)) for name in names])
    text = buffer.getvalue()

    def write(path: Path) -> None:
        path.write_text(text, encoding="utf-8")

    _publish(target, write)


def write_parquet(target: Path, columns: Sequence[tuple[str, str]], rows: Sequence[Mapping[str, Any]]) -> None:
    """``rows`` as one Parquet table, ``columns`` ``(name, type)`` with types ``string``/``int64``/``float64``/``bool``.

    Raises:
        ExportError: ``target`` exists or its directory does not.
        ImportError: pyarrow is not installed (``scripts/setup.sh`` installs it).
        OSError: the disk refused the write.
    """
    import pyarrow as pa  # only here: never at CLI start
    import pyarrow.parquet as pq

    schema = pa.schema([(name, getattr(pa, ARROW_TYPES[kind])()) for name, kind in columns])
    table = pa.Table.from_pylist([dict(row) for row in rows], schema=schema)
    _publish(target, lambda path: pq.write_table(table, str(path)))


def write_json_directory(target: Path, documents: Iterable[tuple[str, Any]]) -> int:
    """Each ``(file name, JSON value)`` as a 0600 file in the new 0700 directory ``target``; the count written.

    Raises:
        ExportError: ``target`` exists, its parent is not a directory, or a file name is not a plain name.
        OSError: the disk refused a write (the temporary directory is removed).
    """
    _refuse_existing(target)
    building = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent))
    written = 0
    try:
        for name, document in documents:
            if "/" in name or name.startswith("."):
                raise ExportError(f"{name!r} is not a plain file name")
            fd = os.open(building / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(document, handle, ensure_ascii=False, indent=1)
                handle.write("\n")
            written += 1
        _refuse_existing(target)
        os.rename(building, target)
    except BaseException:
        with contextlib.suppress(OSError):
            shutil.rmtree(building)
        raise
    return written


__all__ = ["ExportError", "write_csv", "write_json_directory", "write_parquet"]
