"""``agentstudy provider AGENT``: a bundled provider adapter of the controlled study (issue 34; digest 5.7).

Put it in a provider config as ``command`` (this ``agentstudy``) with ``args`` such as
``["provider", "codex", "--model", "gpt-5.5"]``. It reads one ``doc-bridge.study-provider.v1``
request on stdin (``--adjudicator``: one ``doc-bridge.study-adjudicator.v1`` request), runs the
real agent CLI contained in the working directory the runner gives (the repository root), and
prints exactly one JSON object on stdout; logs go to stderr.

Exit codes: 0 the object was printed; 1 no answer (the agent failed, timed out, reported no usage
or answered outside the output schema; nothing on stdout); 2 bad arguments or a request that is
not one of the expected protocol; 128 + n stopped by signal n (the agent's whole tree is killed).
"""

from __future__ import annotations

import json
import os
import re
import sys
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from agentstudy.agents.registry import AGENT_NAMES
from agentstudy.commands.common import fail, stops_on_signals
from agentstudy.commands.containment_options import containment_option
from agentstudy.commands.mcp_options import mcp_options

if TYPE_CHECKING:
    from agentstudy.runners.provider_adapter import AdapterOptions

MAX_REQUEST_BYTES = 8_000_000
"""The largest request read from stdin (the contract's ``maxInputBytes`` ceiling)."""
EXIT_NO_ANSWER = 1


def _request(expected: str) -> dict[str, Any]:
    from agentstudy.protocol.json_input import JsonInputError, load_json, refuse_duplicate_keys
    raw = sys.stdin.buffer.read(MAX_REQUEST_BYTES + 1)
    if len(raw) > MAX_REQUEST_BYTES:
        fail(f"the request on stdin is larger than {MAX_REQUEST_BYTES} bytes")
    try:  # the one bounded reader (issue 40): depth, long numbers, NaN/Infinity, duplicated keys
        request = load_json(raw, object_pairs_hook=refuse_duplicate_keys)
    except JsonInputError as error:
        fail(f"the request on stdin {error}")
    if not isinstance(request, dict) or request.get("protocol") != expected:
        fail(f"the request on stdin is not a {expected} request")
    return request


@click.command(name="provider")
@click.argument("agent", type=click.Choice(AGENT_NAMES))
@click.option("--model", help="The model the agent runs (required unless --rehearsal).")
@click.option("--rehearsal", is_flag=True,
              help="Point the agent at the scripted model server on 127.0.0.1 with a dummy token (zero spend).")
@click.option("--adjudicator", is_flag=True, help="Answer adjudicator requests (outcome, confidence, reasonCodes).")
@click.option("--agent-bin", help="The agent's executable (default: the pinned install, then PATH).")
@click.option("--agent-version", help="The version the agent must report (default: the pinned one).")
@click.option("--timeout-s", type=click.FloatRange(min=1), default=170.0, show_default=True,
              help="Seconds before the agent's whole process tree is killed (keep it below the plan's maxRuntimeMs).")
@click.option("--max-usd", default="1.00", show_default=True,
              help="Spending limit of one call in USD (Claude Code's --max-budget-usd, Codex's running-usage stop).")
@containment_option
@mcp_options
def provider(agent: str, model: str | None, rehearsal: bool, adjudicator: bool, agent_bin: str | None,
             agent_version: str | None, timeout_s: float, max_usd: str, containment: str,
             mcp_config_file: Path | None, server_config_candidates: str, mcp_tools: str, mcp_probe: str,
             mcp_probe_arguments: str, sandbox_binds: tuple[str, ...]) -> None:
    """Answer one controlled-study request with a real agent CLI (a bundled provider adapter).

    Reads the request on stdin, runs AGENT (claude-code, codex or gemini) contained in the current
    directory (read-only), prints one JSON object. repository-only gets the repository tools
    only; any other scenario also gets the --mcp-config server (default: the bundled one).
    """
    from agentstudy.commands.containment_options import containment_mode
    from agentstudy.commands.mcp_options import mcp_spec_from_options
    from agentstudy.controlled.requests import ADJUDICATOR_PROTOCOL, PROVIDER_PROTOCOL
    from agentstudy.protocol.controlled.formats import MODEL_REFERENCE_PATTERN
    from agentstudy.runners.provider_adapter import AdapterOptions
    if model is None and not rehearsal:
        fail("--model is required unless --rehearsal is given")
    if model is not None and not re.match(MODEL_REFERENCE_PATTERN, model):
        fail(f"--model {model!r} is not a model reference (lowercase letters, digits, . _ : / -)")
    try:
        limit = Decimal(max_usd)
    except InvalidOperation:
        fail(f"--max-usd {max_usd!r} is not a number")
    if not limit.is_finite() or limit <= 0:
        fail("--max-usd must be a positive number")
    spec = mcp_spec_from_options(mcp_config_file, server_config_candidates, mcp_tools, mcp_probe,
                                 mcp_probe_arguments, sandbox_binds)
    request = _request(ADJUDICATOR_PROTOCOL if adjudicator else PROVIDER_PROTOCOL)
    options = AdapterOptions(agent=agent, model=model, mcp=spec, rehearsal=rehearsal, adjudicator=adjudicator,
                             agent_bin=agent_bin, agent_version=agent_version, timeout_s=timeout_s, max_usd=limit,
                             containment=containment_mode(containment))
    _answer(options, request)


@stops_on_signals
def _answer(options: AdapterOptions, request: dict[str, Any]) -> None:
    from agentstudy.runners.provider_adapter import AdapterError, run_adapter
    try:
        body = run_adapter(options, request, Path.cwd(), os.environ)
    except AdapterError as error:
        fail(str(error), EXIT_NO_ANSWER)
    sys.stdout.write(json.dumps(body, separators=(",", ":")) + "\n")
    sys.stdout.flush()
