"""Build the zero-spend example study: three tiny Git repositories and their manifest.

The corpora live as package data under ``rehearsal/corpora/<name>/``. Each one is
committed into a fresh Git repository with a fully pinned identity, date, message and
configuration, so the commit SHA is the same on every machine and can be recorded in
``example-manifest.json`` (a ``minimal-study-v1`` manifest).

Package data cannot reliably carry dotfiles, so a corpus file whose name starts with
``dot-`` is committed under the same name with a leading ``.`` instead (``dot-env.example``
becomes ``.env.example``). Line endings are normalised to LF and every file is mode 0644.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from agentstudy.io.git import git_argv, git_env

__all__ = [
    "COMMIT_DATE",
    "COMMIT_MESSAGE",
    "CORPORA_DIR",
    "EXAMPLE_MANIFEST",
    "ExampleStudy",
    "build_corpus_repository",
    "build_example_study",
    "corpus_files",
]

_HERE = Path(__file__).resolve().parent

CORPORA_DIR: Path = _HERE / "corpora"
"""Directory holding one sub-directory per example corpus."""

EXAMPLE_MANIFEST: Path = _HERE / "example-manifest.json"
"""The six-task ``minimal-study-v1`` manifest whose pins match the built repositories."""

COMMIT_DATE = "2026-10-01T00:00:00+00:00"
"""Author and committer date of every example commit (UTC)."""

COMMIT_MESSAGE = "Example corpus snapshot for agentstudy rehearsals\n"
"""Message of every example commit."""

_IDENTITY_NAME = "agentstudy example"
_IDENTITY_EMAIL = "example@agentstudy.invalid"
_DOT_PREFIX = "dot-"
_GIT_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class ExampleStudy:
    """A built example study.

    Attributes:
        manifest_path: ``dest/manifest.json``, a byte-for-byte copy of :data:`EXAMPLE_MANIFEST`.
        roots: repository name → absolute path of its checkout (``dest/<name>``), whose HEAD
            equals the manifest pin.
    """

    manifest_path: Path
    roots: dict[str, Path]


def corpus_files(name: str) -> dict[str, bytes]:
    """Return the files of corpus ``name`` as committed: repository path → LF-normalised bytes.

    Paths use ``/`` separators and are sorted. ``dot-`` file names are mapped to dotfiles;
    ``__pycache__`` directories, ``*.pyc`` files and real dotfiles in the package are ignored.

    Raises:
        FileNotFoundError: if ``CORPORA_DIR/name`` is not a directory.
    """
    base = CORPORA_DIR / name
    if not base.is_dir():
        raise FileNotFoundError(f"no example corpus named {name!r} under {CORPORA_DIR}")
    files: dict[str, bytes] = {}
    for item in sorted(base.rglob("*")):
        parts = item.relative_to(base).parts
        if not item.is_file() or item.is_symlink() or item.suffix == ".pyc":
            continue
        if any(part == "__pycache__" or part.startswith(".") for part in parts):
            continue
        mapped = [("." + p[len(_DOT_PREFIX) :]) if p.startswith(_DOT_PREFIX) else p for p in parts]
        files["/".join(mapped)] = item.read_bytes().replace(b"\r\n", b"\n")
    if not files:
        raise FileNotFoundError(f"example corpus {name!r} has no files")
    return dict(sorted(files.items()))


def _git_env() -> dict[str, str]:
    """The hardened git environment (``agentstudy.io.git.git_env``) plus the pinned identity and dates."""
    return {
        **git_env(),
        "TZ": "UTC",
        "GIT_AUTHOR_NAME": _IDENTITY_NAME,
        "GIT_AUTHOR_EMAIL": _IDENTITY_EMAIL,
        "GIT_AUTHOR_DATE": COMMIT_DATE,
        "GIT_COMMITTER_NAME": _IDENTITY_NAME,
        "GIT_COMMITTER_EMAIL": _IDENTITY_EMAIL,
        "GIT_COMMITTER_DATE": COMMIT_DATE,
    }


def _git(root: Path, *args: str) -> str:
    """Run hardened ``git -C root <pinned config> args`` and return stdout; raise RuntimeError on failure."""
    git = shutil.which("git")
    if git is None:
        raise RuntimeError("git executable not found on PATH")
    argv = [
        git,
        *git_argv(root)[1:],
        "-c",
        "commit.gpgsign=false",
        "-c",
        "core.autocrlf=false",
        *args,
    ]
    proc = subprocess.run(argv, env=_git_env(), capture_output=True, text=True, timeout=_GIT_TIMEOUT_S, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"git {args[0]} failed in {root} (exit {proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


def build_corpus_repository(name: str, root: Path) -> str:
    """Create ``root`` as a Git repository holding corpus ``name`` in one deterministic commit.

    Returns:
        The 40-hex SHA of the commit (HEAD of branch ``main``).

    Raises:
        FileExistsError: if ``root`` already exists.
        FileNotFoundError: if the corpus does not exist.
        RuntimeError: if a git command fails.
    """
    files = corpus_files(name)
    if root.exists():
        raise FileExistsError(f"refusing to overwrite existing path {root}")
    root.mkdir(parents=True)
    for rel, data in files.items():
        target = root.joinpath(*rel.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        target.chmod(0o644)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "--all", "--", ".")
    _git(root, "commit", "-q", "--no-verify", "-m", COMMIT_MESSAGE)
    return _git(root, "rev-parse", "HEAD").strip()


def _manifest_pins() -> dict[str, str]:
    data = json.loads(EXAMPLE_MANIFEST.read_text(encoding="utf-8"))
    repositories = data.get("repositories") if isinstance(data, dict) else None
    if not isinstance(repositories, dict) or not repositories:
        raise RuntimeError(f"{EXAMPLE_MANIFEST} has no repositories object")
    return {str(name): str(pin) for name, pin in repositories.items()}


def build_example_study(dest: Path) -> ExampleStudy:
    """Build every repository of :data:`EXAMPLE_MANIFEST` under ``dest`` and copy the manifest.

    Creates ``dest/<name>`` (a Git checkout on ``main`` with one commit) for each manifest
    repository and ``dest/manifest.json``. ``dest`` itself may exist.

    Raises:
        FileExistsError: if ``dest/<name>`` or ``dest/manifest.json`` already exists (checked
            before anything is written).
        RuntimeError: if a git command fails or a built HEAD differs from the manifest pin.
    """
    pins = _manifest_pins()
    dest = dest.resolve()
    manifest_path = dest / "manifest.json"
    for target in [*(dest / name for name in pins), manifest_path]:
        if target.exists() or target.is_symlink():
            raise FileExistsError(f"refusing to overwrite existing path {target}")
    roots: dict[str, Path] = {}
    for name, pin in pins.items():
        root = dest / name
        head = build_corpus_repository(name, root)
        if head != pin:
            raise RuntimeError(f"built {name} at {head}, but the example manifest pins {pin}")
        roots[name] = root
    shutil.copyfile(EXAMPLE_MANIFEST, manifest_path)
    return ExampleStudy(manifest_path=manifest_path, roots=roots)
