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
