"""What the answer is read with, wherever it is shown: a bracket only around a 95% interval, a capacity
measured no higher than it held labelled as a floor, the terminal's verdict panel carrying REPORT.md's
caveats, the two latency figures named apart, and the HTML verdict box coloured by the verdict. On
synthetic summaries (:mod:`tests.agent.bench.fakes.synthetic`)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from agent.bench.presentation import html_report, report, terminal

from tests.agent.bench.fakes import browser
from tests.agent.bench.fakes.synthetic import G6_PRICE, backend, full_summary, level, slo, summary

FLOOR = "≥ 1 (only c=1 measured)"


def default_like(**g6_level):
    """g6 and the local toy model, each measured at c=1 only (the default run), at 1 B output tokens a month, priced
    at a stated 5 input tokens per output token where the chat part measured 0.3 (prefill heavier than measured)."""
    g6 = backend("g6", slo_block=slo(1, [level(1, 131.5, **g6_level)], fails_above=False))
    local = backend("local", toy=True, constrained=True, tool_calls=False,
                    slo_block=slo(1, [level(1, 69.1, requests=5, repeats=1, no_interval=True)], fails_above=False))
    entries, run = summary({"g6": g6, "local": local}, {"g6": {"hourly": G6_PRICE}},
                           workload={"output_tokens_per_month": "1B", "input_per_output": 5},
                           bedrock_reference=None)
    return full_summary(entries, run)


def which_one_row(text: str, name: str) -> list[str]:
    section = text.split("## Which one?")[1].split("\n## ")[0]
    return [c.strip() for c in next(ln for ln in section.splitlines() if ln.startswith(f"| {name} |")).split("|")]


def terminal_lines(s) -> list[str]:
    console = Console(width=200, record=True)
    console.print(terminal.scoreboard(s))
    console.print(terminal.recommendation_panel(s))
    return console.export_text().splitlines()


def panel_text(s) -> str:
    return " ".join(" ".join(terminal_lines(s)).split())


def test_a_bound_from_an_unmeasured_capacity_is_labelled_apart_from_the_interval():
    # 1 B a month, peak 3x: 1,141.6 tok/s; 131.5 tok/s an instance: 9 instances, $5,287.54. One repeat: no interval.
    row = which_one_row(report.render(default_like(repeats=1, no_interval=True)), "g6")
    assert row[3] == FLOOR
    assert row[8] == "$5,287.54; bound, not an interval: as little as $587.50 if the capacity (a floor) is higher"
    # with an interval over repeats (124.9..138.1 tok/s: 9..10 instances), the bracket holds only that interval
    row = which_one_row(report.render(default_like(ci=(124.9, 138.1))), "g6")
    assert row[8].startswith("$5,287.54 [$5,287.54, $5,875.04]; bound, not an interval: as little as $587.50")


def test_a_floor_capacity_reads_as_one_in_every_place_capacity_appears():
    s = default_like(repeats=1, no_interval=True)
    text = report.render(s)
    capacity_table = text.split("## Capacity under a latency target")[1].split("### ")[0]
    assert f"| g6 | {FLOOR} |" in capacity_table
    assert which_one_row(text, "local")[3] == FLOOR
    assert f"SLO capacity of {FLOOR}" in text  # the figures the answer rests on
    rows = [line for line in terminal_lines(s) if line.startswith(("g6 ", "local "))]
    assert len(rows) == 2 and all(FLOOR in row for row in rows)


def test_the_verdict_panel_carries_the_reports_caveats():
    s = default_like(repeats=1, no_interval=True)
    which_one = report.render(s).split("## Scoreboard")[0]
    board = panel_text(s)
    for caveat in ("toy model", f"SLO capacity {FLOOR}: a floor", "makes prefill heavier"):
        assert caveat in which_one and caveat in board, caveat


def test_the_two_itl_figures_have_two_names():
    text = report.render(default_like())
    chat = text.split("## Chat benchmark")[1].split("\n## ")[0]
    levels = text.split("## Capacity under a latency target")[1].split("\n## ")[0]
    assert "| chunk gap ms (pooled) |" in chat and "ITL" not in chat
    assert "| ITL p99 ms (per-request mean gaps) |" in levels and "chunk gap" not in levels
    methods = text.split("## How each figure is computed")[1]
    assert "- **chunk gap**: gaps between successive content chunks" in methods
    assert "- **ITL**: one request's mean gap between its content chunks" in methods


def test_the_html_verdict_box_is_red_when_nothing_qualifies(tmp_path: Path):
    """The answer's box takes the verdict's colour (#c62828 when nothing qualifies); another quote stays grey."""
    page = tmp_path / html_report.FILE
    markdown = "# Benchmark report\n\n## Which one?\n\n> **No backend qualifies.**\n\n## Orchestrator\n\n> a reply\n"
    page.write_text(html_report.render(markdown, tmp_path, verdict="none_qualifies"))
    shot = browser.screenshot(browser.chromium(), page, tmp_path / "profile", tmp_path / "shot.png", size="800,400")
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)[..., :3] * 255

    def count(rgb: tuple[int, int, int]) -> int:
        return int(((abs(pixels - rgb) < 12).all(axis=-1)).sum())

    assert count((198, 40, 40)) > 200 and count((46, 125, 50)) == 0 and count((158, 158, 158)) > 200
