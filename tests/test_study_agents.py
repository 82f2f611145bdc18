"""Several agents in one study (issue 21 item 6): the study file's ``agents``, the crossed schedule,
and old studies unchanged."""

from __future__ import annotations

import json

import pytest

from agentstudy.protocol.manifest import ManifestError, parse_manifest
from agentstudy.protocol.records import CliObservation
from agentstudy.protocol.schedule import PilotSize, ScheduleEntry, build_schedule
from agentstudy.protocol.study_agents import observation_agent
from agentstudy.rehearsal.example_study import EXAMPLE_MANIFEST

from study_files import EXAMPLE_MANIFEST_PROTOCOL_HASH, EXAMPLE_STUDY, D, R, study_document


def _two_agent_text(repetitions: int = 2, tasks: int = 2) -> str:
    document = study_document({"alpha": tasks}, repetitions)
    document["agents"] = ["claude-code", "codex"]
    return json.dumps(document)


def test_a_study_without_agents_keeps_its_hash_schedule_and_entries() -> None:
    loaded = parse_manifest(EXAMPLE_MANIFEST.read_text())
    assert loaded.protocol_hash == EXAMPLE_MANIFEST_PROTOCOL_HASH
    assert loaded.agents == ("claude-code",)
    study = parse_manifest(EXAMPLE_STUDY.read_text())
    assert study.agents == ("claude-code",) and study.full_attempts == 36
    full = build_schedule(study.manifest, "full")
    assert len(full) == 36 and {e.agent for e in full} == {"claude-code"}
    # The entries are the ones every earlier run planned (positional construction still works).
    assert full[:2] == (ScheduleEntry(full[0].task_id, full[0].repository, R, 1),
                        ScheduleEntry(full[0].task_id, full[0].repository, D, 1))


def test_two_agents_cross_task_arm_repetition_counterbalanced_within_each_agent() -> None:
    loaded = parse_manifest(_two_agent_text())
    assert loaded.agents == ("claude-code", "codex")
    assert loaded.full_attempts == 2 * 2 * 2 * 2
    full = build_schedule(loaded.manifest, "full")
    assert [(e.task_id, e.repetition, e.agent, e.scenario) for e in full[:8]] == [
        ("alpha-t0", 1, "claude-code", R), ("alpha-t0", 1, "claude-code", D),
        ("alpha-t0", 1, "codex", R), ("alpha-t0", 1, "codex", D),
        ("alpha-t0", 2, "claude-code", D), ("alpha-t0", 2, "claude-code", R),
        ("alpha-t0", 2, "codex", D), ("alpha-t0", 2, "codex", R),
    ]
    single = parse_manifest(json.dumps(study_document({"alpha": 2}, 2)))
    alone = build_schedule(single.manifest, "full")
    for agent in ("claude-code", "codex"):
        mine = [e for e in full if e.agent == agent]
        assert [(e.task_id, e.scenario, e.repetition) for e in mine] == \
            [(e.task_id, e.scenario, e.repetition) for e in alone]
        firsts = [mine[i].scenario for i in range(0, len(mine), 2)]
        assert firsts.count(R) == firsts.count(D)  # each agent's pairs start with either arm equally often


def test_a_two_agent_pilot_runs_both_agents_on_the_same_task() -> None:
    loaded = parse_manifest(_two_agent_text())
    pilot = build_schedule(loaded.manifest, "pilot", PilotSize())
    assert [(e.agent, e.scenario) for e in pilot] == [("claude-code", R), ("claude-code", D), ("codex", R),
                                                      ("codex", D)]


def test_listing_the_default_agent_changes_the_hash_not_the_schedule() -> None:
    plain = study_document({"alpha": 1}, 1)
    listed = {**plain, "agents": ["claude-code"]}
    a, b = parse_manifest(json.dumps(plain)), parse_manifest(json.dumps(listed))
    assert a.protocol_hash != b.protocol_hash  # the document says more, so it is another protocol
    assert build_schedule(a.manifest, "full") == build_schedule(b.manifest, "full")


@pytest.mark.parametrize(("agents", "reason"), [
    ([], "agents must list at least one agent"),
    (["codex", "codex"], "agents lists an agent twice"),
    (["aider"], "unknown agent 'aider' (known: claude-code, codex, gemini)"),
    ("codex", "agents"),
    ([7], "agents"),
])
def test_bad_agent_lists_are_one_line_errors(agents: object, reason: str) -> None:
    document = {**study_document({"alpha": 1}, 1), "agents": agents}
    with pytest.raises(ManifestError) as error:
        parse_manifest(json.dumps(document))
    assert reason in str(error.value)
    assert "\n" not in str(error.value)


def test_observation_agent_field_is_optional() -> None:
    assert observation_agent({}) == "claude-code"
    assert observation_agent({"agent": "codex"}) == "codex"
    fields = CliObservation.model_fields
    assert "agent" in fields and not fields["agent"].is_required()
