"""Shared formats of the controlled-study contracts (digest section 5.1) and their strict base model.

Formats: ``hash`` (64 lowercase hex), ``identifier`` (``[a-z][a-z0-9-]{0,127}``), ``reference``
(``[a-z0-9][a-z0-9._:-]{0,255}``), ``modelReference`` (``reference`` plus ``/``), ``evidenceId``
(1–256 characters without NUL/CR/LF), ``safeText`` (1–2048 characters that pass
``is_safe_study_text``). Lengths are counted in UTF-16 code units, as the original counts them.

Numbers follow JSON, not Python: an integer field accepts ``3`` and ``3.0`` (the same JSON
number) but never ``true`` or ``"3"``; a number field accepts any finite JSON number.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic.alias_generators import to_camel

HASH_PATTERN = r"^[a-f0-9]{64}$"
IDENTIFIER_PATTERN = r"^[a-z][a-z0-9-]{0,127}$"
REFERENCE_PATTERN = r"^[a-z0-9][a-z0-9._:-]{0,255}$"
MODEL_REFERENCE_PATTERN = r"^[a-z0-9][a-z0-9._:/-]{0,255}$"

_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_UNSAFE_TEXT = re.compile(
    r"(?:^|[\\/])(?:Users|private|tmp|home)[\\/]"
    rf"|(?:api[_-]?key|token|password|secret)[{_JS_SPACE}]*[:=]"
    r"|-----BEGIN"
    r"|https?://",
    re.IGNORECASE | re.ASCII,
)
_CONTROL = re.compile("[\x00\r\n]")


def js_length(value: str) -> int:
    """Length of a string in UTF-16 code units (JavaScript's ``length``)."""
    return len(value) + sum(1 for char in value if ord(char) > 0xFFFF)


def is_safe_study_text(value: str) -> bool:
    """Tell whether public study text is free of paths, URLs and credential material (digest 5.1).

    Rejected, case-insensitively (ASCII case folding, as JavaScript's ``/i`` does): ``Users``,
    ``private``, ``tmp`` or ``home`` at the start or after ``/`` or ``\\`` and followed by ``/``
    or ``\\``; ``api_key``/``api-key``/``apikey``/``token``/``password``/``secret`` followed by
    optional white space and ``:`` or ``=``; ``-----BEGIN``; ``http://`` and ``https://``.
    """
    return _UNSAFE_TEXT.search(value) is None


def _length_between(low: int, high: int) -> Callable[[str], str]:
    def check(value: str) -> str:
        length = js_length(value)
        if not low <= length <= high:
            raise ValueError(f"must be {low}–{high} characters long (UTF-16 units), got {length}")
        return value

    return check


def _safe(value: str) -> str:
    if not is_safe_study_text(value):
        raise ValueError("unsafe study text: public text may not hold paths, URLs, credentials or key material")
    return value


def _no_control(value: str) -> str:
    if _CONTROL.search(value):
        raise ValueError("must not contain NUL, CR or LF")
    return value


def integral(value: Any) -> Any:
    """A JSON number with no fraction is an integer, whatever its spelling (``3.0``)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _not_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("must be a number, not a boolean")
    return value


Hash = Annotated[str, Field(pattern=HASH_PATTERN)]
Identifier = Annotated[str, Field(pattern=IDENTIFIER_PATTERN)]
Reference = Annotated[str, Field(pattern=REFERENCE_PATTERN)]
ModelReference = Annotated[str, Field(pattern=MODEL_REFERENCE_PATTERN)]
EvidenceId = Annotated[str, Field(min_length=1, max_length=256), AfterValidator(_length_between(1, 256)),
                       AfterValidator(_no_control)]
SafeText = Annotated[
    str,
    Field(min_length=1, max_length=2048, description="1–2048 characters without paths, URLs or credentials"),
    AfterValidator(_length_between(1, 2048)),
    AfterValidator(_safe),
]
MeasurementName = Annotated[str, Field(min_length=1, max_length=128), AfterValidator(_length_between(1, 128))]

NonNegativeInt = Annotated[int, Field(ge=0), BeforeValidator(integral)]
PositiveInt = Annotated[int, Field(gt=0), BeforeValidator(integral)]
JsonInt = Annotated[int, BeforeValidator(integral)]
NonNegativeNumber = Annotated[float, Field(ge=0, allow_inf_nan=False)]
SchemaVersion = Annotated[Literal[1], BeforeValidator(_not_bool)]
ContentHashAlgo = Literal["sha256-normalized-v1"]
"""The value of ``contentHashAlgo`` (``CONTENT_HASH_ALGO``)."""

TokenMethod = Literal["provider", "estimate"]
TaskOutcome = Literal["success", "partial", "incorrect", "incomplete", "blocked"]
EvidenceQuality = Literal["high", "medium", "low"]
SafetyOutcome = Literal["safe", "unsafe", "not-applicable"]
ScenarioId = Literal["repository-only", "deterministic-doc-bridge", "registry-assisted"]
SCENARIO_IDS: tuple[ScenarioId, ...] = ("repository-only", "deterministic-doc-bridge", "registry-assisted")
Category = Literal["discovery", "architecture", "documentation", "implementation"]
CATEGORIES: tuple[Category, ...] = ("discovery", "architecture", "documentation", "implementation")
Difficulty = Literal["easy", "medium", "hard"]


class ContractModel(BaseModel):
    """Base of every controlled-study JSON contract: strict, immutable, camelCase on the wire.

    - Unknown keys are rejected (``extra="forbid"``), and only the camelCase JSON names are
      accepted (a snake_case key is an unknown key).
    - An optional field is absent or holds a value: an explicit ``null`` is rejected, as in
      the original; only the fields named in ``nullable_fields`` (JSON names) may be ``null``,
      and they are then required.
    - ``to_document()`` writes the JSON object in declaration order (the original writer's
      order) with absent optional fields omitted and required nulls kept.
    """

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        frozen=True,
        alias_generator=to_camel,
        validate_by_alias=True,
        validate_by_name=False,
        serialize_by_alias=True,
        field_title_generator=lambda name, _field: to_camel(name),
    )

    nullable_fields: ClassVar[frozenset[str]] = frozenset()
    contract_type: ClassVar[str] = "document"
    """The ``type`` value of a top-level contract (used in messages and the schema registry)."""

    @classmethod
    def normalized_document(cls, document: dict[str, Any]) -> dict[str, Any]:
        """The document as the original hashes it; by default the document itself.

        A contract whose original schema fills defaults before hashing overrides this.
        """
        return document

    @model_validator(mode="before")
    @classmethod
    def _reject_null_optionals(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key, value in data.items():
                if value is None and key not in cls.nullable_fields and key in _aliases(cls):
                    advice = "is required" if key in _required(cls) else "omit the key instead"
                    raise ValueError(f"{key}: null is not allowed ({advice})")
        return data

    @model_serializer(mode="wrap")
    def _omit_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {key: value for key, value in data.items() if value is not None or key in self.nullable_fields}

    def to_document(self) -> dict[str, Any]:
        """The JSON object of this model (camelCase keys, declaration order, absent fields omitted)."""
        document: dict[str, Any] = self.model_dump(mode="python", by_alias=True)
        return document


@cache
def _aliases(model: type[BaseModel]) -> frozenset[str]:
    return frozenset(field.alias or name for name, field in model.model_fields.items())


@cache
def _required(model: type[BaseModel]) -> frozenset[str]:
    return frozenset(field.alias or name for name, field in model.model_fields.items() if field.is_required())


def unique(values: list[str]) -> str | None:
    """The first value that occurs twice in ``values``, or ``None`` when all are distinct."""
    seen: set[str] = set()
    for value in values:
        if value in seen:
            return value
        seen.add(value)
    return None
