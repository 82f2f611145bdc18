"""Replay a study's per-server preparation calls in every server it starts, before the agent's first call (issue 32).

Some MCP servers keep what a preparation tool built in their own memory only (code-index-mcp's
deep index, its project path): a step run once per checkout leaves them as unprepared as before
in the next process. A step with ``"scope": "server"`` is therefore also replayed here, in each
server the study starts (the preflight probe, every treatment attempt's server), by a small
stdio relay that sits between the client (the agent, or our SDK client) and the server:

1. it relays the client's ``initialize`` request and the server's answer;
2. it relays the client's ``notifications/initialized``;
3. it sends each step as a ``tools/call`` of its own (ids ``agentstudy-warm-up-N``), waits for
   each answer and keeps it from the client (an error answer is written to its stderr, which is
   the server's stderr), relaying whatever else the server says; the client's further messages
   wait until the steps are done;
4. then it relays both ways until either side ends, and exits with the server's status.

Run as ``python -I -m agentstudy.io.warm_up STEPS_JSON -- SERVER ARGS…`` inside the server's
own sandbox; standard library only (it runs before anything else of ours is importable there).
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


def _until(source: IO[bytes], sink: IO[bytes], done: Any) -> bool:
    """Relay lines from ``source`` to ``sink`` until one satisfies ``done`` (relayed too unless it is ours);
    False when ``source`` ended first."""
    while True:
        line = source.readline()
        if not line:
            return False
        message = _message(line)
        ours = str(message.get("id", "")).startswith(WARM_UP_ID)
        if ours:
            if "error" in message or (message.get("result") or {}).get("isError"):
                sys.stderr.write(f"agentstudy warm-up call {message.get('id')} answered an error: "
                                 f"{json.dumps(message)[:500]}\n")
                sys.stderr.flush()
        else:
            _send(sink, line)
        if done(message):
            return True


def _pump(source: IO[bytes], sink: IO[bytes]) -> None:
    """Copy lines from ``source`` to ``sink`` until ``source`` ends, then close ``sink``."""
    try:
        for line in iter(source.readline, b""):
            _send(sink, line)
    except (BrokenPipeError, ValueError, OSError):
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.close()


def main(argv: list[str]) -> int:
    """Run the relay: ``argv`` is ``[STEPS_JSON, "--", SERVER, ARGS…]``; the server's exit status (2 on bad use)."""
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: python -m agentstudy.io.warm_up STEPS_JSON -- SERVER ARGS...\n")
        return 2
    steps = json.loads(argv[0])
    server = subprocess.Popen(argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert server.stdin is not None and server.stdout is not None
    signal.signal(signal.SIGTERM, lambda *_: server.terminate())
    client_in, client_out = sys.stdin.buffer, sys.stdout.buffer
    try:
        first = client_in.readline()
        if first:
            _send(server.stdin, first)
            asked = _message(first).get("id")
            if _until(server.stdout, client_out, lambda m: m.get("id") == asked and ("result" in m or "error" in m)):
                for line in iter(client_in.readline, b""):
                    _send(server.stdin, line)
                    if _message(line).get("method") == "notifications/initialized":
                        break
                for number, step in enumerate(steps):
                    request = {"jsonrpc": "2.0", "id": f"{WARM_UP_ID}{number}", "method": "tools/call",
                               "params": {"name": step["tool"], "arguments": step.get("arguments") or {}}}
                    _send(server.stdin, json.dumps(request).encode("utf-8"))
                    if not _until(server.stdout, client_out, lambda m, n=number: m.get("id") == f"{WARM_UP_ID}{n}"):
                        break
        threading.Thread(target=_pump, args=(client_in, server.stdin), daemon=True).start()
        _pump(server.stdout, client_out)
    except (BrokenPipeError, OSError):
        server.terminate()
    return server.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
