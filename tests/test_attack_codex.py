"""Attacks on the Codex path with hostile fake agents (prompts4/attack.md): each fake is the real pinned binary
for ``--version`` / ``features`` and a script for ``exec``. Restricted containment, as every fake's test."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentstudy.agents.codex import default_home_root
from agentstudy.cli import main
from agentstudy.io.process import STDOUT_LIMIT_BYTES
from agentstudy.protocol.manifest import REPOSITORY_ONLY
from agentstudy.rehearsal.example_study import build_corpus_repository, build_example_study
from agentstudy.stream.codex import parse_codex_stream
from agentstudy.stream.transcript import parse_transcript
from agentstudy.transports.codex import UsageWatch

from codex_attempts import codex_binary, run_codex_attempt
from study_files import EXAMPLE_STUDY

TRANSCRIPT = Path(__file__).parent / "transcripts" / "codex-0.171.0" / "control-completed.jsonl"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("codex-attack") / "harbor-playbook"
    return root, build_corpus_repository("harbor-playbook", root)


def fake_codex(directory: Path, exec_body: str) -> Path:
    """A fake codex: the real binary for everything but ``exec``, which runs ``exec_body`` (bash)."""
    fake = directory / "codex"
    fake.write_text(f'#!/bin/bash\ncase "$1" in exec) ;; *) exec "{codex_binary()}" "$@";; esac\n{exec_body}\n')
    fake.chmod(0o755)
    return fake


def test_a_100_mb_flood_without_a_newline_is_cut_at_the_bound_not_waited_on(corpus: tuple[Path, str],
                                                                           tmp_path: Path) -> None:
    # The usage watcher used to re-split its whole pending buffer on every chunk: a flood with no newline
    # was quadratic (and held in memory past the stdout bound), so the attempt ran into its timeout.
    fake = fake_codex(tmp_path, f"cat '{TRANSCRIPT}'; head -c 100000000 /dev/zero | tr '\\0' x; echo")
    result, _ = run_codex_attempt(*corpus, REPOSITORY_ONLY, binary=fake, containment="restricted")
    assert result.status == "failed", (result.status, result.status_reason)
    assert result.exit_code == 0


def test_the_usage_watch_skips_an_overlong_line_and_reads_the_next() -> None:
    watch = UsageWatch("gpt-5", Decimal("0.01"))
    for _ in range(STDOUT_LIMIT_BYTES // 65536 + 2):
        assert watch(b"x" * 65536) is None
    line = json.dumps({"type": "turn.completed", "usage": {"input_tokens": 10_000, "cached_input_tokens": 0,
                                                           "output_tokens": 1_000, "reasoning_output_tokens": 0}})
    assert watch(b' "turn.completed"\n' + line.encode() + b"\n") == \
        "the running usage cost 0.0225 USD passed the per-attempt limit of 0.01 USD; the child was stopped"
    assert watch._pending == bytearray() and watch._overflow is False


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[str]]:
    """The example study (the seed manifest), the study file with both agents, and the ``--root`` flags."""
    base = tmp_path_factory.mktemp("codex-attack-study")
    study = build_example_study(base / "study")
    document = json.loads(EXAMPLE_STUDY.read_text())
    document["agents"] = ["claude-code", "codex"]
    two = base / "two.json"
    two.write_text(json.dumps(document))
    return study.manifest_path, two, [f"--root={name}={path}" for name, path in study.roots.items()]


@pytest.mark.parametrize(("which", "extra", "message"), [
    ("seed", ["--agent", "codex", "--rehearsal", "--model", "gpt-unpriced-9"],
     "--model gpt-unpriced-9 has no price for codex"),
    ("seed", ["--agent", "codex", "--approve-budget", "--model", "gpt-unpriced-9"],
     "--model gpt-unpriced-9 has no price for codex"),
    ("seed", ["--agent", "codex", "--dry-run", "--model", "gpt-unpriced-9"],
     "--model gpt-unpriced-9 has no price for codex"),
    ("two", ["--rehearsal", "--model", "claude-haiku-5-5", "--agent-model", "codex=gpt-unpriced-9"],
     "--agent-model codex=gpt-unpriced-9 has no price for codex"),
])
def test_an_unpriced_codex_model_is_refused_before_anything_is_reserved(
        example: tuple[Path, Path, list[str]], which: str, extra: list[str], message: str, tmp_path: Path) -> None:
    # Codex reports no cost: an unpriced model used to start the run, reserve, and end every attempt
    # invalid-cost (charged its whole reservation); a real run of one even started the real binary.
    seed, two, roots = example
    output = tmp_path / "ledger.json"
    result = CliRunner().invoke(main, ["minimal", "--manifest", str(seed if which == "seed" else two), "--pilot",
                                       "--transport", "cli", *roots, "--budget-usd", "1", "--output", str(output),
                                       *extra])
    assert result.exit_code == 2, result.output
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not output.exists()


@pytest.mark.parametrize("environ", [{"XDG_CACHE_HOME": "relative/dir", "HOME": "/home/someone"},
                                     {"XDG_CACHE_HOME": "", "HOME": "/home/someone"}])
def test_a_relative_cache_home_is_ignored(environ: dict[str, str]) -> None:
    # A relative XDG_CACHE_HOME used to make the per-attempt homes under the working directory (left behind
    # there, and the run refused with "codex features list failed").
    assert default_home_root(environ) == Path("/home/someone/.cache/agentstudy/codex-homes")


def test_a_relative_home_falls_back_to_the_account_home() -> None:
    root = default_home_root({"XDG_CACHE_HOME": "x", "HOME": "y"})
    assert root.is_absolute() and root.parts[-3:] == (".cache", "agentstudy", "codex-homes")


def test_a_run_with_a_relative_cache_home_writes_nothing_in_the_working_directory(
        example: tuple[Path, Path, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seed, _, roots = example
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")
    result = CliRunner().invoke(main, ["minimal", "--manifest", str(seed), "--pilot", "--transport", "cli",
                                       *roots, "--budget-usd", "1", "--output", str(tmp_path / "ledger.json"),
                                       "--agent", "codex", "--rehearsal", "--model", "rehearsal-scripted"])
    assert result.exit_code == 0, result.output
    assert list(work.iterdir()) == []


def test_a_stream_of_junk_lines_lists_twenty_and_counts_the_rest(corpus: tuple[Path, str], tmp_path: Path) -> None:
    # 1.5 million two-byte lines (3 MB, inside the stdout bound) used to make a 38 MB setupProblem: one
    # "line N is not JSON" each, in the ledger and on the terminal. 150,000 lines show the same failure (150,000
    # problems where 21 are asserted) and cost a tenth of the parsing.
    fake = fake_codex(tmp_path, f"head -n 3 '{TRANSCRIPT}'; yes x | head -n 150000; tail -n +4 '{TRANSCRIPT}'")
    result, _ = run_codex_attempt(*corpus, REPOSITORY_ONLY, binary=fake, containment="restricted")
    assert result.status == "invalid-setup"
    problems = result.setup_problems
    assert problems[:2] == ("line 4 is not JSON", "line 5 is not JSON") and len(problems) == 21
    assert problems[-1] == "149980 more lines break the grammar (not listed)"
    assert parse_codex_stream(["{}"] * 25).grammar_problems[19:22] == [
        "line 20 is not a JSON object with a type", "5 more lines break the grammar (not listed)",
        "the first event is not thread.started"]


def test_a_line_nested_200000_deep_is_not_json_not_a_crash(corpus: tuple[Path, str], tmp_path: Path) -> None:
    # json.loads raised RecursionError: the run stopped with a traceback, its reservation left open.
    fake = fake_codex(tmp_path, f"head -n 3 '{TRANSCRIPT}'; printf '%.0s[' $(seq 200000); echo; "
                                f"tail -n +4 '{TRANSCRIPT}'")
    result, _ = run_codex_attempt(*corpus, REPOSITORY_ONLY, binary=fake, containment="restricted")
    assert result.status == "invalid-setup"
    assert result.setup_problems == ("line 4 is not JSON",)
    deep = b'{"type":"turn.completed","usage":' + b"[" * 200_000 + b"\n"
    assert UsageWatch("gpt-5", Decimal("0.01"))(deep) is None


def test_a_claude_stream_of_junk_lines_lists_twenty_and_counts_the_rest(tmp_path: Path) -> None:
    # The other agent of a several-agent study had the same 9x amplification (transcript --agent claude-code of
    # 200000 junk lines printed a 4.9 MB line); 20,000 lines would still print ~0.5 MB against the 10,000 asserted.
    junk = tmp_path / "junk.jsonl"
    junk.write_text("x\n" * 20_000)
    result = CliRunner().invoke(main, ["transcript", str(junk), "--scenario", "repository-only",
                                       "--model", "claude-haiku-5-5"])
    assert "19980 more lines break the shape (not listed)" in result.output
    assert len(result.output) < 10_000
    assert parse_transcript(["x"] * 21).shape_problems[19:21] == ["line 20 is not JSON",
                                                                 "1 more lines break the shape (not listed)"]
