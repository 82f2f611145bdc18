"""Every internal link of the README and of docs/ resolves: the file it names exists (inside the
repository) and, with a ``#fragment``, that page has a heading of that id (as the documentation site's
table of contents makes them). Links inside code are not links."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def _prose(page: Path) -> str:
    return CODE.sub("", FENCE.sub("", page.read_text(encoding="utf-8")))


def _anchors(page: Path) -> set[str]:
    return {slugify(re.sub(r"[`*_]", "", title), "-") for title in HEADING.findall(_prose(page))}


def _internal_links(page: Path) -> list[str]:
    return [target for target in LINK.findall(_prose(page))
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE)]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_every_internal_link_resolves(page: Path) -> None:
    broken = []
    for target in _internal_links(page):
        path, _, fragment = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.is_relative_to(REPO) or not resolved.exists():
            broken.append(f"{target}: no file {resolved}")
        elif fragment and resolved.suffix == ".md" and fragment not in _anchors(resolved):
            broken.append(f"{target}: no heading #{fragment} in {resolved.relative_to(REPO)}")
    assert broken == [], f"{page.relative_to(REPO)}: " + "; ".join(broken)


def test_the_readme_is_a_front_door() -> None:
    """At most about 200 lines, its first two commands the set-up ones CI runs, and a link to every topic page."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 220
    commands = [line for line in text.splitlines() if line.startswith("bash ")]
    assert commands[:2] == ["bash scripts/setup.sh && .venv/bin/agentstudy demo",
                            "bash scripts/setup.sh && bash scripts/check.sh"]
    linked = {target.partition("#")[0] for target in _internal_links(REPO / "README.md")}
    topics = {f"docs/{page.name}" for page in (REPO / "docs").glob("*.md") if page.name != "index.md"}
    assert topics <= linked, f"README links no page for {sorted(topics - linked)}"


def test_the_checker_finds_a_broken_link(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[ok](#title) [gone](missing.md) `[code](nowhere.md)`\n", encoding="utf-8")
    assert _internal_links(page) == ["#title", "missing.md"]
    assert _anchors(page) == {"title"}
