"""Controlled-study ledger files: read and verify, persist atomically, create exclusively, replace one observation.

A ledger is written in the original's form (2-space JSON, JavaScript number and string forms,
trailing newline; ``ledger_file_text``) with mode 0600, by atomic replacement
(``agentstudy.io.atomic.write_text_atomic``): a reader sees the old or the new ledger, never a
torn one. Every writer works only on a verified ledger.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from agentstudy.io.atomic import write_text_atomic
from agentstudy.io.ledger_store import OutputExistsError, OutputPathError, create_new_file, place_outside
from agentstudy.protocol.controlled.contracts import ContractError, LoadedContract, parse_contract
from agentstudy.protocol.controlled.hashing import CONTENT_HASH_ALGO_KEY, CONTENT_HASH_KEY, with_content_hash
from agentstudy.protocol.controlled.ledger import (
    ControlledStudyObservationLedgerV1,
    Ledger,
    Observation,
    empty_ledger,
    ledger_file_text,
)
from agentstudy.protocol.json_input import describe_os_error

MAX_LEDGER_BYTES = 256 * 1024 * 1024


class LedgerFileError(ValueError):
    """A ledger file cannot be used: unreadable, invalid, unverified, or a path that may not be written."""


def read_ledger(path: Path, *, missing_ok: bool) -> Ledger:
    """Read, validate and verify a ledger; a missing file is an empty ``v1`` ledger when ``missing_ok``.

    Raises:
        LedgerFileError: unreadable, too large, invalid, or any content hash mismatch (one line).
    """
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        if missing_ok:
            return empty_ledger()
        raise LedgerFileError(f"{path}: cannot read: no such file") from None
    except OSError as error:
        raise LedgerFileError(f"{path}: cannot read: {describe_os_error(error)}") from None
    try:
        if size > MAX_LEDGER_BYTES:
            raise LedgerFileError(f"{path}: larger than {MAX_LEDGER_BYTES} bytes")
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise LedgerFileError(f"{path}: cannot read: {describe_os_error(error)}") from None
    except UnicodeDecodeError:
        raise LedgerFileError(f"{path}: cannot read: not UTF-8") from None
    try:
        return parse_contract(ControlledStudyObservationLedgerV1, text).require_verified()
    except ContractError as error:
        raise LedgerFileError(f"{path}: {error}") from None


def check_ledger_path(path: Path, forbidden_roots: Iterable[Path]) -> Path:
    """The absolute ledger path, refused when it lies inside a repository root (a provider's
    working directory) or its directory does not exist.

    Raises:
        LedgerFileError: with a one-line reason (any ``OSError`` on the path but "missing" included).
    """
    try:
        target = place_outside(path, forbidden_roots)
    except OutputPathError as error:
        raise LedgerFileError(str(error)) from None
    try:
        target.lstat()
    except FileNotFoundError:
        pass  # a new ledger
    except OSError as error:  # a name too long, a symlink loop, a component that is a file
        raise LedgerFileError(f"{target}: {describe_os_error(error)}") from None
    return target


def persist_ledger(path: Path, ledger: Ledger) -> None:
    """Atomically write ``ledger`` (verified) to ``path``, mode 0600.

    Raises:
        ContentHashError: when the ledger does not verify. OSError: when it cannot be written.
    """
    write_text_atomic(path, ledger_file_text(ledger.require_verified()), mode=0o600)


def create_ledger_file(path: Path, ledger: Ledger) -> None:
    """Create ``path`` (mode 0600) holding ``ledger``; never overwrite, never leave a partial file.

    Uses ``io.ledger_store.create_new_file``: a full disk or an unwritable directory leaves nothing.

    Raises:
        LedgerFileError: when the path exists (even as a dangling symlink) or cannot be created.
    """
    data = ledger_file_text(ledger.require_verified()).encode("utf-8")
    try:
        create_new_file(path, data)
    except OutputExistsError:
        raise LedgerFileError(f"{path} already exists; the output must be a new file") from None
    except OutputPathError as error:
        raise LedgerFileError(str(error)) from None


def replace_observation(ledger: Ledger, index: int, observation: Observation) -> Ledger:
    """A new ledger with ``observations[index]`` replaced by ``observation`` and the ledger re-hashed.

    Used by adjudication, which re-records an observation with its verdict; the run identity
    must stay the same. The other observations were validated when the ledger was read and are
    not validated again.

    Raises:
        ContentHashError: an unverified ledger or observation. IndexError: no such index.
        ContractError: the replacement changes the run or execution identity.
    """
    ledger.require_verified()
    observation.require_verified()
    old = ledger.model.observations[index]
    new = observation.model
    if (old.run_id, old.task.identity) != (new.run_id, new.task.identity):
        raise ContractError("a replacement must keep the run id and the execution identity")
    observations = list(ledger.model.observations)
    observations[index] = new
    documents = list(ledger.document["observations"])
    documents[index] = observation.document
    payload = {key: value for key, value in ledger.document.items()
               if key not in (CONTENT_HASH_KEY, CONTENT_HASH_ALGO_KEY)}
    payload["observations"] = documents
    document = with_content_hash(payload)
    if any(item.content_hash == new.content_hash for position, item in enumerate(observations) if position != index):
        raise ContractError("the replacement duplicates another observation's content hash")
    model = ledger.model.model_copy(update={"observations": observations, "content_hash": document[CONTENT_HASH_KEY]})
    return LoadedContract(model, document, ())
