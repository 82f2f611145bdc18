"""Tests for the example study builder, its manifest and the example doc-bridge MCP server."""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import CallToolResult, TextContent

from agentstudy.io.export import export_corpus, remove_export
from agentstudy.rehearsal.example_study import (
    EXAMPLE_MANIFEST,
    ExampleStudy,
    build_example_study,
    corpus_files,
)

T = TypeVar("T")
SERVER_MODULE = "agentstudy.rehearsal.mcp_server"
TOOL_NAMES = {"doc.search", "doc.get", "handoff.resolve", "doc.write"}
SAFE_PATH = re.compile(r"^[a-zA-Z0-9_./-]+$")
MANIFEST = json.loads(EXAMPLE_MANIFEST.read_text(encoding="utf-8"))


def git(root: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True)
    return proc.stdout


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> ExampleStudy:
    return build_example_study(tmp_path_factory.mktemp("study"))


@contextmanager
def exported(root: Path, pin: str) -> Iterator[Path]:
    """The read-only snapshot of ``root`` at ``pin`` that a study hands the server as ``{root}``."""
    export = export_corpus(root, pin)
    try:
        yield export
    finally:
        remove_export(export)


def server_params(snapshot: Path, pin: str, *extra: str) -> StdioServerParameters:
    args = ["-I", "-m", SERVER_MODULE, "--root", str(snapshot), "--pin", pin, *extra]
    return StdioServerParameters(command=sys.executable, args=args)


def with_client(params: StdioServerParameters, body: Callable[[Client], Awaitable[T]]) -> T:
    async def run() -> T:
        async with Client(params) as client:
            return await body(client)

    return asyncio.run(asyncio.wait_for(run(), timeout=60))


def text_of(result: CallToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def line_of(name: str, path: str, needle: str) -> tuple[int, str]:
    lines = corpus_files(name)[path].decode().split("\n")
    return next((i, line) for i, line in enumerate(lines, start=1) if needle in line)


# --- builder and manifest -------------------------------------------------------------------


def test_two_builds_give_identical_pins_equal_to_manifest(tmp_path: Path) -> None:
    first = build_example_study(tmp_path / "a")
    second = build_example_study(tmp_path / "b")
    pins = MANIFEST["repositories"]
    assert set(first.roots) == set(second.roots) == set(pins)
    for name, pin in pins.items():
        assert head(first.roots[name]) == head(second.roots[name]) == pin
        assert git(first.roots[name], "status", "--porcelain") == ""
        assert git(first.roots[name], "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
        assert git(first.roots[name], "rev-list", "--count", "HEAD").strip() == "1"
    assert first.manifest_path == (tmp_path / "a" / "manifest.json").resolve()
    assert first.manifest_path.read_bytes() == EXAMPLE_MANIFEST.read_bytes()


def test_pins_ignore_hostile_user_git_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[core]\n\tautocrlf = true\n[commit]\n\tgpgsign = true\n[user]\n\tname = Someone Else\n"
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Intruder")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2001-01-01T00:00:00Z")
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))
    built = build_example_study(tmp_path / "study")
    monkeypatch.delenv("GIT_DIR")
    assert {name: head(root) for name, root in built.roots.items()} == MANIFEST["repositories"]


def test_manifest_follows_the_seed_format() -> None:
    assert MANIFEST["version"] == "minimal-study-v1"
    assert MANIFEST["repetitions"] == 3
    assert MANIFEST["scenarios"] == ["repository-only", "doc-bridge-mcp"]
    repos = MANIFEST["repositories"]
    assert len(repos) == 3 and all(re.fullmatch(r"[a-f0-9]{40}", pin) for pin in repos.values())
    tasks = MANIFEST["tasks"]
    assert len(tasks) == 6 and len({t["id"] for t in tasks}) == 6
    for name in repos:
        assert sum(t["repository"] == name for t in tasks) == 2
    for task in tasks:
        assert task["category"] in {"discovery", "architecture", "documentation"}
        assert task["question"] and task["expected"] and task["sources"]
        for source in task["sources"]:
            assert SAFE_PATH.fullmatch(source)
            assert not any(seg.startswith(".") or seg == ".." for seg in source.split("/"))
        # A scripted model greps for a distinctive word of the question: one must be in a source.
        words = {w for w in re.findall(r"[A-Za-z]+", task["question"]) if len(w) >= 5}
        texts = [corpus_files(task["repository"])[s].decode() for s in task["sources"]]
        assert any(w in text for w in words for text in texts), task["id"]


def test_sources_exist_at_the_pin(study: ExampleStudy) -> None:
    for task in MANIFEST["tasks"]:
        root, pin = study.roots[task["repository"]], MANIFEST["repositories"][task["repository"]]
        assert head(root) == pin
        for source in task["sources"]:
            assert git(root, "cat-file", "-t", f"{pin}:{source}").strip() == "blob"


def test_a_corpus_holds_files_that_must_not_be_exported(study: ExampleStudy) -> None:
    tree = git(study.roots["quill-notes"], "ls-tree", "-r", "--name-only", "HEAD").split()
    assert ".env.example" in tree and "package-lock.json" in tree
    for name in MANIFEST["repositories"]:
        for data in corpus_files(name).values():
            assert b"\r\n" not in data
            assert 15 <= data.count(b"\n") <= 80


def test_refuses_existing_destination(tmp_path: Path) -> None:
    (tmp_path / "quill-notes").mkdir()
    with pytest.raises(FileExistsError):
        build_example_study(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["quill-notes"]


# --- example MCP server over stdio ----------------------------------------------------------


def test_server_tools_and_results(study: ExampleStudy, tmp_path: Path) -> None:
    lantern, harbor = study.roots["lantern-cache"], study.roots["harbor-playbook"]
    log = tmp_path / "calls.jsonl"
    before = git(lantern, "status", "--porcelain", "--ignored")

    async def body(client: Client) -> dict[str, Any]:
        tools = (await client.list_tools()).tools
        calls = {
            "search": await client.call_tool("doc.search", {"query": "SWEEPER thread"}),
            "none": await client.call_tool("doc.search", {"query": "zebra-unicorn"}),
            "get": await client.call_tool("doc.get", {"path": "docs/design.md", "start": 3, "lines": 2}),
            "missing": await client.call_tool("doc.get", {"path": "docs/nope.md"}),
            "write": await client.call_tool("doc.write", {"path": "README.md", "text": "pwned"}),
        }
        return {"tools": tools, **calls}

    lantern_pin = MANIFEST["repositories"]["lantern-cache"]
    with exported(lantern, lantern_pin) as snapshot:
        files_before = sorted(p.relative_to(snapshot).as_posix() for p in snapshot.rglob("*"))
        out = with_client(server_params(snapshot, lantern_pin, "--log", str(log)), body)
        assert sorted(p.relative_to(snapshot).as_posix() for p in snapshot.rglob("*")) == files_before
    assert {t.name for t in out["tools"]} == TOOL_NAMES
    hints = {t.name: t.annotations.read_only_hint for t in out["tools"] if t.annotations}
    assert hints == {"doc.search": True, "doc.get": True, "handoff.resolve": True, "doc.write": False}
    number, line = line_of("lantern-cache", "docs/adr/0002-no-background-thread.md", "sweeper thread")
    hits = text_of(out["search"]).split("\n")
    assert f"docs/adr/0002-no-background-thread.md:{number}: {line}" in hits
    assert all(re.fullmatch(r"[^:]+:\d+: .*", hit) for hit in hits)
    assert text_of(out["none"]) == "no matches"
    lines = corpus_files("lantern-cache")["docs/design.md"].decode().split("\n")
    assert text_of(out["get"]) == f"3\t{lines[2]}\n4\t{lines[3]}"
    assert out["missing"].is_error and not out["get"].is_error
    assert out["write"].is_error and "disabled" in text_of(out["write"])
    assert git(lantern, "status", "--porcelain", "--ignored") == before == ""
    assert head(lantern) == MANIFEST["repositories"]["lantern-cache"]
    logged = [json.loads(row) for row in log.read_text().splitlines()]
    assert [row["tool"] for row in logged] == ["doc.search", "doc.search", "doc.get", "doc.get", "doc.write"]
    assert logged[2]["arguments"] == {"path": "docs/design.md", "start": 3, "lines": 2}

    async def handoffs(client: Client) -> list[str]:
        found = await client.call_tool("handoff.resolve", {"handoff_id": "H-3"})
        unknown = await client.call_tool("handoff.resolve", {"handoff_id": "H-99"})
        return [text_of(found), text_of(unknown)]

    harbor_pin = MANIFEST["repositories"]["harbor-playbook"]
    with exported(harbor, harbor_pin) as snapshot:
        found, unknown = with_client(server_params(snapshot, harbor_pin), handoffs)
    number, _ = line_of("harbor-playbook", "content/handoffs.md", "| H-3 |")
    assert found == (
        "H-3 | owner: Ines Duarte | topic: Holiday freeze calendar for the fourth quarter"
        f" | source: content/handoffs.md:{number}"
    )
    assert unknown == "unknown handoff: H-99"


@pytest.mark.parametrize("given", ["export", "checkout"])
def test_server_hides_dotfiles_and_lockfiles(study: ExampleStudy, given: str) -> None:
    # The export never holds them; the server's own filter hides them in any directory it is given.
    root, pin = study.roots["quill-notes"], MANIFEST["repositories"]["quill-notes"]
    assert (root / ".env.example").is_file() and (root / "package-lock.json").is_file()

    async def body(client: Client) -> list[CallToolResult]:
        return [
            await client.call_tool("doc.search", {"query": "QUILL_SYNC_TOKEN"}),
            await client.call_tool("doc.search", {"query": "lockfileVersion"}),
            await client.call_tool("doc.get", {"path": ".env.example"}),
            await client.call_tool("doc.get", {"path": "package-lock.json"}),
            await client.call_tool("doc.search", {"query": '"exports"'}),
            await client.call_tool("doc.get", {"path": ".git/HEAD"}),
        ]

    with exported(root, pin) as snapshot:
        served = snapshot if given == "export" else root
        token, lockfile, env_get, lock_get, exports, git_head = with_client(server_params(served, pin), body)
    assert text_of(token) == "no matches" and text_of(lockfile) == "no matches"
    assert env_get.is_error and lock_get.is_error and git_head.is_error
    assert text_of(exports).startswith("package.json:")


def test_server_serves_exactly_the_exports_filtered_tree(tmp_path: Path) -> None:
    # Working-tree edits are invisible: the snapshot is written from the pinned blobs, and the
    # server serves what the snapshot holds — every file of it, and nothing else.
    built = build_example_study(tmp_path)
    root, pin = built.roots["lantern-cache"], MANIFEST["repositories"]["lantern-cache"]
    design = root / "docs" / "design.md"
    design.write_text(design.read_text().replace("sweeper", "janitor"))
    (root / "README.md").unlink()
    (root / "docs" / "extra.md").write_text("sweeper in the working tree only\n")

    with exported(root, pin) as snapshot:
        files = sorted(p.relative_to(snapshot).as_posix() for p in snapshot.rglob("*") if p.is_file())

        async def body(client: Client) -> list[CallToolResult]:
            return [
                await client.call_tool("doc.search", {"query": "janitor"}),
                await client.call_tool("doc.search", {"query": "The sweeper runs"}),
                await client.call_tool("doc.get", {"path": "README.md", "lines": 1}),
                await client.call_tool("doc.get", {"path": "docs/extra.md"}),
                *[await client.call_tool("doc.get", {"path": path, "lines": 1}) for path in files],
            ]

        janitor, sweeper, readme, extra, *every = with_client(server_params(snapshot, pin), body)
    assert files == sorted(p for p in corpus_files("lantern-cache") if not p.split("/")[-1].startswith("."))
    number, line = line_of("lantern-cache", "docs/design.md", "The sweeper runs")
    assert text_of(janitor) == "no matches"
    assert text_of(sweeper) == f"docs/design.md:{number}: {line}"
    assert text_of(readme) == "1\t# lantern-cache"
    assert extra.is_error
    assert [(path, result.is_error) for path, result in zip(files, every, strict=True)] == [(p, False) for p in files]


@pytest.mark.parametrize("case", ["missing-root", "HEAD", "--help", "short"])
def test_bad_root_or_pin_exits_non_zero(study: ExampleStudy, tmp_path: Path, case: str) -> None:
    # The server reads no git: a pin is checked for its form only, the root for being a directory.
    root, good_pin = study.roots["lantern-cache"], MANIFEST["repositories"]["lantern-cache"]
    with exported(root, good_pin) as snapshot:
        served = tmp_path / "no-such-snapshot" if case == "missing-root" else snapshot
        pin = {"missing-root": good_pin, "short": good_pin[:12]}.get(case, case)
        proc = subprocess.run(
            [sys.executable, "-I", "-m", SERVER_MODULE, "--root", str(served), f"--pin={pin}"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 2
    assert "refusing to start" in proc.stderr and proc.stdout == ""


# --- the real Claude Code CLI sees the server ------------------------------------------------


def claude_bin() -> Path:
    configured = os.environ.get("AGENTSTUDY_CLAUDE_BIN")
    default = Path(__file__).parents[1] / ".tools/claude-code/node_modules/.bin/claude"
    path = Path(configured) if configured else default
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"Claude Code CLI not found at {path}; run scripts/setup.sh or set AGENTSTUDY_CLAUDE_BIN")
    return path


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_real_claude_cli_connects_to_the_example_server(study: ExampleStudy) -> None:
    binary = claude_bin()
    root, pin = study.roots["harbor-playbook"], MANIFEST["repositories"]["harbor-playbook"]
    allowed = ["mcp__doc-bridge__doc_search", "mcp__doc-bridge__doc_get", "mcp__doc-bridge__handoff_resolve"]
    denied = "Bash,Edit,MultiEdit,Write,NotebookEdit,WebFetch,WebSearch,Task,Agent,mcp__doc-bridge__doc_write"
    with exported(root, pin) as snapshot, \
            tempfile.TemporaryDirectory(prefix="as-cli-", ignore_cleanup_errors=True) as scratch:
        server_args = ["-I", "-m", SERVER_MODULE, "--root", str(snapshot), "--pin", pin]
        server = {"type": "stdio", "command": sys.executable, "args": server_args}
        mcp_config = json.dumps({"mcpServers": {"doc-bridge": server}})
        argv = [str(binary), "-p", "--model", "claude-haiku-4-5", "--output-format", "stream-json", "--verbose"]
        argv += ["--no-session-persistence", "--max-budget-usd", "0.100000", "--disable-slash-commands"]
        argv += ["--restricted", "--permission-mode", "dontAsk", "--tools", "Read,Grep,Glob"]
        argv += ["--allowedTools", ",".join(["Read", "Grep", "Glob", *allowed])]
        argv += ["--disallowedTools", denied, "--mcp-config", mcp_config, "--strict-mcp-config", "--", "hello"]
        home, tmp, cwd = (Path(scratch) / d for d in ("home", "tmp", "cwd"))
        for d in (home, tmp, cwd):
            d.mkdir()
        env = {
            "PATH": os.environ.get("PATH", os.defpath),
            "HOME": str(home),
            "TMPDIR": str(tmp),
            "LANG": "C.UTF-8",
            "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{closed_port()}",
            "ANTHROPIC_AUTH_TOKEN": "dummy",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_MAX_RETRIES": "0",
        }
        proc = subprocess.run(
            argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120
        )
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert lines, f"no stdout (rc {proc.returncode}); stderr: {proc.stderr[-2000:]}"
    init = json.loads(lines[0])
    assert (init.get("type"), init.get("subtype")) == ("system", "init"), lines[0][:500]
    servers = init["mcp_servers"]
    assert [(s["name"], s["status"]) for s in servers] == [("doc-bridge", "connected")], servers
    assert sorted(init["tools"]) == sorted(["Glob", "Grep", "Read", *allowed])
    assert len(init["tools"]) == 6
