"""``protocol.read_only``: which named tools count as read-only, and on whose word."""

from __future__ import annotations

import jsonschema
import pytest

from agentstudy.protocol.read_only import (
    ANNOTATED_BY_SERVER,
    DECLARED_BY_OPERATOR,
    ReadOnlyError,
    ToolHints,
    read_only_evidence,
    require_probe_allowed,
)
from agentstudy.protocol.run_records import McpServerRecord
from agentstudy.protocol.schemas import json_schema


@pytest.mark.parametrize(
    ("hints", "evidence"),
    [
        (ToolHints(read_only=True), ANNOTATED_BY_SERVER),
        (ToolHints(read_only=True, destructive=False), ANNOTATED_BY_SERVER),
        (ToolHints(), DECLARED_BY_OPERATOR),
        (ToolHints(destructive=False), DECLARED_BY_OPERATOR),
    ],
)
def test_an_allowed_tool_records_whose_word_it_is(hints: ToolHints, evidence: str) -> None:
    assert read_only_evidence(["t"], {"t": hints, "other": ToolHints(read_only=False)}) == {"t": evidence}


@pytest.mark.parametrize(
    ("hints", "reason"),
    [
        (ToolHints(read_only=False), "readOnlyHint: false"),
        (ToolHints(read_only=False, destructive=False), "readOnlyHint: false"),
        (ToolHints(destructive=True), "destructiveHint: true"),
        (ToolHints(read_only=True, destructive=True), "destructiveHint: true"),
        (ToolHints(read_only=False, destructive=True), "destructiveHint: true"),
    ],
)
def test_a_named_tool_annotated_otherwise_is_refused(hints: ToolHints, reason: str) -> None:
    with pytest.raises(ReadOnlyError) as caught:
        read_only_evidence(["ok", "bad"], {"ok": ToolHints(read_only=True), "bad": hints})
    assert str(caught.value) == f"--mcp-tools names bad, which the server annotates {reason}"


def test_the_first_offending_tool_in_operator_order_is_named_and_unnamed_tools_do_not_matter() -> None:
    hints = {"a": ToolHints(read_only=False), "b": ToolHints(destructive=True), "c": ToolHints(destructive=True)}
    with pytest.raises(ReadOnlyError, match="names b,"):
        read_only_evidence(["b", "a"], hints)
    assert read_only_evidence([], hints) == {}


def test_a_named_tool_the_server_does_not_list_is_refused() -> None:
    with pytest.raises(ReadOnlyError, match="names gone, which the server does not list"):
        read_only_evidence(["gone"], {})


def test_the_probe_must_be_a_read_only_tool() -> None:
    require_probe_allowed("a", ["b", "a"])
    with pytest.raises(ReadOnlyError) as caught:
        require_probe_allowed("x", ["a", "b"])
    assert str(caught.value) == "--mcp-probe x is not one of --mcp-tools (a,b)"


def test_ledgers_record_the_evidence_and_old_ones_still_load() -> None:
    old = {"name": "doc-bridge", "command": ["server"], "listedTools": ["doc.search"], "deniedTools": []}
    assert McpServerRecord.model_validate(old).read_only_evidence == {}
    new = McpServerRecord.model_validate({**old, "readOnlyEvidence": {"doc.search": ANNOTATED_BY_SERVER}})
    assert new.model_dump(by_alias=True)["readOnlyEvidence"] == {"doc.search": ANNOTATED_BY_SERVER}
    record = json_schema("ledger")["$defs"]["McpServerRecord"]
    assert "readOnlyEvidence" in record["properties"] and "readOnlyEvidence" not in record["required"]
    jsonschema.validate(old, {**record, "$defs": json_schema("ledger")["$defs"]})
