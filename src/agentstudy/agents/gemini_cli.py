"""Google Gemini CLI as an ``AgentCli``: the pinned ``gemini -p ... -o stream-json``, its rehearsal, its checks.

The attempt itself (private ``GEMINI_CLI_HOME`` with a generated ``settings.json`` and policy rules,
containment, the session and telemetry files read after the child, the strict stream checks, per-request
Google prices) is ``transports.gemini``; the scripted Gemini API is ``rehearsal.gemini_server``; this module
is their entry in the registry.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from agentstudy.agents.base import Launch, MessagesPolicy
from agentstudy.io.agent_binary import BinaryLookup, find_agent_binary
from agentstudy.io.containment import ContainmentMode
from agentstudy.pricing.gemini import gemini_price_entry
from agentstudy.protocol.fault_schedule import parse_fault_schedule
from agentstudy.protocol.mcp_spec import McpServerSpec
from agentstudy.protocol.run_records import AgentRecord
from agentstudy.rehearsal.gemini_server import GeminiRehearsalServer
from agentstudy.stream.gemini import READ_ONLY_BUILTINS
from agentstudy.stream.steps import Step, gemini_steps
from agentstudy.transports import gemini as transport
from agentstudy.transports.cli import CliAttemptBody, CliSettings, RawAttempt
from agentstudy.transports.cli_evaluation import CliEvaluation
from agentstudy.transports.gemini_args import GEMINI_VERSION, REHEARSAL_MODEL, START_ENV, version_problem

PINNED_INSTALL = Path(".tools") / "gemini-cli" / "node_modules" / ".bin" / "gemini"
"""Where ``scripts/setup.sh`` installs the pinned Gemini CLI, relative to the project root."""
GEMINI_LOOKUP = BinaryLookup("Gemini CLI", "AGENTSTUDY_GEMINI_BIN", PINNED_INSTALL, "gemini", "--agent-bin")


class GeminiCliAgent:
    """``gemini -p PROMPT -o stream-json -m MODEL`` 0.61.0."""

    name = "gemini"
    label = "Gemini CLI"
    pinned_version = GEMINI_VERSION
    rehearsal_model = REHEARSAL_MODEL
    reports_cost = False
    bounds_worst_turn = False
    judged_with_stderr = True
    """Its retry loop's lines on stderr count the request-level retries (``stream.gemini_records``)."""
    start_env: Mapping[str, str] = START_ENV
    record_files: tuple[str, ...] = transport.RECORDS
    repository_tools: tuple[str, ...] = READ_ONLY_BUILTINS
    limit_rule = "is stopped at the limit by its running usage (its session file, read while it runs)"

    def find_binary(self, explicit: str | None, environ: Mapping[str, str]) -> Path:
        """``--agent-bin``, ``AGENTSTUDY_GEMINI_BIN``, ``.tools/gemini-cli``, ``gemini`` on PATH (AgentBinaryError)."""
        return find_agent_binary(GEMINI_LOOKUP, explicit, environ)

    def version_problem(self, line: str, expected: str) -> str | None:
        """The line must be exactly ``<expected>`` (``gemini --version`` prints the bare version)."""
        return version_problem(line, expected)

    def rehearsal_endpoint(self, latency_ms: int, faults: str | None = None) -> AbstractContextManager[str]:
        """The scripted Gemini API server (with the fault SPEC ``faults``); its URL is ``GOOGLE_GEMINI_BASE_URL``."""
        return _gemini_server(latency_ms, faults)

    def rehearsal_server(self, latency_ms: int, policy: MessagesPolicy | None = None) -> GeminiRehearsalServer:
        """A ``GeminiRehearsalServer`` (not started) answering after ``latency_ms`` ms with ``policy`` (the
        server hands it the Messages-shaped view; default the careful study agent)."""
        if policy is None:
            return GeminiRehearsalServer(latency_ms=latency_ms)
        return GeminiRehearsalServer(latency_ms=latency_ms, policy=policy)

    def login_file(self, environ: Mapping[str, str]) -> Path | None:
        """``None``: a real run authenticates with the user's own ``GEMINI_API_KEY`` (passed to the child, the
        auth type pinned to ``gemini-api-key``); no login file of the user's Gemini home is made visible."""
        return None

    def default_scratch_root(self, environ: Mapping[str, str]) -> Path | None:
        """``None``: the system temp dir."""
        return None

    def scratch_parent(self, settings: CliSettings) -> Path | None:
        """``None``: the system temp dir."""
        return None

    def launch(self, body: CliAttemptBody, export: Path, scratch: Path, env_source: Mapping[str, str]) -> Launch:
        """``transports.gemini.gemini_launch``."""
        return transport.gemini_launch(body, export, scratch, env_source)

    def evaluate(self, body: CliAttemptBody, raw: RawAttempt) -> CliEvaluation:
        """``transports.gemini.evaluate_gemini_attempt``."""
        return transport.evaluate_gemini_attempt(body, raw)

    def transcript_steps(self, data: bytes) -> tuple[Step, ...]:
        """``stream.steps.gemini_steps`` (stream-json)."""
        return gemini_steps(data)

    def isolation(self, settings: CliSettings, scenario: str) -> dict[str, Any]:
        """``transports.gemini.gemini_isolation``."""
        return transport.gemini_isolation(settings, scenario)

    def price_entry(self, model: str) -> dict[str, Any] | None:
        """``pricing.gemini.gemini_price_entry`` (genai-prices' ``google`` rows, or our rehearsal row)."""
        return gemini_price_entry(model)

    def tool_set_problems(self, binary: Path, containment: ContainmentMode, spec: McpServerSpec,
                          annotations: Mapping[str, Mapping[str, Any]], parent_env: Mapping[str, str]) -> list[str]:
        """``[]``: Gemini CLI has no dry-run read-back of its tool set; every attempt checks the tools its first
        request offered instead (``stream.gemini.NO_MCP_TOOL``)."""
        return []

    def agent_record(self, settings: CliSettings, version_line: str, parent_env: Mapping[str, str]) -> AgentRecord:
        """Name and version."""
        return AgentRecord(name=self.name, version=version_line)


@contextmanager
def _gemini_server(latency_ms: int, faults: str | None) -> Iterator[str]:
    schedule = None if faults is None else parse_fault_schedule(faults)
    with GeminiRehearsalServer(latency_ms=latency_ms, faults=schedule) as server:
        yield server.agent_base_url


AGENT = GeminiCliAgent()
"""The registry's entry (``agents.registry``)."""
