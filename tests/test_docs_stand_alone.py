"""The repository stands alone: a user has only what is tracked here.

* No tracked file cites the engineers' background notes, which live outside the repository;
  facts from them are in ``docs/reference-run.md`` and ``docs/offline-testing.md`` with their
  public sources. A file of a public repository that bears a note's name is cited by another
  public file that holds the same fact: a reader cannot tell the two apart.
* Every relative link in ``README.md`` and ``docs/*.md`` points at a tracked file, and a link to a
  heading of a Markdown file names a heading that exists.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from urllib.parse import unquote

import pytest

from tests.conftest import PROJECT_DIR

NOTE_STEMS = ("SYSTEM", "HARNESS", "TOOLING", "HARDWARE", "LOCAL-RIG", "PEERS", "STYLE", "INTERFACES")
NOTE_CITATION = re.compile(
    r"(?<![\w.-])(?:(?:" + "|".join(re.escape(s) for s in NOTE_STEMS) + r")\.md|HOUSE-?RULES(?:\.md)?)(?![\w-]|\.\w)"
)
"""A note's file name, alone or at the end of a path."""

PENDING: dict[str, str] = {}
"""Files whose citations are fixed by a change in flight, each with why. Remove an entry once fixed."""


def tracked_files() -> list[str]:
    result = subprocess.run(["git", "ls-files", "-z"], cwd=PROJECT_DIR, capture_output=True, check=False)
    assert result.returncode == 0, f"git ls-files failed (is this a git checkout?): {result.stderr.decode()}"
    return [name for name in result.stdout.decode().split("\0") if name]


def note_citations(names: list[str]) -> dict[str, list[str]]:
    """``{path: ["line: text", ...]}`` for every tracked text file that names a note."""
    found: dict[str, list[str]] = {}
    for name in names:
        path = PROJECT_DIR / name
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        hits = [f"{n}: {line.strip()}" for n, line in enumerate(text.splitlines(), 1) if NOTE_CITATION.search(line)]
        if hits:
            found[name] = hits
    return found


def test_the_note_pattern_tells_a_citation_from_a_public_path():
    system, tooling, style = (f"{stem}.md" for stem in ("SYSTEM", "TOOLING", "STYLE"))  # not spelt out here
    cited = [f"({system} 14.6)", f"{tooling} 8.7", "per HOUSE" "-RULES", f"see {NOTE_STEMS[-1]}.md item 4",
             f"owner/repo/{NOTE_STEMS[3]}.md"]
    public = [f"docs/{style}.bak/", f"MY_{system}", f"{system}x", "the system", "runs/REPORT.md"]
    assert [c for c in cited if not NOTE_CITATION.search(c)] == []
    assert [p for p in public if NOTE_CITATION.search(p)] == []


def test_no_tracked_file_cites_an_engineers_note():
    found = note_citations(tracked_files())
    unexpected = {path: hits for path, hits in found.items() if path not in PENDING}
    assert unexpected == {}, "cite the public source or docs/reference-run.md / docs/offline-testing.md instead"
    stale = sorted(set(PENDING) - set(found))
    assert stale == [], f"no longer cites a note: remove from PENDING: {stale}"


FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,}).*?^\1\2[`~]*\s*$", re.M | re.S)
INLINE_CODE = re.compile(r"`+[^`\n]*`+")
LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def prose(markdown: str) -> str:
    """The text outside fenced code blocks and inline code, where a link is a link."""
    return INLINE_CODE.sub("", FENCE.sub("", markdown))


def anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered."""
    seen: dict[str, int] = {}
    result = set()
    for title in HEADING.findall(prose(markdown)):
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        result.add(slug if n == 0 else f"{slug}-{n}")
    return result


def broken_links(doc: Path, text: str, tracked: set[str]) -> list[str]:
    """The relative links in ``text`` (the content of ``doc``) whose file is not tracked, or whose
    heading does not exist."""
    broken = []
    for target in LINK.findall(prose(text)):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):
            continue
        file_part, _, anchor = unquote(target).partition("#")
        if not file_part:
            if anchor not in anchors(text):
                broken.append(f"{target}: no heading #{anchor} in {doc.relative_to(PROJECT_DIR).as_posix()}")
            continue
        path = (doc.parent / file_part).resolve()
        try:
            relative = path.relative_to(PROJECT_DIR).as_posix()
        except ValueError:
            broken.append(f"{target}: outside the repository")
            continue
        if relative not in tracked and not any(name.startswith(relative + "/") for name in tracked):
            broken.append(f"{target}: {relative} is not a tracked file")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path.read_text(encoding="utf-8")):
            broken.append(f"{target}: no heading #{anchor} in {relative}")
    return broken


def test_link_checks_catch_a_missing_file_and_a_missing_heading():
    tracked = set(tracked_files())
    text = ("# A probe's page\n[a](rig-details.md#zones) [b](missing.md) [c](rigs.md#no-such-heading) `[d](code.md)`\n"
            "[e](https://x.test/y.md) [f](#a-probes-page) [g](#nowhere) [h](../rigs) [i](../../outside.md)\n"
            "```\n[j](in-a-fence.md)\n```\n")
    assert broken_links(PROJECT_DIR / "docs" / "probe.md", text, tracked) == [
        "missing.md: docs/missing.md is not a tracked file",
        "rigs.md#no-such-heading: no heading #no-such-heading in docs/rigs.md",
        "#nowhere: no heading #nowhere in docs/probe.md",
        "../../outside.md: outside the repository",
    ]


@pytest.mark.parametrize("doc", ["README.md", *sorted(p.relative_to(PROJECT_DIR).as_posix()
                                                     for p in (PROJECT_DIR / "docs").glob("*.md"))])
def test_every_relative_link_points_into_the_repository(doc):
    path = PROJECT_DIR / doc
    assert broken_links(path, path.read_text(encoding="utf-8"), set(tracked_files())) == []
