"""Fake Codex binaries for the fault tests: the real pinned binary for ``--version`` / ``features``, a bash script
printing a scripted ``exec --json`` stream for ``exec``; and a one-command minimal run of the example study with
one (restricted containment, as every fake's run)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from agentstudy.cli import main
from agentstudy.rehearsal.example_study import build_example_study

from codex_attempts import codex_binary

TRANSCRIPT = Path(__file__).parent / "transcripts" / "codex-0.171.0" / "control-completed.jsonl"
HEAD = [line for line in TRANSCRIPT.read_text().splitlines() if '"turn.completed"' not in line]
"""The real control transcript's events without its ``turn.completed``."""


def usage_line(input_tokens: int | str, output_tokens: int | str, cached: int | str = 0) -> str:
    """A ``turn.completed`` line with these counts (strings are written raw: a 99-digit count)."""
    return (f'{{"type":"turn.completed","usage":{{"input_tokens":{input_tokens},"cached_input_tokens":{cached},'
            f'"cache_write_input_tokens":0,"output_tokens":{output_tokens},"reasoning_output_tokens":0}}}}')


def fake_codex_stream(directory: Path, tail: list[str], pause: bool = False) -> Path:
    """A fake codex whose ``exec`` prints the real transcript's events, then ``tail``: all in one write (one
    chunk for the usage watcher), or with a one-second pause before its last line when ``pause``."""
    directory.mkdir(parents=True, exist_ok=True)
    body = directory / "stream.jsonl"
    body.write_text("\n".join([*HEAD, *(tail[:-1] if pause else tail)]) + "\n")
    last = directory / "last.jsonl"
    last.write_text(tail[-1] + "\n" if pause else "")
    fake = directory / "codex"
    fake.write_text(f'#!/bin/bash\ncase "$1" in exec) ;; *) exec "{codex_binary()}" "$@";; esac\n'
                    f"cat '{body}'\n{'sleep 1' if pause else ''}\ncat '{last}'\n")
    fake.chmod(0o755)
    return fake


def example_study(base: Path) -> tuple[Path, list[str]]:
    """The example study's manifest and its ``--root`` flags, built under ``base``."""
    built = build_example_study(base / "study")
    return built.manifest_path, [f"--root={name}={path}" for name, path in built.roots.items()]


def run_codex_study(study: tuple[Path, list[str]], fake: Path, output: Path, *extra: str,
                    budget: str = "5") -> dict[str, Any]:
    """Run the example study's pilot with the fake codex into ``output``; the ledger as written (it must exist)."""
    manifest, roots = study
    args = ["minimal", "--manifest", str(manifest), "--pilot", "--transport", "cli", *roots, "--budget-usd", budget,
            "--output", str(output), "--agent", "codex", "--rehearsal", "--model", "rehearsal-scripted",
            "--containment", "restricted", "--agent-bin", str(fake), *extra]
    result = CliRunner().invoke(main, args, env={**os.environ})
    assert output.exists(), result.output
    document: dict[str, Any] = json.loads(output.read_text())
    return document
