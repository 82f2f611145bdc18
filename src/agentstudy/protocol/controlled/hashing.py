"""Content addressing ``sha256-normalized-v1`` (seed 004; digest section 5.2), byte-compatible with the original.

The original hashes ``JSON.stringify`` of the value with every object's keys sorted. To get
the same digests from Python, this module writes JSON text exactly as JavaScript does:

- numbers as ``Number.prototype.toString`` writes them: integral floats without ``.0``
  (``1.0`` → ``1``), exponents as ``1e-7`` / ``1e+21`` (never ``1e-07``), fixed notation for
  ``1e-7 ≤ |x| < 1e21``, ``-0`` as ``0``; integers beyond 2**53 as the double JavaScript would
  have parsed (``2**60`` → ``1152921504606847000``);
- strings with the same escapes (``\\"``, ``\\\\``, ``\\b \\f \\n \\r \\t``, other controls as
  lowercase ``\\u00xx``), everything else raw (UTF-8), lone surrogates as ``\\udxxx``;
- object keys sorted by UTF-16 code units (JavaScript's ``Array.prototype.sort``), arrays kept
  in order.

Non-finite numbers have no JSON form and raise ``ValueError``. Everything here is pure.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from agentstudy.protocol.json_input import JsonInputError, load_json, refuse_duplicate_keys

CONTENT_HASH_ALGO = "sha256-normalized-v1"
"""The only content-hash algorithm of the controlled-study contracts."""
CONTENT_HASH_KEY = "contentHash"
CONTENT_HASH_ALGO_KEY = "contentHashAlgo"

_MAX_SAFE_INTEGER = 2**53
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_PLAIN = re.compile('[^"\\\\\x00-\x1f\ud800-\udfff]*')
_SORTED_KEYS: dict[tuple[str, ...], list[str]] = {}
"""Sorted key orders by key tuple: a ledger's observations share a few key sets (issue 29, scale)."""


def js_number(value: int | float) -> str:
    """Format a JSON number as JavaScript's ``JSON.stringify`` does (ECMA-262 ``Number::toString``).

    Raises:
        ValueError: for NaN, an infinity, or an integer too large for a double.
        TypeError: for a ``bool`` (booleans are not numbers in JSON).
    """
    if isinstance(value, bool):
        raise TypeError("a boolean is not a JSON number")
    if isinstance(value, int):
        if -_MAX_SAFE_INTEGER <= value <= _MAX_SAFE_INTEGER:
            return str(value)
        try:
            value = float(value)
        except OverflowError:
            raise ValueError("integer too large for a JSON number") from None
    if not math.isfinite(value):
        raise ValueError("JSON has no form for NaN or infinity")
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    # repr() gives the shortest digits that round-trip, the same digits JavaScript chooses.
    parts = Decimal(repr(abs(value))).as_tuple()
    raw = "".join(str(digit) for digit in parts.digits)
    digits = raw.rstrip("0")
    exponent = int(parts.exponent) + len(raw) - len(digits)
    k = len(digits)
    n = exponent + k  # value = 0.d1d2…dk × 10**n
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = f"{digits[:n]}.{digits[n:]}"
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        power = n - 1
        mantissa = digits if k == 1 else f"{digits[0]}.{digits[1:]}"
        body = f"{mantissa}e{'+' if power >= 0 else '-'}{abs(power)}"
    return sign + body


def _utf16(value: str) -> str:
    """Join surrogate pairs held as two code points, as JavaScript sees one UTF-16 string."""
    if not _LONE_SURROGATE.search(value):
        return value
    return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def js_string(value: str) -> str:
    """Quote a string as ``JSON.stringify`` does (well-formed: lone surrogates escaped)."""
    if _PLAIN.fullmatch(value):  # nothing to escape: the common case, without json.dumps
        return f'"{value}"'
    text = json.dumps(_utf16(value), ensure_ascii=False)
    return _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def _utf16_key(key: str) -> bytes:
    return _utf16(key).encode("utf-16-be", "surrogatepass")


def js_json(value: Any, *, sort_keys: bool = False, indent: int | None = None) -> str:
    """Serialise a JSON value (``dict``/``list``/``tuple``/``str``/``int``/``float``/``bool``/``None``).

    ``indent=None`` gives compact text (``JSON.stringify(v)``); ``indent=2`` gives the
    original's pretty form (``JSON.stringify(v, null, 2)``). ``sort_keys`` sorts every
    object's keys by UTF-16 code units.

    Raises:
        ValueError: for a non-finite number. TypeError: for a value JSON cannot hold or a
        non-string object key.
    """
    pieces: list[str] = []
    _write(value, pieces, sort_keys, indent, 0)
    return "".join(pieces)


def _write(value: Any, out: list[str], sort_keys: bool, indent: int | None, depth: int) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif type(value) is str:
        out.append(f'"{value}"' if _PLAIN.fullmatch(value) else js_string(value))
    elif type(value) is int and -_MAX_SAFE_INTEGER <= value <= _MAX_SAFE_INTEGER:
        out.append(str(value))
    elif isinstance(value, str):
        out.append(js_string(value))
    elif isinstance(value, int | float):
        out.append(js_number(value))
    elif isinstance(value, Mapping):
        _write_object(value, out, sort_keys, indent, depth)
    elif isinstance(value, list | tuple):
        _write_array(value, out, sort_keys, indent, depth)
    else:
        raise TypeError(f"not a JSON value: {type(value).__name__}")


def _write_object(value: Mapping[Any, Any], out: list[str], sort_keys: bool, indent: int | None, depth: int) -> None:
    keys = list(value)
    if sort_keys:
        keys = _sorted_keys(keys)
    elif any(not isinstance(key, str) for key in keys):
        raise TypeError("JSON object keys must be strings")
    if not keys:
        out.append("{}")
        return
    inner, outer, colon = _layout(indent, depth, ":")
    out.append("{")
    for position, key in enumerate(keys):
        out.append(("," if position else "") + inner + js_string(key) + colon)
        _write(value[key], out, sort_keys, indent, depth + 1)
    out.append(outer + "}")


def _sorted_keys(keys: list[Any]) -> list[str]:
    """``keys`` sorted by UTF-16 code units, remembered per key tuple (at most 1,024 tuples kept).

    Raises:
        TypeError: a key that is not a string.
    """
    shape = tuple(keys)
    cached = _SORTED_KEYS.get(shape)
    if cached is not None:
        return cached
    if any(not isinstance(key, str) for key in keys):
        raise TypeError("JSON object keys must be strings")
    ordered = sorted(keys, key=_utf16_key)
    if len(_SORTED_KEYS) < 1024:
        _SORTED_KEYS[shape] = ordered
    return ordered


def _write_array(value: list[Any] | tuple[Any, ...], out: list[str], sort_keys: bool, indent: int | None,
                 depth: int) -> None:
    if not value:
        out.append("[]")
        return
    inner, outer, _ = _layout(indent, depth, "")
    out.append("[")
    for position, item in enumerate(value):
        out.append(("," if position else "") + inner)
        _write(item, out, sort_keys, indent, depth + 1)
    out.append(outer + "]")


def _layout(indent: int | None, depth: int, colon: str) -> tuple[str, str, str]:
    if indent is None:
        return "", "", colon
    return "\n" + " " * (indent * (depth + 1)), "\n" + " " * (indent * depth), colon + (" " if colon else "")


def canonical_object(members: Mapping[str, str]) -> str:
    """The canonical text of an object from its members' canonical value texts (``key -> text``):
    what :func:`canonical_json` gives for the object, so a caller can reuse members it already wrote.

    Raises:
        TypeError: a key that is not a string.
    """
    return "{" + ",".join(js_string(key) + ":" + members[key] for key in _sorted_keys(list(members))) + "}"


def canonical_json(value: Any) -> str:
    """The normalized text of ``sha256-normalized-v1``: compact, keys sorted recursively."""
    return js_json(value, sort_keys=True)


def sha256_normalized_v1(value: Any) -> str:
    """Lowercase hex SHA-256 of the UTF-8 bytes of ``canonical_json(value)`` (digest 5.2).

    Raises:
        ValueError / TypeError: as ``js_json``.
    """
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def content_hash_of(document: Mapping[str, Any]) -> str:
    """The content hash a document should carry: remove only ``contentHash``, hash the rest.

    ``contentHashAlgo`` and every nested ``contentHash`` stay in the hashed value (digest 5.2,
    "Parse/verify").
    """
    return sha256_normalized_v1({key: value for key, value in document.items() if key != CONTENT_HASH_KEY})


def with_content_hash(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Address a payload (digest 5.2, "Create"): add ``contentHashAlgo``, hash, add ``contentHash``.

    Any ``contentHash``/``contentHashAlgo`` already in ``payload`` is replaced. The result's
    key order is the original writer's: the payload's keys, then ``contentHash``, then
    ``contentHashAlgo``.
    """
    body = {key: value for key, value in payload.items() if key not in (CONTENT_HASH_KEY, CONTENT_HASH_ALGO_KEY)}
    digest = sha256_normalized_v1({**body, CONTENT_HASH_ALGO_KEY: CONTENT_HASH_ALGO})
    return {**body, CONTENT_HASH_KEY: digest, CONTENT_HASH_ALGO_KEY: CONTENT_HASH_ALGO}


class JsonDocumentError(ValueError):
    """The text is not one strict JSON value (syntax, a duplicated key, or a non-finite number)."""


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise JsonDocumentError(f"number out of range: {text[:40]}")
    return number


def parse_json_text(text: str) -> Any:
    """Parse JSON text strictly: keys keep their file order; duplicated keys, ``NaN`` and
    ``Infinity`` and numbers that overflow a double are refused (each would make the hash
    depend on the parser); so are nesting deeper than 64 levels and number literals longer
    than 100 characters (``protocol.json_input``).

    Raises:
        JsonDocumentError: with a one-line reason (line and column for syntax errors).
    """
    try:
        return load_json(text, object_pairs_hook=refuse_duplicate_keys, parse_float=_finite_float)
    except JsonInputError as error:
        raise JsonDocumentError(str(error).removeprefix("is ")) from None
