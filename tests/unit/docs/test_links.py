"""Every relative link in the README, docs/, bench/RESULTS.md and CHANGELOG.md points at a
file that exists, and a link with a ``#fragment`` into a Markdown file at one of its
headings (as GitHub makes heading anchors), so moving or renaming a page or a heading
cannot leave a dead link behind.

docs/configuration.md is generated from the flag parser by the configuration package's
``reference`` module: a link to it counts as dead once that module exists and the page does
not (on a branch made before both, the page is linked ahead of them).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
PAGES = sorted([REPO / "README.md", REPO / "CHANGELOG.md", REPO / "bench" / "RESULTS.md",
                *(REPO / "docs").glob("*.md")])

# [text](target) outside code; images too. Targets with a scheme or mailto are not ours.
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_FENCE = re.compile(r"^(```|~~~)")
# A generated page and the module that writes it.
GENERATED = {
    REPO / "docs" / "configuration.md": REPO / "actors" / "app" / "config" / "reference.py",
}
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def _prose_lines(text: str, blank_code: bool = True) -> list[str]:
    """The page's lines outside fenced code blocks, with inline code spans blanked unless
    ``blank_code`` is false (a heading's anchor keeps its code's text)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(re.sub(r"`[^`]*`", "``", line) if blank_code else line)
    return lines


def links(page: Path) -> list[str]:
    """The link targets of a Markdown page, code excluded."""
    return [m.group(1) for line in _prose_lines(page.read_text()) for m in _LINK.finditer(line)]


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but '-' and '_' dropped,
    spaces as '-'."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a Markdown page's headings (a repeated heading gets -1, -2, ...)."""
    seen: dict[str, int] = {}
    found = set()
    for line in _prose_lines(page.read_text(), blank_code=False):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = anchor(m.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(page: Path, root: Path = REPO) -> list[str]:
    """Each relative link of ``page`` whose file or heading does not exist, or which leaves
    ``root``, with why."""
    broken = []
    for target in links(page):
        if _EXTERNAL.match(target):
            continue
        path_part, _, fragment = target.partition("#")
        dest = (page.parent / path_part).resolve() if path_part else page
        if not dest.exists():
            if dest in GENERATED and not GENERATED[dest].exists():
                continue
            broken.append(f"{target}: no file {dest}")
            continue
        if not dest.is_relative_to(root):
            broken.append(f"{target}: outside the repository")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            broken.append(f"{target}: no heading #{fragment} in {dest.name}")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(page: Path) -> None:
    assert broken_links(page) == []


def test_pages_found() -> None:
    """The pages this test reads are there (a moved docs/ would make it check nothing)."""
    names = {str(p.relative_to(REPO)) for p in PAGES}
    assert {"README.md", "docs/README.md", "docs/user-guide.md", "docs/security.md",
            "bench/RESULTS.md", "CHANGELOG.md"} <= names


def test_a_dead_link_and_a_missing_heading_are_found(tmp_path: Path) -> None:
    """The checker itself: a missing file and a missing heading are reported, a link in
    code is not a link, an existing heading with punctuation resolves."""
    (tmp_path / "other.md").write_text("# The main port's security\n## Costs (`bench.x_y`)\n")
    page = tmp_path / "page.md"
    page.write_text("[a](missing.md) [b](other.md#nope) [c](other.md#the-main-ports-security)\n"
                    "[g](other.md#costs-benchx_y)\n"
                    "`[d](inline.md)`\n```\n[e](fenced.md)\n```\n[f](https://example.org)\n")
    broken = [b.split(":")[0] for b in broken_links(page, tmp_path)]
    assert broken == ["missing.md", "other.md#nope"]


def test_readme_fits_in_200_lines() -> None:
    """A README a person reads in five minutes: at most 200 lines."""
    assert len((REPO / "README.md").read_text().splitlines()) <= 200


def test_readme_opens_with_the_two_commands() -> None:
    """The README's first commands are the scripts that set up and run the examples and
    run every test, and both exist and are executable."""
    text = (REPO / "README.md").read_text()
    block = re.search(r"```sh\n(.*?)```", text, re.S)
    assert block is not None and text.index(block.group(0)) < text.index("\n## ")
    commands = [line.split("#")[0].split()[0] for line in block.group(1).splitlines()]
    assert commands == ["./scripts/run-examples.sh", "./scripts/test.sh"]
    for command in commands:
        script = REPO / command
        assert script.is_file() and script.stat().st_mode & 0o111, command
