"""A front page and a bookshelf: README.md stays short and its example output is today's default run, no docs
page grows past what a reader takes in at once, and ARCHITECTURE.md stays a summary.

Sizes count as ``wc -l`` (newlines) and ``wc -w`` (runs of non-space) count them.
"""

from __future__ import annotations

import re

import pytest

from tests.conftest import PROJECT_DIR

README = PROJECT_DIR / "README.md"
ARCHITECTURE = PROJECT_DIR / "docs" / "ARCHITECTURE.md"
README_MAX_LINES = 200
README_MAX_WORDS = 2_200
PAGE_MAX_LINES = 400
ARCHITECTURE_MAX_WORDS = 1_500
CELL_MAX_CHARS = 200
FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})[^\n]*\n(.*?)^\1\2[`~]*\s*$", re.M | re.S)


def lines(text: str) -> int:
    return text.count("\n")


def words(text: str) -> int:
    return len(text.split())


def table_cells(markdown: str) -> list[str]:
    """Every cell of every Markdown table outside fenced blocks (a ``\\|`` stays inside its cell)."""
    prose = FENCE.sub("", markdown)
    return [cell.strip() for line in prose.splitlines() if line.lstrip().startswith("|")
            for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def test_the_readme_is_a_front_page():
    text = README.read_text(encoding="utf-8")
    assert lines(text) <= README_MAX_LINES, f"README.md has {lines(text)} lines: move detail into docs/"
    assert words(text) <= README_MAX_WORDS, f"README.md has {words(text)} words: move detail into docs/"


@pytest.mark.parametrize("page", sorted(p.relative_to(PROJECT_DIR).as_posix()
                                        for p in (PROJECT_DIR / "docs").glob("*.md")))
def test_no_docs_page_is_over_400_lines(page):
    n = lines((PROJECT_DIR / page).read_text(encoding="utf-8"))
    assert n <= PAGE_MAX_LINES, f"{page} has {n} lines: split it by topic"


def test_the_architecture_page_is_a_summary():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    assert words(text) <= ARCHITECTURE_MAX_WORDS, f"{words(text)} words: move detail to docs/code-map.md"
    long = [cell for cell in table_cells(text) if len(cell) > CELL_MAX_CHARS]
    assert long == [], f"table cells over {CELL_MAX_CHARS} characters: {long}"


def test_table_cells_are_read_as_a_reader_sees_them():
    text = "| a | b \\| c |\n|---|---|\n```\n| not | a table |\n```\n"
    assert table_cells(text) == ["a", "b \\| c", "---", "---"]


def test_the_readme_example_output_is_the_default_runs():
    """The terminal excerpt shows the workload and target a run with no options prices and measures today: a
    changed default (as the input per output token was, from 5 to the reference prompt's 0.2) makes the
    excerpt stale, and it is run again."""
    from agent.bench.analysis.traffic import default_traffic
    from agent.bench.results.formatting import target, volume
    from agent.bench.results.target import Target

    text = README.read_text(encoding="utf-8")
    traffic = default_traffic()
    blocks = [m.group(3) for m in FENCE.finditer(text)]
    panel = [b for b in blocks if "Which one" in b and "Workload:" in b]
    assert len(panel) == 1, "README.md shows one run's terminal output, with its Which one panel"
    expected = (f"Workload: {volume(traffic.output_tokens_per_month)} output tokens a month, peak/average "
                f"{traffic.peak_to_average:g}, {traffic.input_per_output:g} input per output token, tool calls "
                f"{'needed' if traffic.tool_calls else 'not needed'}")
    assert expected in panel[0], f"the excerpt is not today's default run (expected {expected!r}): run python -m agent.run"
    assert f"Target: {target(Target.default().as_dict())}" in panel[0]
    stated = re.findall(r"([\d.]+) input (?:tokens )?per output token", text)
    assert stated and {float(s) for s in stated} == {traffic.input_per_output}, (
        f"README.md states {stated} input tokens per output token; the default is {traffic.input_per_output:g}")
