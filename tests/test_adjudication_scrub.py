"""Scrubbing and blinding: no scenario label, MCP server name or tool name reaches the adjudicator's prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentstudy.adjudication.blinding import BlindItem, blind_items
from agentstudy.adjudication.citations import PinnedCorpus
from agentstudy.adjudication.items import prepare_item
from agentstudy.adjudication.ledger_view import LedgerObservation
from agentstudy.adjudication.scrub import REPLACEMENT, Scrubber
from agentstudy.protocol.manifest import SCENARIOS, load_manifest
from agentstudy.rehearsal.example_study import build_example_study
from test_adjudication_support import BLINDING_TERMS

SERVER_TOOLS = ("doc.get", "doc.search", "doc.write", "handoff.resolve", "mcp__doc-bridge__doc_write")
REVEALING_ANSWER = (
    "I called mcp__doc-bridge__doc_search, then MCP__DOC-BRIDGE__DOC_GET on the result; the Doc-Bridge server "
    "(doc_bridge / DocBridge / doc bridge) answered doc.search and doc_get; handoff.resolve and Handoff_Resolve "
    "were not needed, doc.write is denied, and mcp__other__tool exists too. This is the doc-bridge-mcp arm, not "
    "repository-only, via the MCP server. Evidence: src/lantern/cache.py:29 and docs/design.md:1-3."
)


@pytest.fixture
def scrubber() -> Scrubber:
    return Scrubber.build("doc-bridge", SERVER_TOOLS, SCENARIOS)


def _leaks(text: str) -> list[str]:
    lowered = text.lower()
    return [term for term in BLINDING_TERMS if term in lowered]


def test_every_form_of_the_server_tools_and_labels_is_scrubbed(scrubber: Scrubber) -> None:
    scrubbed, count = scrubber.scrub(REVEALING_ANSWER)
    assert _leaks(scrubbed) == []
    assert "mcp" not in scrubbed.lower()
    assert count == 15
    assert "src/lantern/cache.py:29" in scrubbed and "docs/design.md:1-3" in scrubbed
    assert scrubbed.startswith(f"I called {REPLACEMENT}, then {REPLACEMENT} on the result; the {REPLACEMENT} server")


def test_words_that_merely_contain_a_term_are_left_alone(scrubber: Scrubber) -> None:
    text = "the bridgework of adoc.getter and searching documents; docs get updated; smcp"
    assert scrubber.scrub(text) == (text, 0)


def test_punctuation_after_a_mention_is_kept(scrubber: Scrubber) -> None:
    assert scrubber.scrub("Found via mcp__doc-bridge__doc_search. Then doc.get, then doc_search_results.") == (
        f"Found via {REPLACEMENT}. Then {REPLACEMENT}, then {REPLACEMENT}_results.", 3
    )


def test_protected_spans_stay_intact(scrubber: Scrubber) -> None:
    text = "see docs/schemas/doc-bridge-index-v1.md:3 and the doc-bridge server"
    start = text.index("docs/")
    end = text.index(":3") + 2
    assert scrubber.scrub(text, keep=[(start, end)]) == (
        f"see docs/schemas/doc-bridge-index-v1.md:3 and the {REPLACEMENT} server", 1
    )


def test_the_terms_are_recorded_longest_first(scrubber: Scrubber) -> None:
    assert scrubber.terms[0] == "handoff.resolve"
    assert set(scrubber.terms) >= {"doc-bridge", "doc.search", "doc.get", "doc.write", "repository-only", "MCP"}
    assert len(scrubber.terms) == len({t.lower().replace("_", ".") for t in scrubber.terms})


def test_blinding_is_a_seeded_random_order_of_completed_observations_only() -> None:
    observations = [LedgerObservation(i, f"t{i % 3}", ("repository-only", "doc-bridge-mcp")[i % 2], 1,
                                      "completed" if i != 4 else "failed", f"answer {i}", "cli") for i in range(9)]
    first, again, other = blind_items(observations, 7), blind_items(observations, 7), blind_items(observations, 8)
    assert first == again
    assert [b.observation.index for b in first] != [b.observation.index for b in other]
    assert sorted(b.observation.index for b in first) == [0, 1, 2, 3, 5, 6, 7, 8]
    ids = [b.item_id for b in first]
    assert len(set(ids)) == len(ids) and all(i.startswith("item-") and len(i) == 21 for i in ids)
    for item in first:
        assert item.observation.task_id not in item.item_id and "repository" not in item.item_id
    with pytest.raises(ValueError):
        blind_items(observations, -1)


def test_no_label_server_or_tool_name_reaches_the_prompt(tmp_path: Path, scrubber: Scrubber) -> None:
    study = build_example_study(tmp_path / "study")
    manifest = load_manifest(study.manifest_path).manifest
    corpus = PinnedCorpus(study.roots["lantern-cache"], manifest.repositories["lantern-cache"])
    answer = REVEALING_ANSWER + " Also doc-bridge/index.json:4 and mcp__doc-bridge__doc_get.md:2 (bad paths)."
    blind = BlindItem("item-0000000000000001", LedgerObservation(3, "lantern-discovery", "doc-bridge-mcp", 2,
                                                                 "completed", answer, "cli"))
    item = prepare_item(blind, manifest.task("lantern-discovery"), corpus.line_count, scrubber)
    assert item.prompt is not None and item.prompt_problem is None
    assert _leaks(item.prompt) == []
    for hidden in ("lantern-discovery", "item-0000000000000001", "cli"):
        assert hidden not in item.prompt
    assert "src/lantern/cache.py:29" in item.prompt
    assert item.citations.total == 4 and item.citations.valid == 2
    assert "[redacted]/index.json:4: unknown path" in item.prompt
    assert item.scrubbed_mentions == 17
    assert len(item.prompt.encode("utf-8")) <= 8192


def test_an_absolute_export_path_never_reaches_the_prompt(tmp_path: Path, scrubber: Scrubber) -> None:
    """server-filesystem answers cite /tmp/agentstudy-export-…/path: only the MCP arm would (issue 18)."""
    study = build_example_study(tmp_path / "study")
    manifest = load_manifest(study.manifest_path).manifest
    corpus = PinnedCorpus(study.roots["lantern-cache"], manifest.repositories["lantern-cache"])
    answer = ("Deadlines use time.monotonic() (/tmp/agentstudy-export-9t2d1exi/docs/design.md:3); see also "
              "`/var/tmp/x/agentstudy-export-ab_12/docs/adr/0001-monotonic-expiry.md:1-2`.")
    blind = BlindItem("item-0000000000000002", LedgerObservation(1, "lantern-discovery", "doc-bridge-mcp", 1,
                                                                 "completed", answer, "cli"))
    item = prepare_item(blind, manifest.task("lantern-discovery"), corpus.line_count, scrubber)
    assert item.prompt is not None and "agentstudy-export" not in item.prompt and "/tmp/" not in item.prompt
    assert "(docs/design.md:3)" in item.prompt and "`docs/adr/0001-monotonic-expiry.md:1-2`" in item.prompt
    assert item.citations.total == 2 and item.citations.valid == 2


def test_a_prompt_over_8_kib_leaves_the_item_without_a_prompt(tmp_path: Path, scrubber: Scrubber) -> None:
    study = build_example_study(tmp_path / "study")
    manifest = load_manifest(study.manifest_path).manifest
    corpus = PinnedCorpus(study.roots["lantern-cache"], manifest.repositories["lantern-cache"])
    blind = BlindItem("item-1", LedgerObservation(0, "lantern-discovery", "repository-only", 1, "completed",
                                                  "word " * 2000, "cli"))
    item = prepare_item(blind, manifest.task("lantern-discovery"), corpus.line_count, scrubber)
    assert item.prompt is None
    assert item.prompt_problem is not None and "over 8192" in item.prompt_problem


FILESYSTEM_TOOLS = ("read_file", "read_text_file", "list_directory", "search_files", "directory_tree",
                    "get_file_info", "write_file", "edit_file", "create_directory", "move_file")


def test_a_plain_word_server_name_is_scrubbed_only_as_an_identifier() -> None:
    scrubber = Scrubber.build("git", ("status", "log", "diff_file"), SCENARIOS)
    prose = "I ran git status and read the git log; the diff file was long, status quo."
    assert scrubber.scrub(prose) == (prose, 0)
    revealing = "`git` said so (mcp__git__status, git.status, git_log, GitDiffFile, diff_file) in servers/git/x.js"
    assert scrubber.scrub(revealing) == (
        f"`{REPLACEMENT}` said so ({REPLACEMENT}, {REPLACEMENT}, {REPLACEMENT}, {REPLACEMENT}, {REPLACEMENT}) "
        f"in servers/{REPLACEMENT}/x.js", 7
    )
    assert scrubber.scrub("`status` and `git log`") == (f"`{REPLACEMENT}` and `git log`", 1)


def test_the_filesystem_server_keeps_its_prose_and_loses_its_identifiers() -> None:
    scrubber = Scrubber.build("filesystem", FILESYSTEM_TOOLS, (*SCENARIOS, "Repository tools only", "Filesystem MCP"))
    prose = "The filesystem cache is read from the filesystem: I read file a.md and list directory b."
    assert scrubber.scrub(prose) == (prose, 0)
    text = ("Via read_file, ReadTextFile and filesystem.list_directory (see @modelcontextprotocol/server-filesystem/"
            "dist/index.js); the Filesystem MCP arm, not repository tools only.")
    scrubbed, count = scrubber.scrub(text)
    assert scrubbed == (f"Via {REPLACEMENT}, {REPLACEMENT} and {REPLACEMENT} (see @modelcontextprotocol/server-"
                        f"{REPLACEMENT}/dist/index.js); the {REPLACEMENT} arm, not {REPLACEMENT}.")
    assert count == 6
    assert "filesystem" in scrubber.terms and "read_file" in scrubber.terms


def test_a_plain_word_arm_label_is_scrubbed_only_as_an_identifier() -> None:
    scrubber = Scrubber.build("doc-bridge", (), ("control", "treatment"))
    assert scrubber.scrub("access control and its treatment") == ("access control and its treatment", 0)
    assert scrubber.scrub("the `treatment` arm") == (f"the `{REPLACEMENT}` arm", 1)
