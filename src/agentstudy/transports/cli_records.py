"""What one agent CLI attempt produced (issues 20, 21, 39, 40): the body's :class:`RawAttempt` (the child's bounded
stdout, how it ended, the export's facts, kept stderr tails, the agent's own records) and the evaluated
:class:`CliAttemptResult` before settlement. Plain records; ``transports.cli`` makes them and re-exports both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from agentstudy.pricing.cost import AttemptCost
from agentstudy.stream.outcome import CliStatus, ProcessFacts


@dataclass(frozen=True)
class CliAttemptResult:
    """Everything one attempt produced before settlement.

    ``status`` is the pre-settlement status and ``status_reason`` why it is not ``completed``,
    in our own short words (``stream.outcome``: a spawn error, the timeout, stdout over its
    bound, a signal, …; ``None`` when completed); costs are ``Decimal`` USD or ``None`` when
    invalid; ``fields`` are record fields taken from the transcript.
    """

    status: CliStatus
    reported_cost_usd: Decimal | None
    computed_cost: AttemptCost | None
    setup_problems: tuple[str, ...]
    cost_problem: str | None
    exit_code: int | None
    wall_time_ms: int
    fields: dict[str, Any]
    status_reason: str | None = None
    raw_output: bytes = b""
    """The child's raw stdout (bounded), kept as the attempt's private transcript (issue 28); empty when none."""
    server_stderr: bytes = b""
    """The MCP server's stderr tail (redacted; ``RawAttempt.server_stderr``), kept beside the transcript (issue 39)."""


@dataclass(frozen=True)
class RawAttempt:
    """What an attempt's body returns (issue 20): the child's raw stdout (bytes, bounded), how it ended,
    its wall time (ms), the export's facts (files, bytes, tree SHA-256; ``None`` when no export was
    made), the Ray node id that ran it (``None`` for the local executor), the kept stderr tail and why
    a watcher stopped the child (issue 21)."""

    stdout: bytes
    facts: ProcessFacts
    wall_time_ms: int
    export_files: int | None
    export_bytes: int | None
    export_tree_sha256: str | None
    worker_node: str | None = None
    stderr: bytes = b""
    """The tail of the child's stderr the agent asked to keep (``Launch.keep_stderr`` bytes; else empty)."""
    watch_stop: str | None = None
    """Why the agent's stdout watcher stopped the child (the running per-attempt limit), else ``None``."""
    running_peak_usd: Decimal | None = None
    """The largest running cost (USD) the agent's stdout watcher saw, ``None`` without one (issue 29): the
    attempt is charged at least this, whatever the kept stdout says at its end."""
    stderr_bytes: int = 0
    """Bytes the child wrote to stderr (counted, never kept beyond ``stderr``)."""
    agent_files: Mapping[str, bytes] = field(default_factory=dict)
    """What ``Launch.collect`` read of the agent's own records (bounded bytes by name; Gemini CLI's session
    and telemetry files), empty for agents that keep none."""
    server_stderr: bytes = b""
    """The tail of the MCP server's stderr (``io.server_host.SERVER_STDERR_KEPT_BYTES``), credentials redacted;
    empty outside the MCP arm (issue 39)."""
    server_changed: str | None = None
    """How the MCP server changed its word since the preflight (a ``tools/list`` answer that breaks the read-only
    rule, withheld from the agent; ``io.server_host``, issue 40), else ``None``: the attempt is ``invalid-setup``."""
