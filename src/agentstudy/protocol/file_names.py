"""Identifiers as file names, injectively (issue 40: two legal task ids must never share a file). Pure.

A part made only of ``A-Z a-z 0-9 . _ -`` (not empty, not starting with ``.`` or ``-``, without ``--``) is its
own file name; any other is its safe characters (each run of others as ``_``) followed by ``~`` and the first
16 hex characters of the SHA-256 of its UTF-8 bytes. ``~`` never occurs in a part that stays itself, so a
changed part never equals an unchanged one, and two changed parts differ in their hashes; ``--`` joins the
parts of a name (:func:`joined_file_name`), which no part contains.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

_SAFE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
_UNSAFE_RUN = re.compile(r"[^A-Za-z0-9._-]+")
HASH_CHARS = 16
"""Hex characters of the SHA-256 suffix of a changed part (64 bits)."""


def file_name_part(text: str) -> str:
    """``text`` as one part of a file name, injectively (see the module docstring)."""
    if _SAFE.fullmatch(text) and "--" not in text and not text.endswith("-"):
        return text
    readable = _UNSAFE_RUN.sub("_", text).replace("--", "_")[:64].strip("-.")
    return f"{readable}~{hashlib.sha256(text.encode('utf-8')).hexdigest()[:HASH_CHARS]}"


def joined_file_name(parts: Iterable[str], extension: str) -> str:
    """The parts, each by :func:`file_name_part`, joined with ``--``, then ``.extension``."""
    return "--".join(file_name_part(part) for part in parts) + f".{extension}"


def colliding_ids(ids: Iterable[str]) -> tuple[str, str] | None:
    """The first two distinct ids that map to one file-name part (``None`` when none do)."""
    seen: dict[str, str] = {}
    for each in ids:
        other = seen.setdefault(file_name_part(each), each)
        if other != each:
            return other, each
    return None


__all__ = ["HASH_CHARS", "colliding_ids", "file_name_part", "joined_file_name"]
