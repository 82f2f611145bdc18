"""The prepared state is bounded (issue 40 break 7): a preparation step that leaves a 2 GiB sparse file, or more
files or bytes than the study file's ``prepareLimits`` allow, is refused (counted by apparent size before
anything is copied; one line naming the cap), and the state within the cap is hashed streaming. Real parts:
a git repository in a temp dir, code-index-mcp pinned in .tools/, its Python running the command step in
bubblewrap."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError

from agentstudy.io.git import head
from agentstudy.io.server_corpus import ServerCorpora
from agentstudy.io.server_prepare import PrepareError, run_prepare, state_digest
from agentstudy.protocol.mcp_spec import McpServerSpec
from agentstudy.protocol.prepare_steps import DEFAULT_MAX_STATE_BYTES, PreparedStateCap, PrepareStep
from agentstudy.protocol.study_arms import TreatmentArm

TOOL_DIR = Path(__file__).resolve().parents[1] / ".tools" / "code-index-mcp"
SERVER = TOOL_DIR / "bin" / "code-index-mcp"
PYTHON = str(TOOL_DIR / "bin" / "python")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus") / "ledger"
    root.mkdir()
    (root / "README.md").write_text("# Ledger\n", encoding="utf-8")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "corpus"]):
        subprocess.run(["git", "-C", str(root), *argv], check=True, env=env, capture_output=True)
    return root


def _prepare(repo: Path, script: str, cap: PreparedStateCap) -> tuple[Path, tuple[str, int, int]]:
    spec = McpServerSpec(name="code-index", command=(str(SERVER), "--project-path", "{root}"),
                         prepare=(PrepareStep(command=[PYTHON, "-c", script]),), prepared_cap=cap)
    with ServerCorpora(spec, {"ledger": (repo, head(repo))}) as corpora:
        state = corpora.state_directory("ledger")
        try:
            outcome = run_prepare(spec, "ledger", corpora.paths("ledger"), "bwrap", os.environ, state)
        except PrepareError:
            assert not list(state.rglob("*")), "nothing is copied from a state over the cap"
            raise
        return state, (outcome.state_sha256, outcome.state_files, outcome.state_bytes)


SPARSE = "import os; f = open(os.path.join(os.environ['HOME'], 'big'), 'wb'); f.truncate(2 << 30); f.close()"
MANY = "import os\nfor i in range(5): open(os.path.join(os.environ['HOME'], f'f{i}'), 'w').write('x' * 10)"


def test_a_sparse_two_gib_file_is_refused_by_its_apparent_size(repo: Path) -> None:
    with pytest.raises(PrepareError, match=rf"holds more than {DEFAULT_MAX_STATE_BYTES} bytes \(prepareLimits"):
        _prepare(repo, SPARSE, PreparedStateCap())


@pytest.mark.parametrize(("cap", "says"), [
    (PreparedStateCap(maxFiles=4), "more than 4 files"),
    (PreparedStateCap(maxBytes=49), "more than 49 bytes"),
])
def test_the_study_files_cap_is_enforced(repo: Path, cap: PreparedStateCap, says: str) -> None:
    with pytest.raises(PrepareError, match=says) as raised:
        _prepare(repo, MANY, cap)
    assert "\n" not in str(raised.value) and "before any reservation" in str(raised.value)


def test_a_state_within_the_cap_is_kept_and_hashed_streaming(repo: Path) -> None:
    spec = McpServerSpec(name="code-index", command=(str(SERVER), "--project-path", "{root}"),
                         prepare=(PrepareStep(command=[PYTHON, "-c", MANY]),),
                         prepared_cap=PreparedStateCap(maxFiles=5, maxBytes=50))
    with ServerCorpora(spec, {"ledger": (repo, head(repo))}) as corpora:
        state = corpora.state_directory("ledger")
        outcome = run_prepare(spec, "ledger", corpora.paths("ledger"), "bwrap", os.environ, state)
        assert (outcome.state_files, outcome.state_bytes) == (5, 50)
        assert state_digest(state) == (outcome.state_sha256, 5, 50)


def test_the_study_file_takes_prepare_limits() -> None:
    base = {"id": "kb", "label": "kb", "tools": ["kb.search"], "probe": {"tool": "kb.search", "arguments": {}},
            "mcpConfig": {"mcpServers": {"kb": {"command": "/usr/bin/kb"}}}}
    arm = TreatmentArm.model_validate({**base, "prepareLimits": {"maxFiles": 3, "maxBytes": 1000}})
    assert (arm.prepare_limits.max_files, arm.prepare_limits.max_bytes) == (3, 1000)
    assert TreatmentArm.model_validate(base).prepare_limits == PreparedStateCap()
    for bad in ({"maxFiles": 0}, {"maxBytes": -1}, {"maxBites": 5}):
        with pytest.raises(ValidationError):
            TreatmentArm.model_validate({**base, "prepareLimits": bad})
