"""The example study's pilot, for real: what the attempt and checkpoint benchmarks stand on.

Builds the bundled example study (three tiny git corpora), starts the scripted Messages API
server on 127.0.0.1 and runs the 2-attempt pilot once through ``runners.minimal.run_cli_study``
with the real Claude Code binary, exactly as ``agentstudy demo`` does (zero spend, dummy
token, private HOME). That run warms the binary and the page cache, and leaves a real ledger
whose observations the checkpoint benchmark replicates. The server stays up for the
benchmarks that follow.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentstudy.io.claude_cli import ClaudeBinaryError, find_claude_binary
from agentstudy.protocol.manifest import LoadedManifest, load_manifest
from agentstudy.protocol.schedule import ScheduleEntry, build_schedule
from agentstudy.rehearsal.example_study import ExampleStudy, build_example_study
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.runners.demo import DEMO_ATTEMPT_BUDGET_USD, DEMO_CAP_USD, DEMO_CLI_VERSION, DEMO_MODEL
from agentstudy.runners.minimal import CliRunRequest, run_cli_study
from agentstudy.runners.preflight import DEFAULT_MCP_SERVER, check_mcp_servers
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
        settings: the CLI transport settings ``agentstudy demo`` uses.
        extra_denied: the MCP tools outside the read-only set (from the real preflight).
        configs: the MCP server config per repository (``None``: the bundled server needs none).
        ledger: the pilot's ledger document, as written.
    """

    scratch: Path
    study: ExampleStudy
    loaded: LoadedManifest
    schedule: tuple[ScheduleEntry, ...]
    server: RehearsalServer
    settings: CliSettings
    extra_denied: tuple[str, ...]
    configs: Mapping[str, str | None]
    ledger: dict[str, Any]


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
        mcp = check_mcp_servers(DEFAULT_MCP_SERVER, loaded.manifest, schedule, study.roots)
        yield Pilot(
            scratch=scratch,
            study=study,
            loaded=loaded,
            schedule=schedule,
            server=server,
            settings=settings,
            extra_denied=tuple(mcp.extra_denied),
            configs=dict(mcp.configs),
            ledger=json.loads(output.read_text(encoding="utf-8")),
        )
