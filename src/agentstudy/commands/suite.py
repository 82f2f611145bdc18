"""``agentstudy suite FILE``: verify and describe a controlled-study task suite (seed 004; digest 5.12)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from agentstudy.commands.contract_files import text_or_json


@click.command()
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@text_or_json
def suite(file: Path, as_text: bool) -> None:
    """Verify a task suite (content hash, formats, safe text, coverage and budget rules) and describe it."""
    from agentstudy.commands.contract_files import emit, read_contract
    from agentstudy.protocol.controlled.suite import StudyTaskSuiteV1
    from agentstudy.protocol.controlled.summary import describe_suite
    loaded = read_contract(file, StudyTaskSuiteV1)
    emit(as_text, "suite", describe_suite(loaded), render_suite)


def render_suite(suite: dict[str, Any]) -> list[str]:
    """Aligned text lines of ``describe_suite``'s output."""
    from agentstudy.commands.contract_files import aligned, counts
    return aligned([
        ("Suite", f"{suite['title']}  (suite {suite['suiteVersion']}, protocol {suite['protocolVersion']})"),
        ("Content hash", f"{suite['contentHash']}  {'verified' if suite['verified'] else 'NOT VERIFIED'}"),
        ("Population", f"{len(suite['population'])} repositories: {', '.join(suite['population'])}"),
        ("Models", ", ".join(suite["modelIds"])),
        ("Scenarios", ", ".join(suite["scenarioIds"])),
        ("Tasks", f"{suite['taskCount']}: {counts(suite['tasksByCategory'])}"),
        ("Difficulty", counts(suite["tasksByDifficulty"])),
        ("Task maxima", f"{suite['maxTokensPerTask']} tokens, {suite['maxRuntimeMsPerTask']} ms"),
        ("Full matrix", f"{suite['plannedRuns']} executions (tasks × models × scenarios × "
                        f"{suite['replicatesPerTask']} replicates) of at most {suite['maxRuns']}"),
        ("Ordering", f"{suite['ordering']['strategy']}, seed {suite['ordering']['seed']}"),
    ])
