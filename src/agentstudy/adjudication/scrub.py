"""Scrubbing an answer of what reveals its scenario, before the adjudicator sees it (pure).

Removed, case-insensitively, each replaced by ``[redacted]``: every MCP tool name in the CLI's
form (``mcp__<anything>``), the scenario labels, the MCP server's name, the name of every tool
it listed or had denied, in dotted and underscored form (any of ``.``, ``_``, ``-``, a space or
nothing between the name's parts, so ``doc.search``, ``doc_search``, ``doc search`` and
``DocSearch`` all go), and the word ``MCP``. Matches never start or end inside a word. Spans
the caller protects (citations of paths that exist in the pinned corpus, which either arm can
produce) are left intact.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

REPLACEMENT = "[redacted]"
_MCP_TOOL = r"mcp__[\w.-]*\w"
_SPLIT = re.compile(r"[._\-\s]+|(?<=[a-z0-9])(?=[A-Z])")


def _flexible(term: str) -> str:
    """A pattern for ``term`` whose parts may be joined by ``.``, ``_``, ``-``, one space or nothing."""
    parts = [p for p in _SPLIT.split(term.strip()) if p]
    return r"[._\- ]?".join(re.escape(p) for p in parts)


def _cli_tool_tail(name: str) -> str:
    """``doc_search`` from ``mcp__doc-bridge__doc_search``; other names unchanged."""
    return name.rsplit("__", 1)[-1] if name.startswith("mcp__") else name


@dataclass(frozen=True)
class Scrubber:
    """Replaces every scenario-revealing mention by ``[redacted]``.

    Attributes:
        terms: the literal terms scrubbed, longest first (recorded in the companion).
        pattern: the compiled alternation (the generic ``mcp__`` form first, then terms
            longest first, so the longest mention wins).
    """

    terms: tuple[str, ...]
    pattern: re.Pattern[str]

    @classmethod
    def build(cls, server: str | None, tools: Iterable[str], labels: Iterable[str]) -> Scrubber:
        """A scrubber for the MCP ``server`` name, its ``tools`` (as listed, or CLI names) and scenario ``labels``."""
        terms: dict[str, str] = {"mcp": "MCP"}
        for term in (server, *labels, *(_cli_tool_tail(t) for t in tools)):
            if term and _flexible(term):
                terms.setdefault(_flexible(term).lower(), term.strip())
        ordered = tuple(sorted(terms.values(), key=lambda t: (-len(t), t.lower())))
        alternatives = [_MCP_TOOL, *(_flexible(t) for t in ordered)]
        body = "|".join(f"(?:{a})" for a in alternatives)
        return cls(ordered, re.compile(rf"(?<![A-Za-z0-9])(?:{body})(?![A-Za-z0-9])", re.IGNORECASE))

    def scrub(self, text: str, keep: Sequence[tuple[int, int]] = ()) -> tuple[str, int]:
        """Return ``text`` with every mention replaced, and how many were replaced.

        ``keep`` holds ``(start, end)`` character spans of ``text`` left untouched; a mention
        overlapping one is kept.
        """
        out: list[str] = []
        position, count = 0, 0
        for match in self.pattern.finditer(text):
            start, end = match.span()
            if any(start < k_end and k_start < end for k_start, k_end in keep):
                continue
            out.append(text[position:start])
            out.append(REPLACEMENT)
            position, count = end, count + 1
        out.append(text[position:])
        return "".join(out), count

    def mentions(self, text: str) -> list[str]:
        """Every mention the scrubber would replace in ``text`` (for checks and tests)."""
        return [match.group(0) for match in self.pattern.finditer(text)]
