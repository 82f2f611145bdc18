"""Scrubbing an answer of what reveals its scenario, before the adjudicator sees it (pure; issue 18).

Every mention found is replaced by ``[redacted]``, case-insensitively; a match never starts or
ends inside a word, and spans the caller protects (citations of paths that exist in the pinned
corpus, which either arm can produce) are left intact. What is scrubbed:

- every MCP tool name in the CLI's form, ``mcp__<server>__<tool>`` (any server);
- the word ``MCP``;
- the arm labels (scenario ids such as ``repository-only``, human labels such as ``Filesystem
  server``), in any spelling of their parts: joined by ``.``, ``_``, ``-``, one space or nothing
  (``doc-bridge-mcp``, ``Doc Bridge MCP``, ``DocBridgeMcp``);
- the studied server's name when it is compound (``doc-bridge``: also ``doc_bridge``,
  ``DocBridge``, ``doc bridge``) — a compound name is a proper name wherever it stands;
- every tool it listed or had denied, as an identifier: its parts joined by ``.``, ``_``,
  ``-`` or nothing, never by a space (``read_file``, ``read.file``, ``ReadFile``; but the
  prose ``read file`` stays), alone or after the server's name (``filesystem.read_file``,
  ``filesystem__read_file``, ``git_status``).

A name or tool that is one plain word (only letters: ``git``, ``filesystem``, ``fetch``,
``search``) is an ordinary word too, so it is scrubbed only where it stands as an identifier,
never in prose:

- in backticks, alone: ```git``` becomes ``[redacted]`` between its backticks;
- in a tool name: ``mcp__git__status``, ``git.status``, ``git_status``;
- as a path segment: ``servers/filesystem/index.js``, ``~/.git/config``,
  ``@modelcontextprotocol/server-filesystem/dist``.

So with the server ``git`` and its tool ``status``, "I ran git status and read the git log"
is left as it is, while "`git` said so (mcp__git__status, git.status)" loses all three.
A plain-word arm label (``control``) follows the same rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

REPLACEMENT = "[redacted]"
_MCP_TOOL = r"mcp__[\w.-]*\w"
_SPLIT = re.compile(r"[._\-\s]+|(?<=[a-z0-9])(?=[A-Z])")
_PLAIN_WORD = re.compile(r"[A-Za-z]+")
_ANYWHERE = r"[._\- ]?"
"""How the parts of a label or compound server name may be joined: ``.``, ``_``, ``-``, one space or nothing."""
_IDENTIFIER = r"(?:[._\-]{1,2})?"
"""How the parts of a tool name (or server and tool) may be joined: ``.``, ``_``, ``-`` (``__`` too) or nothing."""


def _parts(term: str) -> list[str]:
    return [p for p in _SPLIT.split(term.strip()) if p]


def _joined(term: str, joint: str) -> str:
    """A pattern for ``term`` whose parts are joined by ``joint``."""
    return joint.join(re.escape(p) for p in _parts(term))


def _cli_tool_tail(name: str) -> str:
    """``doc_search`` from ``mcp__doc-bridge__doc_search``; other names unchanged."""
    return name.rsplit("__", 1)[-1] if name.startswith("mcp__") else name


def _in_context(word: str) -> str:
    """A plain ``word`` only where it is an identifier: alone in backticks, or a path segment."""
    escaped = re.escape(word)
    return rf"(?<=`){escaped}(?=`)|(?<=[/\\]){escaped}|{escaped}(?=[/\\])"


@dataclass(frozen=True)
class Scrubber:
    """Replaces every scenario-revealing mention by ``[redacted]`` (rules: the module docstring).

    Attributes:
        terms: the literal terms scrubbed, longest first (recorded in the companion); a
            plain-word server or tool name is among them although it is scrubbed only as an
            identifier.
        pattern: the compiled alternation (the generic ``mcp__`` form first, then the longest
            alternatives first, so the longest mention wins).
    """

    terms: tuple[str, ...]
    pattern: re.Pattern[str]

    @classmethod
    def build(cls, server: str | None, tools: Iterable[str], labels: Iterable[str]) -> Scrubber:
        """A scrubber for the MCP ``server`` name, its ``tools`` (as listed, or CLI names) and the arm ``labels``.

        ``labels`` are scenario ids and human arm labels; ``tools`` may repeat and may be CLI
        names (``mcp__server__tool``: only the tool part counts). Pure; never raises.
        """
        terms: dict[str, str] = {"mcp": "MCP"}
        anywhere: dict[str, str] = {"mcp": "MCP"}  # pattern key -> pattern
        in_context: dict[str, str] = {}
        tool_names = [t for t in (_cli_tool_tail(t).strip() for t in tools) if _parts(t)]

        def add(term: str, compound_joint: str) -> None:
            key = _joined(term, r"[._\- ]?").lower()
            terms.setdefault(key, term.strip())
            if _PLAIN_WORD.fullmatch(term.strip()):
                in_context.setdefault(term.strip().lower(), _in_context(term.strip()))
            else:
                anywhere.setdefault(_joined(term, compound_joint).lower(), _joined(term, compound_joint))

        for label in labels:
            if label and _parts(label):
                add(label, _ANYWHERE)
        if server and _parts(server):
            add(server, _ANYWHERE)
        for tool in tool_names:
            add(tool, _IDENTIFIER)
            if server and _parts(server):
                combined = _joined(server, _IDENTIFIER) + _IDENTIFIER + _joined(tool, _IDENTIFIER)
                anywhere.setdefault(combined.lower(), combined)
        ordered = tuple(sorted(terms.values(), key=lambda t: (-len(t), t.lower())))
        words = sorted(anywhere.values(), key=lambda p: (-len(p), p.lower()))
        contexts = sorted(in_context.values(), key=lambda p: (-len(p), p.lower()))
        body = "|".join(f"(?:{a})" for a in (_MCP_TOOL, *words, *contexts))
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
