"""Helpers shared by the controlled-run tests (real plans, real child processes), and checks of the helpers.

Imported by ``test_controlled_run*.py``, ``test_controlled_adjudicate*.py`` and
``test_controlled_metrics*.py``; pytest also collects the two tests at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from agentstudy.cli import main
from agentstudy.controlled.command import ControlledCommandRequest
from agentstudy.protocol.controlled.config import StudyProviderCliConfigV1
from agentstudy.protocol.controlled.contracts import LoadedContract, create_contract, parse_contract
from agentstudy.protocol.controlled.hashing import js_json
from agentstudy.protocol.controlled.plan import ControlledStudyRunPlanV1
from agentstudy.rehearsal.controlled.example import ControlledExample, build_controlled_example, planned_executions

PY = sys.executable
ARTIFACTS = Path(__file__).resolve().parents[2] / "shared" / "reference" / "original-artifacts"
EXECUTION: dict[str, Any] = {"taskId": "consumer-01-discovery", "repositoryId": "consumer-01", "category": "discovery",
                             "scenarioId": "repository-only", "modelId": "low-cost-model", "replicate": 0,
                             "variantId": "variant-a", "difficulty": "easy"}
ANSWER = {"taskOutcome": "success", "evidenceQuality": "high", "safetyOutcome": "safe", "evidenceIds": ["entry-1"],
          "inputTokens": 3, "outputTokens": 5, "tokenMethod": "provider", "toolCalls": 2,
          "measurements": {"searchHitRate": 1}}


def artifact(name: str) -> Path:
    """An original artifact; the test fails (never skips) when it is missing."""
    path = ARTIFACTS / name
    if not path.is_file():
        pytest.fail(f"original artifact missing: {path}")
    return path


@cache
def original_plan() -> LoadedContract[ControlledStudyRunPlanV1]:
    """The original's committed plan (24 tasks, budget 400000 tokens, 1 attempt)."""
    return parse_contract(ControlledStudyRunPlanV1, artifact("run-plan-v1.json").read_text(encoding="utf-8"))


def plan_with(**budget: int) -> LoadedContract[ControlledStudyRunPlanV1]:
    """The original plan with some budget fields replaced (``max_tokens=10``, ``max_attempts=2`` …), re-hashed."""
    document = {key: value for key, value in original_plan().document.items()
                if key not in ("contentHash", "contentHashAlgo")}
    names = {"max_tokens": "maxTokens", "max_runtime_ms": "maxRuntimeMs", "max_output_bytes": "maxOutputBytes",
             "max_attempts": "maxAttempts"}
    document["budget"] = {**document["budget"], **{names[key]: value for key, value in budget.items()}}
    return create_contract(ControlledStudyRunPlanV1, document)


def py_code_printing(answer: dict[str, Any]) -> str:
    """Python code that reads stdin and prints ``answer`` as JSON."""
    return f"import sys; sys.stdin.read(); print({json.dumps(json.dumps(answer))})"


def request(code: str, cwd: Path, plan: LoadedContract[ControlledStudyRunPlanV1] | None = None,
            **fields: Any) -> ControlledCommandRequest:
    """A request that runs ``python -c code`` in ``cwd`` for ``EXECUTION``."""
    data = fields.pop("input", b"{}")
    return ControlledCommandRequest(plan=plan or original_plan(), execution=dict(EXECUTION), command=PY,
                                    args=("-c", code), cwd=cwd, input=data, context_bytes=len(data), **fields)


def is_alive(pid: int) -> bool:
    """Whether ``pid`` is a live (non-zombie) process."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def cli(*args: str, env: dict[str, str] | None = None) -> Result:
    """Run ``agentstudy ARGS`` in-process."""
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def one_error_line(result: Result, code: int = 2) -> str:
    """The single ``agentstudy: error:`` line of a refused command (nothing on stdout)."""
    assert result.exit_code == code, (result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.startswith("agentstudy: error: ")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def run_args(example: ControlledExample, ledger: Path, *extra: str) -> list[str]:
    """``run PLAN SUITE --providers … --repositories … --ledger LEDGER EXTRA``."""
    return ["run", str(example.plan), str(example.suite), "--providers", str(example.providers),
            "--repositories", str(example.repositories), "--ledger", str(ledger), *extra]


def write_providers(path: Path, payload: dict[str, Any]) -> Path:
    """Write a provider config payload, content-hashed, to ``path``."""
    loaded = create_contract(StudyProviderCliConfigV1, payload)
    path.write_text(js_json(loaded.document, indent=2) + "\n", encoding="utf-8")
    return path


def copy_example(example: ControlledExample, dest: Path) -> ControlledExample:
    """A copy of a built example's four input files in ``dest`` (the repositories are shared)."""
    dest.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name in ("suite", "plan", "providers", "repositories"):
        source: Path = getattr(example, name)
        paths[name] = dest / source.name
        shutil.copyfile(source, paths[name])
    return ControlledExample(paths["suite"], paths["plan"], paths["providers"], paths["repositories"], example.roots)


def test_the_example_plans_twelve_balanced_or_twenty_four_pairwise_executions() -> None:
    assert planned_executions() == 12
    assert planned_executions(pairwise=True) == 24


def test_the_built_example_verifies_with_the_contract_commands(tmp_path: Path) -> None:
    example = build_controlled_example(tmp_path / "study")
    assert cli("suite", str(example.suite)).exit_code == 0
    result = cli("plan", str(example.plan), "--suite", str(example.suite))
    assert result.exit_code == 0, result.output
    assert "balanced-task-strata: 12 executions over 6 model×scenario strata (2 each)" in result.stdout
    assert sorted(example.roots) == ["harbor-playbook", "lantern-cache", "quill-notes"]
    assert all((root / ".git").is_dir() for root in example.roots.values())
    with pytest.raises(FileExistsError):
        build_controlled_example(tmp_path / "study")
