"""Codex's own check of the treatment arm's tool set, for ``--dry-run --probe --agent codex`` (issue 32 item 5).

``codex exec`` runs with the approval policy ``never``: Codex 0.171.0 then cancels every MCP call it
would ask about ("MCP tool call requires approval, but approval policy is never"). A call passes when
the server annotates the tool ``readOnlyHint: true`` or the tool's own ``[mcp_servers.NAME.tools.TOOL]``
table says ``approval_mode = "approve"`` (or the server's ``default_tools_approval_mode`` does). The
dry run writes the treatment arm's ``config.toml`` exactly as an attempt does, lets the pinned binary
read it back (``codex mcp get NAME --json``, contained, allowlisted environment, private
``CODEX_HOME``) and refuses a tool Codex does not enable or would not approve, before anything is
spent. :func:`codex_denials` is the pure gate rule; :func:`check_codex_tool_set` runs the binary.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentstudy.io.agent_binary import AgentBinaryError
from agentstudy.io.containment import ContainmentMode
from agentstudy.transports.codex_args import CodexMcpServer, config_toml
from agentstudy.transports.codex_subcommand import run_codex_subcommand

__all__ = ["check_codex_tool_set", "codex_denials", "enabled_by_codex"]



def codex_denials(config_text: str, server: str, annotations: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The enabled tools of ``[mcp_servers.<server>]`` in ``config_text`` (TOML) whose calls Codex 0.171.0
    would cancel under the approval policy ``never``, each as ``"TOOL: why"`` (pure; ``[]`` when none).

    ``annotations``: the server's annotations by tool (camelCase keys, as the probe lists them).
    Raises ``tomllib.TOMLDecodeError`` on text that is not TOML.
    """
    table = tomllib.loads(config_text).get("mcp_servers", {}).get(server, {})
    default = table.get("default_tools_approval_mode")
    per_tool = table.get("tools", {})
    denied: list[str] = []
    for tool in table.get("enabled_tools", []):
        mode = per_tool.get(tool, {}).get("approval_mode", default)
        if mode == "approve" or annotations.get(tool, {}).get("readOnlyHint") is True:
            continue
        denied.append(f"{tool}: not annotated readOnlyHint: true and not approved in "
                      f"[mcp_servers.{server}.tools.{tool}], so Codex would cancel every call "
                      "(approval policy never)")
    return denied


def enabled_by_codex(output: str) -> list[str]:
    """The ``enabled_tools`` of ``codex mcp get NAME --json``'s output (``[]`` when it lists none).

    Raises:
        AgentBinaryError: the output is not the JSON object Codex prints.
    """
    try:
        shown = json.loads(output)
    except ValueError:
        raise AgentBinaryError(f"codex mcp get printed no JSON object ({output[:80]!r})") from None
    tools = shown.get("enabled_tools") if isinstance(shown, dict) else None
    return [str(tool) for tool in tools] if isinstance(tools, list) else []


def check_codex_tool_set(
    binary: Path,
    containment: ContainmentMode,
    server: CodexMcpServer,
    annotations: Mapping[str, Mapping[str, Any]],
    parent_env: Mapping[str, str],
    home_root: Path,
) -> list[str]:
    """What Codex would deny of ``server``'s tools at run time, each as ``"TOOL: why"`` (``[]``: none).

    Writes the treatment arm's ``config.toml`` (``config_toml``, as an attempt does) into a private
    ``CODEX_HOME`` under ``home_root``, runs ``codex mcp get NAME --json`` with it (the server is not
    started), and compares Codex's enabled tools with ours; then applies :func:`codex_denials`.

    Raises:
        AgentBinaryError: the child could not start, failed, timed out or printed no JSON object.
    """
    text = config_toml(model="rehearsal-check", provider=None, mcp=server)
    output = run_codex_subcommand(binary, containment, text, ("mcp", "get", server.name, "--json"), parent_env,
                                  home_root, "codex-tool-check")
    enabled = set(enabled_by_codex(output))
    missing = [f"{tool}: Codex does not enable it from the generated configuration"
               for tool in server.enabled_tools if tool not in enabled]
    return missing + codex_denials(text, server.name, annotations)
