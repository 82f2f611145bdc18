"""The one rule for MCP tool names, and how a name is shown on a terminal (issue 29, break 14). Pure.

A tool name must be usable in every place agentstudy writes it: a study file, the agent's
comma-separated ``--allowedTools`` / ``--disallowedTools`` values, a ledger and a terminal. So it
is non-blank, has no comma and no white space around it, and no control, format (bidirectional
overrides such as U+202E), separator or surrogate character (``protocol.task.control_character``).
``init``, the study-file loader, the run flags and the run's preflight (the live ``tools/list``)
all check :func:`tool_name_problem`; anything a server said is shown through :func:`shown`.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from agentstudy.protocol.task import control_character

NAME_RULE = "a tool name must be non-blank, without commas, surrounding spaces or control characters"


def tool_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a tool name (one clause naming it safely), or ``None`` when it can."""
    if not name.strip():
        return f"the tool name {shown(name)} is blank ({NAME_RULE})"
    if "," in name or name != name.strip():
        return f"the tool name {shown(name)} has a comma or surrounding spaces ({NAME_RULE})"
    found = control_character(name, text=False)
    if found is not None:
        return f"the tool name {shown(name)} contains the control character {found} ({NAME_RULE})"
    return None


def listing_problem(names: Sequence[str]) -> str | None:
    """The first listed tool name that breaks the rule (``tool_name_problem``), or ``None``."""
    for name in names:
        problem = tool_name_problem(name)
        if problem is not None:
            return problem
    return None


def shown(text: str, limit: int = 200) -> str:
    """``text`` safe for a terminal: quoted, every control, format, separator or surrogate character as
    ``\\uXXXX``; at most ``limit`` characters of ``text`` (then ``…``). Never raises."""
    out: list[str] = []
    for character in text[:limit]:
        category = unicodedata.category(character)
        if category.startswith("C") or category in ("Zl", "Zp") or character == "\\":
            out.append(f"\\u{ord(character):04x}" if ord(character) <= 0xFFFF else f"\\U{ord(character):08x}")
        else:
            out.append(character)
    return "'" + "".join(out) + ("…" if len(text) > limit else "") + "'"


__all__ = ["NAME_RULE", "listing_problem", "shown", "tool_name_problem"]
