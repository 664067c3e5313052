"""The plot of $ per successful task against task success, one point per priced backend, its success's 95%
interval drawn as a horizontal bar."""

from __future__ import annotations

from pathlib import Path

from ...results.summary import Summary
from ..labels import backend_label

FILE = "usd_per_successful_task.png"
TITLE = "$ per successful task against task success"


def points(summary: Summary) -> dict[str, tuple[float, float, tuple[float, float] | None]]:
    """``{backend: (success, $ per successful task, interval)}`` of the backends with both."""
    return {n: (b.tasks.success, b.tasks.usd_per_success, b.tasks.interval) for n, b in summary.backends.items()
            if b.tasks and b.tasks.success is not None and b.tasks.usd_per_success is not None}


def drawable(summary: Summary) -> bool:
    """Whether any backend has a success and a $ per successful task."""
    return bool(points(summary))


def draw(summary: Summary, out_dir: Path) -> dict[str, str]:
    """Draw the plot into ``out_dir``; returns ``{"tasks": file name}``, or ``{}`` when nothing to draw."""
    if not drawable(summary):
        return {}
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for name, (success, usd, interval) in points(summary).items():
        low, high = interval or (success, success)
        ax.errorbar([success * 100], [usd], xerr=[[(success - low) * 100], [(high - success) * 100]], fmt="o",
                    capsize=4, label=backend_label(summary, name))
        ax.annotate(name, (success * 100, usd), textcoords="offset points", xytext=(6, 6))
    ax.set_xlabel("tasks succeeded, % (95% interval)")
    ax.set_ylabel("$ per successful task")
    ax.set_xlim(0, 100)
    ax.set_yscale("log")
    ax.set_title(TITLE)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_dir / FILE, dpi=110)
    plt.close(fig)
    return {"tasks": FILE}
