"""The plot of monthly cost against monthly output volume: one curve per priced way to serve the
traffic (``recommendation.curves``), the user's volume and the switch points marked. The subtitle
names only the marks the plot really draws."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...results.blocks.recommendation import CostCurve, SwitchPoint
from ...results.formatting import volume as describe_volume
from ...results.summary import Summary

FILE = "monthly_cost_vs_volume.png"
TITLE = "Monthly cost against monthly output volume"
LINE = {"measured": "-", "disqualified": "--", "list_price": ":"}
LEGEND = {"disqualified": "dashed: disqualified", "list_price": "dotted: list prices, lower bounds (not measured)"}
POINTS = 400


def drawable(summary: Summary) -> bool:
    """Whether there is a curve to draw: a backend priced and measured within the target, or the list
    prices of the catalog's backends this run did not measure (lower bounds, drawn dotted)."""
    return bool(summary.recommendation.curves)


def volumes(low: float, high: float, n: int = POINTS) -> list[float]:
    """``n`` volumes spaced evenly on a log scale from ``low`` to ``high``."""
    ratio = (high / low) ** (1 / (n - 1))
    return [low * ratio**i for i in range(n)]


def switch_points(summary: Summary) -> list[SwitchPoint]:
    """The switch points within the plotted volumes (drawn as red dots)."""
    low, high = summary.recommendation.volume_range
    return [p for p in summary.recommendation.switch_points if low <= p.output_tokens_per_month <= high]


def subtitle(summary: Summary) -> str:
    """The traffic's shape; on a second line, one phrase per kind of mark drawn (switch points, dashed and
    dotted curves), none for a mark the plot does not draw."""
    rec = summary.recommendation
    w = rec.workload
    styles = {c.style for c in rec.curves}
    marks = (["red dots: the cheapest backend changes"] if switch_points(summary) else []) + \
        [LEGEND[s] for s in ("disqualified", "list_price") if s in styles]
    shape = f"peak/average {w.peak_to_average:g}, {w.input_per_output:g} input tokens per output token"
    return shape + ("\n" + "; ".join(marks) if marks else "")


def _curve(ax: Any, curve: CostCurve, xs: list[float]) -> None:
    style = LINE[curve.style]
    ax.plot(xs, [curve.monthly_usd(v) for v in xs], style,
            drawstyle="steps-post" if curve.billing == "hourly" else "default", label=curve.label,
            linewidth=1.8 if style == "-" else 1.2)


def draw(summary: Summary, out_dir: Path) -> dict[str, str]:
    """Draw the plot into ``out_dir``; returns ``{"monthly_cost": file name}``, or ``{}`` when nothing to draw."""
    if not drawable(summary):
        return {}
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rec = summary.recommendation
    low, high = rec.volume_range
    xs = volumes(low, high)
    fig, ax = plt.subplots(figsize=(8, 4.6))
    for curve in rec.curves:
        _curve(ax, curve, xs)
    here = rec.workload.output_tokens_per_month
    ax.axvline(here, color="#555555", linewidth=1, linestyle="-.")
    ax.annotate(f"your volume\n{describe_volume(here)}/month", (here, 1), xycoords=("data", "axes fraction"),
                xytext=(4, -28), textcoords="offset points", fontsize=8, color="#333333")
    for point in switch_points(summary):
        v, cost = point.output_tokens_per_month, point.figures[point.above].monthly_usd_above
        ax.plot([v], [cost], "o", color="#C44E52", markersize=6, zorder=5)
        ax.annotate(f"{describe_volume(v)}: {point.above}", (v, cost), xytext=(5, 6), textcoords="offset points",
                    fontsize=7, color="#C44E52")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("output tokens per month")
    ax.set_ylabel("$ per month (instances for the peak, 730 h)")
    ax.set_title(f"{TITLE}\n{subtitle(summary)}", fontsize=9)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(out_dir / FILE, dpi=110)
    plt.close(fig)
    return {"monthly_cost": FILE}
