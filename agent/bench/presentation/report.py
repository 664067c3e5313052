"""``REPORT.md`` and its plots, rendered from the typed summary only.

The report leads with the answer ("Which one?"), then the figures part by part, and ends with how
each figure is computed and the run's settings. Nothing is computed here that is not in the summary:
the report formats figures, it does not make them (a test renders the report again from
``summary.json`` and compares).
"""

from __future__ import annotations

from pathlib import Path

from ..results.summary import Summary
from .plots import cost_volume, figures, slo_latency
from .plots import tasks as tasks_plot
from .plots import traffic as traffic_plot
from .sections import bfcl, chat, cost, counting, methods, open_loop, orchestrator, precision, provenance, \
    scoreboard, settings, slo, tasks, traffic, which_one

SECTIONS = (which_one, scoreboard, traffic, counting, bfcl, tasks, precision, orchestrator, chat, slo, open_loop, cost,
            provenance)
"""The sections in order (``traffic`` is "Your traffic", with its plot; ``cost`` ends with the bandwidth ceiling)."""
TITLES = {"decode": "Decode rate by backend", "cost": "$ per million output tokens", "ttft": "TTFT distribution",
          "slo": "Latency p99 against concurrency, with the target"}


def plot_names(summary: Summary) -> dict[str, str]:
    """The plots of the chat and capacity sections :func:`make_plots` draws: ``{key: file name}``."""
    return {**figures.names(summary), **slo_latency.names(summary)}


def _plots(summary: Summary) -> list[str]:
    plots = plot_names(summary)
    if not plots:
        return []
    out = ["## Plots", ""]
    for key, file in plots.items():
        out += [f"![{TITLES.get(key, key)}]({file})", ""]
    return out


def render(summary: Summary) -> str:
    """The whole REPORT.md as text."""
    out = ["# Benchmark report", ""]
    for part in SECTIONS:
        out += part.section(summary)
    out += _plots(summary) + methods.section(summary) + settings.section(summary)
    return "\n".join(out)


def make_plots(summary: Summary, out_dir: Path) -> dict[str, str]:
    """Draw every plot into ``out_dir``; returns ``{key: file name}`` of those drawn."""
    return {**figures.draw(summary, out_dir), **cost_volume.draw(summary, out_dir),
            **slo_latency.draw(summary, out_dir), **traffic_plot.draw(summary, out_dir), **tasks_plot.draw(summary, out_dir)}
