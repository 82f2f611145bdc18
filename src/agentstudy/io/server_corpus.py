"""What the MCP server under study is handed per corpus (issue 15, deliverable 4).

Never the live checkout unless the operator writes ``{checkout}``: ``{root}`` is a read-only
snapshot of the pinned corpus made with the export's own function (the same filtered tree the
agent sees: no answer key, no dotfiles, no build output), ``{config}`` is resolved inside that
snapshot, and ``{git}`` is a private read-only clone with the pin's history only. Everything is
made once per run in one private directory and removed when the run ends.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
import tempfile
from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from types import TracebackType

from agentstudy.io.export import CorpusBlobs, CorpusExport, export_pinned_corpus, materialise_corpus, remove_export
from agentstudy.io.git import GitError
from agentstudy.io.pinned_clone import make_pinned_clone, remove_pinned_clone
from agentstudy.io.scratch import owned_mkdtemp, release
from agentstudy.io.server_config import resolve_server_config
from agentstudy.protocol.mcp_spec import McpServerSpec, ServerPaths


class ServerCorpusError(RuntimeError):
    """A corpus could not be prepared for the MCP server (one-line reason naming the repository)."""


def config_not_found(name: str, candidates: tuple[str, ...]) -> str:
    """The refusal when ``{config}`` is named and no candidate is in corpus ``name``'s snapshot (issue 18)."""
    return (f"{name}: no MCP server config file in the pinned corpus for {{config}} (tried "
            f"--server-config-candidates {', '.join(candidates)}); pass --server-config-candidates FILE[,FILE...] "
            "naming the config file your server reads (NAME#KEY: a JSON file with that top-level key), or "
            "drop {config} from the command and pass --server-config-candidates \"\" (no config file)")


class ServerCorpora(AbstractContextManager["ServerCorpora"]):
    """The MCP server's view of every corpus a run's MCP arm uses, made on enter and removed on exit.

    Args:
        spec: the server under study (which placeholders it names).
        corpora: repository name -> (checkout, 40-hex pin), in the order to prepare them.

    Raises:
        ServerCorpusError: on enter, when a snapshot or clone cannot be made, or the command
            needs ``{config}`` and no candidate exists in a snapshot.
    """

    def __init__(self, spec: McpServerSpec, corpora: Mapping[str, tuple[Path, str]]) -> None:
        self._spec = spec
        self._corpora = dict(corpora)
        self._directory: Path | None = None
        self._snapshots: list[CorpusExport] = []
        self._clones: list[Path] = []
        self._paths: dict[str, ServerPaths] = {}

    def __enter__(self) -> ServerCorpora:
        if not self._corpora:
            return self
        self._directory = owned_mkdtemp("server-corpus")  # swept after a SIGKILL (issue 29, break 10)
        try:
            for name, (checkout, pin) in self._corpora.items():
                self._paths[name] = self._prepare(name, checkout, pin)
        except BaseException:
            self.close()
            raise
        return self

    def _prepare(self, name: str, checkout: Path, pin: str) -> ServerPaths:
        assert self._directory is not None
        spec = self._spec
        try:
            snapshot = export_pinned_corpus(checkout, pin, parent=self._directory)
            self._snapshots.append(snapshot)
            git = None
            if spec.needs_git:
                clone = make_pinned_clone(checkout, pin, self._directory / f"git-{len(self._clones)}")
                self._clones.append(clone)
                git = str(clone)
        except GitError as error:
            raise ServerCorpusError(f"{name}: {error}") from None
        config = None
        if spec.needs_config:
            found = resolve_server_config(snapshot.path, spec.config_candidates)
            if found is None:
                raise ServerCorpusError(config_not_found(name, spec.config_candidates))
            config = str(found)
        checkout_value = str(checkout) if spec.reads_live_checkout else None
        return ServerPaths(root=str(snapshot.path), pin=pin, config=config, git=git, checkout=checkout_value,
                           live=str(checkout))

    def paths(self, name: str) -> ServerPaths:
        """The placeholder values for repository ``name``.

        Raises:
            KeyError: the repository was not prepared (no MCP attempt uses it).
        """
        return self._paths[name]

    def state_directory(self, name: str) -> Path:
        """A new empty private directory for repository ``name``'s prepared state (issue 32), removed with the
        run's other corpus views.

        Raises:
            KeyError: the repository was not prepared; OSError: it cannot be made.
        """
        if self._directory is None or name not in self._paths:
            raise KeyError(name)
        return Path(tempfile.mkdtemp(prefix=f"prepared-{list(self._paths).index(name)}-", dir=self._directory))

    def set_state(self, name: str, state: Path) -> None:
        """From now on, every server of repository ``name`` starts with a fresh copy of ``state``."""
        self._paths[name] = dataclasses.replace(self._paths[name], state=str(state))

    @property
    def names(self) -> tuple[str, ...]:
        """The prepared repositories, in preparation order."""
        return tuple(self._paths)

    def close(self) -> None:
        """Remove every snapshot and clone and the private directory (idempotent)."""
        for snapshot in self._snapshots:
            remove_export(snapshot.path)
        for clone in self._clones:
            remove_pinned_clone(clone)
        self._snapshots, self._clones = [], []
        if self._directory is not None:
            for directory, _dirs, _files in os.walk(self._directory):
                Path(directory).chmod(stat.S_IRWXU)  # a sealed snapshot left by an interrupted removal
            shutil.rmtree(self._directory, ignore_errors=True)
            release(self._directory)
            self._directory = None

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def own_snapshot(server: ServerPaths, corpus: CorpusBlobs, parent: Path) -> ServerPaths:
    """``server`` with ``{root}`` (and ``{config}`` inside it) moved to a snapshot of ``corpus`` made in ``parent``.

    What a body on a Ray worker does (issue 20): the driver's run-wide snapshot is a path on the
    driver's disk, so the worker makes its own from the shipped corpus (the same filtered tree).
    The caller removes ``parent``. Raises ``OSError`` if the disk refuses.
    """
    snapshot = materialise_corpus(corpus, parent=parent)
    return at_corpus(server, snapshot.path)


def at_corpus(server: ServerPaths, corpus: Path) -> ServerPaths:
    """``server`` with ``{root}`` (and ``{config}`` inside it) moved to ``corpus``, a tree of the same filtered
    export: an attempt's own export, so that the agent and the server see the repository at one absolute
    path (issue 39). Pure."""
    config = None if server.config is None else server.config.replace(server.root, str(corpus), 1)
    return dataclasses.replace(server, root=str(corpus), config=config)
