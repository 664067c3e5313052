"""What the terminal shows at the end of a run: a short scoreboard, the recommendation, and where
the report is. Formats ``summary.json`` only (rich; plain text when stdout is not a terminal).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Mapping

from rich import box
from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from .html_report import FILE as HTML_FILE
from ..analysis.recommend import describe_target, usd
from ..analysis.slo import at_capacity
from ..analysis.traffic import describe_volume

PLAIN_WIDTH = 120
"""Columns used when stdout is not a terminal (a log, a pipe): wide enough for the scoreboard."""
STYLES = {"choice": "green", "tie": "yellow", "too_thin": "yellow", "none_qualifies": "red", "not_measured": "yellow"}
TITLES = {"choice": "Which one", "tie": "Which one: a tie", "too_thin": "Which one: not enough evidence",
          "none_qualifies": "Which one: nothing qualifies", "not_measured": "Which one: not measured"}


def _f(value: Any, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _short(disqualified: str | None) -> str:
    if disqualified is None:
        return ""
    return "not measured" if disqualified.startswith("not measured") else (
        "no price" if disqualified.startswith("no price") else "disqualified")


def scoreboard(summary: Mapping[str, Any]) -> Table:
    """One row per backend: completed, TTFT at concurrency 1, capacity, goodput and monthly cost at the target."""
    rec = summary.get("recommendation") or {}
    table = Table(title="Scoreboard: TTFT p50 ms at c=1; SLO capacity (concurrency), goodput (output tok/s) and "
                        "$/month at your volume, within the target; tool-calling accuracy",
                  title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False)
    for header in ("backend", "done", "TTFT", "capacity", "goodput", "$/month", "accuracy", "status"):
        text = header in ("backend", "status")
        table.add_column(header, justify="left" if text else "right", no_wrap=True)
    for name, b in summary["backends"].items():
        chat, slo = b.get("chat") or {}, b.get("slo") or {}
        level = at_capacity(slo)
        acc = ((rec.get("backends") or {}).get(name) or {}).get("accuracy")
        monthly = slo.get("monthly_usd") or {}
        status = ("chosen" if rec.get("choice") == name else "runner-up" if rec.get("runner_up") == name
                  else _short((rec.get("disqualified") or {}).get(name)))
        tags = [t for t, on in (("toy", b.get("toy_model")), ("custom", b.get("custom"))) if on]
        table.add_row(
            name + (f" ({', '.join(tags)})" if tags else ""),
            "yes" if b.get("completed") else "[red]no[/]",
            _f((chat.get("ttft_ms") or {}).get("p50")),
            "-" if not slo else ("misses" if slo.get("capacity_concurrency") is None
                                 else f"c={slo['capacity_concurrency']}"),
            _f(level.get("goodput_output_tok_per_s") if level else None),
            usd(monthly.get("at_workload")),
            "-" if not acc else f"{acc['accuracy']:.0%}",
            status,
        )
    return table


def recommendation_panel(summary: Mapping[str, Any]) -> Panel | None:
    rec = summary.get("recommendation")
    if not rec:
        return None
    w = rec["workload"]
    lines = [f"[bold]{rec['headline']}[/]", "",
             f"Workload: {describe_volume(w['output_tokens_per_month'])} output tokens a month, peak/average "
             f"{w['peak_to_average']:g}, {w['input_per_output']:g} input per output token, tool calls "
             f"{'needed' if w['tool_calls'] else 'not needed'}"
             + (f" (defaults: {', '.join(w['defaulted'])})" if w.get("defaulted") else ""),
             f"Target: {describe_target(rec.get('target'))}"]
    for point in (rec.get("switch_points") or [])[:3]:
        lines.append(f"- {point['text']}")
    for name, why in (rec.get("disqualified") or {}).items():
        if _short(why) != "not measured":
            lines.append(f"- {name} disqualified: {why}")
    return Panel("\n".join(lines), title=TITLES.get(rec["verdict"], "Which one"), title_align="left",
                 border_style=STYLES.get(rec["verdict"], "white"))


def print_end(summary: Mapping[str, Any] | None, out_dir: Path, console: Console | None = None) -> None:
    """Print the scoreboard, the recommendation and the report's paths."""
    console = console or Console(highlight=False, width=None if sys.stdout.isatty() else PLAIN_WIDTH)
    if summary is not None:
        console.print(scoreboard(summary))
        panel = recommendation_panel(summary)
        if panel is not None:
            console.print(panel)
    report = out_dir / "REPORT.md"
    html = out_dir / HTML_FILE
    if report.is_file():
        console.print(f"Report: {report}" + (f" and {html}" if html.is_file() else ""), markup=False,
                      soft_wrap=True)
    else:
        console.print(f"Evidence: {out_dir} (no report could be written; see the log)", markup=False, soft_wrap=True)
