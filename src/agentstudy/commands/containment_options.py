"""Flags that say how attempts are contained and where a CLI attempt sends its requests (issue 15)."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from urllib.parse import urlsplit

import click

from agentstudy.commands.common import fail

if TYPE_CHECKING:
    from agentstudy.io.containment import ContainmentMode

F = TypeVar("F", bound=Callable[..., Any])
LOOPBACK_NAMES = ("localhost",)


def containment_option(function: F) -> F:
    """Add ``--containment bwrap|restricted``."""
    from agentstudy.io.containment import CONTAINMENT_MODES
    return click.option(
        "--containment", type=click.Choice(CONTAINMENT_MODES), default="bwrap", show_default=True,
        envvar="AGENTSTUDY_CONTAINMENT",
        help="bwrap: each attempt's child and every descendant (the MCP server too) run in bubblewrap "
             "namespaces seeing only the export, the agent's install and what the server needs; preflight "
             "proves it works or refuses the run. restricted: only the agent's own file-tool confinement "
             "(--restricted); the ledger and every report say what was not achieved. [env: AGENTSTUDY_CONTAINMENT]",
    )(function)


def cli_base_url_option(function: F) -> F:
    """Add ``--cli-base-url URL`` (an LLM gateway for the cli transport)."""
    from agentstudy.agents.base import GATEWAY_TOKEN_ENV
    return click.option(
        "--cli-base-url", metavar="URL",
        help="cli transport: send Claude Code's requests to this LLM gateway (ANTHROPIC_BASE_URL); https:// or a "
             f"loopback http:// URL. A token in {GATEWAY_TOKEN_ENV} goes to the child as ANTHROPIC_AUTH_TOKEN; "
             "the ledger records the URL, never the token.",
    )(function)


def containment_mode(value: str) -> ContainmentMode:
    """The click value as the typed mode."""
    from agentstudy.io.containment import ContainmentMode
    return cast(ContainmentMode, value)


def _is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def gateway_from_options(url: str | None, environ: Mapping[str, str] = os.environ) -> tuple[str | None, str | None]:
    """``(base_url, token)`` of ``--cli-base-url``; exit 2 on a URL that is not https or loopback http.

    The token comes from ``AGENTSTUDY_GATEWAY_TOKEN`` only and must not contain CR, LF or NUL.
    """
    from agentstudy.agents.base import GATEWAY_TOKEN_ENV
    from agentstudy.io.messages_api import BaseUrlError, check_base_url
    if url is None:
        return None, None
    try:
        checked = check_base_url(url)
    except BaseUrlError as error:
        fail(str(error).replace("API base URL", "--cli-base-url"))
    parts = urlsplit(checked)
    if parts.scheme != "https" and not _is_loopback(parts.hostname or ""):
        fail("--cli-base-url must be https://, or http:// on a loopback address")
    token = environ.get(GATEWAY_TOKEN_ENV)
    if token is not None and (not token or any(c in token for c in "\r\n\0")):
        fail(f"{GATEWAY_TOKEN_ENV} must be a non-empty single line")
    return checked, token
