"""Each task's repository for a ledger written before observations recorded it (issue 41 item 1).

``agentstudy report --manifest FILE``: the study file (or seed manifest) the ledger was run from names
every task's repository. The file must be the one the ledger records (its SHA-256 is the ledger's
``manifestSha256``) and name every task of the ledger; an attempt that records its repository keeps it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from agentstudy.protocol.manifest import ManifestError, load_manifest
from agentstudy.report.model import ReportInputError, Study


def with_manifest_repositories(study: Study, manifest: Path) -> Study:
    """``study`` with every attempt's ``repository`` filled in from ``manifest``'s tasks.

    Raises:
        ReportInputError: the file cannot be read or is invalid, is not the ledger's (SHA-256 differs from
            ``manifestSha256``), or does not name a task of the ledger.
    """
    try:
        loaded = load_manifest(manifest)
    except ManifestError as error:
        raise ReportInputError(str(error)) from None
    recorded = study.header.get("manifestSha256")
    if recorded is not None and recorded != loaded.manifest_sha256:
        raise ReportInputError(f"--manifest {manifest.name} is not the study file this ledger was run from "
                               f"(its SHA-256 is not the ledger's manifestSha256)")
    repository_of = {task.id: task.repository for task in loaded.manifest.tasks}
    missing = sorted({a.task_id for a in study.attempts if a.task_id not in repository_of})
    if missing:
        raise ReportInputError(f"--manifest {manifest.name} does not name the ledger's task {missing[0]!r}")
    attempts = tuple(a if a.repository is not None else replace(a, repository=repository_of[a.task_id])
                     for a in study.attempts)
    return replace(study, attempts=attempts)
