"""Run ``agentstudy ARGS…`` (the real command line) with one slow part the signal tests control.

Usage: ``python signal_driver.py HOLD MARKER_DIR -- ARGS…``. The command runs unchanged
(``agentstudy.cli.main``): its signal policy, its rehearsal server, the real Claude Code binary
or the http loop, bubblewrap, the MCP servers. Only one part is made to wait, once, at a known
point, until the command has received a stop signal (or 120 s pass); ``MARKER_DIR/held`` is
written when the wait begins, so the test knows where the signal lands:

- ``first-request``: the rehearsal server holds the run's first Messages API request (inside attempt 1);
- ``mcp-request``: it holds the first request that offers the MCP server's tools (inside attempt 2,
  the ``doc-bridge-mcp`` arm, with its MCP server running);
- ``last-answer``: it holds the request the scripted agent answers with ``end_turn`` in the MCP arm
  (the pilot's last request);
- ``between``: the progress watcher holds after attempt 1 is settled and checkpointed;
- ``final``: the ledger file holds the first checkpoint of a finished document (the final one).

Holding in the server thread leaves the command's main thread waiting for the answer, as a slow
API would; holding in the main thread leaves the signal handler to run there. Test-only.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import agentstudy.agents.claude_code as claude_code_agent
import agentstudy.commands.view as terminal_view
import agentstudy.rehearsal.gemini_server
import agentstudy.rehearsal.messages_server as messages_server
import agentstudy.rehearsal.responses_server  # noqa: F401 -- likewise
from agentstudy.cli import main
from agentstudy.io.ledger_store import LedgerFile
from agentstudy.rehearsal.messages_server import RehearsalServer
from agentstudy.rehearsal.policy import ScriptedReply, next_reply
from agentstudy.runners.progress import AttemptProgress

try:
    from agentstudy.io.signals import stop_signal
except ImportError:  # a checkout without the stop policy (to show the tests fail there): hold until killed
    def stop_signal() -> int | None:
        """No policy, no recorded stop."""
        return None

HOLD_LIMIT_S = 120.0
MCP_TOOL_NAMES = frozenset({"mcp__doc-bridge__doc_search", "doc_search"})


class _Hold:
    """Waits once, at the chosen point, until the command has recorded a stop signal."""

    def __init__(self, point: str, marker: Path) -> None:
        self.point, self.marker = point, marker
        self._lock = threading.Lock()
        self._used = False

    def claim(self) -> bool:
        with self._lock:
            if self._used:
                return False
            self._used = True
            return True

    def wait(self) -> None:
        (self.marker / "held").write_text(self.point, encoding="utf-8")
        deadline = time.monotonic() + HOLD_LIMIT_S
        while stop_signal() is None and time.monotonic() < deadline:
            time.sleep(0.01)


def _offers_mcp(body: Mapping[str, Any]) -> bool:
    tools = body.get("tools")
    return isinstance(tools, list) and any(isinstance(t, dict) and t.get("name") in MCP_TOOL_NAMES for t in tools)


def _holding_policy(hold: _Hold, body: Mapping[str, Any]) -> ScriptedReply:
    reply = next_reply(body)
    wanted = (
        hold.point == "first-request"
        or (hold.point == "mcp-request" and _offers_mcp(body))
        or (hold.point == "last-answer" and _offers_mcp(body) and reply.stop_reason == "end_turn")
    )
    if wanted and hold.claim():
        hold.wait()
    return reply


class _HoldingProgress:
    """A silent watcher that holds once after attempt 1 is settled."""

    def __init__(self, hold: _Hold) -> None:
        self.hold = hold

    def attempt_started(self, attempt: AttemptProgress) -> None:
        """Nothing."""

    def attempt_settled(self, attempt: AttemptProgress, status: str, tool_calls: int, charged_usd: Decimal,
                        spent_usd: Decimal, cap_usd: Decimal) -> None:
        """Hold after the first attempt."""
        if attempt.index == 1 and self.hold.claim():
            self.hold.wait()


def _install(hold: _Hold) -> None:
    if hold.point in ("first-request", "mcp-request", "last-answer"):
        policy = functools.partial(_holding_policy, hold)
        holding = functools.partial(RehearsalServer, policy=policy)
        messages_server.RehearsalServer = holding  # type: ignore[misc]  # the http transport's (imported on use)
        claude_code_agent.RehearsalServer = holding  # type: ignore[misc]  # Claude Code's (AgentCli.rehearsal_endpoint)
    elif hold.point == "between":
        terminal_view.progress_for_terminal = lambda *_: _HoldingProgress(hold)  # type: ignore[assignment]
    elif hold.point == "final":
        original = LedgerFile.checkpoint

        def checkpoint(self: LedgerFile, document: dict[str, Any]) -> None:
            if document.get("status") != "running" and hold.claim():
                hold.wait()
            original(self, document)

        LedgerFile.checkpoint = checkpoint
    else:
        raise SystemExit(f"signal_driver: unknown hold point {hold.point!r}")


if __name__ == "__main__":
    point, marker, separator, *arguments = sys.argv[1:]
    if separator != "--":
        raise SystemExit("usage: signal_driver.py HOLD MARKER_DIR -- ARGS...")
    _install(_Hold(point, Path(marker)))
    main(arguments, prog_name="agentstudy")
