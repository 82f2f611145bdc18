"""What adjudication reads from a run ledger: its kind, the SHA-256 of its bytes, and a few fields.

The ledger is read, never written. Reading is tolerant (unknown fields are ignored) so the
ledger models may grow without breaking adjudication: only ``version``, ``status``,
``manifestSha256``, ``protocolHash``, ``repositories``, ``rehearsal``, ``mcpServer`` (name,
listed and denied tools) and each observation's ``taskId``, ``scenario``, ``repetition``,
``status``, ``answer``, ``transport`` and ``agent`` (a study of several agents) are used. The
kind is decided by the ledger's ``type``: a controlled-study ledger
(``controlled-study-observation-ledger``) is recognised and refused as not supported yet; a
minimal-study ledger has no ``type`` and a ``minimal-study-`` version (or a study file's
``agentstudy-study-v1``).
As for ``report``, the text must be strict JSON (no NaN or Infinity, no duplicated key) and a
minimal ledger may hold each task, scenario and repetition once (once per agent in a study of several
agents; the adjudicator never sees which agent answered), whatever ``--allow-unverified``
says; verifying its hashes and invariants (``protocol.ledger_integrity``) is the command's.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentstudy.io.ledger_journal import LedgerJournalError, read_ledger
from agentstudy.io.user_file import UserFileError, read_user_file
from agentstudy.protocol.controlled.hashing import JsonDocumentError, parse_json_text
from agentstudy.protocol.json_input import JsonInputError, load_json
from agentstudy.protocol.records import is_minimal_ledger_version

CONTROLLED_LEDGER_TYPE = "controlled-study-observation-ledger"
LedgerKind = Literal["minimal-study", "controlled-study"]


class LedgerError(ValueError):
    """The ledger cannot be adjudicated: unreadable, not JSON, of an unknown or unsupported kind, malformed."""


class _Tolerant(BaseModel):
    model_config = ConfigDict(extra="ignore", validate_by_name=True, validate_by_alias=True)


class _Observation(_Tolerant):
    task_id: str = Field(alias="taskId")
    scenario: str
    repetition: int
    status: str
    answer: str = ""
    transport: str | None = None
    agent: str | None = None


class _McpServer(_Tolerant):
    name: str
    listed_tools: list[str] = Field(default_factory=list, alias="listedTools")
    denied_tools: list[str] = Field(default_factory=list, alias="deniedTools")


class _Arm(_Tolerant):
    id: str
    label: str


class _Ledger(_Tolerant):
    version: str
    status: str
    manifest_sha256: str = Field(alias="manifestSha256")
    protocol_hash: str = Field(alias="protocolHash")
    repositories: dict[str, str]
    rehearsal: bool = False
    mcp_server: _McpServer | None = Field(default=None, alias="mcpServer")
    observations: list[_Observation]
    arms: list[_Arm] | None = None


@dataclass(frozen=True)
class LedgerObservation:
    """One observation as adjudication sees it; ``index`` is its 0-based position in the ledger."""

    index: int
    task_id: str
    scenario: str
    repetition: int
    status: str
    answer: str
    transport: str | None


@dataclass(frozen=True)
class MinimalLedgerView:
    """A minimal-study ledger, read-only.

    Attributes:
        path: the ledger file.
        sha256: SHA-256 hex of the ledger's bytes as read (the companion is bound to it).
        version, status, manifest_sha256, protocol_hash, repositories, rehearsal: ledger fields.
        mcp_server: the server name of the MCP arm (``None`` if the ledger has no ``mcpServer``).
        mcp_tools: the tools it listed and the deny list (names as the ledger has them).
        observations: every observation, in ledger order.
        arm_terms: a study file's arm ids and human labels (issue 18; empty for the seed's ledgers), blinded
            like the scenario names.
        unverified: why the ledger did not verify, when read with ``--allow-unverified`` (else empty).
    """

    path: Path
    sha256: str
    version: str
    status: str
    manifest_sha256: str
    protocol_hash: str
    repositories: dict[str, str]
    rehearsal: bool
    mcp_server: str | None
    mcp_tools: tuple[str, ...]
    observations: tuple[LedgerObservation, ...]
    arm_terms: tuple[str, ...] = ()
    unverified: tuple[str, ...] = ()


def ledger_kind(document: Any) -> LedgerKind:
    """Decide a parsed ledger's kind from its ``type`` (and, for a minimal ledger, its ``version``).

    Raises:
        LedgerError: not a JSON object, or neither kind.
    """
    if not isinstance(document, dict):
        raise LedgerError("the ledger is not a JSON object")
    kind = document.get("type")
    if kind == CONTROLLED_LEDGER_TYPE:
        return "controlled-study"
    version = document.get("version")
    if kind is None and is_minimal_ledger_version(version):
        return "minimal-study"
    raise LedgerError(f"unknown ledger kind (type {kind!r}, version {version!r})")


def read_ledger_bytes(path: Path) -> tuple[bytes, dict[str, Any], LedgerKind]:
    """Read a ledger file: its bytes, the parsed document and its kind.

    Raises:
        LedgerError: missing or unreadable file, not UTF-8 JSON, or an unknown kind.
    """
    try:
        data = read_user_file(path, what="the ledger")
    except UserFileError as error:
        raise LedgerError(f"ledger not found: {path}" if error.missing else str(error)) from None
    try:  # a crashed run's ledger is its last snapshot plus the journal beside it (issue 19)
        data = read_ledger(path, data).data
    except LedgerJournalError as error:
        raise LedgerError(str(error)) from None
    try:
        load_json(data)  # bounded: depth, number length, size
        document = parse_json_text(data.decode("utf-8"))  # strict: no duplicate keys, no NaN
    except JsonInputError as error:
        raise LedgerError(f"the ledger {path} {error}") from None
    except UnicodeDecodeError:
        raise LedgerError(f"the ledger {path} is not UTF-8 JSON") from None
    except JsonDocumentError as error:
        raise LedgerError(f"the ledger {path} is not UTF-8 JSON: {error}") from None
    return data, document, ledger_kind(document)


def minimal_view(path: Path, data: bytes, document: dict[str, Any]) -> MinimalLedgerView:
    """The adjudication view of a minimal-study ledger read as ``data`` (bytes) / ``document`` (parsed).

    Raises:
        LedgerError: a required field is missing or has the wrong type, or two observations share
            a task, scenario, repetition and agent.
    """
    try:
        ledger = _Ledger.model_validate(document)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise LedgerError(f"malformed minimal-study ledger at {where}: {first['msg']}") from None
    seen: set[tuple[str, str, int, str | None]] = set()
    for o in ledger.observations:  # a study of several agents holds each once per agent (issue 21 item 6)
        if (o.task_id, o.scenario, o.repetition, o.agent) in seen:
            whose = f" of agent {o.agent}" if o.agent else ""
            raise LedgerError(f"the ledger has two observations of {o.task_id} {o.scenario} repetition "
                              f"{o.repetition}{whose}")
        seen.add((o.task_id, o.scenario, o.repetition, o.agent))
    server = ledger.mcp_server
    return MinimalLedgerView(
        path=path,
        sha256=hashlib.sha256(data).hexdigest(),
        version=ledger.version,
        status=ledger.status,
        manifest_sha256=ledger.manifest_sha256,
        protocol_hash=ledger.protocol_hash,
        repositories=dict(ledger.repositories),
        rehearsal=ledger.rehearsal,
        mcp_server=server.name if server else None,
        mcp_tools=tuple([*server.listed_tools, *server.denied_tools]) if server else (),
        observations=tuple(
            LedgerObservation(i, o.task_id, o.scenario, o.repetition, o.status, o.answer, o.transport)
            for i, o in enumerate(ledger.observations)
        ),
        arm_terms=tuple(term for arm in ledger.arms or () for term in (arm.id, arm.label)),
    )

