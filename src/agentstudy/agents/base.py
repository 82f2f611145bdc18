"""The agent seam (issue 21 item 1): what the runners need from a coding agent's CLI, as one Protocol.

An agent module (``agents.claude_code``, ``agents.codex``) says where its pinned binary lives,
how its version line reads, which scripted server rehearses it, how one attempt's child is
launched (argv wrapped by ``io.containment``, the allowlisted environment, an optional stdout
watcher that stops the child) and what the child's output means (the pure stream checks ->
status, usage, cost). Everything around it — export, private directories, bounded spawn,
settlement, the ledger — is shared (``transports.cli``, ``runners``); nothing there branches on
an agent's name: ``agents.registry.agent_cli(name)`` picks the module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from agentstudy.io.containment import ContainmentMode
    from agentstudy.protocol.mcp_spec import McpServerSpec
    from agentstudy.protocol.run_records import AgentRecord
    from agentstudy.rehearsal.messages_server import RehearsalServer
    from agentstudy.rehearsal.policy import ScriptedReply
    from agentstudy.stream.steps import Step
    from agentstudy.transports.cli import CliAttemptBody, CliSettings, RawAttempt
    from agentstudy.transports.cli_evaluation import CliEvaluation

GATEWAY_TOKEN_ENV = "AGENTSTUDY_GATEWAY_TOKEN"  # noqa: S105 - a variable name, not a credential
"""Where an LLM gateway's token is read from: the driver's environment, or a Ray worker's own (issue 20).
Here, in the agent seam, so the commands' options name it without importing a transport (issue 42)."""


MessagesPolicy = Callable[[Mapping[str, Any]], "ScriptedReply"]
"""A scripted model: the Messages-shaped view of one request -> its reply (``rehearsal.policy``)."""


class StdoutWatch(Protocol):
    """Called with each chunk of the child's stdout as it arrives; a non-``None`` return is the reason
    to stop the child now (``io.process.run_bounded``'s ``watch``; the running per-attempt limit).
    ``peak_usd`` is the largest running cost (USD) it has seen, ``None`` before any: the attempt is
    charged at least that (issue 29), whatever the stream says afterwards."""

    def __call__(self, chunk: bytes) -> str | None:
        """The stop reason, or ``None`` to let the child run on."""
        ...

    @property
    def peak_usd(self) -> Decimal | None:
        """The largest running cost seen so far (USD), ``None`` before any."""
        ...


@dataclass(frozen=True)
class Launch:
    """How one attempt's child is started: ``argv`` (already contained), its complete ``env``, and
    ``watch`` (a fresh stdout watcher for this attempt, or ``None``); ``keep_stderr`` bytes of the
    child's stderr tail are kept for the stream checks (0: counted, never kept); ``collect`` reads the agent's own
    records after the child ended (``RawAttempt.agent_files``)."""

    argv: list[str]
    env: dict[str, str] = field(repr=False)
    watch: StdoutWatch | None = None
    keep_stderr: int = 0
    collect: Callable[[], dict[str, bytes]] | None = None
    """Reads what the agent recorded in its private directories (bounded bytes by name) after the child ended
    and before they are removed (Gemini CLI's session and telemetry files); ``None``: nothing to read."""


class AgentCli(Protocol):
    """One coding agent's CLI as the runners see it (issue 21 item 1).

    Attributes:
        name: the ``--agent`` value (``claude-code``, ``codex``), recorded in the ledger.
        label: the agent's name in messages (``Claude Code``, ``Codex CLI``).
        pinned_version: the version ``scripts/setup.sh`` installs (``--agent-version``'s default).
        rehearsal_model: the model name the demo's free rehearsal uses (priced by the agent's table).
        reports_cost: whether the agent reports its own cost; when it does not (Codex), our price row
            is the only meter of the per-attempt limit, so a model without one is refused before
            anything starts (``commands.agent_options.require_agent_price``, issue 21 item 4).
        bounds_worst_turn: whether ``--strict-cap`` can keep spent <= cap for this agent: the agent checks
            its own limit after each turn (Claude Code's ``--max-budget-usd``), so one worst-case turn from
            its price table bounds any attempt (issue 19); an agent stopped by our meter of its running
            usage (Codex) cannot be bounded that way, and ``--strict-cap`` is refused for it.
        judged_with_stderr: whether the stream checks read the child's stderr too (Codex names a failed
            MCP server there); ``agentstudy transcript --stderr`` is refused for an agent that does not.
        start_env: variables the agent's every start gets, its ``--version`` probe as its attempts (Gemini CLI:
            ``GEMINI_CLI_NO_RELAUNCH``, without which it starts itself twice); empty for most agents.
        record_files: the names of the records ``Launch.collect`` reads after an attempt (``RawAttempt.agent_files``;
            Gemini CLI: ``session``, ``telemetry``), which ``agentstudy transcript --record`` takes; empty for most.
        repository_tools: the agent's read-only repository tools an attempt offers besides a server's (the
            adjudicator's whole tool set, recorded in the companion; issue 45).
        limit_rule: how the per-attempt limit holds for this agent, as the end of a sentence naming it
            (``is stopped at the limit by its running usage``); said where ``--strict-cap`` is refused.
    """

    name: str
    label: str
    pinned_version: str
    rehearsal_model: str
    reports_cost: bool
    bounds_worst_turn: bool
    judged_with_stderr: bool
    start_env: Mapping[str, str]
    record_files: tuple[str, ...]
    repository_tools: tuple[str, ...]
    limit_rule: str

    def find_binary(self, explicit: str | None, environ: Mapping[str, str]) -> Path:
        """The agent's executable (explicit path, override variable, pinned install in .tools, PATH).

        Raises:
            agentstudy.io.agent_binary.AgentBinaryError: none usable is found.
        """
        ...

    def version_problem(self, line: str, expected: str) -> str | None:
        """Why the ``--version`` line ``line`` is not version ``expected``; ``None`` when it is."""
        ...

    def rehearsal_endpoint(self, latency_ms: int, faults: str | None = None) -> AbstractContextManager[str]:
        """A scripted zero-spend model server on 127.0.0.1 for this agent; entering it gives the base
        URL the child is pointed at (``CliSettings.rehearsal_base_url``). ``latency_ms``: delay per answer;
        ``faults``: a fault SPEC (``protocol.fault_schedule``; issue 33) the server parses for itself."""
        ...

    def rehearsal_server(self, latency_ms: int, policy: MessagesPolicy | None = None) -> RehearsalServer:
        """The same scripted server as ``rehearsal_endpoint``, not yet started, for a caller that reads its
        request log (the provider adapters' served-token counts, issue 34); its ``agent_base_url`` is the URL.
        ``policy``: who answers, over the Messages-shaped view of each request whatever the agent's wire (the
        key-term adjudicator of ``agentstudy adjudicate --rehearsal``, issue 45); ``None``: the careful study
        agent (``rehearsal.policy.next_reply``)."""
        ...

    def login_file(self, environ: Mapping[str, str]) -> Path | None:
        """The user's own login file a real (not rehearsed, not gateway) run makes visible read-only in the
        attempt's private HOME, or ``None`` (none exists, or the agent authenticates otherwise)."""
        ...

    def scratch_parent(self, settings: CliSettings) -> Path | None:
        """Where an attempt's private directories are made (``None``: the system temp dir)."""
        ...

    def default_scratch_root(self, environ: Mapping[str, str]) -> Path | None:
        """``scratch_parent`` when no run setting overrides it, without creating it (``None``: the system temp
        dir); swept for what killed runs left (``agents.registry.sweep_stale_scratch``)."""
        ...

    def launch(self, body: CliAttemptBody, export: Path, scratch: Path, env_source: Mapping[str, str]) -> Launch:
        """The child of one attempt in ``export`` (read-only, its cwd), with private dirs under ``scratch``.

        Raises:
            agentstudy.io.containment.ContainmentError: bubblewrap vanished.
        """
        ...

    def evaluate(self, body: CliAttemptBody, raw: RawAttempt) -> CliEvaluation:
        """What the child's output means: the pure stream checks, usage, costs, the pre-settlement status."""
        ...

    def transcript_steps(self, data: bytes) -> tuple[Step, ...]:
        """The kept transcript's steps in the one step model (``stream.steps``; issue 43)."""
        ...

    def isolation(self, settings: CliSettings, scenario: str) -> dict[str, Any]:
        """The attempt's containment as record fields (``containment``, ``isolation_achieved``,
        ``isolation_not_achieved``)."""
        ...

    def price_entry(self, model: str) -> dict[str, Any] | None:
        """The ledger's ``cli.prices`` entry for ``model`` (USD per million tokens), ``None`` if unpriced."""
        ...

    def tool_set_problems(self, binary: Path, containment: ContainmentMode, spec: McpServerSpec,
                          annotations: Mapping[str, Mapping[str, Any]], parent_env: Mapping[str, str]) -> list[str]:
        """The agent's own check of the treatment arm's tool set (``--dry-run --probe``; issue 32 item 5): the
        tools of ``spec.read_only_tools`` the agent would deny at run time, each as ``"TOOL: why"`` (``[]``:
        none, or the agent has no such check). ``annotations``: the probe's annotations by tool.

        Raises:
            agentstudy.io.agent_binary.AgentBinaryError: the agent's check could not run.
        """
        ...

    def agent_record(self, settings: CliSettings, version_line: str, parent_env: Mapping[str, str]) -> AgentRecord:
        """The ledger's ``cli.agent`` block, read once per run in preflight (Codex: its features list).

        Raises:
            agentstudy.io.agent_binary.AgentBinaryError: a run fact could not be read.
        """
        ...
