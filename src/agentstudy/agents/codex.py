"""OpenAI Codex CLI as an ``AgentCli`` (issue 21): the pinned ``codex exec --json``, its rehearsal, its checks.

The attempt itself (per-attempt ``CODEX_HOME`` outside any temp dir, generated ``config.toml``,
containment, the running-usage stop, the strict stream checks, OpenAI prices) is
``transports.codex``; this module is its entry in the registry.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from agentstudy.agents.base import Launch, MessagesPolicy
from agentstudy.io.agent_binary import BinaryLookup, find_agent_binary
from agentstudy.io.containment import ContainmentMode
from agentstudy.pricing.openai import openai_price_entry
from agentstudy.protocol.fault_schedule import parse_fault_schedule
from agentstudy.protocol.mcp_spec import McpServerSpec
from agentstudy.protocol.run_records import AgentRecord
from agentstudy.rehearsal.responses_server import ResponsesRehearsalServer
from agentstudy.rehearsal.responses_wire import messages_view
from agentstudy.stream.steps import Step, codex_steps
from agentstudy.transports import codex as transport
from agentstudy.transports.cli import CliAttemptBody, CliSettings, RawAttempt
from agentstudy.transports.cli_evaluation import CliEvaluation
from agentstudy.transports.codex_args import CODEX_VERSION, REHEARSAL_MODEL, CodexMcpServer, version_problem
from agentstudy.transports.codex_features import codex_features
from agentstudy.transports.codex_tool_check import check_codex_tool_set

PINNED_INSTALL = Path(".tools") / "codex" / "node_modules" / ".bin" / "codex"
"""Where ``scripts/setup.sh`` installs the pinned Codex CLI, relative to the project root."""
CODEX_LOOKUP = BinaryLookup("Codex CLI", "AGENTSTUDY_CODEX_BIN", PINNED_INSTALL, "codex", "--agent-bin")


def default_home_root(environ: Mapping[str, str] = os.environ) -> Path:
    """The parent of per-attempt Codex homes: ``$XDG_CACHE_HOME/agentstudy/codex-homes`` (else
    ``~/.cache/...``), never under a temp dir — Codex 0.171.0 refuses to make its sandbox helper
    there and every shell command then fails (measured, docs/codex.md). A relative ``XDG_CACHE_HOME`` or
    ``HOME`` is ignored (the XDG rule; it would make the homes under the working directory), then the
    account's home from the password database."""
    cache = environ.get("XDG_CACHE_HOME") or ""
    if not os.path.isabs(cache):
        home = environ.get("HOME") or ""
        cache = os.path.join(home if os.path.isabs(home) else pwd.getpwuid(os.getuid()).pw_dir, ".cache")
    return Path(cache) / "agentstudy" / "codex-homes"


class CodexAgent:
    """``codex exec --json`` 0.171.0 (issue 21)."""

    name = "codex"
    label = "Codex CLI"
    pinned_version = CODEX_VERSION
    rehearsal_model = REHEARSAL_MODEL
    reports_cost = False
    bounds_worst_turn = False
    judged_with_stderr = True
    start_env: Mapping[str, str] = {}
    record_files: tuple[str, ...] = ()
    repository_tools: tuple[str, ...] = ("shell",)
    """Codex reads the repository by its shell in a read-only sandbox (counted as ``shell:<program>``)."""
    limit_rule = "is stopped at the limit by its running usage"

    def find_binary(self, explicit: str | None, environ: Mapping[str, str]) -> Path:
        """``--agent-bin``, ``AGENTSTUDY_CODEX_BIN``, ``.tools/codex``, ``codex`` on PATH (AgentBinaryError)."""
        return find_agent_binary(CODEX_LOOKUP, explicit, environ)

    def version_problem(self, line: str, expected: str) -> str | None:
        """The line must be exactly ``codex-cli <expected>``."""
        return version_problem(line, expected)

    def rehearsal_endpoint(self, latency_ms: int, faults: str | None = None) -> AbstractContextManager[str]:
        """The scripted Responses API server (with the fault SPEC ``faults``); its ``/v1`` URL goes into
        ``[model_providers.rehearsal]``."""
        return _responses_server(latency_ms, faults)

    def rehearsal_server(self, latency_ms: int, policy: MessagesPolicy | None = None) -> ResponsesRehearsalServer:
        """A ``ResponsesRehearsalServer`` (not started) answering after ``latency_ms`` ms with ``policy`` over
        each request's Messages-shaped view (``rehearsal.responses_wire.messages_view``; default the careful
        study agent)."""
        if policy is None:
            return ResponsesRehearsalServer(latency_ms=latency_ms)
        chosen = policy
        return ResponsesRehearsalServer(latency_ms=latency_ms, policy=lambda body: chosen(messages_view(body)))

    def login_file(self, environ: Mapping[str, str]) -> Path | None:
        """The user's Codex login, ``$CODEX_HOME/auth.json`` (default ``$HOME/.codex``), when it is a regular
        file; a real run mounts it read-only as the private ``CODEX_HOME``'s ``auth.json`` (nothing else of
        the user's Codex home is visible)."""
        base = environ.get("CODEX_HOME") or (str(Path(environ["HOME"]) / ".codex") if environ.get("HOME") else "")
        if not base or not Path(base).is_absolute():
            return None
        path = Path(base) / "auth.json"
        return path.resolve() if path.is_file() else None

    def default_scratch_root(self, environ: Mapping[str, str]) -> Path | None:
        """``default_home_root(environ)`` (the per-attempt Codex homes live outside every temp dir)."""
        return default_home_root(environ)

    def scratch_parent(self, settings: CliSettings) -> Path | None:
        """``settings.agent_home_root`` or ``default_home_root()``, created 0700 (never a temp dir)."""
        root = settings.agent_home_root or default_home_root()
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        return root

    def launch(self, body: CliAttemptBody, export: Path, scratch: Path, env_source: Mapping[str, str]) -> Launch:
        """``transports.codex.codex_launch``."""
        return transport.codex_launch(body, export, scratch, env_source)

    def evaluate(self, body: CliAttemptBody, raw: RawAttempt) -> CliEvaluation:
        """``transports.codex.evaluate_codex_attempt``."""
        return transport.evaluate_codex_attempt(body, raw)

    def transcript_steps(self, data: bytes) -> tuple[Step, ...]:
        """``stream.steps.codex_steps`` (exec --json events)."""
        return codex_steps(data)

    def isolation(self, settings: CliSettings, scenario: str) -> dict[str, Any]:
        """``transports.codex.codex_isolation``."""
        return transport.codex_isolation(settings, scenario)

    def price_entry(self, model: str) -> dict[str, Any] | None:
        """``pricing.openai.openai_price_entry`` (genai-prices' snapshot, or our rehearsal row)."""
        return openai_price_entry(model)

    def tool_set_problems(self, binary: Path, containment: ContainmentMode, spec: McpServerSpec,
                          annotations: Mapping[str, Mapping[str, Any]], parent_env: Mapping[str, str]) -> list[str]:
        """``transports.codex_tool_check.check_codex_tool_set``: the pinned binary reads the treatment arm's
        ``config.toml`` back; a tool it does not enable or would not approve is a problem (AgentBinaryError)."""
        server = CodexMcpServer(name=spec.name, command=spec.command, env={}, enabled_tools=spec.read_only_tools)
        root = default_home_root(parent_env)
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        return check_codex_tool_set(binary, containment, server, annotations, parent_env, root)

    def agent_record(self, settings: CliSettings, version_line: str, parent_env: Mapping[str, str]) -> AgentRecord:
        """Name, version and ``codex features list`` under the run's configuration (AgentBinaryError)."""
        features = codex_features(settings, parent_env, self.scratch_parent(settings) or default_home_root())
        return AgentRecord(name=self.name, version=version_line, features=features)


@contextmanager
def _responses_server(latency_ms: int, faults: str | None) -> Iterator[str]:
    schedule = None if faults is None else parse_fault_schedule(faults)
    with ResponsesRehearsalServer(latency_ms=latency_ms, faults=schedule) as server:
        yield server.provider_base_url


AGENT = CodexAgent()
"""The registry's entry (``agents.registry``)."""
