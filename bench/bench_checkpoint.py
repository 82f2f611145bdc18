"""Ledger checkpoint: ``io.ledger_store.LedgerFile.checkpoint`` against a bare write+fsync of the same bytes.

The ledger is the example pilot's real ledger with its two observations repeated to 10 and to
1,000 observations (about 3.5 KB each). Three ways, interleaved:

- ours: ``LedgerFile.checkpoint(document)``: encode the document (2-space JSON), write it to an
  exclusive 0600 temporary file, fsync, rename over the ledger, fsync the directory;
- floor: ``os.open(O_WRONLY | O_CREAT | O_TRUNC)``, write the same bytes (encoded beforehand,
  untimed; checked equal to what ours wrote), ``fsync``, close — in place, not crash-safe;
- encode only (for the note, not a comparator): the document encoded exactly as ours does it
  (``io.ledger_store._encode``: ``json.dumps(indent=2, ensure_ascii=False)``).
"""

from __future__ import annotations

import copy
import os
import tempfile
from pathlib import Path
from typing import Any

from agentstudy.io.ledger_store import LedgerFile
from agentstudy.io.ledger_store import _encode as encode  # the bytes LedgerFile writes for a document
from bench.common import Timer, interleave, ratio, timed

SIZES = (10, 1_000)


def document(ledger: dict[str, Any], observations: int) -> dict[str, Any]:
    """``ledger`` with its observations repeated to ``observations`` (repetition numbers counting up)."""
    source = ledger["observations"]
    doc = copy.deepcopy(ledger)
    doc["plannedAttempts"] = observations
    doc["observations"] = [
        {**copy.deepcopy(source[index % len(source)]), "repetition": index // len(source) + 1}
        for index in range(observations)
    ]
    return doc


def bare_write(path: Path, data: bytes) -> None:
    """Write ``data`` over ``path`` in place and fsync it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def _methods(store: LedgerFile, doc: dict[str, Any], bare_path: Path, data: bytes) -> dict[str, Timer]:
    return {
        "ours": lambda: timed(lambda: store.checkpoint(doc)),
        "write_fsync": lambda: timed(lambda: bare_write(bare_path, data)),
        "encode_only": lambda: timed(lambda: encode(doc)),
    }


def run(ledger: dict[str, Any], repeats: int) -> dict[str, Any]:
    """Time the three ways at each size of ``SIZES`` (10 observations: 3× the repeats); return the JSON section."""
    section: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="agentstudy-bench-ledger-") as name:
        directory = Path(name)
        for size in SIZES:
            doc = document(ledger, size)
            data = encode(doc)
            store = LedgerFile(directory / f"ledger-{size}.json", {"created": True})
            store.checkpoint(doc)
            if store.path.read_bytes() != data:
                raise RuntimeError("the checkpoint wrote other bytes than the bare write would")
            bare_path = directory / f"bare-{size}.json"
            methods = _methods(store, doc, bare_path, data)
            runs = repeats * 3 if size < 100 else repeats
            stats = interleave(methods, dict.fromkeys(methods, runs))
            section[str(size)] = {
                "observations": size,
                "bytes": len(data),
                **{key: value.to_json() for key, value in stats.items()},
                "ratio_ours_to_write_fsync": ratio(stats["ours"], stats["write_fsync"]),
                "target_ratio_ours_to_write_fsync_max": 3.0 if size == 1_000 else None,
            }
    return section
