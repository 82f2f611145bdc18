"""``agentstudy init`` (issue 18 item 2): the starter study's choices, and its refusals.

The tool choice is checked on the real annotated ``tools/list`` of server-filesystem 2026.8.31
(recorded in tests/data); a successful init against the live server runs in
tests/test_third_party_server_e2e.py. Refusals are one line, exit 2, and write nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentstudy.protocol.read_only import ToolHints
from agentstudy.protocol.starter_study import (
    EXAMPLE_MARK,
    ListedTool,
    StarterError,
    choose_tools,
    server_name_for,
    starter_study,
)
from agentstudy.protocol.study_file import StudyFile

from checkout_run import run_agentstudy

DATA = Path(__file__).parent / "data" / "server-filesystem-2026.8.31-tools.json"
PIN = "a" * 40


def _listed() -> list[ListedTool]:
    tools = json.loads(DATA.read_text(encoding="utf-8"))
    return [ListedTool(t["name"], t["description"], t["input_schema"],
                       ToolHints(t["annotations"].get("readOnlyHint"), t["annotations"].get("destructiveHint")))
            for t in tools]


def _repository(root: Path) -> Path:
    root.mkdir()
    (root / "notes.txt").write_text("Plain notes.\n", encoding="utf-8")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "corpus"]):
        subprocess.run(["git", "-C", str(root), *argv], check=True, env=env, capture_output=True)
    return root


def test_read_only_tools_and_the_probe_come_from_the_annotations() -> None:
    choice = choose_tools(_listed(), word="retention")
    assert set(choice.denied) == {"write_file", "edit_file", "create_directory", "move_file"}
    assert len(choice.read_only) == 10 and "search_files" in choice.read_only and choice.unannotated == ()
    # a path-like argument gets the snapshot the server reads, a glob query the corpus word
    assert (choice.probe, dict(choice.probe_arguments)) == ("search_files",
                                                           {"path": "{root}", "pattern": "**/*"})
    assert choice.undecided == ()
    roles = {r.name: r for r in choice.roles}
    assert (roles["search_files"].role, roles["write_file"].role) == ("search", "denied")
    assert "destructiveHint: true" in roles["write_file"].reason or "readOnlyHint: false" in roles["write_file"].reason


def test_unannotated_tools_are_open_decisions_until_declared() -> None:
    schema = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
    listed = [ListedTool("find", "search", schema, ToolHints()),
              ListedTool("ping", "", {"type": "object"}, ToolHints(read_only=True))]
    choice = choose_tools(listed)
    assert (choice.read_only, choice.unannotated, choice.probe) == (("ping",), ("find",), "ping")
    draft = choose_tools(listed[:1], word="alpha")  # nothing annotated: a draft, not a refusal
    assert (draft.read_only, draft.probe) == ((), None)
    assert [d.field for d in draft.undecided] == ["arms.treatment.tools"]
    assert draft.undecided[0].flag.startswith("--tool find")
    declared = choose_tools(listed[:1], declared=["find"], word="alpha")
    assert (declared.read_only, declared.declared, declared.probe, dict(declared.probe_arguments)) == (
        ("find",), ("find",), "find", {"query": "alpha"})
    assert "declared read-only by the operator" in declared.roles[0].reason
    unprobed = choose_tools([ListedTool("get", "", {"type": "object", "required": ["limit"],
                                                    "properties": {"limit": {"type": "integer"}}},
                                        ToolHints(read_only=True))])
    assert unprobed.probe is None and [d.field for d in unprobed.undecided] == ["arms.treatment.probe"]
    given = choose_tools(listed, declared=["find"], probe="find", probe_arguments={"query": "{cwd}"})
    assert (given.probe, dict(given.probe_arguments)) == ("find", {"query": "{cwd}"})
    with pytest.raises(StarterError, match="--probe find is not one of the allowed tools"):
        choose_tools(listed[:1], probe="find")
    with pytest.raises(StarterError, match="--tool names nope, which the server does not list"):
        choose_tools(listed, declared=["nope"])
    with pytest.raises(StarterError, match="--tool names edit, which the server annotates readOnlyHint: false"):
        choose_tools([ListedTool("edit", "", {}, ToolHints(read_only=False))], declared=["edit"])


def test_open_world_tools_are_denied_unless_let_through() -> None:
    schema = {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}
    listed = [ListedTool("clone", "", schema, ToolHints(read_only=True, open_world=True)),
              ListedTool("ping", "", {"type": "object"}, ToolHints(read_only=True))]
    choice = choose_tools(listed)
    assert choice.read_only == ("ping",) and choice.denied == ("clone",)
    assert "openWorldHint: true" in choice.roles[0].reason and "--allow-open-world clone" in choice.roles[0].reason
    allowed = choose_tools(listed, allow_open_world=["clone"])
    assert allowed.read_only == ("clone", "ping") and allowed.open_world == ("clone",)
    with pytest.raises(StarterError, match="does not annotate openWorldHint: true"):
        choose_tools(listed, allow_open_world=["ping"])
    unannotated_open = [ListedTool("clone", "", schema, ToolHints(open_world=True))]
    with pytest.raises(StarterError, match="--allow-open-world clone as well"):
        choose_tools(unannotated_open, declared=["clone"])


def test_the_starter_study_loads_as_a_study_file_with_marked_examples() -> None:
    command = ["/opt/x/node_modules/.bin/mcp-server-filesystem", "{root}"]
    study = starter_study({"alpha": (PIN, "README.md", "retention"), "beta": ("b" * 40, "docs/a.md", None)},
                          server_name_for(command), command, choose_tools(_listed()))
    loaded = StudyFile.model_validate(study)
    assert [t.id for t in loaded.tasks] == ["example-alpha", "example-beta"]
    assert all(t.question.startswith(EXAMPLE_MARK) for t in loaded.tasks)
    assert "about retention in README.md?" in loaded.tasks[0].question
    assert "what does docs/a.md say" in loaded.tasks[1].question
    assert loaded.arms.treatment.server_name() == "filesystem"
    assert study["arms"]["treatment"]["serverConfigCandidates"] == []


def test_server_names_come_from_the_package_like_word() -> None:
    assert server_name_for(["/x/.bin/mcp-server-filesystem", "{root}"]) == "filesystem"
    assert server_name_for(["node", "/srv/kb-server/index.js", "--root", "{root}"]) == "index"
    assert server_name_for(["npx", "-y", "@acme/docs-mcp@1.2.0"]) == "docs"
    assert server_name_for(["python3", "-m", "{root}"]) == "python3"


def test_refusals_are_one_line_exit_2_and_write_nothing(tmp_path: Path) -> None:
    repo = _repository(tmp_path / "repo")
    command = f"{sys.executable} -c pass"
    study_dir = tmp_path / "study"
    for argv, says in [
        ([f"--repo=r={tmp_path}"], "not a git checkout"),
        ([f"--repo=r={repo / '.git'}"], "not a git checkout"),
        (["--repo=bad name=" + str(repo)], "--repo must be NAME=PATH"),
        ([f"--repo=r={repo}", f"--repo=r={repo}"], "given twice"),
        ([f"--repo=r={repo}", "--server-name", "Bad_Name"], "--server-name must be"),
    ]:
        done = run_agentstudy("init", str(study_dir), *argv, "--mcp-command", command)
        assert done.returncode == 2 and says in done.stderr, (argv, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1
        assert not study_dir.exists()
    done = run_agentstudy("init", str(study_dir), f"--repo=r={repo}", "--mcp-command", "x {nope}")
    assert done.returncode == 2 and "unknown placeholders" in done.stderr
    done = run_agentstudy("init", str(study_dir), f"--repo=r={repo}", "--mcp-command", command)
    assert done.returncode == 2 and done.stderr.startswith("agentstudy: error: r: ")
    assert not study_dir.exists()
    crashing = "/bin/sh -c 'echo boom-from-the-server >&2; exit 3'"
    done = run_agentstudy("init", str(study_dir), f"--repo=r={repo}", "--mcp-command", crashing)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "boom-from-the-server" in done.stderr, done.stderr  # the server's own words, not only a class name
    assert not study_dir.exists()


def test_an_existing_study_file_is_never_overwritten(tmp_path: Path) -> None:
    repo = _repository(tmp_path / "repo")
    (tmp_path / "study").mkdir()
    existing = tmp_path / "study" / "study.json"
    existing.write_text("mine\n", encoding="utf-8")
    done = run_agentstudy("init", str(tmp_path / "study"), f"--repo=r={repo}", "--mcp-command", "x")
    assert done.returncode == 2 and "never overwrites" in done.stderr
    assert existing.read_text(encoding="utf-8") == "mine\n"
    assert sorted(p.name for p in existing.parent.iterdir()) == ["study.json"]


def test_a_directory_that_cannot_be_written_is_refused_before_the_server_starts(tmp_path: Path) -> None:
    repo = _repository(tmp_path / "repo")
    blocker = tmp_path / "a-file"
    blocker.write_text("x\n", encoding="utf-8")
    started = tmp_path / "server-started"
    server = f"{sys.executable} -c \"open('{started}', 'w')\""
    done = run_agentstudy("init", str(blocker / "study"), f"--repo=r={repo}", "--containment", "restricted",
                          "--mcp-command", server)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (f"agentstudy: error: cannot write {blocker / 'study'}: "
                                   "a component of the path is not a directory")
    assert not started.exists()  # refused before any server process ran


def test_a_dirty_checkout_is_pinned_at_head_with_a_warning(tmp_path: Path) -> None:
    repo = _repository(tmp_path / "repo")
    (repo / "notes.txt").write_text("Changed, not committed.\n", encoding="utf-8")
    server = f"{sys.executable} -m agentstudy.rehearsal.mcp_server --root {{root}} --pin {{pin}}"
    done = run_agentstudy("init", str(tmp_path / "study"), f"--repo=r={repo}", "--containment", "restricted",
                          "--mcp-command", server)
    assert done.returncode == 0, done.stderr
    pin = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True,
                         text=True).stdout.strip()
    assert (f"agentstudy: warning: --repo r has uncommitted or untracked changes; the study pins HEAD {pin[:12]}"
            in done.stderr)
    study = json.loads((tmp_path / "study" / "study.json").read_text(encoding="utf-8"))
    assert pin in json.dumps(study)
