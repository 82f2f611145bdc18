"""The seams and the result of one Messages API attempt (seed 000 ``http``; issue 16): how a request is sent
(``Sender``), what tools an attempt offers (``ToolBox``), where its money is persisted (``CallLedger``), and
what it produced (``HttpAttemptResult``). Split from ``transports.http``, which runs the agent loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal, Protocol

from agentstudy.pricing.budget import Budget
from agentstudy.pricing.http import CallReservation, CallSettlement
from agentstudy.protocol.treatment import TreatmentRecord
from agentstudy.transports.repo_tools import ToolResult

HttpStatus = Literal["completed", "failed", "timed-out", "budget-exceeded", "incomplete", "invalid-setup"]


class Sender(Protocol):
    """Sends one request: ``post(body bytes, timeout seconds, retry_count=n) -> decoded JSON object``; raises
    ``MessagesApiError``."""

    def post(self, body: bytes, timeout_s: float, retry_count: int = 0) -> dict[str, Any]:
        """Send ``body`` and return the 2xx JSON object."""
        ...


class ToolBox(Protocol):
    """The attempt's tools: their request ``definitions``, offered ``names`` and ``call`` (never raises)."""

    @property
    def definitions(self) -> list[dict[str, Any]]:
        """``{name, description, input_schema}`` per tool."""
        ...

    @property
    def names(self) -> list[str]:
        """The offered names."""
        ...

    def call(self, name: str, arguments: Any) -> ToolResult:
        """Run one call."""
        ...

    def mcp_name(self, name: str) -> str | None:
        """The MCP server's own name of an offered tool, ``None`` for a repository tool (issue 28)."""
        ...


class CallLedger(Protocol):
    """Where the loop persists money: both methods return only after the ledger is on disk."""

    def reserved(self, budget: Budget, reservation: CallReservation) -> None:
        """A call's reservation was added to ``budget`` (spent); called before the request is sent."""

    def settled(self, budget: Budget, settlement: CallSettlement) -> None:
        """A call was settled (measured, or its reservation kept); ``budget`` is after the settlement."""


@dataclass(frozen=True)
class HttpAttemptResult:
    """What one attempt produced, before the attempt machine settles its status.

    Tokens are sums over settled (valid-usage) calls only; ``usage_complete`` is false when a
    call's usage is missing (its reservation stays charged). Money is exact ``Decimal`` USD:
    ``reserved_usd`` the sum of the attempt's reservations, ``measured_usd`` of its measured
    costs, ``charged_usd`` what it added to spend. ``status_reason`` is our own short text
    (never provider text); ``answer`` is empty unless ``completed``.
    """

    status: HttpStatus
    status_reason: str | None
    budget: Budget
    input_tokens: int
    output_tokens: int
    usage_complete: bool
    turns: int
    tool_calls: int
    tool_calls_by_name: dict[str, int]
    tool_errors_by_name: dict[str, int]
    tools: list[str]
    reserved_usd: Decimal
    measured_usd: Decimal
    charged_usd: Decimal
    wall_time_ms: int
    answer: str
    worker_node: str | None = None
    """The Ray node id that ran the attempt (``--executor ray``, issue 20); ``None`` in this process."""
    api_retries: int = 0
    """Refused requests sent again (issue 33)."""
    api_retry_wait_ms: int = 0
    """Milliseconds waited before those retries and in the run's back-off pauses (not agent time)."""
    api_retry_statuses: tuple[int | str, ...] = ()
    """Every refusal seen, in order: an HTTP status, or ``network``."""
    failure_kind: str | None = None
    """Why a ``failed`` / ``timed-out`` attempt ended: ``rate-limited``, ``overloaded``, ``server-error``,
    ``network``, ``timeout`` or ``agent``; ``None`` otherwise."""
    treatment: TreatmentRecord | None = None
    """Was the server offered and used (issue 28): from our own requests; ``None`` when no request was built."""
    exchange: bytes = b""
    """Every request body and response of the attempt as JSON lines (``{"turn", "request"}`` /
    ``{"turn", "response"}`` / ``{"turn", "lost"}``), its private transcript (issue 28)."""
