"""Randomised arm order as a design option (issue 41 item 8): ``design.order`` "randomized" draws each task's and
repetition's order from a seed, differs from the counterbalanced schedule, is reproducible from the seed, is
recorded in the ledger (``design``, each attempt's ``position``) and verified by ``agentstudy ledger``; the report
then calls its test a randomization test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.protocol.arm_order import OrderRule, order_rule, randomized_reversed
from agentstudy.protocol.ledger_integrity import seal_ledger, verify_ledger
from agentstudy.protocol.manifest import ManifestError, parse_manifest
from agentstudy.protocol.schedule import PilotSize, build_schedule
from agentstudy.rehearsal.example_study import build_example_study
from concurrent_ledgers import verified

EXAMPLE = Path(__file__).resolve().parents[1] / "src/agentstudy/rehearsal/example-study.json"
MODEL = "claude-haiku-5-5"


def _document(**design: Any) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(EXAMPLE.read_text())
    if design:
        document["design"] = design
    return document


def _pairs(schedule: Any) -> list[tuple[str, int, tuple[str, str]]]:
    """Each task's and repetition's scenario order, in schedule order."""
    return [(schedule[i].task_id, schedule[i].repetition, (schedule[i].scenario, schedule[i + 1].scenario))
            for i in range(0, len(schedule), 2)]


def test_randomized_order_differs_from_counterbalanced_and_is_reproducible_from_its_seed() -> None:
    plain = parse_manifest(json.dumps(_document()))
    counterbalanced = build_schedule(plain.manifest, "full")
    loaded = parse_manifest(json.dumps(_document(order="randomized", orderSeed=11)))
    rule = order_rule(loaded.manifest, loaded.protocol_hash)
    assert rule == OrderRule("randomized", 11)
    randomized = build_schedule(loaded.manifest, "full", rule=rule)
    assert _pairs(randomized) != _pairs(counterbalanced)
    assert [(e.task_id, e.repetition) for e in randomized] == [(e.task_id, e.repetition) for e in counterbalanced]
    again = parse_manifest(json.dumps(_document(order="randomized", orderSeed=11)))
    assert build_schedule(again.manifest, "full", rule=order_rule(again.manifest, again.protocol_hash)) == randomized
    other = build_schedule(loaded.manifest, "full", rule=OrderRule("randomized", 12))
    assert _pairs(other) != _pairs(randomized)
    forward = tuple(loaded.manifest.scenarios)
    for task_id, repetition, order in _pairs(randomized):  # every pair is the seed's draw, both arms once
        assert order == (tuple(reversed(forward)) if randomized_reversed(11, task_id, repetition) else forward)
    assert [e.position for e in randomized] == [1, 2] * (len(randomized) // 2)
    assert all(e.position is None for e in counterbalanced)
    pilot = build_schedule(loaded.manifest, "pilot", PilotSize(2, 2), rule)
    assert set(pilot) <= set(randomized)  # a pilot's pairs are the full schedule's


def test_counterbalanced_declared_or_absent_gives_the_same_schedule_and_no_seed() -> None:
    plain = parse_manifest(json.dumps(_document()))
    declared = parse_manifest(json.dumps(_document(order="counterbalanced")))
    assert order_rule(declared.manifest, declared.protocol_hash) == OrderRule()
    assert build_schedule(declared.manifest, "full", rule=order_rule(declared.manifest, declared.protocol_hash)) \
        == build_schedule(plain.manifest, "full")
    without_seed = parse_manifest(json.dumps(_document(order="randomized")))
    assert order_rule(without_seed.manifest, without_seed.protocol_hash) == OrderRule(
        "randomized", int(without_seed.protocol_hash[:15], 16))


@pytest.mark.parametrize(("design", "problem"), [
    ({"order": "counterbalanced", "orderSeed": 3}, "orderSeed"),
    ({"order": "shuffled"}, "order"),
    ({"order": "randomized", "orderSeed": -1}, "orderSeed"),
])
def test_a_bad_order_is_refused_in_one_line(tmp_path: Path, design: dict[str, Any], problem: str) -> None:
    with pytest.raises(ManifestError, match=problem):
        parse_manifest(json.dumps(_document(**design)))
    path = tmp_path / "study.json"
    path.write_text(json.dumps(_document(**design)))
    result = CliRunner().invoke(main, ["study", "--manifest", str(path), "--run", "--dry-run"])
    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 1, result.output


@pytest.fixture(scope="module")
def randomized_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-repetition rehearsal of the example study with ``design.order`` randomized, seed 5 (http)."""
    dest = tmp_path_factory.mktemp("order")
    study = build_example_study(dest / "study")
    document = _document(order="randomized", orderSeed=5)
    document["repetitions"] = 1
    manifest = dest / "study.json"
    manifest.write_text(json.dumps(document))
    output = dest / "ledger.json"
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    result = CliRunner().invoke(main, ["study", "--manifest", str(manifest), "--run", "--rehearsal", *roots,
                                       "--output", str(output), "--model", MODEL, "--budget-usd", "1"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return output


def test_a_randomized_run_records_its_seed_and_positions_and_runs_in_that_order(randomized_run: Path) -> None:
    ledger = verified(randomized_run)
    assert ledger.design is not None and ledger.design.order == "randomized" and ledger.design.order_seed == 5
    observations = ledger.observations
    assert len(observations) == 12
    rule = OrderRule("randomized", 5)
    for first, second in zip(observations[::2], observations[1::2], strict=True):
        assert (first.task_id, first.repetition) == (second.task_id, second.repetition)
        assert (first.position, second.position) == (1, 2)
        swapped = randomized_reversed(rule.seed or 0, first.task_id, first.repetition)
        assert first.scenario == ("doc-bridge-mcp" if swapped else "repository-only")
    assert CliRunner().invoke(main, ["ledger", str(randomized_run)]).exit_code == 0


@pytest.mark.parametrize(("change", "problem"), [
    (lambda d: d["observations"][0].update(position=3 - d["observations"][0]["position"]), "position"),
    (lambda d: d["design"].update(orderSeed=d["design"]["orderSeed"] + 1), "orderSeed"),
    (lambda d: d["design"].pop("orderSeed"), "orderSeed"),
    (lambda d: d.pop("design"), "not randomised"),
    (lambda d: d["observations"][3].pop("position"), "position None"),
])
def test_a_tampered_position_or_seed_fails_agentstudy_ledger(randomized_run: Path, tmp_path: Path, change: Any,
                                                             problem: str) -> None:
    document = json.loads(randomized_run.read_bytes())
    change(document)
    sealed = seal_ledger(document)
    problems = verify_ledger(sealed).problems
    assert any(problem in p for p in problems), problems
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(sealed))
    result = CliRunner().invoke(main, ["ledger", str(tampered)])
    assert result.exit_code != 0
    assert problem in result.output


def test_the_report_calls_the_test_a_randomization_test(randomized_run: Path) -> None:
    text = CliRunner().invoke(main, ["report", str(randomized_run)], catch_exceptions=False).output
    assert "randomization test" in text and "orderSeed 5" in text
    machine = json.loads(CliRunner().invoke(main, ["report", str(randomized_run), "--format", "json"]).output)
    assert {m["test"]["name"] for m in machine["metrics"]} == {"randomization test"}


def test_sequential_blocks_and_several_agents_follow_the_same_draw() -> None:
    from agentstudy.protocol.schedule import block_schedule

    loaded = parse_manifest(json.dumps(_document(order="randomized", orderSeed=11)))
    rule = order_rule(loaded.manifest, loaded.protocol_hash)
    full = {(e.task_id, e.repetition, e.scenario): e.position for e in build_schedule(loaded.manifest, "full",
                                                                                      rule=rule)}
    order = tuple(reversed([task.id for task in loaded.manifest.tasks]))
    blocks = block_schedule(loaded.manifest, order, rule)
    assert {(e.task_id, e.repetition, e.scenario): e.position for e in blocks} == full  # the draw, not the block
    agents = parse_manifest(json.dumps(_document(order="randomized", orderSeed=11)
                                       | {"agents": ["claude-code", "codex"]}))
    several = build_schedule(agents.manifest, "full", rule=order_rule(agents.manifest, agents.protocol_hash))
    for entry in several:
        assert entry.position == full[(entry.task_id, entry.repetition, entry.scenario)]
    assert [e.agent for e in several[:4]] == ["claude-code", "claude-code", "codex", "codex"]
