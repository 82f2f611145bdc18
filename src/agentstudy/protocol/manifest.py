"""The minimal-study manifest (seed 000; digest section 1.1) and its validation.

A manifest is the authoritative definition of a minimal study: six tasks over three
repositories pinned to 40-hex commits, three repetitions, and the two scenarios in their
forward order. Loading is strict: an unknown key, a wrong count, an unsafe source path, a
control character in an id or a text, or a question whose prompt (after templating,
``protocol.prompt.study_prompt``) exceeds 8 KiB is a ``ManifestError`` and no partial study is
built, so a manifest that loads never makes a run refuse an attempt for its input. The JSON is
read with ``protocol.json_input`` bounds (nesting depth, number length).
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agentstudy.protocol.json_input import JsonInputError, describe_os_error, load_json
from agentstudy.protocol.prompt import study_prompt

MANIFEST_VERSION = "minimal-study-v1"
REPETITIONS = 3
REPOSITORY_ONLY = "repository-only"
DOC_BRIDGE_MCP = "doc-bridge-mcp"
SCENARIOS: tuple[str, str] = (REPOSITORY_ONLY, DOC_BRIDGE_MCP)
"""The two scenarios in their forward order."""
REPOSITORY_COUNT = 3
TASK_COUNT = 6
TASKS_PER_REPOSITORY = 2

PIN_PATTERN = re.compile(r"^[a-f0-9]{40}$")
SAFE_PATH_PATTERN = re.compile(r"^[a-zA-Z0-9_./-]+$")


_TEXT_CONTROLS_ALLOWED = frozenset("\t\n")


def control_character(value: str, *, text: bool) -> str | None:
    """The first forbidden character of ``value`` as ``U+XXXX``, or ``None``.

    Forbidden everywhere: control characters (``Cc``: NUL, C0, DEL, C1), format characters
    (``Cf``), line and paragraph separators and lone surrogates. ``text=True`` (a question, an
    expected proposition) allows tab and line feed, and format characters (a zero-width
    joiner inside an emoji is text).
    """
    for character in value:
        if text and character in _TEXT_CONTROLS_ALLOWED:
            continue
        category = unicodedata.category(character)
        if category in ("Cc", "Zl", "Zp", "Cs") or (category == "Cf" and not text):
            return f"U+{ord(character):04X}"
    return None


def _plain(value: str, what: str, *, text: bool = False) -> str:
    found = control_character(value, text=text)
    if found is not None:
        raise ValueError(f"{what} contains the control character {found}")
    return value


class ManifestError(ValueError):
    """The manifest file is missing, unreadable, not JSON, or breaks the seed's rules."""


def is_safe_source_path(path: str) -> bool:
    """Tell whether a repository-relative path is safe to read at a pin.

    Safe means: only ``[A-Za-z0-9_./-]``, not absolute, no empty segment, no ``..`` and
    no segment that starts with a dot (digest section 2.2, ``safePath``).
    """
    if not path or not SAFE_PATH_PATTERN.fullmatch(path) or path.startswith("/"):
        return False
    return all(segment and not segment.startswith(".") for segment in path.split("/"))


class Task(BaseModel):
    """One pinned question: ``id``, ``repository``, ``category``, ``question``, ``sources``, ``expected``.

    ``expected`` holds the rubric propositions; they are never sent to an agent.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    id: str = Field(min_length=1)
    repository: str = Field(min_length=1)
    category: str = Field(min_length=1)
    question: str = Field(min_length=1)
    sources: list[str] = Field(min_length=1)
    expected: list[str] = Field(min_length=1)

    @field_validator("id", "repository", "category")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        return _plain(value, "the name")

    @field_validator("question")
    @classmethod
    def _question_has_text(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("question is blank")
        _plain(value, "the question", text=True)
        study_prompt(value)  # the prompt after templating must fit the 8 KiB limit
        return value

    @field_validator("sources")
    @classmethod
    def _sources_are_safe(cls, value: list[str]) -> list[str]:
        for source in value:
            if not is_safe_source_path(source):
                raise ValueError(f"unsafe source path {source!r}")
        return value

    @field_validator("expected")
    @classmethod
    def _expected_has_text(cls, value: list[str]) -> list[str]:
        if any(not item.strip() for item in value):
            raise ValueError("an expected proposition is blank")
        for item in value:
            _plain(item, "an expected proposition", text=True)
        return value


class Manifest(BaseModel):
    """A ``minimal-study-v1`` manifest (seed 000, "The JSON manifest is authoritative").

    Rules (digest 1.1): ``version`` is ``minimal-study-v1``; ``repetitions`` is 3;
    ``scenarios`` is exactly ``["repository-only", "doc-bridge-mcp"]``; three repositories
    pinned to 40 lowercase hex digits; six tasks with distinct ids, each naming a declared
    repository, two per repository.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    version: str
    repetitions: int
    scenarios: list[str]
    repositories: dict[str, str]
    tasks: list[Task]

    @model_validator(mode="after")
    def _check_matrix(self) -> Manifest:
        if self.version != MANIFEST_VERSION:
            raise ValueError(f"version must be {MANIFEST_VERSION!r}")
        if self.repetitions != REPETITIONS:
            raise ValueError(f"repetitions must be {REPETITIONS}")
        if tuple(self.scenarios) != SCENARIOS:
            raise ValueError(f"scenarios must be exactly {list(SCENARIOS)}")
        if len(self.repositories) != REPOSITORY_COUNT:
            raise ValueError(f"there must be exactly {REPOSITORY_COUNT} repositories")
        for name, pin in self.repositories.items():
            if not name or control_character(name, text=False) is not None:
                raise ValueError(f"repository name {name!r} is empty or contains a control character")
            if not PIN_PATTERN.fullmatch(pin):
                raise ValueError(f"repository {name!r} pin must be 40 lowercase hex digits")
        if len(self.tasks) != TASK_COUNT:
            raise ValueError(f"there must be exactly {TASK_COUNT} tasks")
        ids = [task.id for task in self.tasks]
        if len(set(ids)) != len(ids):
            raise ValueError("task ids must be distinct")
        for task in self.tasks:
            if task.repository not in self.repositories:
                raise ValueError(f"task {task.id!r} names an undeclared repository {task.repository!r}")
        per_repository = Counter(task.repository for task in self.tasks)
        for name in self.repositories:
            if per_repository[name] != TASKS_PER_REPOSITORY:
                raise ValueError(f"repository {name!r} must have exactly {TASKS_PER_REPOSITORY} tasks")
        return self

    def task(self, task_id: str) -> Task:
        """Return the task with ``task_id``; raise ``KeyError`` if there is none."""
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise KeyError(task_id)


class LoadedManifest(BaseModel):
    """A validated manifest with its ``protocolHash`` (digest section 1.6) and the SHA-256 of its bytes (hex)."""

    model_config = ConfigDict(frozen=True)

    manifest: Manifest
    protocol_hash: str
    manifest_sha256: str


def protocol_hash(document: Any) -> str:
    """SHA-256 hex of the compact JSON of the parsed manifest, in file key order.

    This is the original runner's ``protocolHash``: ``JSON.stringify`` of the parsed
    document (keys in their file order, no whitespace, non-ASCII unescaped), UTF-8 encoded.
    """
    text = json.dumps(document, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _first_error(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    message = str(first["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def parse_manifest(text: str) -> LoadedManifest:
    """Parse and validate manifest JSON text.

    Raises:
        ManifestError: with a one-line reason when the text is not JSON or breaks a rule.
    """
    try:
        document = load_json(text)
    except JsonInputError as error:
        raise ManifestError(f"manifest {error}") from None
    if not isinstance(document, dict):
        raise ManifestError("manifest must be a JSON object")
    try:
        manifest = Manifest.model_validate(document)
    except ValidationError as error:
        raise ManifestError(f"invalid manifest: {_first_error(error)}") from None
    return LoadedManifest(
        manifest=manifest,
        protocol_hash=protocol_hash(document),
        manifest_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
    )


def load_manifest(path: Path) -> LoadedManifest:
    """Read and validate a manifest file (UTF-8 JSON).

    Raises:
        ManifestError: when the file is missing or unreadable, or its content is invalid.
    """
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ManifestError(f"manifest not found: {path}") from None
    except OSError as error:
        raise ManifestError(f"cannot read manifest {path}: {describe_os_error(error)}") from None
    except UnicodeDecodeError as error:
        raise ManifestError(f"manifest {path} is not UTF-8 (byte {error.start})") from None
    return parse_manifest(text)
