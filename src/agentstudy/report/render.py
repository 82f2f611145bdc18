"""Render a :class:`~agentstudy.report.document.Document` as plain text, Markdown or one HTML page.

All three print the same table cells. Text and Markdown leave figures out; the HTML page is
self-contained: inline CSS, inline SVG figures, no script, no external reference. Every piece
of text is escaped for its format.
"""

from __future__ import annotations

import html

from agentstudy.report.document import Bullets, Document, Paragraph, Section, Table, WarningBox

FORMATS = ("text", "md", "html")
_MD_SPECIAL = "\\`*_[]<>|"


def _text_table(table: Table) -> list[str]:
    widths = [max(len(cell) for cell in column) for column in zip(table.header, *table.rows, strict=True)]

    def line(cells: tuple[str, ...]) -> str:
        parts = [cell.rjust(w) if i in table.right else cell.ljust(w)
                 for i, (cell, w) in enumerate(zip(cells, widths, strict=True))]
        return "  ".join(parts).rstrip()

    lines = [table.caption, line(table.header), "  ".join("-" * w for w in widths)]
    lines.extend(line(row) for row in table.rows)
    if not table.rows:
        lines.append("(none)")
    return lines


WARNING_WORD = "WARNING:"
"""How every format opens a :class:`WarningBox` box."""
TEXT_BOX_WIDTH = 76


def _text_box(text: str) -> list[str]:
    """A warning as a box of ``!`` lines, the text wrapped at :data:`TEXT_BOX_WIDTH` characters."""
    import textwrap

    inner = textwrap.wrap(f"{WARNING_WORD} {text}", TEXT_BOX_WIDTH - 4)
    rule = "!" * TEXT_BOX_WIDTH
    return [rule, *(f"! {line.ljust(TEXT_BOX_WIDTH - 4)} !" for line in inner), rule]


def render_text(document: Document) -> str:
    """Plain text: underlined headings, aligned tables (numbers right-aligned), ``-`` bullets."""
    lines = [document.title, "=" * len(document.title)]
    for section in document.sections:
        lines += ["", section.title, "-" * len(section.title)]
        for block in section.blocks:
            if isinstance(block, Paragraph):
                lines += ["", block.text]
            elif isinstance(block, WarningBox):
                lines += ["", *_text_box(block.text)]
            elif isinstance(block, Bullets):
                lines += [""] + [f"- {item}" for item in block.items]
            elif isinstance(block, Table):
                lines += ["", *_text_table(block)]
    return "\n".join(lines) + "\n"


def md_escape(text: str) -> str:
    """Backslash-escape the characters Markdown (GitHub flavour) would read as markup, ``|`` included."""
    return "".join(f"\\{ch}" if ch in _MD_SPECIAL else ch for ch in " ".join(text.split()))


def _md_table(table: Table) -> list[str]:
    aligns = ["---:" if i in table.right else "---" for i in range(len(table.header))]
    lines = [f"**{md_escape(table.caption)}**", "",
             "| " + " | ".join(md_escape(c) for c in table.header) + " |", "| " + " | ".join(aligns) + " |"]
    lines.extend("| " + " | ".join(md_escape(c) for c in row) + " |" for row in table.rows)
    if not table.rows:
        lines.append("| " + " | ".join(["(none)"] + [""] * (len(table.header) - 1)) + " |")
    return lines


def render_markdown(document: Document) -> str:
    """GitHub-flavoured Markdown: ``#``/``##`` headings, pipe tables with bold captions, ``-`` bullets."""
    lines = [f"# {md_escape(document.title)}"]
    for section in document.sections:
        lines += ["", f"## {md_escape(section.title)}"]
        for block in section.blocks:
            if isinstance(block, Paragraph):
                lines += ["", md_escape(block.text)]
            elif isinstance(block, WarningBox):
                lines += ["", f"> **{WARNING_WORD}** {md_escape(block.text)}"]
            elif isinstance(block, Bullets):
                lines += [""] + [f"- {md_escape(item)}" for item in block.items]
            elif isinstance(block, Table):
                lines += ["", *_md_table(block)]
    return "\n".join(lines) + "\n"


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:80rem;padding:0 1rem;
color:#1b1b1b;line-height:1.45}
h1{font-size:1.6rem}h2{font-size:1.25rem;border-bottom:1px solid #ccc;padding-bottom:.2rem;margin-top:2rem}
table{border-collapse:collapse;margin:1rem 0;font-size:.85rem}
caption{text-align:left;font-weight:600;padding:.3rem 0}
th,td{border:1px solid #d0d0d0;padding:.25rem .5rem;vertical-align:top}
th{background:#f2f2f2}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
#glance td:nth-child(n+3){white-space:nowrap}
.warning{border:3px solid #b00020;background:#fdecea;color:#5f0010;padding:.8rem 1rem;margin:1rem 0;
font-size:1.05rem;border-radius:4px}
figure{margin:1.5rem 0}figcaption{font-size:.9rem;color:#444}svg{max-width:100%;height:auto}
""".strip()


def _html_table(table: Table) -> str:
    def cell(tag: str, index: int, text: str) -> str:
        klass = ' class="num"' if index in table.right and tag == "td" else ""
        return f"<{tag}{klass}>{html.escape(text)}</{tag}>"

    head = "".join(cell("th", i, c) for i, c in enumerate(table.header))
    body = "".join("<tr>" + "".join(cell("td", i, c) for i, c in enumerate(row)) + "</tr>" for row in table.rows)
    if not table.rows:
        body = f'<tr><td colspan="{len(table.header)}">(none)</td></tr>'
    return (f'<table id="{html.escape(table.key)}"><caption>{html.escape(table.caption)}</caption>'
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def render_html(document: Document) -> str:
    """One self-contained HTML5 page: inline CSS and SVG, no script, no external resource."""
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{html.escape(document.title)}</title><style>{_CSS}</style></head><body>",
             f"<h1>{html.escape(document.title)}</h1>"]
    parts.extend(html_section(section) for section in document.sections)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def html_section(section: Section) -> str:
    """One section as an HTML ``<section>`` (the report's page and ``agentstudy view`` share it)."""
    parts = [f"<section><h2>{html.escape(section.title)}</h2>"]
    for block in section.blocks:
        if isinstance(block, Paragraph):
            parts.append(f"<p>{html.escape(block.text)}</p>")
        elif isinstance(block, WarningBox):
            parts.append(f'<div class="warning" role="alert"><strong>{WARNING_WORD}</strong> '
                         f"{html.escape(block.text)}</div>")
        elif isinstance(block, Bullets):
            parts.append("<ul>" + "".join(f"<li>{html.escape(item)}</li>" for item in block.items) + "</ul>")
        elif isinstance(block, Table):
            parts.append(_html_table(block))
        else:
            parts.append(f'<figure id="{html.escape(block.key)}">{block.svg}'
                         f"<figcaption>{html.escape(block.caption)}</figcaption></figure>")
    parts.append("</section>")
    return "\n".join(parts)


def render(document: Document, output_format: str) -> str:
    """Render in ``text``, ``md`` or ``html``.

    Raises:
        ValueError: an unknown format.
    """
    renderers = {"text": render_text, "md": render_markdown, "html": render_html}
    if output_format not in renderers:
        raise ValueError(f"unknown report format {output_format!r} (choose from {', '.join(FORMATS)})")
    return renderers[output_format](document)
