"""Ledger upsert (idempotent, no replacement, re-hashed), atomic persistence, provider cost vectors."""

from __future__ import annotations

import copy
import json
import os
import stat
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from agentstudy.io.atomic import write_json_atomic, write_text_atomic
from agentstudy.pricing.provider_cost import ProviderRates, provider_cost_usd
from agentstudy.protocol.controlled.config import ProviderPricing
from agentstudy.protocol.controlled.contracts import ContentHashError, parse_contract
from agentstudy.protocol.controlled.hashing import content_hash_of
from agentstudy.protocol.controlled.ledger import (
    EMPTY_LEDGER_HASH,
    ControlledStudyObservationLedgerV1,
    LedgerConflictError,
    create_observation,
    empty_ledger,
    ledger_file_text,
    upsert_observation,
)

ARTIFACTS = Path(__file__).resolve().parents[2] / "shared" / "reference" / "original-artifacts"


@cache
def _ledger_text() -> str:
    path = ARTIFACTS / "observation-ledger-v1.json"
    if not path.is_file():
        pytest.fail(f"original artifact missing: {path}")
    return path.read_text(encoding="utf-8")


def observation_payload(index: int = 0) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(_ledger_text())["observations"][index]
    return {key: value for key, value in document.items() if key not in ("contentHash", "contentHashAlgo")}


def test_upsert_appends_and_rehashes() -> None:
    ledger = empty_ledger()
    first = create_observation(observation_payload(0))
    second = create_observation(observation_payload(1))
    one = upsert_observation(ledger, first)
    two = upsert_observation(one, second)
    assert ledger.content_hash == EMPTY_LEDGER_HASH and ledger.model.observations == []  # unchanged
    assert [item.content_hash for item in two.model.observations] == [first.content_hash, second.content_hash]
    assert two.verified and content_hash_of(two.document) == two.content_hash != one.content_hash
    assert list(two.document)[-2:] == ["contentHash", "contentHashAlgo"]


def test_upsert_is_idempotent_for_the_same_run_and_task() -> None:
    observation = create_observation(observation_payload(0))
    once = upsert_observation(empty_ledger(), observation)
    replay = create_observation(observation_payload(0))
    assert upsert_observation(once, replay) is once


def test_upsert_refuses_a_conflicting_replacement() -> None:
    once = upsert_observation(empty_ledger(), create_observation(observation_payload(0)))
    changed = observation_payload(0)
    changed["execution"] = {**changed["execution"], "durationMs": changed["execution"]["durationMs"] + 1}
    with pytest.raises(LedgerConflictError, match="already exists with different contents"):
        upsert_observation(once, create_observation(changed))
    other_variant = copy.deepcopy(observation_payload(0))
    other_variant["task"]["variantId"] = "variant-a"
    with pytest.raises(LedgerConflictError, match="replicate 1 already exists"):
        upsert_observation(once, create_observation(other_variant))


def test_same_task_in_another_run_is_a_new_observation() -> None:
    once = upsert_observation(empty_ledger(), create_observation(observation_payload(0)))
    recovery = observation_payload(0)
    recovery["runId"] = "phase-2-baseline-recovery-01"
    assert len(upsert_observation(once, create_observation(recovery)).model.observations) == 2


def test_upsert_refuses_unverified_inputs() -> None:
    original = parse_contract(ControlledStudyObservationLedgerV1, _ledger_text())
    with pytest.raises(ContentHashError, match="observation 237"):
        upsert_observation(original, create_observation(observation_payload(0)))
    tampered = json.loads(json.dumps(create_observation(observation_payload(0)).document))
    tampered["contextBytes"] += 1
    loaded = parse_contract(type(create_observation(observation_payload(0)).model), json.dumps(tampered))
    with pytest.raises(ContentHashError, match="the top-level contentHash"):
        upsert_observation(empty_ledger(), loaded)


def test_persisted_ledger_reloads_verified_and_private(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    ledger = empty_ledger()
    for index in range(3):
        ledger = upsert_observation(ledger, create_observation(observation_payload(index)))
        write_text_atomic(path, ledger_file_text(ledger))
    reloaded = parse_contract(ControlledStudyObservationLedgerV1, path.read_text(encoding="utf-8"))
    assert reloaded.verified and reloaded.content_hash == ledger.content_hash
    assert reloaded.model == ledger.model and reloaded.document == ledger.document
    assert len(reloaded.model.observations) == 3
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(item.name for item in tmp_path.iterdir()) == ["ledger.json"]


def test_atomic_write_replaces_whole_files_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    path.write_text("old content that is longer than the new one\n", encoding="utf-8")
    inode = path.stat().st_ino
    write_json_atomic(path, {"a": "é", "b": [1, 2]})
    assert path.read_text(encoding="utf-8") == '{\n  "a": "é",\n  "b": [\n    1,\n    2\n  ]\n}\n'
    assert path.stat().st_ino != inode  # a new file was renamed over the old one
    with pytest.raises(ValueError):
        write_json_atomic(path, {"a": float("nan")})
    assert json.loads(path.read_text(encoding="utf-8")) == {"a": "é", "b": [1, 2]}
    assert os.listdir(tmp_path) == ["doc.json"]


def test_atomic_write_into_a_missing_directory_fails_cleanly(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        write_text_atomic(tmp_path / "missing" / "x.json", "{}\n")
    assert os.listdir(tmp_path) == []


RATES = ProviderRates(Decimal(2), Decimal(1), Decimal(4))


@pytest.mark.parametrize(
    ("input_tokens", "cached", "output_tokens", "expected"),
    [(1500, 500, 1000, Decimal("0.0065")), (100, 20, 30, Decimal("0.0003")), (100, 500, 0, Decimal("0.0001")),
     (100, None, 0, Decimal("0.0002")), (1, None, 0, Decimal("0.00000200"))],
)
def test_provider_cost_vectors(input_tokens: int, cached: int | None, output_tokens: int, expected: Decimal) -> None:
    assert provider_cost_usd(RATES, input_tokens, output_tokens, cached) == expected


def test_provider_cost_is_missing_without_pricing_or_usage() -> None:
    assert provider_cost_usd(None, 1, 1) is None
    assert provider_cost_usd(RATES, None, 1) is None
    assert provider_cost_usd(RATES, 1, None) is None
    with pytest.raises(ValueError):
        provider_cost_usd(RATES, -1, 1)


def test_pricing_model_computes_the_digest_vectors() -> None:
    pricing = ProviderPricing.model_validate({"currency": "USD", "inputPerMillionUsd": 2,
                                              "cachedInputPerMillionUsd": 1, "outputPerMillionUsd": 4})
    assert pricing.cost_usd(1500, 1000, 500) == Decimal("0.0065")
    assert pricing.cost_usd(100, 30, 20.0) == Decimal("0.0003")
    assert float(pricing.cost_usd(1500, 1000, 500) or 0) == 0.0065
