"""Issue 16: every single-field mutation of a valid minimal ledger is refused by ``report`` or changes no total.

The valid ledgers are real: the example pilot over http against the rehearsal server, ending
``awaiting-adjudication``, ``blocked`` (the server fails every request) and, captured at a
checkpoint inside an attempt, ``running`` with an open reservation (a crash there). A mutation
picks one leaf (any path, the hashes included) and gives it another value of a JSON type valid
there (a boolean, an integer, a float, a string; ``null`` becomes a number or a string). Then
either ``agentstudy report`` exits 2, or every total the report shows — the budget block, the
open reservation, counts by status, each attempt's status, tokens, tool calls, wall time and
charge — equals the unmutated ledger's.
"""

from __future__ import annotations

import copy
import json
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any, ClassVar
from unittest import mock

from click.testing import CliRunner
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agentstudy.cli import main
from agentstudy.io.ledger_journal import JournaledLedger, read_ledger
from agentstudy.protocol.ledger_integrity import seal_ledger, verify_ledger
from agentstudy.protocol.manifest import load_manifest
from agentstudy.protocol.records import MinimalLedger
from agentstudy.rehearsal.example_study import build_example_study
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.report.load import load_study
from agentstudy.report.model import Study
from agentstudy.runners.demo import DEMO_CAP_USD, DEMO_MODEL, DEMO_PRICES
from agentstudy.runners.http_request import REHEARSAL_KEY, HttpRunRequest
from agentstudy.runners.minimal_http import run_http_study
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER

Path_ = tuple[str | int, ...]


class _Recording(JournaledLedger):
    """A ``JournaledLedger`` that keeps every state it made durable, as a reader rebuilds it (snapshot + journal)."""

    written: ClassVar[list[dict[str, Any]]] = []

    def _keep(self) -> None:
        self.written.append(json.loads(read_ledger(self.path, self.path.read_bytes()).data))

    def __init__(self, path: Path, ledger: MinimalLedger, **options: Any) -> None:
        super().__init__(path, ledger, **options)
        self._keep()

    def record(self, ledger: MinimalLedger) -> None:
        super().record(ledger)
        self._keep()

    def checkpoint(self, document: dict[str, Any]) -> None:
        super().checkpoint(document)
        self._keep()


def _run(directory: Path, fail_with_status: int | None) -> list[dict[str, Any]]:
    study = build_example_study(directory / "study")
    _Recording.written = []
    with RehearsalServer(fail_with_status=fail_with_status) as server, \
            mock.patch("agentstudy.runners.minimal_http.JournaledLedger", _Recording):
        run_http_study(HttpRunRequest(
            loaded=load_manifest(study.manifest_path), mode="pilot", roots=study.roots,
            output=directory / "ledger.json", model=DEMO_MODEL, prices=DEMO_PRICES, cap_usd=DEMO_CAP_USD,
            api_key=REHEARSAL_KEY, base_url=server.base_url, mcp=DEFAULT_MCP_SERVER, rehearsal=True,
        ))
    return list(_Recording.written)


@cache
def valid_ledgers() -> tuple[dict[str, Any], ...]:
    """Three real, valid ledgers: awaiting adjudication, blocked, and crashed inside an attempt."""
    directory = Path(tempfile.mkdtemp(prefix="agentstudy-mutation-"))
    finished = _run(directory / "ok", None)
    blocked = _run(directory / "blocked", 500)[-1]
    crashed = next(d for d in finished if d.get("openReservation", {}).get("chargedUsd", 0) > 0)
    # written alone, as a reader rebuilt it: no journal beside it, so it no longer says it keeps one
    crashed = seal_ledger({key: value for key, value in crashed.items() if key != "journal"})
    ledgers = (finished[-1], blocked, crashed)
    assert [d["status"] for d in ledgers] == ["awaiting-adjudication", "blocked", "running"]
    assert all(verify_ledger(d).verified for d in ledgers)
    return ledgers


def leaves(value: Any, path: Path_ = ()) -> Iterator[Path_]:
    """Every path to a leaf (a scalar, or an empty object or array) of a JSON value."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from leaves(item, (*path, key))
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from leaves(item, (*path, index))
    else:
        yield path


def _get(document: Any, path: Path_) -> Any:
    for part in path:
        document = document[part]
    return document


def _put(document: Any, path: Path_, value: Any) -> None:
    _get(document, path[:-1])[path[-1]] = value


def _other(old: Any) -> st.SearchStrategy[Any]:
    """Another value of a JSON type valid where ``old`` is."""
    if isinstance(old, bool):
        return st.just(not old)
    if isinstance(old, int):
        return st.integers(-(2**53), 2**53).filter(lambda v: v != old)
    if isinstance(old, float):
        return st.one_of(st.floats(allow_nan=False, allow_infinity=False),
                         st.sampled_from([0.0, old * 2, old / 2, old + 1e-6])).filter(lambda v: v != old)
    if isinstance(old, str):
        return st.one_of(st.text(max_size=80), st.just(old + "x"), st.just(old[:-1])).filter(lambda v: v != old)
    if old is None:
        return st.one_of(st.integers(0, 10), st.floats(0, 1), st.text(max_size=20))
    if isinstance(old, list):
        return st.lists(st.text(max_size=10), min_size=1, max_size=2)
    return st.dictionaries(st.text(min_size=1, max_size=10), st.integers(0, 3), min_size=1, max_size=2)


def totals(study: Study) -> tuple[Any, ...]:
    """Every total the report shows, from the loader the report uses."""
    attempts = tuple((a.task_id, a.scenario, a.repetition, a.status, a.input_tokens, a.output_tokens,
                      a.cache_read_tokens, a.cache_creation_tokens, a.tool_calls, a.wall_time_ms, a.charged_usd,
                      a.usage_complete) for a in study.attempts)
    return (study.status, study.mode, study.planned, study.rehearsal, study.cap_usd, study.spent_usd,
            study.reserved_usd, study.measured_usd, study.cumulative_cap_exceeded, study.open_reservation_usd,
            study.stop_reason, attempts)


def _report(document: dict[str, Any], directory: Path) -> tuple[int, Study | None]:
    path = directory / "ledger.json"
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["report", str(path)])
    if result.exit_code != 0:
        return result.exit_code, None
    return 0, load_study(path)


@cache
def reported_totals(index: int) -> tuple[Any, ...]:
    """The totals of ``valid_ledgers()[index]`` as reported."""
    with tempfile.TemporaryDirectory() as directory:
        code, study = _report(valid_ledgers()[index], Path(directory))
    assert code == 0 and study is not None
    return totals(study)


@given(st.data())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_single_field_mutation_is_refused_or_changes_no_total(data: st.DataObject) -> None:
    index = data.draw(st.integers(0, len(valid_ledgers()) - 1), label="ledger")
    original = valid_ledgers()[index]
    path = data.draw(st.sampled_from(list(leaves(original))), label="path")
    old = _get(original, path)
    new = data.draw(_other(old), label="new value")
    mutated = copy.deepcopy(original)
    _put(mutated, path, new)
    with tempfile.TemporaryDirectory() as directory:
        code, study = _report(mutated, Path(directory))
    assert code in (0, 2)
    event("refused" if code == 2 else "reported")
    if code == 0:
        assert study is not None
        assert totals(study) == reported_totals(index), f"{path}: {old!r} -> {new!r} changed a reported total"


def test_every_valid_ledger_is_reported() -> None:
    with tempfile.TemporaryDirectory() as directory:
        for document in valid_ledgers():
            assert _report(document, Path(directory))[0] == 0


def test_in_practice_every_mutation_is_refused() -> None:
    """With the hashes, not even a field the report never shows (an answer, a hash) goes through."""
    original = valid_ledgers()[0]
    with tempfile.TemporaryDirectory() as directory:
        for path in (("observations", 0, "answer"), ("observations", 1, "observationHash"), ("ledgerHash",),
                     ("runnerHash",), ("observations", 0, "isolationAchieved", 0)):
            mutated = copy.deepcopy(original)
            _put(mutated, path, "edited")
            assert _report(mutated, Path(directory))[0] == 2, path
