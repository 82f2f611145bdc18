"""Bounded JSON loading: the one parser of every JSON document a user or a child hands us. Pure.

Manifests, plans, suites, configs, price files, ledgers, companions, transcripts, the MCP
probe arguments and the replies of providers and adjudicators are all read with
:func:`load_json`, which adds three limits to ``json.loads`` so hostile input is a one-line
:class:`JsonInputError` instead of a traceback:

- nesting deeper than :data:`MAX_DEPTH` (64) arrays and objects is refused before parsing
  (``json.loads`` would raise ``RecursionError`` near 1,000 levels);
- a number literal longer than :data:`MAX_NUMBER_CHARS` (100 characters: sign, digits, dot and
  exponent) is refused before parsing (Python refuses integers above 4,300 digits with a bare
  ``ValueError``, and nothing we read needs more than 100);
- ``NaN``, ``Infinity`` and ``-Infinity`` are refused (they are not JSON), and so is a float
  that overflows a double (``1e400``) unless the caller parses floats itself.

:func:`describe_os_error` words an ``OSError`` on a user's path as one line.
"""

from __future__ import annotations

import errno
import json
import math
import re
from collections.abc import Callable
from itertools import accumulate
from typing import Any

MAX_DEPTH = 64
"""Most arrays and objects nested in one another (a ledger needs 6)."""

MAX_NUMBER_CHARS = 100
"""Longest number literal, in characters (a 100-digit integer, or a float with its exponent)."""

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
"""One JSON string token (escapes included), matched without backtracking."""
_LONG_NUMBER = re.compile(rf"[-+0-9.eE]{{{MAX_NUMBER_CHARS + 1},}}")
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class JsonInputError(ValueError):
    """A document is not bounded, finite JSON (one-line reason)."""


def _refuse_constant(name: str) -> Any:
    raise JsonInputError(f"is not valid JSON ({name} is not JSON)")


def _finite_float(literal: str) -> float:
    number = float(literal)
    if not math.isfinite(number):
        raise JsonInputError(f"is not valid JSON (the number {literal[:40]} is out of range)")
    return number


def refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` refusing a key given twice in one object (the last would win silently).

    Raises:
        JsonInputError: ``duplicated key 'name'``.
    """
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise JsonInputError(f"duplicated key {key[:80]!r}")
        result[key] = value
    return result


def check_bounds(text: str) -> None:
    """Refuse ``text`` when its nesting or a number literal outside strings exceeds the limits.

    Raises:
        JsonInputError: nested deeper than ``MAX_DEPTH`` or a number longer than ``MAX_NUMBER_CHARS``.
    """
    skeleton = _STRING.sub('""', text) if '"' in text else text
    if _LONG_NUMBER.search(skeleton):
        raise JsonInputError(f"holds a number longer than {MAX_NUMBER_CHARS} characters")
    brackets = _NOT_BRACKET.sub("", skeleton)
    if len(brackets) > MAX_DEPTH and max(accumulate(map(_STEP.__getitem__, brackets))) > MAX_DEPTH:
        raise JsonInputError(f"is nested deeper than {MAX_DEPTH} levels")


def load_json(
    text: str | bytes,
    *,
    parse_float: Callable[[str], Any] | None = None,
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
    parse_constant: Callable[[str], Any] | None = None,
) -> Any:
    """Parse one JSON document within the limits of this module.

    Args:
        text: the document; bytes must be UTF-8.
        parse_float: how float literals become values (default: a finite ``float``;
            ``decimal.Decimal`` for money read exactly).
        object_pairs_hook: as for ``json.loads`` (a duplicate-key check); its exceptions propagate.
        parse_constant: called for ``NaN``, ``Infinity`` and ``-Infinity`` (default: refuse them
            with ``JsonInputError``); a caller's own refusal propagates.

    Returns:
        The parsed value.

    Raises:
        JsonInputError: not UTF-8, not JSON (line and column given), nested too deep, a number
            too long, ``NaN``/``Infinity``, or a float outside a double's range. The message
            reads after the document's name: ``f"manifest {error}"``.
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as error:
            raise JsonInputError(f"is not UTF-8 (byte {error.start})") from None
    check_bounds(text)
    try:
        return json.loads(
            text,
            parse_float=parse_float or _finite_float,
            parse_constant=parse_constant or _refuse_constant,
            object_pairs_hook=object_pairs_hook,
        )
    except json.JSONDecodeError as error:
        raise JsonInputError(
            f"is not valid JSON (line {error.lineno}, column {error.colno}: {error.msg})"
        ) from None
    except RecursionError:  # unreachable within MAX_DEPTH; kept so no input can print a traceback
        raise JsonInputError(f"is nested deeper than {MAX_DEPTH} levels") from None


_REASONS = {
    errno.ENOENT: "no such file",
    errno.EISDIR: "it is a directory",
    errno.ENOTDIR: "a component of the path is not a directory",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENAMETOOLONG: "the file name is too long",
    errno.ELOOP: "too many levels of symbolic links",
}


def describe_os_error(error: OSError) -> str:
    """One line saying why a path could not be used (``"it is a directory"``, ``"permission denied"``)."""
    reason = _REASONS.get(error.errno or 0) or error.strerror or error.__class__.__name__
    return reason.replace("\n", " ")
