"""The MCP probe's own process: ``python -I -m agentstudy.io.mcp_probe_child``, started by
``io.mcp_client.probe_mcp_server`` (issue 42: the SDK's import, most of a pilot's CPU before its first ledger
byte, leaves the run's process).

Each request starts the server under study over stdio through the official ``mcp`` client SDK, exactly as the caller
built it (the contained command of ``io.mcp_sandbox.contained_server``, the server's environment and working
directory), lists its tools, and calls the probe. It speaks one JSON object per line:

- stdin, one line per request (the process ends at the end of stdin): ``{"command", "args", "env", "cwd",
  "stderrPath", "probeTool", "probeArguments", "check", "timeoutS"}`` (``env`` the server's complete
  environment; ``stderrPath`` the file its stderr goes to);
- stdout, when ``check`` is true: ``{"listing": {"tools": [name…], "hints": {name: [readOnly, destructive,
  openWorld]}}}``, then it reads ``{"go": true}`` (call the probe) or ``{"go": false}`` (stop the server, call
  nothing) from stdin;
- stdout, the request's last line: ``{"probe": {…McpProbe's fields…}}``, ``{"refused": true}`` after a ``go: false``, or
  ``{"error": {"kind", "message"}}`` (the first real error's class name and message).

The server's words come back raw (the failed probe's ``isError`` text, an error's message): the caller, which
alone holds the secrets to redact, makes them safe (``io.mcp_child.server_text``). This process never sees
our API keys.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import IO, Any

from agentstudy.io.mcp_sdk import leaf_error, load_mcp_sdk
from agentstudy.protocol.treatment import tool_set_sha256


def _hints(tool: Any) -> list[bool | None]:
    annotations = tool.annotations
    if annotations is None:
        return [None, None, None]
    return [getattr(annotations, "read_only_hint", None), getattr(annotations, "destructive_hint", None),
            getattr(annotations, "open_world_hint", None)]


def _annotations(tool: Any) -> dict[str, Any]:
    if tool.annotations is None:
        return {}
    dumped: dict[str, Any] = tool.annotations.model_dump(by_alias=True, exclude_none=True, mode="json")
    return dumped


def _send(out: IO[str], message: Mapping[str, Any]) -> None:
    out.write(json.dumps(message) + "\n")
    out.flush()


async def _probe(request: Mapping[str, Any], reader: IO[str], out: IO[str]) -> dict[str, Any]:
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=request["command"], args=list(request["args"]), env=request["env"],
                                   cwd=request["cwd"])
    with anyio.fail_after(float(request["timeoutS"])):
        with open(request["stderrPath"], "w", encoding="utf-8") as errlog:  # the SDK wants a file-backed stream
            async with Client(stdio_client(params, errlog=errlog), mode="legacy", cache=None) as client:
                listed = await client.list_tools()
                names = [tool.name for tool in listed.tools]
                if request["check"]:
                    _send(out, {"listing": {"tools": names, "hints": {t.name: _hints(t) for t in listed.tools}}})
                    answer = await anyio.to_thread.run_sync(reader.readline, abandon_on_cancel=True)
                    if not json.loads(answer or "{}").get("go"):
                        return {"refused": True}
                ok, said = True, ""
                if request["probeTool"] is not None:
                    result = await client.call_tool(request["probeTool"], dict(request["probeArguments"]))
                    ok = not result.is_error
                    if not ok:
                        said = " ".join(t for t in (getattr(block, "text", "") for block in result.content) if t)
                listing = [tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in listed.tools]
                return {"probe": {
                    "tools": names, "hints": {t.name: _hints(t) for t in listed.tools}, "probeOk": ok,
                    "probeError": said, "annotations": {t.name: _annotations(t) for t in listed.tools},
                    "listingSha256": tool_set_sha256(listing),
                    "descriptions": {t.name: t.description or "" for t in listed.tools},
                    "serverVersion": client.server_info.version if client.server_info is not None else None,
                }}


def main(reader: IO[str] = sys.stdin, out: IO[str] = sys.stdout) -> int:
    """Answer requests until stdin ends, one outcome line each (see the module docstring; one process may probe
    several servers in turn, the SDK imported once); exit status 0 at the end of stdin, 2 on a malformed request."""
    load_mcp_sdk()
    import anyio

    while True:
        line = reader.readline()
        if not line:
            return 0
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise ValueError("the request is not a JSON object")
        except ValueError as bad:
            print(f"mcp_probe_child: bad request: {bad}", file=sys.stderr)
            return 2
        try:
            outcome = anyio.run(_probe, request, reader, out)
        except Exception as raised:  # the SDK raises many kinds; the caller names the first real one
            first = leaf_error(raised)
            outcome = {"error": {"kind": first.__class__.__name__, "message": str(first)}}
        _send(out, outcome)


if __name__ == "__main__":
    raise SystemExit(main())
