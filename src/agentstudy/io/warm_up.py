"""Replay a study's per-server preparation calls in every server it starts, before the agent's first call (issue 32).

Some MCP servers keep what a preparation tool built in their own memory only (code-index-mcp's
deep index, its project path): a step run once per checkout leaves them as unprepared as before
in the next process. A step with ``"scope": "server"`` is therefore also replayed here, in each
server the study starts (the preflight probe, every treatment attempt's server), by a small
stdio relay that sits between the client (the agent, or our SDK client) and the server:

1. it relays every message both ways as it comes (``initialize``, ``tools/list``…: the client
   sees the server connected at once);
2. once the client's ``notifications/initialized`` has reached the server, it sends each step as
   a ``tools/call`` of its own (ids ``agentstudy-warm-up-N``), one after the other, and keeps
   their answers from the client (an error answer is written to its stderr, the server's stderr);
3. a ``tools/call`` of the client waits until the last step has answered;
4. it exits with the server's status when the server's output ends.

It also rewrites tool descriptions (an arm's ``toolDescriptions``, issue 44): in every answer to the client's
``tools/list``, a listed tool named in the overrides gets the override as its ``description``; its name, input
schema and annotations pass as the server sent them. Being between every agent and the server, it serves
Claude Code, Codex and the http transport alike.

Run as ``python -I -m agentstudy.io.warm_up PLAN_JSON -- SERVER ARGS…`` inside the server's own sandbox, where
PLAN_JSON is ``{"steps": [{"tool", "arguments"}…], "descriptions": {TOOL: TEXT}}`` (a bare list is the steps
alone); standard library only (it runs before anything else of ours is importable there).
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import threading
from typing import IO, Any

WARM_UP_ID = "agentstudy-warm-up-"
"""The prefix of the relay's own request ids (never forwarded to the client)."""


def _message(line: bytes) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _send(stream: IO[bytes], line: bytes) -> None:
    stream.write(line if line.endswith(b"\n") else line + b"\n")
    stream.flush()


class _Relay:
    """The relay's state: the server, the steps still to send, and whether the warm-up is done."""

    def __init__(self, server: subprocess.Popen[bytes], steps: list[dict[str, Any]],
                 descriptions: dict[str, str] | None = None) -> None:
        self.server = server
        self.pending = list(enumerate(steps))
        self.descriptions = dict(descriptions or {})
        self.listing_ids: set[str] = set()
        self.ready = threading.Event()
        self.lock = threading.Lock()
        if not steps:
            self.ready.set()

    def to_server(self, line: bytes) -> None:
        """Write one line to the server (the client's pump and the warm-up both write)."""
        assert self.server.stdin is not None
        with self.lock:
            _send(self.server.stdin, line)

    def next_step(self) -> None:
        """Send the next warm-up call, or mark the warm-up done when none is left."""
        if not self.pending:
            self.ready.set()
            return
        number, step = self.pending.pop(0)
        request = {"jsonrpc": "2.0", "id": f"{WARM_UP_ID}{number}", "method": "tools/call",
                   "params": {"name": step["tool"], "arguments": step.get("arguments") or {}}}
        self.to_server(json.dumps(request).encode("utf-8"))

    def pump_client(self, client_in: IO[bytes]) -> None:
        """Client -> server: every line as it comes, except that a ``tools/call`` waits for the warm-up; the
        client's ``notifications/initialized`` starts it. Closes the server's stdin when the client ends."""
        try:
            for line in iter(client_in.readline, b""):
                message = _message(line)
                method = message.get("method")
                if method == "tools/list" and self.descriptions:
                    self.listing_ids.add(json.dumps(message.get("id")))
                if method == "tools/call":
                    self.ready.wait()
                self.to_server(line)
                if method == "notifications/initialized" and not self.ready.is_set():
                    self.next_step()
        except (BrokenPipeError, ValueError, OSError):
            pass
        finally:
            assert self.server.stdin is not None
            with contextlib.suppress(OSError), self.lock:
                self.server.stdin.close()

    def pump_server(self, client_out: IO[bytes]) -> None:
        """Server -> client: every line, except the answers to the warm-up calls (an error one goes to stderr)."""
        assert self.server.stdout is not None
        for line in iter(self.server.stdout.readline, b""):
            message = _message(line)
            if str(message.get("id", "")).startswith(WARM_UP_ID):
                if "error" in message or (message.get("result") or {}).get("isError"):
                    sys.stderr.write(f"agentstudy warm-up call {message.get('id')} answered an error: "
                                     f"{json.dumps(message)[:500]}\n")
                    sys.stderr.flush()
                self.next_step()
                continue
            if self.descriptions and "id" in message and json.dumps(message["id"]) in self.listing_ids:
                self.listing_ids.discard(json.dumps(message["id"]))
                line = rewritten(message, self.descriptions)
            _send(client_out, line)


def rewritten(answer: dict[str, Any], descriptions: dict[str, str]) -> bytes:
    """A ``tools/list`` answer (one JSON-RPC message) as one line, each listed tool named in ``descriptions`` given
    that text as its ``description``; every other key of every tool is kept as sent (issue 44)."""
    result = answer.get("result")
    tools = result.get("tools") if isinstance(result, dict) else None
    for tool in tools if isinstance(tools, list) else []:
        if isinstance(tool, dict) and isinstance(tool.get("name"), str) and tool["name"] in descriptions:
            tool["description"] = descriptions[tool["name"]]
    return json.dumps(answer, ensure_ascii=False).encode("utf-8")


def main(argv: list[str]) -> int:
    """Run the relay: ``argv`` is ``[PLAN_JSON, "--", SERVER, ARGS…]``; the server's exit status (2 on bad use)."""
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: python -m agentstudy.io.warm_up PLAN_JSON -- SERVER ARGS...\n")
        return 2
    plan = json.loads(argv[0])
    steps, descriptions = (plan, {}) if isinstance(plan, list) else (plan.get("steps", []), plan.get("descriptions"))
    server = subprocess.Popen(argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    signal.signal(signal.SIGTERM, lambda *_: server.terminate())
    relay = _Relay(server, steps, descriptions)
    threading.Thread(target=relay.pump_client, args=(sys.stdin.buffer,), daemon=True).start()
    try:
        relay.pump_server(sys.stdout.buffer)
    except (BrokenPipeError, OSError):
        server.terminate()
    return server.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
