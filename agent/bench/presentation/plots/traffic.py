"""Asked against counted: per backend, the prompt tokens its chat part asked and the prompt tokens its server
counted (two histograms over the same requests), and the same for the output tokens."""

from __future__ import annotations

from pathlib import Path

from ...results.blocks.traffic import TrafficBlock
from ...results.summary import Summary
from ..labels import backend_label

FILE = "traffic_tokens.png"


def blocks(summary: Summary) -> dict[str, TrafficBlock]:
    """The backends whose prompt lengths were asked and counted."""
    return {n: b.traffic for n, b in summary.backends.items()
            if b.traffic and b.traffic.prompt_asked and b.traffic.prompt_counted.n}


def names(summary: Summary) -> dict[str, str]:
    return {"traffic": FILE} if blocks(summary) else {}


def draw(summary: Summary, out_dir: Path) -> dict[str, str]:
    """Draw the plot into ``out_dir``; ``{}`` when no backend was asked lengths."""
    by_backend = blocks(summary)
    if not by_backend:
        return {}
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(by_backend), 2, figsize=(9, 2.6 * len(by_backend) + 0.6), squeeze=False)
    for row, (name, t) in zip(axes, by_backend.items()):
        for ax, what, asked, counted in ((row[0], "prompt", t.prompt_asked, t.prompt_counted),
                                          (row[1], "output", t.output_asked, t.output_counted)):
            assert asked is not None
            values = asked.values + counted.values
            bins = max(5, min(30, len(set(values))))
            ax.hist([asked.values, counted.values], bins=bins, label=["asked", "counted by the server"],
                    color=["#4C72B0", "#DD8452"])
            ax.set_title(f"{backend_label(summary, name)}: {what} tokens", fontsize=9)
            ax.set_xlabel(f"{what} tokens")
            ax.set_ylabel("requests")
            ax.legend(fontsize=7)
    fig.suptitle("Asked against counted, over the same requests", fontsize=9)
    fig.tight_layout()
    fig.savefig(out_dir / FILE, dpi=110)
    plt.close(fig)
    return {"traffic": FILE}
