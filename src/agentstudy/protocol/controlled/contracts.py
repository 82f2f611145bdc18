"""Parse, verify and create content-addressed contracts: the validated model beside its JSON document.

A ``LoadedContract`` keeps the JSON document exactly as read (key order and values), so
re-serialising it reproduces the original's bytes and hash, next to the validated model and
the list of content-hash mismatches. Structural and semantic rules are always enforced
(``ContractError``); hash mismatches are reported, and the caller decides: writers and the
execution path call ``require_verified``; read-only commands may go on with a warning.

Verification (digest 5.2): the document's ``contentHash`` must equal the hash of the document
without that one key; every nested object that carries ``contentHash`` and ``contentHashAlgo``
(each observation of a ledger) is verified the same way, on its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import ValidationError

from agentstudy.protocol.controlled.formats import ContractModel
from agentstudy.protocol.controlled.hashing import (
    CONTENT_HASH_ALGO_KEY,
    CONTENT_HASH_KEY,
    JsonDocumentError,
    content_hash_of,
    parse_json_text,
    with_content_hash,
)

M = TypeVar("M", bound=ContractModel)

_UNION_TAGS = frozenset({"balanced-task-strata", "pairwise-task-strata"})
_FIELD_PREFIX = re.compile(r"^([A-Za-z][A-Za-z0-9_.\[\]]*): (.*)$", re.DOTALL)


class ContractError(ValueError):
    """A contract document is not JSON, breaks its schema, or breaks a semantic rule (one-line message)."""


class ContentHashError(ContractError):
    """One or more content hashes do not match; ``mismatches`` lists each one."""

    def __init__(self, message: str, mismatches: tuple[HashMismatch, ...]) -> None:
        """Keep the one-line ``message`` and the mismatches it describes."""
        super().__init__(message)
        self.mismatches = mismatches


@dataclass(frozen=True)
class HashMismatch:
    """A content hash that does not match its content.

    ``path`` is ``""`` for the document itself or a JSON path such as ``observations[236]``;
    ``position`` is the 1-based position in its array (``None`` at the top level);
    ``observed_at`` is the object's ``observedAt`` when it has one; ``stored`` and
    ``computed`` are 64-hex digests.
    """

    path: str
    position: int | None
    observed_at: str | None
    stored: str
    computed: str

    def describe(self) -> str:
        """One phrase naming the mismatch, e.g. ``observation 237 (observations[236], observedAt …)``."""
        if not self.path:
            return f"the top-level contentHash (stored {self.stored}, computed {self.computed})"
        details = [self.path]
        if self.observed_at is not None:
            details.append(f"observedAt {self.observed_at}")
        noun = self.path.rsplit(".", 1)[-1].split("[", 1)[0].removesuffix("s") or "object"
        return f"{noun} {self.position} ({', '.join(details)})"

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form: ``path``, ``position``, ``observedAt``, ``storedHash``, ``computedHash``."""
        return {"path": self.path, "position": self.position, "observedAt": self.observed_at,
                "storedHash": self.stored, "computedHash": self.computed}


def describe_mismatches(mismatches: tuple[HashMismatch, ...]) -> str:
    """One line: how many content hashes mismatch, then each one named."""
    noun = "content hash does" if len(mismatches) == 1 else "content hashes do"
    return f"{len(mismatches)} {noun} not match: " + "; ".join(item.describe() for item in mismatches)


@dataclass(frozen=True)
class LoadedContract(Generic[M]):
    """A validated contract: ``model``, the JSON ``document`` it came from, and its hash ``mismatches``."""

    model: M
    document: dict[str, Any]
    mismatches: tuple[HashMismatch, ...]

    @property
    def content_hash(self) -> str:
        """The ``contentHash`` written in the document (64 hex)."""
        value: str = self.document[CONTENT_HASH_KEY]
        return value

    @property
    def verified(self) -> bool:
        """True when every content hash in the document matches its content."""
        return not self.mismatches

    def require_verified(self) -> LoadedContract[M]:
        """Return ``self`` when verified.

        Raises:
            ContentHashError: naming every mismatch by path, position and ``observedAt``.
        """
        if self.mismatches:
            raise ContentHashError(describe_mismatches(self.mismatches), self.mismatches)
        return self


def _hashed_objects(value: Any, path: str, position: int | None) -> Iterator[tuple[str, int | None, Mapping[str, Any]]]:
    if isinstance(value, Mapping):
        if isinstance(value.get(CONTENT_HASH_KEY), str) and CONTENT_HASH_ALGO_KEY in value:
            yield path, position, value
        for key, item in value.items():
            yield from _hashed_objects(item, f"{path}.{key}" if path else key, None)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _hashed_objects(item, f"{path}[{index}]", index + 1)


def hash_mismatches(document: Mapping[str, Any]) -> tuple[HashMismatch, ...]:
    """Every content hash in ``document`` (itself first, then nested ones in document order) that
    does not match; empty when all verify."""
    found: list[HashMismatch] = []
    for path, position, item in _hashed_objects(document, "", None):
        computed = content_hash_of(item)
        if computed != item[CONTENT_HASH_KEY]:
            observed_at = item.get("observedAt")
            found.append(HashMismatch(path, position, observed_at if isinstance(observed_at, str) else None,
                                      str(item[CONTENT_HASH_KEY]), computed))
    return tuple(found)


def _location(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part not in _UNION_TAGS:
            text += f".{part}" if text else part
    return text


def _message(error: Mapping[str, Any]) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "required key is missing"
    return str(error["msg"]).removeprefix("Value error, ")


def describe_validation_error(error: ValidationError) -> str:
    """One line naming the first problem's field as a JSON path (``models[1].role: …``),
    followed by how many more problems there are."""
    errors = error.errors()
    first = errors[0]
    where, message = _location(tuple(first["loc"])), _message(first)
    prefixed = _FIELD_PREFIX.match(message)
    if prefixed:
        inner, message = prefixed.groups()
        where = f"{where}.{inner}" if where else inner
    text = f"{where}: {message}" if where else message
    if len(errors) > 1:
        text += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return text.replace("\n", " ")


def load_contract(model: type[M], document: Any) -> LoadedContract[M]:
    """Validate a parsed JSON document as ``model`` and compute its hash mismatches.

    The document is first passed through ``model.normalized_document`` (the original's
    defaults, which it hashes). Hash mismatches do not raise here.

    Raises:
        ContractError: ``invalid <type>: <path>: <problem>`` on one line.
    """
    if not isinstance(document, dict):
        raise ContractError(f"invalid {model.contract_type}: the document must be a JSON object")
    document = model.normalized_document(document)
    try:
        validated = model.model_validate(document)
    except ValidationError as error:
        raise ContractError(f"invalid {model.contract_type}: {describe_validation_error(error)}") from None
    except (TypeError, ValueError) as error:
        raise ContractError(f"invalid {model.contract_type}: {error}") from None
    try:
        mismatches = hash_mismatches(document)
    except (TypeError, ValueError) as error:
        raise ContractError(f"invalid {model.contract_type}: cannot be hashed: {error}") from None
    return LoadedContract(validated, document, mismatches)


def parse_contract(model: type[M], text: str) -> LoadedContract[M]:
    """Parse JSON text (strictly, see ``parse_json_text``) and ``load_contract`` it.

    Raises:
        ContractError: for invalid JSON or an invalid contract.
    """
    try:
        document = parse_json_text(text)
    except JsonDocumentError as error:
        raise ContractError(f"{model.contract_type}: {error}") from None
    return load_contract(model, document)


def create_contract(model: type[M], payload: Mapping[str, Any]) -> LoadedContract[M]:
    """Address and validate a new contract (digest 5.2 "Create"): hash the payload, then load it.

    Any ``contentHash``/``contentHashAlgo`` in ``payload`` is replaced; nested contracts must
    already carry their own hashes.

    Raises:
        ContractError: when the addressed document breaks the model's rules.
    """
    return load_contract(model, with_content_hash(model.normalized_document(dict(payload))))
