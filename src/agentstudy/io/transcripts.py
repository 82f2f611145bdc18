"""Private transcripts beside the ledger, for audit (issue 28 item 6).

Every attempt's raw agent output (Claude Code's stream-json, Codex's exec events, the http
transport's requests and responses as JSON lines) is kept in ``LEDGER.transcripts/`` (mode 0700),
one file per attempt (mode 0600, created exclusively: nothing existing is overwritten), with the
values of the credentials the run knows replaced by ``[redacted]`` before anything is written. The
observation records the file's name and SHA-256 (``transcriptFile``, ``transcriptSha256``); reports
and the end-of-run summary never read these files.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Hashable, Iterable, Mapping
from pathlib import Path

from agentstudy.protocol.file_names import joined_file_name
from agentstudy.protocol.redaction import REDACTED

SUFFIX = ".transcripts"
CREDENTIAL_ENV = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_AUTH_TOKEN", "AGENTSTUDY_GATEWAY_TOKEN")
"""Environment variables whose values never reach a transcript."""
MIN_SECRET_CHARS = 8
"""Shorter values are not treated as secrets (redacting ``1`` would garble every transcript)."""


class TranscriptError(OSError):
    """A transcript cannot be kept or opened (missing, altered, or the directory is not private)."""


def transcript_dir(ledger: Path) -> Path:
    """``LEDGER.transcripts`` beside ``ledger``."""
    return ledger.with_name(ledger.name + SUFFIX)


def transcript_name(task_id: str, scenario: str, repetition: int, agent: str | None, extension: str) -> str:
    """The file name of one attempt's transcript: ``task--scenario--rN[--agent].extension``, each part mapped
    injectively (``protocol.file_names``: a part with other characters gets a hash suffix; issue 40), so two
    attempts never share a file."""
    return joined_file_name([task_id, scenario, f"r{repetition}", *([agent] if agent else [])], extension)


def environment_secrets(environ: Mapping[str, str], extra: Iterable[str | None] = ()) -> tuple[str, ...]:
    """The credential values to redact: :data:`CREDENTIAL_ENV` from ``environ`` plus ``extra`` (e.g. the http
    transport's API key), at least :data:`MIN_SECRET_CHARS` long."""
    values = [environ.get(name) for name in CREDENTIAL_ENV] + list(extra)
    return tuple(sorted({v for v in values if v and len(v) >= MIN_SECRET_CHARS}, key=len, reverse=True))


def redact_bytes(data: bytes, secrets: Iterable[str]) -> bytes:
    """``data`` with every occurrence of each secret (UTF-8) replaced by ``[redacted]``."""
    for secret in secrets:
        data = data.replace(secret.encode("utf-8"), REDACTED.encode("ascii"))
    return data


class TranscriptStore:
    """Writes one run's transcripts into ``LEDGER.transcripts/`` (created 0700 on the first write).

    Raises (from :meth:`keep`):
        TranscriptError: the directory exists and is not a private directory of ours, or the file exists.
    """

    def __init__(self, ledger: Path, secrets: Iterable[str]) -> None:
        self.directory = transcript_dir(ledger)
        self._secrets = tuple(secrets)
        self.kept: dict[str, tuple[Hashable, str]] = {}
        """Each file kept so far, by name: whose it is (the caller's key) and its SHA-256 hex (issue 40: a second
        observation of the same attempt, after an internal error, names the file kept the first time)."""

    def _ensure_directory(self) -> None:
        with contextlib.suppress(FileExistsError):
            self.directory.mkdir(mode=0o700)
            self.directory.chmod(0o700)  # whatever the umask
        info = self.directory.lstat()
        if not stat.S_ISDIR(info.st_mode) or stat.S_IMODE(info.st_mode) != 0o700 or info.st_uid != os.getuid():
            raise TranscriptError(f"{self.directory} is not a private directory (0700) of this user")

    def keep(self, name: str, data: bytes) -> str:
        """Write ``data`` (redacted) as ``name``, mode 0600, never over an existing file; return its SHA-256 hex."""
        self._ensure_directory()
        clean = redact_bytes(data, self._secrets)
        path = self.directory / name
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            raise TranscriptError(f"{path} already exists") from None
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(clean)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError:  # a full disk: no partial file, and no empty directory, is left behind
            path.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                self.directory.rmdir()
            raise
        return hashlib.sha256(clean).hexdigest()


def open_transcript(ledger: Path, name: str, sha256: str | None) -> bytes:
    """The bytes of transcript ``name`` of ``ledger``, checked against the observation's ``sha256``.

    Raises:
        TranscriptError: the name is not a plain file name, the file is missing, or its hash differs.
    """
    if "/" in name or name in ("", ".", ".."):
        raise TranscriptError(f"{name!r} is not a transcript file name")
    path = transcript_dir(ledger) / name
    try:
        data = path.read_bytes()
    except OSError as error:
        raise TranscriptError(f"cannot read {path}: {error.strerror or error}") from None
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise TranscriptError(f"{path} does not match the SHA-256 the ledger records")
    return data


def transcript_problems(ledger: Path, observations: Iterable[Mapping[str, object]]) -> list[str]:
    """What is wrong with ``LEDGER.transcripts/`` when it exists (issue 40; ``agentstudy ledger``): not a plain
    directory of this user with mode 0700, an entry that is not a regular file of mode 0600 (a symlink
    included), a file an observation names (its transcript, or its MCP server's stderr) that is missing or whose
    SHA-256 is not the recorded one, or a file no observation names. Empty when the directory is absent
    (``--no-transcripts``, or none written yet)."""
    directory = transcript_dir(ledger)
    try:
        info = directory.lstat()
    except FileNotFoundError:
        return []
    except OSError as error:
        return [f"{directory}: cannot be read: {error.strerror or error}"]
    if not stat.S_ISDIR(info.st_mode):
        return [f"{directory} is not a directory (a symlink or a file)"]
    problems = []
    if stat.S_IMODE(info.st_mode) != 0o700 or info.st_uid != os.getuid():
        problems.append(f"{directory} has mode {stat.S_IMODE(info.st_mode):04o}, not a private directory (0700) "
                        "of this user")
    named = {str(o[f"{kind}File"]): o.get(f"{kind}Sha256") for o in observations
             for kind in ("transcript", "serverStderr") if isinstance(o.get(f"{kind}File"), str)}
    present = {entry.name: entry for entry in directory.iterdir()}
    for name, entry in sorted(present.items()):
        mode = entry.lstat().st_mode
        if not stat.S_ISREG(mode) or stat.S_IMODE(mode) != 0o600:
            problems.append(f"transcript {name} is not a regular file of mode 0600 (a symlink, a directory or "
                            "another mode)")
        elif name not in named:
            problems.append(f"transcript {name} is named by no observation")
        elif hashlib.sha256(entry.read_bytes()).hexdigest() != named[name]:
            problems.append(f"transcript {name} does not match the SHA-256 its observation records")
    problems.extend(f"transcript {name} is missing" for name in sorted(set(named) - set(present)))
    return problems
