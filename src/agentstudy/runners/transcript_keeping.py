"""Keeping an attempt's private transcript as its observation is made (issue 28 item 6; ``io.transcripts``)."""

from __future__ import annotations

from pathlib import Path

from agentstudy.io.transcripts import TranscriptError, TranscriptStore, transcript_dir, transcript_name
from agentstudy.protocol.schedule import ScheduleEntry
from agentstudy.runners.preflight import PreflightError

SERVER_STDERR_EXTENSION = "server-stderr.txt"
"""The MCP server's stderr tail of an attempt, beside its transcript (``task--scenario--rN.server-stderr.txt``)."""


def transcript_store(keep: bool, ledger: Path, secrets: tuple[str, ...]) -> TranscriptStore | None:
    """The run's store (``None`` with ``--no-transcripts``).

    Raises:
        PreflightError: ``LEDGER.transcripts`` already exists (nothing existing is ever overwritten).
    """
    if not keep:
        return None
    if transcript_dir(ledger).exists() or transcript_dir(ledger).is_symlink():
        raise PreflightError(f"{transcript_dir(ledger)} already exists; choose another --output")
    return TranscriptStore(ledger, secrets)


def keep_transcript(store: TranscriptStore | None, entry: ScheduleEntry, data: bytes,
                    agent: str | None = None, extension: str = "jsonl", field: str = "transcript") -> dict[str, str]:
    """Write ``data`` as ``entry``'s transcript; the observation's ``transcript_file`` / ``transcript_sha256``
    fields (empty without a store, or when the file could not be written: a full disk must not cost the
    observation, whose checkpoint then says what failed; the observation then names no transcript).
    ``extension`` / ``field``: another file of the attempt kept the same way (the MCP server's stderr,
    ``server-stderr.txt`` -> ``server_stderr_file`` / ``server_stderr_sha256``; issue 39). The same attempt's file
    asked for again (its observation rebuilt after an internal error, issue 40) is the one already kept.

    Raises:
        TranscriptError: the directory is not private or the file already exists (never overwritten).
    """
    if store is None:
        return {}
    name = transcript_name(entry.task_id, entry.scenario, entry.repetition, agent, extension)
    owner = (entry.task_id, entry.scenario, entry.repetition, agent)
    if name in store.kept and store.kept[name][0] == owner:  # the attempt observed again (issue 40)
        return {f"{field}_file": name, f"{field}_sha256": store.kept[name][1]}
    try:
        digest = store.keep(name, data)
    except TranscriptError:
        raise
    except OSError:
        return {}
    store.kept[name] = (owner, digest)
    return {f"{field}_file": name, f"{field}_sha256": digest}


__all__ = ["SERVER_STDERR_EXTENSION", "TranscriptError", "keep_transcript", "transcript_store"]
