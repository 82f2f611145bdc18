"""Adjudication under random inputs: scrubbing leaves no mention, strict parsing round-trips, blinding is a
seeded permutation, and citation checks agree with the line arithmetic."""

from __future__ import annotations

import json

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from agentstudy.adjudication.blinding import blind_items
from agentstudy.adjudication.citations import check_citations, extract_citations
from agentstudy.adjudication.ledger_view import LedgerObservation
from agentstudy.adjudication.prompt import InvalidAdjudication, parse_adjudication
from agentstudy.adjudication.scrub import REPLACEMENT, Scrubber
from agentstudy.protocol.adjudication import rubric_for
from agentstudy.protocol.manifest import SCENARIOS

SCRUBBER = Scrubber.build("doc-bridge", ("doc.get", "doc.search", "handoff.resolve", "doc.write"), SCENARIOS)
MENTIONS = (
    "doc-bridge", "doc_bridge", "DocBridge", "doc.search", "doc_search", "DOC-SEARCH", "doc.get", "doc_get",
    "handoff.resolve", "Handoff_Resolve", "doc.write", "repository-only", "Doc-Bridge-MCP", "MCP", "mcp",
    "mcp__doc-bridge__doc_search", "mcp__doc-bridge__doc_get", "mcp__any__thing.v2",
)
words = st.text(alphabet="abcdefghijklnopqrstuvwxyz0123456789", min_size=1, max_size=9)
separators = st.sampled_from([" ", ", ", " (", ") ", "; ", ".\n", " `", "` ", ": ", " / "])
verdicts = st.sampled_from(["supported", "missing", "contradicted"])
reasons = st.text(min_size=1, max_size=40).filter(lambda text: bool(text.strip()))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(words, st.sampled_from(MENTIONS)), min_size=1, max_size=30), st.data())
def test_scrubbing_leaves_no_mention_and_keeps_every_other_word(tokens: list[str], data: st.DataObject) -> None:
    plain = [t for t in tokens if t not in MENTIONS]
    assume(not SCRUBBER.mentions(" ".join(plain)))
    text = "".join(token + data.draw(separators) for token in tokens)
    scrubbed, count = SCRUBBER.scrub(text)
    assert SCRUBBER.mentions(scrubbed) == []
    inserted = sum(t in MENTIONS for t in tokens)
    assert count == len(SCRUBBER.mentions(text))
    assert (count == 0) == (inserted == 0)  # mentions may merge ("doc-bridge MCP") or split at "_"
    for word in plain:
        assert word in scrubbed
    assert SCRUBBER.scrub(scrubbed) == (scrubbed, 0)
    assert scrubbed.count(REPLACEMENT) == count


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(verdicts, reasons), min_size=1, max_size=8), reasons, st.booleans())
def test_every_well_formed_judgement_parses_back(given_verdicts: list[tuple[str, str]], reason: str,
                                                 fenced: bool) -> None:
    rubric = rubric_for(v for v, _ in given_verdicts)
    document = {"verdicts": [{"proposition": n, "verdict": v, "reason": r}
                             for n, (v, r) in enumerate(given_verdicts, start=1)], "rubric": rubric, "reason": reason}
    text = json.dumps(document, ensure_ascii=False)
    judgement = parse_adjudication(f"```json\n{text}\n```" if fenced else text, len(given_verdicts))
    assert judgement.rubric == rubric
    assert [(n, v, r) for n, v, r in judgement.verdicts] == [
        (n, v, r.strip()) for n, (v, r) in enumerate(given_verdicts, start=1)
    ]
    for other in {"correct", "partial", "incorrect", "incomplete"} - {rubric}:
        with pytest.raises(InvalidAdjudication):
            parse_adjudication(json.dumps({**document, "rubric": other}), len(given_verdicts))
    with pytest.raises(InvalidAdjudication):
        parse_adjudication(text, len(given_verdicts) + 1)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["completed", "failed", "timed-out", "invalid-setup"]), max_size=40),
       st.integers(min_value=0, max_value=2**32 - 1))
def test_blinding_is_a_seeded_permutation_of_the_completed_observations(statuses: list[str], seed: int) -> None:
    observations = [LedgerObservation(i, f"task-{i % 6}", SCENARIOS[i % 2], 1 + i // 12, s, "a", "cli")
                    for i, s in enumerate(statuses)]
    items = blind_items(observations, seed)
    assert items == blind_items(observations, seed)
    assert sorted(item.observation.index for item in items) == [i for i, s in enumerate(statuses) if s == "completed"]
    assert len({item.item_id for item in items}) == len(items)


segment = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=8)


@settings(max_examples=300, deadline=None)
@given(st.lists(segment, min_size=1, max_size=4), st.sampled_from(["md", "py", "ts", "json"]),
       st.integers(0, 200), st.integers(0, 200), st.integers(0, 150), st.booleans())
def test_citation_checks_follow_the_line_arithmetic(parts: list[str], ext: str, start: int, end: int, lines: int,
                                                    ranged: bool) -> None:
    path = "/".join(parts) + "." + ext
    text = f"see {path}:{start}-{end} here" if ranged else f"see ({path}:{start}) here"
    [citation] = extract_citations(text)
    expected_end = end if ranged else start
    assert (citation.path, citation.start, citation.end) == (path, start, expected_end)
    checks = check_citations([citation], lambda p: lines if p == path else None)
    assert checks.valid == int(1 <= start <= expected_end <= lines)
    assert check_citations([citation], lambda p: None).failures[0].problem == "unknown path"
