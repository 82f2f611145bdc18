"""Per-arm servers change nothing for earlier study files: hashes, schedules and ``arms`` as on main (issue 44).

The expected values in ``tests/data/protocol-golden.json`` were computed on main before either arm could carry a
server (``tests/protocol_corpus.py`` gathers the definitions); a change to how a study definition is read, hashed,
scheduled or recorded shows here as a difference, named by the definition.
"""

from __future__ import annotations

import json

from protocol_corpus import GOLDEN, SEED_MANIFEST, corpus, pinned

from study_files import EXAMPLE_MANIFEST_PROTOCOL_HASH, SEED_PROTOCOL_HASH


def test_every_earlier_study_definition_is_pinned_as_before() -> None:
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    texts = corpus()
    assert sorted(texts) == sorted(expected)
    for name, text in texts.items():
        assert pinned(text) == expected[name], name


def test_the_golden_values_are_the_seed_and_example_hashes_pinned_before_issue_18() -> None:
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert SEED_MANIFEST.is_file()
    assert expected["seed-manifest"]["protocolHash"] == SEED_PROTOCOL_HASH
    assert expected["example-manifest"]["protocolHash"] == EXAMPLE_MANIFEST_PROTOCOL_HASH
    assert len(expected["seed-manifest"]["full"]) == 36
    assert expected["seed-manifest"]["arms"] is None
