"""One study task and the text rules every study document shares (seed 000; issue 18). Pure.

A :class:`Task` is the same in a ``minimal-study-v1`` manifest and an ``agentstudy-study-v1``
study file: a pinned question, its safe source paths and its rubric propositions. The helpers
here (control characters, safe paths, 40-hex pins, the protocol hash, the one-line error of a
pydantic failure) are shared by both loaders (``protocol.manifest``, ``protocol.study_file``).
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agentstudy.protocol.file_names import colliding_ids
from agentstudy.protocol.prompt import study_prompt

PIN_PATTERN = re.compile(r"^[a-f0-9]{40}$")
SAFE_PATH_PATTERN = re.compile(r"^[a-zA-Z0-9_./-]+$")


_TEXT_CONTROLS_ALLOWED = frozenset("\t\n")


def control_character(value: str, *, text: bool) -> str | None:
    """The first forbidden character of ``value`` as its code point (``"U+0007"`` for BEL), or ``None``.

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


def plain_text(value: str, what: str, *, text: bool = False) -> str:
    """``value`` unchanged; ``ValueError`` naming ``what`` if it holds a forbidden character (``control_character``)."""
    found = control_character(value, text=text)
    if found is not None:
        raise ValueError(f"{what} contains the control character {found}")
    return value


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
        return plain_text(value, "the name")

    @field_validator("question")
    @classmethod
    def _question_has_text(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("question is blank")
        plain_text(value, "the question", text=True)
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
            plain_text(item, "an expected proposition", text=True)
        return value



class ManifestError(ValueError):
    """A manifest or study file is missing, unreadable, not JSON, or breaks its format's rules (one line)."""


def check_task_ids_and_repositories(tasks: Sequence[Task], repositories: Mapping[str, str]) -> None:
    """Refuse task ids given twice (or mapping to one file name) and a task naming an undeclared repository
    (seed manifest and study file).

    Raises:
        ValueError: the first broken rule.
    """
    ids = [task.id for task in tasks]
    if len(set(ids)) != len(ids):
        raise ValueError("task ids must be distinct")
    collision = colliding_ids(ids)
    if collision is not None:  # cannot happen by construction; refused before anything is reserved (issue 40)
        raise ValueError(f"task ids {collision[0]!r} and {collision[1]!r} map to one file name")
    for task in tasks:
        if task.repository not in repositories:
            raise ValueError(f"task {task.id!r} names an undeclared repository {task.repository!r}")


def check_pins(repositories: dict[str, str]) -> None:
    """Refuse an empty repository name, one with a control character, or a pin that is not 40 lowercase hex.

    Raises:
        ValueError: the first problem, as one line.
    """
    for name, pin in repositories.items():
        if not name or control_character(name, text=False) is not None:
            raise ValueError(f"repository name {name!r} is empty or contains a control character")
        if not PIN_PATTERN.fullmatch(pin):
            raise ValueError(f"repository {name!r} pin must be 40 lowercase hex digits")


def protocol_hash(document: Any) -> str:
    """SHA-256 hex of the compact JSON of the parsed manifest, in file key order.

    This is the original runner's ``protocolHash``: ``JSON.stringify`` of the parsed
    document (keys in their file order, no whitespace, non-ASCII unescaped), UTF-8 encoded.
    A study file's hash is the same function of its document.
    """
    text = json.dumps(document, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def first_error(error: ValidationError) -> str:
    """The first pydantic error as one line: ``where: message``.

    An unknown key is named before anything else, so a typo (``repetiton``) is reported as itself
    rather than as the missing key it was meant to be.
    """
    errors = error.errors()
    first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    where = ".".join(str(part) for part in first["loc"])
    message = str(first["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message
