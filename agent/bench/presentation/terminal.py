"""What the terminal shows at the end of a run: a short scoreboard, the recommendation, and where
the report is. Formats the typed summary only (rich; plain text when stdout is not a terminal). The
scoreboard fits an 80-column terminal.
"""

from __future__ import annotations

import sys
from pathlib import Path

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from ..results.formatting import MISSING, number, target, usd, volume
from ..results.summary import BackendSummary, Summary
from .html_report import FILE as HTML_FILE
from .sections.which_one import brief_caveats

PLAIN_WIDTH = 120
"""Columns used when stdout is not a terminal (a log, a pipe)."""
STYLES = {"choice": "green", "tie": "yellow", "too_thin": "yellow", "none_qualifies": "red", "not_measured": "yellow"}
TITLES = {"choice": "Which one", "tie": "Which one: a tie", "too_thin": "Which one: not enough evidence",
          "none_qualifies": "Which one: nothing qualifies", "not_measured": "Which one: not measured"}
TITLE = ("Scoreboard: TTFT p50 ms at c=1; SLO capacity (concurrency), goodput (output tok/s) and $/month at your "
         "volume, within the target; tool-calling accuracy")
COLUMNS = ("backend", "done", "TTFT", "capacity", "goodput", "$/month", "accuracy", "status")
WRAPPED = ("backend", "capacity", "status")
"""The columns that wrap on an 80-column terminal (a capacity that is a floor says so in words); figures never do."""
MIN_WIDTH = {"backend": 9, "status": 12}
"""``sagemaker``; ``disqualified`` and ``not measured``: the longest words each column holds."""


def _short(disqualified: str | None) -> str:
    if disqualified is None:
        return ""
    return "not measured" if disqualified.startswith("not measured") else (
        "no price" if disqualified.startswith("no price") else "disqualified")


def _capacity(b: BackendSummary) -> str:
    if not b.slo:
        return MISSING
    if b.slo.every_request_failed:
        return "failed"
    return "misses" if b.slo.capacity_concurrency is None else b.slo.capacity_text()


def _row(summary: Summary, name: str, b: BackendSummary) -> list[str]:
    rec = summary.recommendation
    level = b.slo.at_capacity() if b.slo else None
    acc = rec.backends[name].accuracy if name in rec.backends else None
    status = ("chosen" if rec.choice == name else "runner-up" if rec.runner_up == name
              else _short(rec.disqualified.get(name)))
    tags = [t for t, on in (("toy", b.toy_model), ("custom", b.custom)) if on]
    return [
        name + (f" ({', '.join(tags)})" if tags else ""),
        "yes" if b.completed else "[red]no[/]",
        number(b.chat.ttft_ms.p50 if b.chat else None, 0),
        _capacity(b),
        number(level.goodput_output_tok_per_s if level else None, 0),
        usd(b.slo.monthly_usd.at_workload if b.slo and b.slo.monthly_usd else None),
        MISSING if not acc else f"{acc.accuracy:.0%}",
        status,
    ]


def scoreboard(summary: Summary) -> Table:
    """One row per backend: completed, TTFT at concurrency 1, capacity, goodput and monthly cost at the
    target, accuracy and status; whole ms and tok/s, so the table fits 80 columns."""
    table = Table(title=TITLE, title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False,
                  show_edge=False, collapse_padding=True)
    for header in COLUMNS:
        text = header in WRAPPED
        table.add_column(header, justify="left" if text else "right", no_wrap=not text, overflow="fold",
                         min_width=MIN_WIDTH.get(header))
    for name, b in summary.backends.items():
        table.add_row(*_row(summary, name, b))
    return table


def recommendation_panel(summary: Summary) -> Panel:
    rec = summary.recommendation
    w = rec.workload
    lines = [f"[bold]{rec.headline}[/]", "",
             f"Workload: {volume(w.output_tokens_per_month)} output tokens a month, peak/average "
             f"{w.peak_to_average:g}, {w.input_per_output:g} input per output token, tool calls "
             f"{'needed' if w.tool_calls else 'not needed'}"
             + (f" (defaults: {', '.join(w.defaulted)})" if w.defaulted else ""),
             f"Target: {target(rec.target.model_dump() if rec.target else None)}"]
    lines += [f"- {point.text}" for point in rec.switch_points[:3]]
    lines += [f"- {name} disqualified: {why}" for name, why in rec.disqualified.items() if _short(why) != "not measured"]
    caveats = brief_caveats(summary)
    lines += (["", "Read it with:"] + [f"- {escape(c)}" for c in caveats]) if caveats else []
    title = TITLES.get(rec.verdict, "Which one") + (" (partial run)" if rec.partial else "")
    return Panel("\n".join(lines), title=title, title_align="left", border_style=STYLES.get(rec.verdict, "white"))


def print_end(summary: Summary | None, out_dir: Path, console: Console | None = None) -> None:
    """Print the scoreboard, the recommendation and the report's paths."""
    console = console or Console(highlight=False, width=None if sys.stdout.isatty() else PLAIN_WIDTH)
    if summary is not None:
        console.print(scoreboard(summary))
        console.print(recommendation_panel(summary))
    report = out_dir / "REPORT.md"
    html = out_dir / HTML_FILE
    if report.is_file():
        console.print(f"Report: {report}" + (f" and {html}" if html.is_file() else ""), markup=False,
                      soft_wrap=True)
    else:
        console.print(f"Evidence: {out_dir} (no report could be written; see the log)", markup=False, soft_wrap=True)
