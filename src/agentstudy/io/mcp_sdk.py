"""The official ``mcp`` SDK's client, loaded when a server is first probed, prepared or started (issue 42), and
the one reading of its failures; shared by the run's process (``io.mcp_session``, ``io.server_prepare``) and the
probe's own (``io.mcp_probe_child``). :mod:`agentstudy.io.mcp_client` re-exports both names.
"""

from __future__ import annotations

import gc
import importlib
import logging

logging.getLogger("mcp").addHandler(logging.NullHandler())
"""The SDK logs a server's unparsable stdout line with its traceback (``logger.exception``);
with no handler configured Python would print it to our stderr. Refusals stay one line."""


def load_mcp_sdk() -> None:
    """Import the MCP SDK's client (and anyio) now, once per process, with Python's cyclic collector paused.

    The SDK is imported when a server is first probed, prepared or started, never with a command (issue 42):
    it is most of a command's start-up CPU (about a second). Building its pydantic models makes nothing
    collectable, and the collections during that import were a tenth to a fifth of its CPU.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        importlib.import_module("mcp.client.stdio")
    finally:
        if was_enabled:
            gc.enable()


def leaf_error(error: BaseException) -> BaseException:
    """The first error inside (nested) exception groups: what the task group's failure really was."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error
