"""The bodies a Ray worker runs, without Ray (issue 20): the http job, the driver's re-check, the stale-dir sweep.

An http attempt's body on a worker (``HttpJob.run_on_worker``: repository tools over the shipped
blobs, its own MCP server snapshot, its own budget of the reservation) gives the same result
as the local agent loop over the checkout, against the real scripted server; the driver refuses
a result that does not add up within its reservation and settles a dead worker's attempt
``failed`` with its whole reservation charged; repository tools over blobs answer as over git;
the sweep removes the marked temporary directories of dead processes only.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from agentstudy.io.export import CorpusBlobs, read_pinned_corpus
from agentstudy.io.scratch import MARKER, owned_mkdtemp, owner_token, release, sweep_stale
from agentstudy.io.server_corpus import ServerCorpora
from agentstudy.pricing.budget import Budget
from agentstudy.pricing.http import REHEARSAL_PRICES
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP, REPOSITORY_ONLY, load_manifest
from agentstudy.protocol.mcp_spec import McpServerSpec
from agentstudy.protocol.prompt import study_prompt
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.runners.http_attempts import WITHIN_THE_ATTEMPT
from agentstudy.runners.http_remote import HttpJob, recheck, remote_start
from agentstudy.runners.http_request import REHEARSAL_KEY
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER
from agentstudy.transports.cli import WORKER_DIED
from agentstudy.transports.http import HttpSettings, run_http_attempt
from agentstudy.transports.http_contract import HttpAttemptResult
from agentstudy.transports.repo_tools import RepositoryTools
from test_executor import DeadWorkers

RESERVATION = Decimal("0.5")


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> ExampleStudy:
    return build_example_study(tmp_path_factory.mktemp("remote") / "study")


def _spec() -> McpServerSpec:
    return DEFAULT_MCP_SERVER


def _facts(result: HttpAttemptResult) -> tuple[Any, ...]:
    return (result.status, result.input_tokens, result.output_tokens, result.turns, result.tool_calls,
            result.tool_calls_by_name, result.tools, result.charged_usd, result.answer)


@pytest.mark.parametrize("scenario", [REPOSITORY_ONLY, DOC_BRIDGE_MCP])
def test_the_http_body_on_a_worker_matches_the_local_loop(study: ExampleStudy, scenario: str) -> None:
    loaded = load_manifest(study.manifest_path)
    task = loaded.manifest.tasks[0]
    root, pin = study.roots[task.repository], loaded.manifest.repositories[task.repository]
    corpus = read_pinned_corpus(root, pin)
    spec = _spec()
    with RehearsalServer() as server, ServerCorpora(spec, {task.repository: (root, pin)}) as corpora:
        settings = HttpSettings(model="claude-haiku-5-5", prices=REHEARSAL_PRICES, mcp=spec,
                                containment="restricted", parent_env=dict(os.environ))
        paths = corpora.paths(task.repository) if scenario == DOC_BRIDGE_MCP else None
        from agentstudy.io.messages_api import MessagesClient

        with MessagesClient(REHEARSAL_KEY, server.base_url) as client:
            local = run_http_attempt(settings, sender=client, scenario=scenario, root=root, pin=pin,
                                     prompt=study_prompt(task.question), budget=Budget(cap=RESERVATION),
                                     ledger=WITHIN_THE_ATTEMPT, server=paths)
        job = HttpJob(settings, server.base_url, REHEARSAL_KEY, scenario, task.repository, pin,
                      study_prompt(task.question), RESERVATION, paths, api_key=REHEARSAL_KEY).shipped()
        assert job.api_key is None and job.settings.parent_env == {}  # nothing of the driver's leaves
        on_worker = job.run_on_worker(corpus, "node-1")
    assert local.status == "completed" and local.tool_calls > 0
    assert _facts(on_worker) == _facts(local) and on_worker.worker_node == "node-1"
    assert recheck(on_worker, RESERVATION) is on_worker


def _job() -> HttpJob:
    settings = HttpSettings(model="claude-haiku-5-5", prices=REHEARSAL_PRICES, mcp=_spec())
    return HttpJob(settings, "http://127.0.0.1:1", REHEARSAL_KEY, REPOSITORY_ONLY, "lantern", "0" * 40, "q?",
                   RESERVATION, None)


def test_a_dead_http_worker_fails_its_attempt_with_the_whole_reservation_charged() -> None:
    start = remote_start(DeadWorkers(), lambda entry: _job(), RESERVATION)
    result = start(object()).result(timeout=1)  # type: ignore[arg-type]
    assert (result.status, result.status_reason, result.usage_complete) == ("failed", WORKER_DIED, False)
    assert result.charged_usd == result.reserved_usd == RESERVATION and result.worker_node == "node-7"
    assert result.measured_usd == 0 and result.answer == ""


def test_the_driver_refuses_a_result_that_spends_more_than_its_reservation() -> None:
    honest = HttpAttemptResult(
        status="completed", status_reason=None, budget=Budget(cap=RESERVATION), input_tokens=10, output_tokens=5,
        usage_complete=True, turns=1, tool_calls=0, tool_calls_by_name={}, tool_errors_by_name={}, tools=[],
        reserved_usd=Decimal("0.01"), measured_usd=Decimal("0.001"), charged_usd=Decimal("0.001"), wall_time_ms=3,
        answer="yes", worker_node="n")
    assert recheck(honest, RESERVATION) is honest
    for bad in (dataclasses.replace(honest, charged_usd=Decimal("0.6"), measured_usd=Decimal("0.6")),
                dataclasses.replace(honest, budget=Budget(cap=Decimal(5))),
                dataclasses.replace(honest, measured_usd=Decimal("0.002")),
                dataclasses.replace(honest, tool_calls=-1)):
        refused = recheck(bad, RESERVATION)
        assert refused.status == "failed" and refused.charged_usd == RESERVATION and refused.answer == ""
        assert refused.status_reason is not None and refused.status_reason.startswith("the worker's result was")


def test_repository_tools_over_blobs_answer_as_over_git(study: ExampleStudy) -> None:
    loaded = load_manifest(study.manifest_path)
    name, root = next(iter(study.roots.items()))
    pin = loaded.manifest.repositories[name]
    over_git, over_blobs = RepositoryTools(root, pin), RepositoryTools.from_corpus(read_pinned_corpus(root, pin))
    assert over_git.paths == over_blobs.paths and over_git.paths
    calls = [("repo_list", {}), ("repo_read", {"path": over_git.paths[0]}), ("repo_search", {"term": "the"}),
             ("repo_read", {"path": "no/such"})]
    for name_, arguments in calls:
        assert over_blobs.call(name_, arguments) == over_git.call(name_, arguments)
    assert RepositoryTools.from_corpus(CorpusBlobs((), {})).paths == []


def test_the_sweep_removes_only_directories_of_dead_owners(tmp_path: Path) -> None:
    make = ("import sys; from pathlib import Path; from agentstudy.io.scratch import owned_mkdtemp\n"
            "made = owned_mkdtemp('export', Path(sys.argv[1])); (made / 'f').write_text('x'); made.chmod(0o555)\n"
            "print(made)")
    dead = Path(subprocess.run([sys.executable, "-c", make, str(tmp_path)], capture_output=True, text=True,
                               check=True).stdout.strip())
    alive = owned_mkdtemp("attempt", tmp_path)
    foreign = tmp_path / "agentstudy-export-abc"  # another pid namespace (a container sharing /tmp)
    foreign.mkdir()
    foreign.with_name(foreign.name + MARKER).write_text("1_1_1")
    unmarked = tmp_path / "agentstudy-export-def"  # no owner known: never swept
    unmarked.mkdir()
    orphan = tmp_path / "agentstudy-attempt-gone.owner"  # a dead owner's marker whose directory is gone
    orphan.write_text(dead.with_name(dead.name + MARKER).read_text())
    assert len(dead.name) == len(alive.name.replace("attempt", "export"))  # the name's length never varies
    assert sweep_stale(tmp_path) == [dead]
    assert not dead.exists() and not dead.with_name(dead.name + MARKER).exists() and not orphan.exists()
    assert alive.exists() and foreign.exists() and unmarked.exists()
    assert sweep_stale(tmp_path) == []
    alive.rmdir()
    release(alive)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([foreign.name, foreign.name + MARKER, unmarked.name])


def test_an_owner_token_names_this_process() -> None:
    namespace, pid, start = owner_token().split("_")
    assert int(pid) == os.getpid() and int(namespace) == os.stat("/proc/self/ns/pid").st_ino and int(start) > 0


def test_killed_runs_codex_homes_are_swept_with_the_temp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Codex's per-attempt homes live outside temp dirs (``$XDG_CACHE_HOME/agentstudy/codex-homes``): what a
    killed run left there is swept too, by every run's preflight and every Ray task; a live owner's is kept."""
    from agentstudy.agents.registry import sweep_stale_scratch

    (tmp_path / "tmp").mkdir()  # a temp dir of its own: what other tests' killed runs leave in /tmp is not this one's
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))

    environ = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    assert sweep_stale_scratch(environ) == []  # no root yet: nothing made, nothing swept
    assert not (tmp_path / "cache").exists()
    root = tmp_path / "cache" / "agentstudy" / "codex-homes"
    root.mkdir(parents=True)
    make = ("import sys; from pathlib import Path; from agentstudy.io.scratch import owned_mkdtemp\n"
            "made = owned_mkdtemp('attempt', Path(sys.argv[1])); (made / 'codex-home').mkdir(); print(made)")
    dead = Path(subprocess.run([sys.executable, "-c", make, str(root)], capture_output=True, text=True,
                               check=True).stdout.strip())
    alive = owned_mkdtemp("attempt", root)
    assert dead in sweep_stale_scratch(environ)
    assert not dead.exists() and not dead.with_name(dead.name + MARKER).exists() and alive.exists()
    alive.rmdir()
    release(alive)
    assert list(root.iterdir()) == []
