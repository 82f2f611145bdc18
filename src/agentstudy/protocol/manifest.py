"""The minimal-study manifest (seed 000; digest section 1.1), its validation, and the loader of both formats.

``parse_manifest``/``load_manifest`` also read the general study file (``agentstudy-study-v1``,
``protocol.study_file``; issue 18), chosen by the document's ``version``.

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
from collections import Counter
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from agentstudy.protocol.analysis import AnalysisPlan
from agentstudy.protocol.json_input import JsonInputError, describe_os_error, load_json, refuse_duplicate_keys
from agentstudy.protocol.study_agents import study_agents
from agentstudy.protocol.study_arms import DOC_BRIDGE_MCP, REPOSITORY_ONLY, SCENARIOS, StudyArms
from agentstudy.protocol.study_file import STUDY_VERSION, StudyFile
from agentstudy.protocol.task import (
    ManifestError,
    Task,
    check_pins,
    check_task_ids_and_repositories,
    first_error,
    protocol_hash,
)

__all__ = [
    "DOC_BRIDGE_MCP",
    "MANIFEST_VERSION",
    "REPOSITORY_ONLY",
    "SCENARIOS",
    "STUDY_VERSION",
    "LoadedManifest",
    "Manifest",
    "ManifestError",
    "StudyDefinition",
    "StudyFile",
    "Task",
    "load_manifest",
    "parse_manifest",
    "protocol_hash",
]

MANIFEST_VERSION = "minimal-study-v1"
REPETITIONS = 3
REPOSITORY_COUNT = 3
TASK_COUNT = 6
TASKS_PER_REPOSITORY = 2


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
        check_pins(self.repositories)
        if len(self.tasks) != TASK_COUNT:
            raise ValueError(f"there must be exactly {TASK_COUNT} tasks")
        check_task_ids_and_repositories(self.tasks, self.repositories)
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


StudyDefinition = Manifest | StudyFile
"""Either format once loaded (issue 18): what schedules, preflight and runners read."""


class LoadedManifest(BaseModel):
    """A validated study definition with its ``protocolHash`` (digest section 1.6) and the SHA-256 of its bytes (hex).

    ``manifest`` is a seed ``minimal-study-v1`` :class:`Manifest` or an ``agentstudy-study-v1``
    :class:`~agentstudy.protocol.study_file.StudyFile` (issue 18); both have ``version``,
    ``repetitions``, ``scenarios``, ``repositories``, ``tasks`` and ``task(id)``.
    """

    model_config = ConfigDict(frozen=True)

    manifest: StudyDefinition
    protocol_hash: str
    manifest_sha256: str

    @property
    def arms(self) -> StudyArms | None:
        """The study file's arms, or ``None`` for a seed manifest (whose ledgers carry no ``arms``)."""
        return self.manifest.arms if isinstance(self.manifest, StudyFile) else None

    @property
    def analysis(self) -> AnalysisPlan | None:
        """The study file's declared ``analysis`` section (issue 30), ``None`` when absent or a seed manifest
        (the report then uses ``protocol.analysis.DEFAULT_ANALYSIS`` and says so)."""
        return self.manifest.analysis if isinstance(self.manifest, StudyFile) else None

    @property
    def full_attempts(self) -> int:
        """Attempts of the full schedule: tasks × repetitions × 2 arms × agents (36 for the seed)."""
        return len(self.manifest.tasks) * self.manifest.repetitions * len(SCENARIOS) * len(self.agents)

    @property
    def agents(self) -> tuple[str, ...]:
        """The study's agents (``protocol.study_agents.study_agents``: ``("claude-code",)`` unless listed)."""
        return study_agents(self.manifest)


def parse_manifest(text: str) -> LoadedManifest:
    """Parse and validate manifest JSON text: a seed manifest, or a study file when ``version`` is
    ``agentstudy-study-v1`` (issue 18; the same protocol hash function for both).

    Raises:
        ManifestError: with a one-line reason when the text is not JSON, gives a key twice in
            one object (the last would silently win), or breaks a rule.
    """
    try:
        document = load_json(text, object_pairs_hook=refuse_duplicate_keys)
    except JsonInputError as error:
        verb = "has a " if str(error).startswith("duplicated") else ""
        raise ManifestError(f"manifest {verb}{error}") from None
    if not isinstance(document, dict):
        raise ManifestError("manifest must be a JSON object")
    model: type[Manifest] | type[StudyFile] = StudyFile if document.get("version") == STUDY_VERSION else Manifest
    try:
        manifest = model.model_validate(document)
    except ValidationError as error:
        what = "study file" if model is StudyFile else "manifest"
        raise ManifestError(f"invalid {what}: {first_error(error)}") from None
    return LoadedManifest(
        manifest=manifest,
        protocol_hash=protocol_hash(document),
        manifest_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
    )


def load_manifest(path: Path) -> LoadedManifest:
    """Read and validate a manifest or study file (UTF-8 JSON; see :func:`parse_manifest`).

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
