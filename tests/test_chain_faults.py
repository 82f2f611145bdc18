"""A chain of runs is one study (issue 40): a study file run three times under scripted 529 faults (real HTTP
on 127.0.0.1, the scripted Messages API server), each continuation reading the whole chain behind it.

Breaks reproduced: every continuation of a study-file run wrote a ledger that failed verification
(``fullAttempts`` against its smaller ``plannedAttempts``); a third run re-ran a cell the first had completed
and charged (only the direct predecessor was subtracted); a continuation given without its chain ran anyway.
"""

from __future__ import annotations

import json
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from agentstudy.cli import main
from agentstudy.protocol.ledger_integrity import verify_ledger_bytes
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study

from one_corpus import one_corpus

MODEL = "claude-haiku-5-5"


def _invoke(args: list[str]) -> Result:
    env: dict[str, str | None] = {"ANTHROPIC_API_KEY": None, "STUDY_INPUT_USD_PER_MILLION": None,
                                  "STUDY_OUTPUT_USD_PER_MILLION": None}
    return CliRunner().invoke(main, args, env=env, catch_exceptions=False)


def _read(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_bytes())
    return data


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> tuple[ExampleStudy, Path]:
    """The example study file narrowed to its first corpus (``tests/one_corpus.py``: each run's preflight starts one
    MCP server, not three) with three tasks, its two and the first again as ``lantern-discovery-2``, and one
    repetition: a full schedule of 6 attempts."""
    dest = tmp_path_factory.mktemp("chain-study")
    built = one_corpus(build_example_study(dest / "study"))
    document = json.loads(built.manifest_path.read_text())
    first = document["tasks"][0]
    document["tasks"], document["repetitions"] = [*document["tasks"], {**first, "id": f"{first['id']}-2"}], 1
    path = dest / "study.json"
    path.write_text(json.dumps(document, indent=2))
    return built, path


def _run(study: tuple[ExampleStudy, Path], output: Path, *extra: str) -> Result:
    built, manifest = study
    roots = [f"--root={name}={path}" for name, path in built.roots.items()]
    return _invoke(["study", "--manifest", str(manifest), "--run", "--transport", "http", "--rehearsal", *roots,
                    "--output", str(output), "--model", MODEL, "--budget-usd", "1", *extra])


@pytest.fixture(scope="module")
def chain(study: tuple[ExampleStudy, Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ...]:
    """r1 blocked by a 529 storm at its third attempt, r2 (continuing r1) at its second, r3 (continuing both)
    finishing; and one uninterrupted run with the same seeds."""
    directory = tmp_path_factory.mktemp("chain")
    r1, r2, r3, whole = (directory / f"{name}.json" for name in ("r1", "r2", "r3", "whole"))
    assert _run(study, r1, "--rehearsal-faults", "attempt=3:529").exit_code == 1
    result = _run(study, r2, "--continue-from", str(r1), "--rehearsal-faults", "attempt=2:529")
    assert result.exit_code == 1, result.output
    result = _run(study, r3, "--continue-from", str(r1), "--continue-from", str(r2))
    assert result.exit_code == 0, result.output
    assert _run(study, whole).exit_code == 0
    return r1, r2, r3, whole


def _cells(document: dict[str, Any], status: str = "completed") -> list[tuple[str, str, int]]:
    return [(o["taskId"], o["scenario"], o["repetition"]) for o in document["observations"]
            if o["status"] == status]


def test_every_ledger_of_the_chain_verifies_alone(chain: tuple[Path, ...]) -> None:
    for path in chain:
        assert verify_ledger_bytes(path.read_bytes()).problems == (), path.name
    r1, r2, r3, _ = (_read(p) for p in chain)
    assert r1["fullAttempts"] == r2["fullAttempts"] == r3["fullAttempts"] == 6
    assert (r2["plannedAttempts"], r2["continues"]["completedBefore"]) == (4, 2)
    assert (r3["plannedAttempts"], r3["continues"]["completedBefore"]) == (3, 3)
    assert r3["continues"]["earlierRuns"] == [{"ledgerSha256": r2["continues"]["ledgerSha256"],
                                               "runId": r1["runId"]}]
    for path in chain:  # `agentstudy ledger` too: the journal, the transcripts, every invariant
        result = _invoke(["ledger", str(path)])
        assert result.exit_code == 0, (path.name, result.output)


def test_no_cell_runs_twice_and_spent_is_the_sum_of_charges(chain: tuple[Path, ...]) -> None:
    documents = [_read(p) for p in chain[:3]]
    completed = [cell for document in documents for cell in _cells(document)]
    assert len(completed) == len(set(completed)) == 6
    assert set(completed) == set(_cells(_read(chain[3])))
    # The third run planned only what neither earlier run completed (a failed cell is re-planned once).
    assert not set(_cells(documents[2])) & (set(_cells(documents[0])) | set(_cells(documents[1])))
    for document in documents:
        charges = sum((Decimal(str(o["chargedUsd"])) for o in document["observations"]), Decimal(0))
        assert Decimal(str(document["budget"]["spent"])) == charges
    report = json.loads(_invoke(["report", *map(str, chain[:3]), "--format", "json"]).stdout)
    total = sum((Decimal(str(d["budget"]["spent"])) for d in documents), Decimal(0))
    assert Decimal(str(report["spend"]["spentUsd"])).quantize(Decimal("1e-9")) == total.quantize(Decimal("1e-9"))


def test_the_chain_report_counts_equal_an_uninterrupted_run(chain: tuple[Path, ...]) -> None:
    joined = _invoke(["report", *map(str, chain[:3]), "--format", "json"])
    assert joined.exit_code == 0, joined.output
    whole = _invoke(["report", str(chain[3]), "--format", "json"])
    assert whole.exit_code == 0, whole.output
    chained, alone = json.loads(joined.stdout), json.loads(whole.stdout)

    def counts(report: dict[str, Any]) -> Counter[tuple[str, str, str]]:
        return Counter((a["taskId"], a["scenario"], a["status"]) for a in report["attempts"]
                       if a["status"] == "completed")

    assert counts(chained) == counts(alone)
    assert chained["chain"] == {"complete": True, "missing": []}


def test_a_continuation_without_its_whole_chain_is_refused(study: tuple[ExampleStudy, Path],
                                                          chain: tuple[Path, ...], tmp_path: Path) -> None:
    output = tmp_path / "r4.json"
    result = _run(study, output, "--continue-from", str(chain[1]))
    assert result.exit_code == 2 and "give every ledger of it, oldest first" in result.output
    assert not output.exists()
    result = _run(study, output, "--continue-from", str(chain[1]), "--continue-from", str(chain[0]))
    assert result.exit_code == 2 and not output.exists()
    result = _run(study, output, *(arg for p in chain[:3] for arg in ("--continue-from", str(p))))
    assert result.exit_code == 2 and "nothing to continue" in result.output and not output.exists()


def test_one_link_reported_alone_says_the_chain_is_partial(chain: tuple[Path, ...]) -> None:
    r1, r2 = _read(chain[0]), _read(chain[1])
    refused = _invoke(["report", str(chain[2]), "--format", "json"])
    assert refused.exit_code == 2 and "--partial-chain" in refused.output
    result = _invoke(["report", str(chain[2]), "--format", "json", "--partial-chain"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["chain"] == {"complete": False, "missing": [
        {"ledgerSha256": r2["continues"]["ledgerSha256"], "runId": r1["runId"]},
        {"ledgerSha256": _read(chain[2])["continues"]["ledgerSha256"], "runId": r2["runId"]}]}
    text = _invoke(["report", str(chain[2]), "--partial-chain"])
    assert text.exit_code == 0 and "partial chain" in text.stdout.split("\n\n")[0].lower()
    for command in (["power", str(chain[2]), "--json"], ["power", str(chain[1]), str(chain[2]), "--json"]):
        result = _invoke(command)
        assert result.exit_code == 2 and "--partial-chain" in result.output


def test_adjudicate_refuses_one_link_without_partial_chain(study: tuple[ExampleStudy, Path],
                                                         chain: tuple[Path, ...]) -> None:
    built, manifest = study
    roots = [f"--root={name}={path}" for name, path in built.roots.items()]
    base = ["--manifest", str(manifest), *roots, "--rehearsal", "--model", MODEL, "--budget-usd", "1"]
    for ledgers in ([chain[2]], [chain[1], chain[2]]):
        result = _invoke(["adjudicate", *map(str, ledgers), *base])
        assert result.exit_code == 2 and "--partial-chain" in result.output, result.output
        assert not ledgers[-1].with_suffix(".adjudication.json").exists()


def _copied(chain: tuple[Path, ...], directory: Path) -> tuple[Path, ...]:
    """The chain's three ledgers (and their transcripts) copied byte for byte into ``directory``: the links hold."""
    import shutil
    copies = []
    for path in chain[:3]:
        copy = directory / path.name
        copy.write_bytes(path.read_bytes())
        kept = path.with_name(path.name + ".transcripts")
        if kept.is_dir():
            shutil.copytree(kept, directory / kept.name)
        copies.append(copy)
    return tuple(copies)


def test_adjudicate_says_whether_the_chain_is_whole(study: tuple[ExampleStudy, Path], chain: tuple[Path, ...],
                                                    tmp_path: Path) -> None:
    """One link with --partial-chain: PARTIAL CHAIN first and ``chain.complete`` false in every JSON line; the
    whole chain: ``{"complete": true, "missing": []}`` (issue 40)."""
    built, manifest = study
    roots = [f"--root={name}={path}" for name, path in built.roots.items()]
    base = ["--manifest", str(manifest), *roots, "--rehearsal", "--model", MODEL, "--budget-usd", "1"]
    (tmp_path / "part").mkdir()
    (tmp_path / "whole").mkdir()
    part = _copied(chain, tmp_path / "part")
    r1, r2, r3 = (_read(p) for p in part)
    result = _invoke(["adjudicate", str(part[2]), *base, "--partial-chain"])
    assert result.exit_code == 0, result.output
    assert result.stderr.lstrip().startswith("agentstudy: PARTIAL CHAIN: 2 earlier run(s) not given"), result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [line["chain"] for line in lines] == [{"complete": False, "missing": [
        {"ledgerSha256": r2["continues"]["ledgerSha256"], "runId": r1["runId"]},
        {"ledgerSha256": r3["continues"]["ledgerSha256"], "runId": r2["runId"]}]}]
    whole = _copied(chain, tmp_path / "whole")
    result = _invoke(["adjudicate", *map(str, whole), *base])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [line["chain"] for line in lines] == [{"complete": True, "missing": []}] * 3
    assert "PARTIAL CHAIN" not in result.output


def test_power_reads_one_link_only_with_partial_chain_and_says_so(chain: tuple[Path, ...]) -> None:
    """``power`` (and ``power --sequential``) of a continuation alone: refused without --partial-chain; with it,
    PARTIAL CHAIN first and ``chain`` in JSON, as ``report`` (issue 40)."""
    missing = json.loads(_invoke(["report", str(chain[2]), "--format", "json", "--partial-chain"]).stdout)["chain"]
    assert missing["complete"] is False and len(missing["missing"]) == 2
    sequential = ["--sequential", "--metric", "inputTokens", "--effect", "100", "--max-tasks", "8"]
    refused = _invoke(["power", str(chain[2]), "--json"])
    assert refused.exit_code == 2 and "--partial-chain" in refused.output, refused.output
    result = _invoke(["power", str(chain[2]), "--json", "--partial-chain"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["chain"] == missing
    text = _invoke(["power", str(chain[2]), "--partial-chain"])
    assert text.exit_code == 0 and "PARTIAL CHAIN: 2 earlier run(s) not given" in text.stdout.split("\n")[0]
    whole = _invoke(["power", *map(str, chain[:3]), "--json"])
    assert whole.exit_code == 0 and json.loads(whole.stdout)["chain"] == {"complete": True, "missing": []}
    # --sequential reads one ledger through the same reader: a continuation alone is refused the same way (this
    # one link has too few tasks to plan from, which it then says instead), a first run is a whole chain.
    refused = _invoke(["power", str(chain[2]), *sequential, "--json"])
    assert refused.exit_code == 2 and "--partial-chain" in refused.output, refused.output
    alone = _invoke(["power", str(chain[2]), *sequential, "--json", "--partial-chain"])
    assert "--partial-chain" not in alone.output and "at least 2 are needed" in alone.output, alone.output
    first = _invoke(["power", str(chain[3]), *sequential, "--json"])
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["chain"] == {"complete": True, "missing": []}
