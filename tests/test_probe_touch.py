"""``init`` warns when the accepted probe never touches the repository (issue 39 item 6): the pure rule
``protocol.tool_proposal.touch_decision`` and ``ToolChoice.with_probe_reach``."""

from __future__ import annotations

from agentstudy.protocol.read_only import ToolHints
from agentstudy.protocol.starter_study import ListedTool, choose_tools
from agentstudy.protocol.tool_proposal import touch_decision

NAMES = ("README.md", "docs/retention.txt", "a.py")


def test_a_probe_that_names_nothing_of_the_repository_and_hears_nothing_of_it_is_an_open_decision() -> None:
    decision = touch_decision("ping", {}, "pong", "retention", NAMES, ("/tmp/agentstudy-export-x",))
    assert decision is not None
    assert decision.field == "arms.treatment.probe"
    assert "ping {}" in decision.question and "shows nothing of the corpus" in decision.question
    assert decision.flag.startswith("--probe ping --probe-arguments")
    assert "arms.treatment.undecided" in decision.edit


def test_any_mark_of_the_repository_in_the_arguments_or_the_answer_settles_it() -> None:
    touching = [
        ({"path": "{root}"}, "pong"),
        ({"dir": "{cwd}/docs"}, "pong"),
        ({"query": "Retention"}, "pong"),  # the corpus word, any case
        ({"file": "docs/retention.txt"}, "pong"),
        ({"nested": {"paths": ["README.md"]}}, "pong"),
        ({}, "found in README.md line 2"),
        ({}, "the RETENTION policy"),
        ({}, "listing /tmp/agentstudy-export-x/docs"),
    ]
    for arguments, answer in touching:
        assert touch_decision("t", arguments, answer, "retention", NAMES, ("/tmp/agentstudy-export-x",)) is None, \
            (arguments, answer)
    # a short word or base name alone is no mark (it would occur anywhere), nor a word inside another
    for arguments, answer in [({"q": "the"}, "the end"), ({}, "a.pyx is not a.p"), ({}, "retentions")]:
        assert touch_decision("t", arguments, answer, "the" if "q" in arguments else "retention",
                              ("a.py",), ()) is not None, (arguments, answer)


def test_the_choice_gets_the_decision_only_for_a_probe_that_never_touched_the_repository() -> None:
    listed = [ListedTool("status", "Say the server is up.", {"type": "object"}, ToolHints(read_only=True)),
              ListedTool("search", "Search.", {"type": "object", "properties": {"query": {"type": "string"}},
                                              "required": ["query"]}, ToolHints(read_only=True))]
    choice = choose_tools(listed, probe="status", word="retention")
    assert choice.undecided == ()
    warned = choice.with_probe_reach("server is up", "retention", NAMES)
    [decision] = warned.undecided
    assert decision.field == "arms.treatment.probe" and "status {}" in decision.question
    assert choice.with_probe_reach("README.md", "retention", NAMES).undecided == ()
    searched = choose_tools(listed, word="retention")
    assert searched.probe == "search"
    assert searched.with_probe_reach("no match", "retention", NAMES).undecided == ()
