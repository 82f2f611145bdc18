"""Refused out-of-export reads: the built-in file tools' permission denials (issue 15).

Under Claude Code's ``--restricted`` the CLI refuses a ``Read``, ``Grep`` or ``Glob`` of a path
outside the working directory (the export) and lists the call in the result event's
``permission_denials``. Denials of any other tool (MCP tools, ``Bash``, ``Write`` ...) are not
reads of files outside the export and are not counted here (the setup check makes them setup
problems).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agentstudy.stream.setup import BUILTIN_READ_TOOLS


def refused_out_of_export_reads(denials: Iterable[Any]) -> int:
    """How many of ``denials`` (``{tool_name, tool_use_id, tool_input}`` objects) deny a built-in file
    tool; entries that are not objects are not counted."""
    return sum(1 for d in denials if isinstance(d, Mapping) and d.get("tool_name") in BUILTIN_READ_TOOLS)
