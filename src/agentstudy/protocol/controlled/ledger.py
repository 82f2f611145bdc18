"""``ControlledStudyObservationLedgerV1`` and ``upsert`` (seed 004; digest section 5.9).

The ledger is the list of observations of every controlled run, content-addressed as a whole
while each observation keeps its own hash. Observations are immutable evidence: ``upsert``
appends a new one, replays an identical one as a no-op, and refuses to replace one.
Persisting is the caller's (``ledger_file_text`` + ``agentstudy.io.atomic.write_text_atomic``).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, model_validator

from agentstudy.protocol.controlled.contracts import ContractError, LoadedContract, create_contract
from agentstudy.protocol.controlled.formats import ContentHashAlgo, ContractModel, Hash, Reference, SchemaVersion
from agentstudy.protocol.controlled.hashing import CONTENT_HASH_ALGO_KEY, CONTENT_HASH_KEY, js_json, with_content_hash
from agentstudy.protocol.controlled.observation import ControlledStudyObservationV1

MAX_OBSERVATIONS = 100_000
LEDGER_TYPE = "controlled-study-observation-ledger"
EMPTY_LEDGER_HASH = "d7aacae053872796b29fbb6cca38a41a5fb2d542c7a5628c0671c9add14f9955"
"""``contentHash`` of the empty ``v1`` ledger (digest 5.2 test vector)."""


def _identity(observation: ControlledStudyObservationV1) -> tuple[str, str, str, str, int]:
    return (observation.run_id, *observation.task.identity)


class ControlledStudyObservationLedgerV1(ContractModel):
    """The observation ledger (``type: controlled-study-observation-ledger``, digest 5.9).

    Rules: at most 100 000 observations; observation ``contentHash``es are unique (the
    original's rule); and, ours, at most one observation per run and execution identity
    ``(runId, taskId, scenarioId, modelId, replicate)`` — the invariant ``upsert`` keeps
    (every run of the original ledger satisfies it).
    """

    contract_type: ClassVar[str] = LEDGER_TYPE

    type: Literal["controlled-study-observation-ledger"]
    schema_version: SchemaVersion
    ledger_version: Reference
    observations: Annotated[list[ControlledStudyObservationV1], Field(max_length=MAX_OBSERVATIONS)]
    content_hash: Hash
    content_hash_algo: ContentHashAlgo

    @model_validator(mode="after")
    def _unique_observations(self) -> ControlledStudyObservationLedgerV1:
        hashes: set[str] = set()
        identities: set[tuple[str, str, str, str, int]] = set()
        for index, observation in enumerate(self.observations):
            if observation.content_hash in hashes:
                raise ValueError(f"observations[{index}].contentHash: duplicate observation hash "
                                 f"{observation.content_hash}")
            hashes.add(observation.content_hash)
            identity = _identity(observation)
            if identity in identities:
                raise ValueError(f"observations[{index}].task: run {observation.run_id!r} already has an "
                                 f"observation of {_describe_identity(observation)}")
            identities.add(identity)
        return self


def _describe_identity(observation: ControlledStudyObservationV1) -> str:
    task = observation.task
    return f"task {task.task_id!r}, scenario {task.scenario_id!r}, model {task.model_id!r}, replicate {task.replicate}"


Ledger = LoadedContract[ControlledStudyObservationLedgerV1]
Observation = LoadedContract[ControlledStudyObservationV1]


class LedgerConflictError(ContractError):
    """An upsert would replace an observation with different contents."""


def empty_ledger(ledger_version: str = "v1") -> Ledger:
    """A new, empty ledger (``contentHash`` ``EMPTY_LEDGER_HASH`` for ``v1``)."""
    payload = {"type": LEDGER_TYPE, "schemaVersion": 1, "ledgerVersion": ledger_version, "observations": []}
    return create_contract(ControlledStudyObservationLedgerV1, payload)


def create_observation(payload: dict[str, Any]) -> Observation:
    """Address a new observation document (its ``contentHash`` is computed here).

    Raises:
        ContractError: when the observation breaks its rules.
    """
    return create_contract(ControlledStudyObservationV1, payload)


def upsert_observation(ledger: Ledger, observation: Observation) -> Ledger:
    """Add ``observation`` to ``ledger`` (digest 5.9 ``upsertControlledStudyObservation``).

    The existing observation of the same run and execution identity ``(runId, taskId,
    scenarioId, modelId, replicate)`` decides: none → append and re-hash the ledger (a new
    ``LoadedContract``; the old one is unchanged); same ``contentHash`` → the same ledger
    object (an idempotent replay); different contents → ``LedgerConflictError``. The
    original matched on the whole task object, so an observation differing only in
    ``variantId`` or ``difficulty`` was appended beside the first; here it is a conflict
    (the resume key of digest section 7, item 28).

    Raises:
        ContentHashError: when the ledger or the observation does not verify (a writer never
            builds on an unverified ledger).
        LedgerConflictError: on a conflicting replacement.
        ContractError: when the ledger already holds 100 000 observations.
    """
    ledger.require_verified()
    observation.require_verified()
    new = observation.model
    for existing in ledger.model.observations:
        if _identity(existing) != _identity(new):
            continue
        if existing.content_hash == new.content_hash:
            return ledger
        raise LedgerConflictError(f"observation of run {new.run_id!r} for {_describe_identity(new)} already exists "
                                  f"with different contents ({existing.content_hash}); observations are never "
                                  f"replaced — record a recovery under a new runId")
    if len(ledger.model.observations) >= MAX_OBSERVATIONS:
        raise ContractError(f"observations: the ledger already holds the maximum of {MAX_OBSERVATIONS}")
    payload = {key: value for key, value in ledger.document.items()
               if key not in (CONTENT_HASH_KEY, CONTENT_HASH_ALGO_KEY)}
    payload["observations"] = [*ledger.document["observations"], observation.document]
    document = with_content_hash(payload)
    # The existing observations were validated when the ledger was loaded and the new one has
    # a distinct identity (checked above), so only the new list and hash change: no full
    # re-validation, which would make a run of n upserts quadratic.
    model = ledger.model.model_copy(update={"observations": [*ledger.model.observations, new],
                                            "content_hash": document[CONTENT_HASH_KEY]})
    return LoadedContract(model, document, ())


def ledger_file_text(ledger: Ledger) -> str:
    """The ledger file's text as the original writes it: 2-space JSON (JavaScript number and
    string forms) and a trailing newline. For the original ledger this reproduces its bytes."""
    return js_json(ledger.document, indent=2) + "\n"
