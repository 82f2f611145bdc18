"""Git runs hardened against the repositories it reads (issue 15: "hermetic attempts").

A checkout's own ``.git/config`` and attributes can name commands (an fsmonitor hook, clean,
smudge and process filters, also from included files, hooks). Every trap below is first shown
to fire under plain git; then every read of ``agentstudy.io.git``, the export, and the
``agentstudy minimal`` command (a dry run and a rehearsed pilot with the fake ``claude``) run
over trapped checkouts as real subprocesses, and no canary is ever written.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from agentstudy.io.export import export_pinned_corpus, remove_export
from agentstudy.io.git import (
    HARDENING_OVERRIDES,
    GitError,
    commit_exists,
    configured_filter_drivers,
    filter_overrides,
    git_argv,
    git_env,
    head,
    is_clean,
    list_tree,
    parse_filter_drivers,
    path_exists_at,
    read_blobs,
    run_git,
)
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study

from checkout_run import bundled_server_config, run_agentstudy
from fakes import FakeClaude
from git_traps import TRAPS, arm, fired, make_stat_dirty, plain_git, unhardened_env

FILES = {
    "README.md": b"# Trapped corpus\n",
    "docs/a.md": b"Doc A\n",
    "notes.txt": b"plain text\n",
    "data.json": b"{}\n",
    ".gitattributes": b"* filter=trap\n",
}


def _commit(root: Path) -> str:
    env = unhardened_env()
    identity = ["-c", "user.name=x", "-c", "user.email=x@example.com", "-c", "commit.gpgsign=false"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], [*identity, "commit", "-q", "-m", "corpus"]):
        subprocess.run(["git", "-C", str(root), *args], env=env, check=True, capture_output=True)
    return plain_git(root, "rev-parse", "HEAD").stdout.strip()


@pytest.fixture
def corpus(tmp_path: Path) -> tuple[Path, str]:
    root = tmp_path / "corpus"
    for rel, data in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root, _commit(root)


@pytest.mark.parametrize("trap", TRAPS)
def test_each_trap_fires_under_plain_git(corpus: tuple[Path, str], tmp_path: Path, trap: str) -> None:
    root, _pin = corpus
    canaries = arm(root, (trap,), tmp_path / "traps")
    plain_git(root, "status", "--porcelain")
    assert fired(canaries) == {trap}


@pytest.mark.parametrize("traps", [(t,) for t in TRAPS] + [TRAPS])
def test_hardened_reads_fire_no_trap(corpus: tuple[Path, str], tmp_path: Path, traps: tuple[str, ...]) -> None:
    root, pin = corpus
    canaries = arm(root, traps, tmp_path / "traps")
    for _ in range(2):
        assert head(root) == pin
        assert is_clean(root)
        assert commit_exists(root, pin)
        entries = {e.path: e for e in list_tree(root, pin)}
        assert set(entries) == set(FILES)
        blobs = read_blobs(root, [e.oid for e in entries.values()])
        assert {path: blobs[e.oid] for path, e in entries.items()} == FILES
        assert path_exists_at(root, pin, "docs/a.md") and not path_exists_at(root, pin, "missing.md")
        export = export_pinned_corpus(root, pin, parent=tmp_path)
        remove_export(export.path)
        make_stat_dirty(root)
    assert fired(canaries) == set()
    plain_git(root, "status", "--porcelain")
    assert fired(canaries), "the traps were live"


def test_is_clean_still_sees_changes_with_filters_disabled(corpus: tuple[Path, str], tmp_path: Path) -> None:
    root, _pin = corpus
    canaries = arm(root, TRAPS, tmp_path / "traps")
    (root / "docs" / "a.md").write_bytes(b"edited\n")
    assert not is_clean(root)
    (root / "docs" / "a.md").write_bytes(FILES["docs/a.md"])
    assert is_clean(root)
    (root / "untracked.md").write_bytes(b"new\n")
    assert not is_clean(root)
    assert fired(canaries) == set()


def test_untracked_files_count_whatever_the_repository_config_says(corpus: tuple[Path, str]) -> None:
    root, _pin = corpus
    plain_git(root, "config", "status.showUntrackedFiles", "no")
    (root / "untracked.md").write_bytes(b"new\n")
    assert plain_git(root, "status", "--porcelain").stdout == ""
    assert not is_clean(root)


def test_a_submodule_with_its_own_traps_is_not_entered(corpus: tuple[Path, str], tmp_path: Path) -> None:
    root, _pin = corpus
    inner = tmp_path / "inner"
    (inner / "docs").mkdir(parents=True)
    (inner / "docs" / "x.md").write_bytes(b"inner\n")
    _commit(inner)
    env = unhardened_env()
    identity = ["-c", "user.name=x", "-c", "user.email=x@example.com", "-c", "protocol.file.allow=always"]
    subprocess.run(["git", "-C", str(root), *identity, "submodule", "-q", "add", str(inner), "sub"], env=env,
                   check=True, capture_output=True)
    subprocess.run(["git", "-C", str(root), *identity, "commit", "-q", "-m", "sub"], env=env, check=True)
    canaries = arm(root / "sub", ("fsmonitor", "clean-filter"), tmp_path / "sub-traps")
    assert is_clean(root)
    assert head(root) == plain_git(root, "rev-parse", "HEAD").stdout.strip()
    assert fired(canaries) == set()
    plain_git(root, "status", "--porcelain")
    assert fired(canaries), "plain git status enters the submodule and runs its traps"


def test_a_filter_name_that_cannot_be_disabled_refuses_every_call(corpus: tuple[Path, str]) -> None:
    root, _pin = corpus
    plain_git(root, "config", "filter.a=b.clean", "/bin/false")
    assert configured_filter_drivers(root) == ("a=b",)
    with pytest.raises(GitError, match="cannot be neutralised"):
        head(root)
    with pytest.raises(GitError):
        is_clean(root)


def test_configured_filter_drivers_follow_includes(corpus: tuple[Path, str], tmp_path: Path) -> None:
    root, _pin = corpus
    arm(root, ("clean-filter", "process-filter", "included-filter", "conditional-filter"), tmp_path / "traps")
    assert configured_filter_drivers(root) == ("Proc.Ess", "cond", "inc", "trap")
    assert configured_filter_drivers(tmp_path / "traps") == ()  # not a repository: nothing configured


def test_parse_filter_drivers() -> None:
    listing = b"core.bare\0filter.x.clean\0filter.x.smudge\0filter.a.b.process\0Filter.UP.required\0filterx.y\0"
    assert parse_filter_drivers(listing) == ("UP", "a.b", "x")
    assert parse_filter_drivers(b"") == ()
    assert parse_filter_drivers(b"filter.clean\0") == ()  # no subsection: no driver


def test_filter_overrides_empty_every_command_and_refuse_unsafe_names() -> None:
    assert filter_overrides(["x"]) == ["-c", "filter.x.clean=", "-c", "filter.x.smudge=", "-c", "filter.x.process=",
                                       "-c", "filter.x.required=false"]
    assert filter_overrides([]) == []
    for bad in ("a=b", "a\nb", "a\0b"):
        with pytest.raises(GitError):
            filter_overrides([bad])


def test_git_argv_prefix(tmp_path: Path) -> None:
    argv = git_argv(tmp_path, ["x"])
    assert argv[:4] == ["git", "--no-pager", "-C", str(tmp_path)]
    settings = argv[4::2]
    assert argv[4::2] == ["-c"] * len(settings)
    assert argv[5::2] == [*HARDENING_OVERRIDES, "filter.x.clean=", "filter.x.smudge=", "filter.x.process=",
                          "filter.x.required=false"]
    assert {"core.fsmonitor=false", "core.hooksPath=/dev/null", "core.untrackedCache=false",
            "core.attributesFile=/dev/null"} <= set(HARDENING_OVERRIDES)
    assert git_argv(tmp_path, bare=True)[:3] == ["git", "--no-pager", f"--git-dir={tmp_path}"]


def test_git_env_is_an_allowlist(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GIT_DIR", "GIT_CONFIG_PARAMETERS", "GIT_EXEC_PATH", "XDG_CONFIG_HOME", "GITHUB_TOKEN"):
        monkeypatch.setenv(name, "/planted")
    assert git_env() == {
        "PATH": os.environ["PATH"], "HOME": "/nonexistent", "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_NO_REPLACE_OBJECTS": "1", "GIT_ATTR_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C",
    }


def test_planted_git_environment_does_not_redirect_reads(corpus: tuple[Path, str], tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    root, pin = corpus
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.md").write_bytes(b"other\n")
    _commit(other)
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'core.fsmonitor'='/bin/false'")
    assert head(root) == pin
    assert run_git(root, "rev-parse", "--show-toplevel").decode().strip() == str(root.resolve())


@pytest.fixture
def trapped_study(tmp_path: Path) -> tuple[ExampleStudy, Path]:
    """The example study with every trap armed in every checkout (canaries under ``traps/<name>/``)."""
    study = build_example_study(tmp_path / "study")
    for name, root in study.roots.items():
        arm(root, TRAPS, tmp_path / "traps" / name)
    return study, tmp_path / "traps"


def _all_fired(traps: Path) -> set[str]:
    """``<repository>:<trap>`` of every canary written in any checkout."""
    return {f"{d.parent.name}:{c.name}" for d in traps.glob("*/canaries") for c in d.iterdir()}


def test_minimal_dry_run_over_trapped_checkouts_runs_no_trap(trapped_study: tuple[ExampleStudy, Path]) -> None:
    study, traps = trapped_study
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    completed = run_agentstudy("minimal", "--dry-run", "--manifest", str(study.manifest_path), *roots)
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["repositoriesChecked"] == list(study.roots)
    assert _all_fired(traps) == set()
    for root in study.roots.values():
        plain_git(root, "status", "--porcelain")
    assert _all_fired(traps), "the traps were live"


def test_rehearsed_cli_pilot_over_trapped_checkouts_runs_no_trap(
    trapped_study: tuple[ExampleStudy, Path], fake_claude: FakeClaude, tmp_path: Path
) -> None:
    study, traps = trapped_study
    fake_claude.behave(mode="ok")
    ledger = tmp_path / "out" / "ledger.json"
    ledger.parent.mkdir()
    roots = [f"--root={name}={path}" for name, path in study.roots.items()]
    completed = run_agentstudy(
        "minimal", "--manifest", str(study.manifest_path), "--pilot", "--transport", "cli", "--rehearsal", *roots,
        "--output", str(ledger), "--claude-bin", str(fake_claude.path), "--model", "claude-haiku-5-5",
        "--budget-usd", "1", "--mcp-config", str(bundled_server_config(tmp_path)),
    )
    assert completed.returncode == 0, completed.stderr
    document = json.loads(ledger.read_text(encoding="utf-8"))
    assert [o["status"] for o in document["observations"]] == ["completed", "completed"]
    assert len(fake_claude.records) == 2
    assert _all_fired(traps) == set()
    for root in study.roots.values():
        plain_git(root, "status", "--porcelain")
    assert _all_fired(traps), "the traps were live"
