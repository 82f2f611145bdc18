"""init's suggested probe follows the tool's input schema and is never the call that failed (issue 39 item 6)."""

from __future__ import annotations

from agentstudy.protocol.read_only import ToolHints
from agentstudy.protocol.starter_study import ListedTool, choose_tools

READ_ONLY = ToolHints(read_only=True, destructive=False, open_world=False)
SEARCH = ListedTool("search_code", "Search the indexed code for a pattern.",
                    {"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]},
                    READ_ONLY)
FIND = ListedTool("find_files", "Find files under a directory.",
                  {"type": "object", "properties": {"directory": {"type": "string"}}, "required": ["directory"]},
                  READ_ONLY)


def test_a_failed_probe_is_followed_by_another_call_filled_from_its_schema() -> None:
    choice = choose_tools([SEARCH, FIND], word="retention")
    assert (choice.probe, dict(choice.probe_arguments)) == ("search_code", {"pattern": "retention"})
    failed = choice.with_failed_probe("Error: the project path is not set")
    [decision] = [d for d in failed.undecided if d.field == "arms.treatment.probe"]
    assert decision.flag.startswith("--probe find_files --probe-arguments '{\"directory\": \"{root}\"}'"), decision
    assert "search_code" not in decision.flag and '"path"' not in decision.flag


def test_the_only_tool_failing_suggests_no_call_it_already_made() -> None:
    choice = choose_tools([FIND], word="retention")
    assert (choice.probe, dict(choice.probe_arguments)) == ("find_files", {"directory": "{root}"})
    failed = choice.with_failed_probe("Directory not found: /x")
    [decision] = [d for d in failed.undecided if d.field == "arms.treatment.probe"]
    assert "'{\"directory\": \"{root}\"}'" not in decision.flag, decision.flag


GUIDE = ListedTool("get_guide", "How to use this server.", {"type": "object", "properties": {}}, READ_ONLY)
MENU = ListedTool("list_menu", "List the tool tiers you can enable.", {"type": "object", "properties": {}}, READ_ONLY)


def test_a_reduced_front_door_is_an_open_decision_naming_the_full_tool_set() -> None:
    choice = choose_tools([GUIDE, MENU], word="retention")
    [decision] = [d for d in choice.undecided if d.field == "arms.treatment.tools"]
    assert "none of the allowed tools (get_guide, list_menu) can search or read files" in decision.question
    assert "option or environment variable" in decision.question


def test_a_server_that_can_search_has_no_such_decision() -> None:
    assert not [d for d in choose_tools([GUIDE, SEARCH], word="retention").undecided
                if d.field == "arms.treatment.tools"]
