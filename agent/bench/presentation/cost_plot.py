"""The plot of monthly cost against monthly output volume, one curve per priced backend, with the
user's volume and the switch points of the recommendation marked. Drawn from ``summary.json`` only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ..analysis.recommend import offers_for_plot, volumes
from ..analysis.traffic import describe_volume

FILE = "monthly_cost_vs_volume.png"
TITLE = "Monthly cost against monthly output volume"


def drawable(summary: Mapping[str, Any]) -> bool:
    """Whether :func:`draw` has a curve to draw: a backend priced and measured within the target, or the
    list prices of the catalog's backends this run did not measure (lower bounds, drawn dotted)."""
    return bool(summary.get("recommendation")) and bool(offers_for_plot(summary)[1])


def draw(summary: Mapping[str, Any], out_dir: Path) -> dict[str, str]:
    """Draw the plot into ``out_dir``; returns ``{"monthly_cost": file name}``, or ``{}`` when nothing to draw."""
    if not drawable(summary):
        return {}
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rec = summary["recommendation"]
    traffic, curves = offers_for_plot(summary)
    low, high = rec["volume_range"]
    xs = volumes(low, high)
    fig, ax = plt.subplots(figsize=(8, 4.6))
    for offer, label in curves:
        ys = [offer.monthly(v, traffic.with_volume(v)) for v in xs]
        style = "-" if offer.measured and "disqualified" not in label else (":" if not offer.measured else "--")
        ax.plot(xs, ys, style, drawstyle="steps-post" if offer.billing == "hourly" else "default", label=label,
                linewidth=1.8 if style == "-" else 1.2)
    volume = traffic.output_tokens_per_month
    ax.axvline(volume, color="#555555", linewidth=1, linestyle="-.")
    ax.annotate(f"your volume\n{describe_volume(volume)}/month", (volume, 1), xycoords=("data", "axes fraction"),
                xytext=(4, -28), textcoords="offset points", fontsize=8, color="#333333")
    for point in rec.get("switch_points") or []:
        v = point["output_tokens_per_month"]
        if not low <= v <= high:
            continue
        cost = point["figures"][point["above"]]["monthly_usd_above"]
        ax.plot([v], [cost], "o", color="#C44E52", markersize=6, zorder=5)
        ax.annotate(f"{describe_volume(v)}: {point['above']}", (v, cost), xytext=(5, 6), textcoords="offset points",
                    fontsize=7, color="#C44E52")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("output tokens per month")
    ax.set_ylabel("$ per month (instances for the peak, 730 h)")
    measured = any(offer.measured for offer, _ in curves)
    ax.set_title(f"{TITLE}\npeak/average {traffic.peak_to_average:g}, {traffic.input_per_output:g} input tokens per "
                 "output token; " + ("red dots: the cheapest backend changes" if measured else
                                     "dotted: list prices, lower bounds (not measured)"),
                 fontsize=9)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(out_dir / FILE, dpi=110)
    plt.close(fig)
    return {"monthly_cost": FILE}
