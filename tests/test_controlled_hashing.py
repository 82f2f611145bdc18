"""``sha256-normalized-v1``: JavaScript's JSON text, the digest's vectors, strict parsing."""

from __future__ import annotations

import hashlib
import json

import pytest

from agentstudy.protocol.controlled.hashing import (
    CONTENT_HASH_ALGO,
    JsonDocumentError,
    canonical_json,
    content_hash_of,
    js_json,
    js_number,
    js_string,
    parse_json_text,
    sha256_normalized_v1,
    with_content_hash,
)
from agentstudy.protocol.controlled.ledger import EMPTY_LEDGER_HASH, empty_ledger

EMPTY_LEDGER_VECTOR = "d7aacae053872796b29fbb6cca38a41a5fb2d542c7a5628c0671c9add14f9955"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1.0, "1"),
        (123.0, "123"),
        (-0.0, "0"),
        (0, "0"),
        (1e-7, "1e-7"),
        (-1e-7, "-1e-7"),
        (1.5e-7, "1.5e-7"),
        (1e-6, "0.000001"),
        (1.1e-6, "0.0000011"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (1.2345678901234568e20, "123456789012345680000"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (5e-324, "5e-324"),
        (0.16145833333333334, "0.16145833333333334"),
        (0.9523809524, "0.9523809524"),
        (100.5, "100.5"),
        (2**53, "9007199254740992"),
        (2**60, "1152921504606847000"),
        (-(2**60), "-1152921504606847000"),
    ],
)
def test_numbers_are_written_as_javascript_writes_them(value: float, expected: str) -> None:
    assert js_number(value) == expected


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), 10**400])
def test_numbers_without_a_json_form_are_refused(value: float) -> None:
    with pytest.raises(ValueError, match="JSON"):
        js_number(value)


def test_booleans_are_not_numbers() -> None:
    with pytest.raises(TypeError):
        js_number(True)


def test_strings_escape_like_json_stringify() -> None:
    assert js_string('a"b\\c') == '"a\\"b\\\\c"'
    assert js_string("\b\f\n\r\t\x01\x1f") == '"\\b\\f\\n\\r\\t\\u0001\\u001f"'
    assert js_string("— “x” → é \x7f \u2028") == '"— “x” → é \x7f \u2028"'
    # A lone surrogate is escaped (well-formed JSON.stringify); a pair held as two code points is one character.
    assert js_string("\ud800x") == '"\\ud800x"'
    assert js_string("\ud83d\ude00") == '"\U0001f600"'


def test_keys_sort_by_utf16_code_units_like_javascript() -> None:
    # By code point U+FF61 < U+1F600 (Python's sort_keys); by UTF-16 code units 0xD83D < 0xFF61 (JavaScript).
    document = {"\uff61": 1, "\U0001f600": 2, "b": 3, "a": 4}
    assert canonical_json(document) == '{"a":4,"b":3,"\U0001f600":2,"\uff61":1}'
    assert json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False) != canonical_json(document)


def test_canonical_json_is_compact_and_sorted_recursively_arrays_in_order() -> None:
    document = {"b": [3, {"z": 1, "y": 2.0}], "a": None, "c": True}
    assert canonical_json(document) == '{"a":null,"b":[3,{"y":2,"z":1}],"c":true}'


def test_pretty_form_matches_python_for_plain_values() -> None:
    document = {"a": [1, {"b": "x"}, []], "c": {}, "d": "é"}
    assert js_json(document, indent=2) == json.dumps(document, indent=2, ensure_ascii=False)


def test_digest_is_sha256_of_the_utf8_text() -> None:
    document = {"name": "→", "n": 1}
    expected = hashlib.sha256('{"n":1,"name":"→"}'.encode()).hexdigest()
    assert sha256_normalized_v1(document) == expected


def test_empty_ledger_vector() -> None:
    payload = {"type": "controlled-study-observation-ledger", "schemaVersion": 1, "ledgerVersion": "v1",
               "observations": []}
    addressed = with_content_hash(payload)
    assert addressed["contentHash"] == EMPTY_LEDGER_VECTOR
    assert list(addressed)[-2:] == ["contentHash", "contentHashAlgo"]
    assert addressed["contentHashAlgo"] == CONTENT_HASH_ALGO
    assert empty_ledger().content_hash == EMPTY_LEDGER_VECTOR == EMPTY_LEDGER_HASH
    assert empty_ledger().verified


def test_verification_removes_only_content_hash() -> None:
    addressed = with_content_hash({"type": "x", "nested": {"contentHash": "keep", "v": 1}})
    assert content_hash_of(addressed) == addressed["contentHash"]
    without_algo = {key: value for key, value in addressed.items() if key != "contentHashAlgo"}
    assert content_hash_of(without_algo) != addressed["contentHash"]
    changed_nested = {**addressed, "nested": {"contentHash": "changed", "v": 1}}
    assert content_hash_of(changed_nested) != addressed["contentHash"]


def test_with_content_hash_replaces_a_stale_hash() -> None:
    first = with_content_hash({"a": 1})
    again = with_content_hash({**first, "a": 2})
    assert again["contentHash"] != first["contentHash"]
    assert content_hash_of(again) == again["contentHash"]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"a": 1, "a": 2}', "duplicated key 'a'"),
        ('{"a": NaN}', "NaN is not JSON"),
        ('{"a": Infinity}', "Infinity is not JSON"),
        ('{"a": 1e400}', "number out of range"),
        ('{"a": }', "not valid JSON (line 1, column 7"),
    ],
)
def test_parsing_refuses_what_would_make_the_hash_parser_dependent(text: str, reason: str) -> None:
    with pytest.raises(JsonDocumentError, match=reason.replace("(", r"\(")):
        parse_json_text(text)


def test_parsing_keeps_key_order_and_number_types() -> None:
    document = parse_json_text('{"b": 1.0, "a": 2}')
    assert list(document) == ["b", "a"]
    assert canonical_json(document) == '{"a":2,"b":1}'
