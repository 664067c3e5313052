"""The files ``docs/extending.md`` and ``docs/code-map.md`` name still exist.

Both pages name, in backticks and from the repository root, the files to touch to add something and the files
each concern lives in. When code moves, a named path that no longer exists fails here, naming the path, so the
pages are updated with the move instead of sending a reader to a file that is gone.

A backticked span is read as a path when it looks like one: no spaces, and either a ``/`` or a file name's
extension. Such a path must be repository-relative (its first part one of the repository's top-level entries)
and tracked (a file, or a folder holding tracked files when it ends in ``/``); the few files the project writes
at run time (:data:`WRITTEN_AT_RUN_TIME`) are named by their own name and are not looked for.
"""

from __future__ import annotations

import re
import subprocess
from functools import lru_cache
from pathlib import PurePosixPath

import pytest

from tests.conftest import PROJECT_DIR

PAGES = ("docs/extending.md", "docs/code-map.md")
FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,}).*?^\1\2[`~]*\s*$", re.M | re.S)
SPAN = re.compile(r"`([^`\n]+)`")
PATH = re.compile(r"^\.?[\w-]+(?:\.[\w-]+)*(?:/[\w.-]+)*/?$")
EXTENSIONS = frozenset({".py", ".json", ".jsonl", ".yaml", ".yml", ".sh", ".txt", ".md", ".ini", ".toml", ".cfg",
                        ".patch", ".jinja", ".html", ".png"})
WRITTEN_AT_RUN_TIME = frozenset({"run.json", "summary.json", "requests.jsonl", "REPORT.md", "REPORT.html",
                                 "plan.json", "timeline.json", "TIMELINE.md", "config.json"})
"""Files a run, a rehearsal or a model's checkpoint holds, never the repository."""


@lru_cache(maxsize=1)
def tracked() -> frozenset[str]:
    result = subprocess.run(["git", "ls-files", "-z"], cwd=PROJECT_DIR, capture_output=True, check=False)
    assert result.returncode == 0, f"git ls-files failed (is this a git checkout?): {result.stderr.decode()}"
    return frozenset(name for name in result.stdout.decode().split("\0") if name)


def named_paths(markdown: str) -> list[str]:
    """Every backticked span outside fenced blocks that looks like a file or folder path, in order."""
    found = []
    for span in SPAN.findall(FENCE.sub("", markdown)):
        span = span.strip()
        if not PATH.match(span) or span in WRITTEN_AT_RUN_TIME:
            continue
        if "/" in span or PurePosixPath(span).suffix in EXTENSIONS:
            found.append(span)
    return found


def missing(paths: list[str], files: frozenset[str]) -> list[str]:
    """The paths of ``paths`` that name no tracked file or folder, each with why."""
    tops = {name.split("/", 1)[0] for name in files}
    out = []
    for path in dict.fromkeys(paths):
        bare = path.rstrip("/")
        if bare.split("/", 1)[0] not in tops:
            out.append(f"{path}: not named from the repository root (no top-level {bare.split('/', 1)[0]!r})")
        elif not (bare in files or any(name.startswith(bare + "/") for name in files)):
            out.append(f"{path}: no longer exists")
        elif path.endswith("/") and bare in files:
            out.append(f"{path}: a file, not a folder")
    return out


def test_the_path_reader_finds_paths_and_only_paths():
    text = ("Touch `agent/kinds.py`, `rigs/userdata/` and `app.py`; not `python -m agent.run`, `-c model.<rig>=ID`,\n"
            "`Backend.metadata`, `agent.bench.command.option_table`, `run.json` or `v0.30.0`.\n"
            "```\nagent/in_a_fence.py\n```\n")
    assert named_paths(text) == ["agent/kinds.py", "rigs/userdata/", "app.py"]


def test_a_missing_path_is_named():
    files = frozenset({"agent/kinds.py", "rigs/userdata/vllm.sh", "app.py"})
    assert missing(["agent/kinds.py", "rigs/userdata/", "app.py"], files) == []
    assert missing(["agent/gone.py", "kinds.py", "agent/kinds.py/"], files) == [
        "agent/gone.py: no longer exists",
        "kinds.py: not named from the repository root (no top-level 'kinds.py')",
        "agent/kinds.py/: a file, not a folder",
    ]


@pytest.mark.parametrize("page", PAGES)
def test_every_path_a_page_names_exists(page):
    paths = named_paths((PROJECT_DIR / page).read_text(encoding="utf-8"))
    assert len(paths) >= 40, f"{page} names only {len(paths)} paths: is the reader still finding them?"
    assert missing(paths, tracked()) == [], f"{page} names paths that do not exist: update it with the move"
