"""Mechanical citation checks against a real pinned git corpus (the example study's lantern-cache)."""

from __future__ import annotations

import pytest

from agentstudy.adjudication.citations import (
    PinnedCorpus,
    check_citations,
    count_lines,
    extract_citations,
    normalise_path,
)
from agentstudy.protocol.manifest import load_manifest
from agentstudy.rehearsal.example_study import build_example_study, corpus_files


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> PinnedCorpus:
    study = build_example_study(tmp_path_factory.mktemp("study"))
    pin = load_manifest(study.manifest_path).manifest.repositories["lantern-cache"]
    return PinnedCorpus(study.roots["lantern-cache"], pin)


def _lines(path: str) -> int:
    return count_lines(corpus_files("lantern-cache")[path])


def test_a_valid_line_citation_checks_out(corpus: PinnedCorpus) -> None:
    checks = check_citations(extract_citations("The clock (src/lantern/cache.py:29)."), corpus.line_count)
    assert (checks.total, checks.valid, checks.failures) == (1, 1, [])


def test_a_wrong_path_is_an_unknown_path(corpus: PinnedCorpus) -> None:
    checks = check_citations(extract_citations("See src/lantern/clock.py:3 and docs/missing.md:1."), corpus.line_count)
    assert (checks.total, checks.valid) == (2, 0)
    assert [(f.citation, f.problem) for f in checks.failures] == [
        ("src/lantern/clock.py:3", "unknown path"),
        ("docs/missing.md:1", "unknown path"),
    ]


def test_a_line_past_the_end_is_out_of_range(corpus: PinnedCorpus) -> None:
    last = _lines("docs/design.md")
    text = f"docs/design.md:{last} is the last line, docs/design.md:{last + 1} is not, docs/design.md:0 neither"
    checks = check_citations(extract_citations(text), corpus.line_count)
    assert (checks.total, checks.valid) == (3, 1)
    assert [f.citation for f in checks.failures] == [f"docs/design.md:{last + 1}", "docs/design.md:0"]
    assert all(f.problem == f"line out of range (the file has {last} lines)" for f in checks.failures)


def test_the_range_form_is_checked_at_both_ends(corpus: PinnedCorpus) -> None:
    last = _lines("docs/adr/0001-monotonic-expiry.md")
    text = (
        "docs/adr/0001-monotonic-expiry.md:3-9, docs/adr/0001-monotonic-expiry.md:L2\u2013L4, "
        f"docs/adr/0001-monotonic-expiry.md:5-{last + 3}, docs/adr/0001-monotonic-expiry.md:9-3"
    )
    found = extract_citations(text)
    assert [(c.start, c.end) for c in found] == [(3, 9), (2, 4), (5, last + 3), (9, 3)]
    checks = check_citations(found, corpus.line_count)
    assert (checks.total, checks.valid) == (4, 2)
    assert [f.problem for f in checks.failures] == [f"line out of range (the file has {last} lines)", "reversed range"]


def test_each_distinct_citation_is_counted_once(corpus: PinnedCorpus) -> None:
    checks = check_citations(
        extract_citations("README.md:1, README.md:1 and ./README.md:1; README.md:2"), corpus.line_count
    )
    assert (checks.total, checks.valid) == (2, 2)


def test_an_absolute_path_into_an_export_is_reduced_to_the_corpus_path(corpus: PinnedCorpus) -> None:
    [citation] = extract_citations("(/tmp/agentstudy-export-x1y2/src/lantern/cache.py:29)")
    assert citation.path == "src/lantern/cache.py"
    assert check_citations([citation], corpus.line_count).valid == 1
    [outside] = extract_citations("/etc/passwd.txt:1")
    assert check_citations([outside], corpus.line_count).failures[0].problem == "unknown path"


def test_things_that_only_look_like_citations_are_not_counted() -> None:
    text = "SEV1: 5 minutes, 10:30 UTC, ratio 3:2, http://example.com:8080/x.md:4, version 1.2"
    assert extract_citations(text) == []


def test_the_spans_point_at_the_citation_text() -> None:
    text = "see `src/a.py:4-6` now"
    [citation] = extract_citations(text)
    assert text[citation.span[0]:citation.span[1]] == "src/a.py:4-6"
    assert normalise_path("./././docs/x.md") == "docs/x.md"


def test_line_counting() -> None:
    assert [count_lines(b""), count_lines(b"a"), count_lines(b"a\n"), count_lines(b"a\nb"), count_lines(b"\n\n")] == [
        0, 1, 1, 2, 2,
    ]


def test_a_directory_is_not_a_citable_path(corpus: PinnedCorpus) -> None:
    assert corpus.line_count("docs") is None
    assert corpus.line_count("docs/adr/0002-no-background-thread.md") == _lines("docs/adr/0002-no-background-thread.md")
