"""The public-path filter of a pinned corpus (seed 000, "CLI transport contract"; ARCHITECTURE decision 7). Pure.

One filter decides what any arm can see of a corpus: the agent's per-attempt export, the
repository tools of the http transport, the read-only snapshot handed to the MCP server under
study as ``{root}``, and the bundled server's own listing (issue 15: the answer key can never
reach either arm). Kept: regular files (git modes 100644/100755) of at most 200,000 bytes whose
path has no segment starting with a dot (no ``.git``, no dotfiles), no ``node_modules``,
``dist``, ``build`` or ``coverage`` segment, is not a lockfile, is not under the answer key
(``study/minimal-study``) and has no ``secret`` or ``credential`` in it.
"""

from __future__ import annotations

MAX_EXPORT_FILE_BYTES = 200_000
EXCLUDED_SEGMENTS = frozenset({"node_modules", "dist", "build", "coverage"})
LOCKFILE_NAMES = frozenset(
    {
        "package-lock.json",
        "npm-shrinkwrap.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "bun.lockb",
        "bun.lock",
        "poetry.lock",
        "uv.lock",
        "Pipfile.lock",
        "Cargo.lock",
        "Gemfile.lock",
        "composer.lock",
        "go.sum",
    }
)
ANSWER_KEY_MARKERS = ("study/minimal-study",)
REGULAR_MODES = ("100644", "100755")


def is_public_path(path: str) -> bool:
    """Whether a corpus-relative ``/``-separated path passes the path rules of the module docstring."""
    segments = path.split("/")
    if not path or any(not s or s.startswith(".") or s in EXCLUDED_SEGMENTS for s in segments):
        return False
    name = segments[-1]
    lowered = path.lower()
    if name in LOCKFILE_NAMES or name.endswith(".lock"):
        return False
    if any(marker in lowered for marker in ANSWER_KEY_MARKERS):
        return False
    return "secret" not in lowered and "credential" not in lowered


def is_public_blob(mode: str, kind: str, size: int | None, path: str) -> bool:
    """Whether a git tree entry (``mode``, ``kind``, ``size`` in bytes or ``None``, ``path``) is exported."""
    if kind != "blob" or mode not in REGULAR_MODES:
        return False
    if size is None or size > MAX_EXPORT_FILE_BYTES:
        return False
    return is_public_path(path)
