"""The example study's pilot, for real: what the attempt and checkpoint benchmarks stand on.

Builds the bundled example study (three tiny git corpora), starts the scripted Messages API
server on 127.0.0.1 and runs the 2-attempt pilot once through ``runners.minimal.run_cli_study``
with the real Claude Code binary, exactly as ``agentstudy demo`` does (zero spend, dummy
token, private HOME). That run warms the binary and the page cache, and leaves a real ledger
whose observations the checkpoint benchmark replicates. The server stays up for the
benchmarks that follow, and so do the MCP server's corpus views (``runners.preflight.mcp_corpora``:
a read-only snapshot of each pinned corpus an MCP attempt uses), checked once by the real
``check_mcp_servers`` under the pilot's containment (bubblewrap, the default).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentstudy.io.claude_cli import ClaudeBinaryError, find_claude_binary
from agentstudy.io.server_corpus import ServerCorpora
from agentstudy.protocol.manifest import DOC_BRIDGE_MCP, LoadedManifest, load_manifest
from agentstudy.protocol.mcp_spec import ServerPaths
from agentstudy.protocol.schedule import ScheduleEntry, build_schedule
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.runners.cli_request import CliRunRequest
from agentstudy.runners.demo import DEMO_ATTEMPT_BUDGET_USD, DEMO_CAP_USD, DEMO_CLI_VERSION, DEMO_MODEL
from agentstudy.runners.minimal import run_cli_study
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER, check_mcp_servers, mcp_corpora
from agentstudy.transports.cli import CliSettings
from bench.common import Skipped


@dataclass(frozen=True)
class Pilot:
    """A built example study, a running scripted server and the ledger of one real pilot run.

    Attributes:
        scratch: a private temp directory, removed on exit.
        study: the example corpora and manifest.
        loaded: the validated manifest.
        schedule: the pilot's two attempts (one per scenario).
        server: the scripted Messages API server (running).
        settings: the CLI transport settings ``agentstudy demo`` uses (containment ``bwrap``).
        extra_denied: the MCP tools outside the read-only set (from the real preflight).
        corpora: the MCP server's view of each corpus the pilot's MCP attempt uses (open until exit).
        ledger: the pilot's ledger document, as written.
    """

    scratch: Path
    study: ExampleStudy
    loaded: LoadedManifest
    schedule: tuple[ScheduleEntry, ...]
    server: RehearsalServer
    settings: CliSettings
    extra_denied: tuple[str, ...]
    corpora: ServerCorpora
    ledger: dict[str, Any]

    def server_paths(self, entry: ScheduleEntry) -> ServerPaths | None:
        """The MCP server's placeholder values for ``entry`` (its corpus snapshot); ``None`` outside the MCP arm."""
        return self.corpora.paths(entry.repository) if entry.scenario == DOC_BRIDGE_MCP else None


def claude_binary() -> Path:
    """The pinned Claude Code binary (as ``agentstudy demo`` finds it); ``Skipped`` when there is none."""
    try:
        binary = find_claude_binary(None, os.environ)
    except ClaudeBinaryError as error:
        raise Skipped(f"skipped: {error}") from None
    if not binary.exists():
        raise Skipped(f"skipped: Claude Code binary not found at {binary}")
    return binary


@contextmanager
def pilot() -> Iterator[Pilot]:
    """Build the study, start the server, run the pilot once; yield it all, then clean up."""
    binary = claude_binary()
    with tempfile.TemporaryDirectory(prefix="agentstudy-bench-pilot-") as name, RehearsalServer() as server:
        scratch = Path(name)
        study = build_example_study(scratch / "study")
        loaded = load_manifest(study.manifest_path)
        settings = CliSettings(
            binary=binary,
            model=DEMO_MODEL,
            mcp=DEFAULT_MCP_SERVER,
            rehearsal_base_url=server.base_url,
        )
        output = scratch / "pilot-ledger.json"
        summary = run_cli_study(
            CliRunRequest(
                loaded=loaded,
                mode="pilot",
                roots=study.roots,
                output=output,
                settings=settings,
                cap_usd=DEMO_CAP_USD,
                attempt_budget_usd=DEMO_ATTEMPT_BUDGET_USD,
                expected_cli_version=DEMO_CLI_VERSION,
                parent_env=dict(os.environ),
            )
        )
        if summary.status != "awaiting-adjudication":
            raise RuntimeError(f"the example pilot ended {summary.status}; see {output}")
        schedule = build_schedule(loaded.manifest, "pilot")
        with mcp_corpora(DEFAULT_MCP_SERVER, loaded.manifest, schedule, study.roots) as corpora:
            mcp = check_mcp_servers(DEFAULT_MCP_SERVER, corpora, settings.containment, dict(os.environ))
            yield Pilot(
                scratch=scratch,
                study=study,
                loaded=loaded,
                schedule=schedule,
                server=server,
                settings=settings,
                extra_denied=tuple(mcp.extra_denied),
                corpora=corpora,
                ledger=json.loads(output.read_text(encoding="utf-8")),
            )
