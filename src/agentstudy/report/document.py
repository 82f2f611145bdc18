"""A format-neutral report document: sections of paragraphs, bullet lists, tables and figures.

Every number is formatted once, into the cells of a :class:`Table`, so the text, Markdown and
HTML renderings carry the same strings. Figures (SVG) appear only in HTML.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Paragraph:
    """One paragraph of plain text (no markup)."""

    text: str


@dataclass(frozen=True)
class WarningBox:
    """A warning box (issue 28: the treatment was not delivered): plain text every format sets apart."""

    text: str


@dataclass(frozen=True)
class Bullets:
    """A bullet list of plain-text items."""

    items: tuple[str, ...]


@dataclass(frozen=True)
class Table:
    """A table: ``key`` (a stable id), ``caption``, ``header`` cells, ``rows`` of cells (same width),
    and the 0-based columns to align right (numbers)."""

    key: str
    caption: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    right: frozenset[int] = frozenset()

    def __post_init__(self) -> None:
        if any(len(row) != len(self.header) for row in self.rows):
            raise ValueError(f"table {self.key}: every row must have {len(self.header)} cells")


@dataclass(frozen=True)
class Figure:
    """An inline SVG figure (``svg`` starts at ``<svg``) with a caption; HTML only."""

    key: str
    caption: str
    svg: str


Block = Paragraph | WarningBox | Bullets | Table | Figure


@dataclass(frozen=True)
class Section:
    """A titled section of blocks."""

    title: str
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class Document:
    """The whole report: a title and its sections."""

    title: str
    sections: tuple[Section, ...]

    def tables(self) -> tuple[Table, ...]:
        """Every table, in order."""
        return tuple(b for s in self.sections for b in s.blocks if isinstance(b, Table))
