"""Build the example controlled study: three pinned repositories and the four verified input files.

``build_controlled_example(dest)`` commits the example corpora into Git repositories under
``dest`` (``agentstudy.rehearsal.example_study.build_corpus_repository``) and writes, each
content-hashed:

- ``suite.json``: the twelve tasks of ``tasks.TASKS`` (population: the three corpora, as
  ARCHITECTURE decision 11 allows), two models, three scenarios, two replicates;
- ``plan.json``: balanced sampling of all 12 tasks (2 per model×scenario stratum) or, with
  ``pairwise=True``, 24 executions of ``repository-only`` vs ``deterministic-doc-bridge``;
  at most 2 attempts per execution;
- ``providers.json``: the scripted provider and adjudicator of ``agentstudy.rehearsal``,
  run by this Python, priced at zero (a rehearsal spends nothing);
- ``providers-codex.json`` and ``providers-claude-code.json``: the bundled adapters
  (``agentstudy provider AGENT --rehearsal``, issue 34) as provider and adjudicator, so the real
  agent binaries run the study against the scripted model server, also priced at zero;
- ``repositories.json``: the three roots.

Nothing here needs an account or the network. ``python -m agentstudy.rehearsal.controlled DEST``
builds it from the command line.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentstudy.io.atomic import write_text_atomic
from agentstudy.protocol.controlled.config import StudyProviderCliConfigV1, StudyRepositoryConfigV1
from agentstudy.protocol.controlled.contracts import create_contract
from agentstudy.protocol.controlled.formats import ContractModel
from agentstudy.protocol.controlled.hashing import js_json, sha256_normalized_v1
from agentstudy.protocol.controlled.plan import ControlledStudyRunPlanV1
from agentstudy.protocol.controlled.selection import select_task_executions
from agentstudy.protocol.controlled.suite import StudyTaskSuiteV1
from agentstudy.rehearsal.controlled.tasks import TASKS
from agentstudy.rehearsal.example_study import build_corpus_repository

POPULATION = ("lantern-cache", "quill-notes", "harbor-playbook")
MODEL_IDS = ("low-cost-model", "reference-model")
SCENARIO_IDS = ("repository-only", "deterministic-doc-bridge", "registry-assisted")
RUN_ID = "rehearsal-example-01"
PAIRWISE_RUN_ID = "rehearsal-example-pairwise-01"
_BUDGETS = {"discovery": (6000, 30000), "architecture": (8000, 30000), "documentation": (8000, 30000),
            "implementation": (10000, 30000)}
_NOT_NEEDED = "The example corpora are pinned read-only snapshots; this surface is not exercised."


@dataclass(frozen=True)
class ControlledExample:
    """Paths of a built example: the four input files and the repository roots."""

    suite: Path
    plan: Path
    providers: Path
    repositories: Path
    roots: dict[str, Path]
    agent_providers: dict[str, Path] = field(default_factory=dict)
    """Agent -> its adapter's rehearsal provider config (``providers-codex.json``, ``providers-claude-code.json``)."""


def _digest(label: str) -> str:
    return sha256_normalized_v1({"agentstudyRehearsal": label})


def _task(spec: dict[str, Any]) -> dict[str, Any]:
    max_tokens, max_runtime = _BUDGETS[spec["category"]]
    implementation = spec["category"] == "implementation"
    surfaces = {name: {"required": False, "reason": _NOT_NEEDED}
                for name in ("logic", "endpoint", "database", "cli", "mcp", "ui", "docs")}
    surfaces["docs"] = {"required": True}
    if implementation:
        surfaces["logic"] = {"required": True}
    return {
        "id": spec["id"], "repositoryId": spec["repositoryId"], "category": spec["category"],
        "difficulty": spec["difficulty"], "objective": spec["objective"],
        "initialContext": ["The repository is a pinned, read-only snapshot.", "Cite files by their relative path."],
        "allowedTools": ["read files", "search text"],
        "forbiddenActions": ["modify files", "run programs from the repository", "use the network"],
        "expectedOutcome": spec["expectedOutcome"],
        "evidenceRequirements": [{"id": item, "description": text, "source": "agent"}
                                 for item, text in spec["evidence"]],
        "acceptanceChecks": [{"id": item, "command": command, "expected": expected}
                             for item, command, expected in spec["checks"]],
        "budget": {"maxTokens": max_tokens, "maxRuntimeMs": max_runtime},
        "surfaces": surfaces,
        "rubric": {
            "success": ["Every acceptance check passes and every required file is cited."],
            "partial": ["Some checks pass or some required files are cited, but not all."],
            "incorrect": ["The answer contradicts the cited files."],
            "incomplete": ["No check passes and no required file is cited."],
            "blocked": ["The attempt did not complete or did not report its checks."],
        },
        "variantGroup": spec["id"],
        "variants": [{"id": "variant-a", "label": "Direct question", "context": "Ask for the answer directly."},
                     {"id": "variant-b", "label": "Maintainer framing",
                      "context": "A maintainer asks while preparing a change."}],
    }


def example_suite() -> dict[str, Any]:
    """The example suite payload (without its hash)."""
    return {
        "type": "study-task-suite", "schemaVersion": 1, "suiteVersion": "rehearsal-v1", "protocolVersion": "v1",
        "title": "agentstudy example controlled study (scripted, zero spend)",
        "population": list(POPULATION), "modelIds": list(MODEL_IDS), "scenarioIds": list(SCENARIO_IDS),
        "maxTokensPerTask": 20000, "maxRuntimeMsPerTask": 120000, "maxRuns": 144, "replicatesPerTask": 2,
        "ordering": {"strategy": "balanced-counter-order", "seed": "rehearsal-seed-1"},
        "tasks": [_task(spec) for spec in TASKS],
    }


def example_plan(suite_hash: str, source_revision_hash: str, *, pairwise: bool = False) -> dict[str, Any]:
    """The example plan payload for the suite ``suite_hash`` (without its hash)."""
    models = [{"id": model_id, "role": role, "provider": "rehearsal", "model": model, "version": "agentstudy-0.1.0",
               "parametersHash": _digest(f"{model_id}-parameters"), "contextLimit": 200000,
               "toolConfigurationHash": _digest("read-only-tools"), "promptContractHash": _digest("provider-v1")}
              for model_id, role, model in (("low-cost-model", "low-cost", "scripted-small"),
                                            ("reference-model", "reference", "scripted-large"))]
    sampling: dict[str, Any] = ({"strategy": "pairwise-task-strata", "sampleSize": 24,
                                 "scenarioIds": ["repository-only", "deterministic-doc-bridge"]}
                                if pairwise else {"strategy": "balanced-task-strata", "sampleSize": len(TASKS)})
    return {
        "type": "controlled-study-run-plan", "schemaVersion": 1, "planVersion": "rehearsal-v1",
        "protocolVersion": "v1", "protocolHash": _digest("protocol"), "taskSuiteHash": suite_hash,
        "sourceRevisionHash": source_revision_hash, "configurationHash": _digest("scripted-provider-v1"),
        "docBridgeVersion": "rehearsal", "models": models,
        "scenarios": [{"id": "repository-only", "network": False}, {"id": "deterministic-doc-bridge", "network": False},
                      {"id": "registry-assisted", "agentId": "rehearsal-corpus-scanner", "agentVersion": "v1",
                       "network": False}],
        "taskIds": [spec["id"] for spec in TASKS], "sampling": sampling,
        "budget": {"maxTokens": 120000, "maxRuntimeMs": 120000, "maxOutputBytes": 64000, "maxAttempts": 2},
        "runId": PAIRWISE_RUN_ID if pairwise else RUN_ID,
    }


def example_providers(python: str, *, provider_args: tuple[str, ...] = (),
                      adjudicator_args: tuple[str, ...] = ()) -> dict[str, Any]:
    """The provider config payload: the scripted provider and adjudicator run by ``python`` (with extra args)."""
    free = {"currency": "USD", "inputPerMillionUsd": 0, "cachedInputPerMillionUsd": 0, "outputPerMillionUsd": 0}
    command = {"command": python, "envAllowlist": [], "providerNetwork": False, "maxInputBytes": 200000,
               "maxOutputBytes": 64000, "pricing": free}
    provider_argv = ["-I", "-m", "agentstudy.rehearsal.controlled_provider", *provider_args]
    return {
        "type": "study-provider-cli-config", "schemaVersion": 1, "configVersion": "rehearsal-v1",
        "providers": [{"modelId": model_id, "scenarioIds": list(SCENARIO_IDS), **command, "args": provider_argv}
                      for model_id in MODEL_IDS],
        "adjudicator": {"id": "rehearsal-adjudicator", "modelId": "scripted-judge", **command,
                        "args": ["-I", "-m", "agentstudy.rehearsal.controlled_adjudicator", *adjudicator_args]},
    }


AGENT_TIMEOUT_S = 100
"""The adapters' own agent timeout in the example (below the plan's 120 s ``maxRuntimeMs``)."""


def example_agent_providers(python: str, agent: str) -> dict[str, Any]:
    """The provider config payload running the bundled adapter of ``agent`` (``claude-code``, ``codex``, ``gemini``) in
    rehearsal, as provider of every model and scenario and as adjudicator, by ``python -I -m agentstudy``."""
    free = {"currency": "USD", "inputPerMillionUsd": 0, "cachedInputPerMillionUsd": 0, "outputPerMillionUsd": 0}
    command = {"command": python, "envAllowlist": [], "providerNetwork": False, "maxInputBytes": 200000,
               "maxOutputBytes": 64000, "pricing": free}
    adapter = ["-I", "-m", "agentstudy", "provider", agent, "--rehearsal", "--timeout-s", str(AGENT_TIMEOUT_S)]
    return {
        "type": "study-provider-cli-config", "schemaVersion": 1, "configVersion": f"rehearsal-{agent}-v1",
        "providers": [{"modelId": model_id, "scenarioIds": list(SCENARIO_IDS), **command, "args": adapter}
                      for model_id in MODEL_IDS],
        "adjudicator": {"id": f"{agent}-adjudicator", "modelId": "scripted-judge", **command,
                        "args": [*adapter, "--adjudicator"]},
    }


AGENT_PROVIDER_FILES = {"codex": "providers-codex.json", "claude-code": "providers-claude-code.json",
                        "gemini": "providers-gemini.json"}
"""Agent -> the example's provider config file that runs its bundled adapter in rehearsal."""


def _write(path: Path, model: type[ContractModel], payload: dict[str, Any]) -> str:
    loaded = create_contract(model, payload)
    write_text_atomic(path, js_json(loaded.document, indent=2) + "\n", mode=0o644)
    return loaded.content_hash


def build_controlled_example(dest: Path, *, pairwise: bool = False, python: str | None = None,
                             provider_args: tuple[str, ...] = (),
                             adjudicator_args: tuple[str, ...] = ()) -> ControlledExample:
    """Build the example under ``dest`` (created if missing); see the module docstring.

    Args:
        dest: the folder; ``dest/<corpus>``, ``suite.json``, ``plan.json``, ``providers.json``
            ``repositories.json`` and the two adapter configs must not exist yet.
        pairwise: write the pairwise plan instead of the balanced one.
        python: the interpreter that runs the scripted provider (default: this one).
        provider_args: extra provider arguments (``--fail-first-attempt`` rehearses a retry;
            ``--latency-ms MS`` and ``--trace FILE`` pace it, issue 19).
        adjudicator_args: extra adjudicator arguments (``--latency-ms``, ``--trace``).

    Raises:
        FileExistsError: a target exists. RuntimeError: a git command failed.
    """
    dest = dest.resolve()
    names = ("suite.json", "plan.json", "providers.json", "repositories.json", *AGENT_PROVIDER_FILES.values())
    for target in [*(dest / name for name in POPULATION), *(dest / name for name in names)]:
        if target.exists() or target.is_symlink():
            raise FileExistsError(f"refusing to overwrite existing path {target}")
    dest.mkdir(parents=True, exist_ok=True)
    roots = {name: dest / name for name in POPULATION}
    heads = {name: build_corpus_repository(name, root) for name, root in roots.items()}
    suite_hash = _write(dest / "suite.json", StudyTaskSuiteV1, example_suite())
    plan = example_plan(suite_hash, sha256_normalized_v1(heads), pairwise=pairwise)
    _write(dest / "plan.json", ControlledStudyRunPlanV1, plan)
    _write(dest / "providers.json", StudyProviderCliConfigV1,
           example_providers(python or sys.executable, provider_args=provider_args,
                             adjudicator_args=adjudicator_args))
    for agent, name in AGENT_PROVIDER_FILES.items():
        _write(dest / name, StudyProviderCliConfigV1, example_agent_providers(python or sys.executable, agent))
    _write(dest / "repositories.json", StudyRepositoryConfigV1,
           {"type": "controlled-study-repository-config", "schemaVersion": 1, "configVersion": "rehearsal-v1",
            "repositories": [{"id": name, "root": str(root)} for name, root in roots.items()]})
    return ControlledExample(dest / "suite.json", dest / "plan.json", dest / "providers.json",
                             dest / "repositories.json", roots,
                             {agent: dest / name for agent, name in AGENT_PROVIDER_FILES.items()})


def planned_executions(pairwise: bool = False) -> int:
    """How many executions the example plan selects (12 balanced, 24 pairwise)."""
    suite = create_contract(StudyTaskSuiteV1, example_suite()).model
    plan = example_plan("0" * 64, "0" * 64, pairwise=pairwise)
    sampling = create_contract(ControlledStudyRunPlanV1, plan).model.sampling
    return len(select_task_executions(suite, sampling.sample_size, sampling))
