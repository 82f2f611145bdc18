"""The MCP server command an agent is given: a stdio relay to the server agentstudy started for it (issue 39).

Run as ``python -I -m agentstudy.io.server_relay SOCKET`` inside the agent's sandbox (standard
library only). It connects to ``SOCKET`` (a unix socket of ``io.server_host``, which starts the
server in its own world for this connection), copies stdin to the socket and the socket to stdout,
and exits when the server's side ends (the server exited) — the agent then sees its server gone,
as it would a server it started itself. A socket it cannot reach: one line on stderr, exit 1.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading

CHUNK_BYTES = 65536


def _upstream(connection: socket.socket) -> None:
    """stdin -> socket; at stdin's end, half-close the socket so the server sees its input end."""
    try:
        while chunk := os.read(0, CHUNK_BYTES):
            connection.sendall(chunk)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_WR)


def main(argv: list[str]) -> int:
    """Relay stdio to the socket ``argv[0]``; the exit status (0 when the server's side ended)."""
    if len(argv) != 1:
        print("usage: python -m agentstudy.io.server_relay SOCKET", file=sys.stderr)
        return 2
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(argv[0])
    except OSError as error:
        print(f"agentstudy: the MCP server's socket {argv[0]} cannot be reached: {error.strerror}", file=sys.stderr)
        return 1
    threading.Thread(target=_upstream, args=(connection,), daemon=True).start()
    try:
        while chunk := connection.recv(CHUNK_BYTES):
            view = memoryview(chunk)
            while view:
                view = view[os.write(1, view):]
    except OSError:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
