"""Latency p99 against concurrency, one panel per limit of the target with the limit drawn across;
a filled point is a level that held, a hollow one a level that missed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...results.blocks.slo import SloBlock
from ...results.constants import LIMIT_LABELS, TARGET_KEYS
from ...results.summary import Summary
from ..labels import backend_label

FILE = "slo_latency_ms.png"


def blocks(summary: Summary) -> dict[str, SloBlock]:
    """The backends with measured levels under the target."""
    return {n: b.slo for n, b in summary.backends.items() if b.slo and b.slo.levels}


def names(summary: Summary) -> dict[str, str]:
    return {"slo": FILE} if blocks(summary) else {}


def _panel(ax: Any, key: str, summary: Summary, by_backend: dict[str, SloBlock], limit: float | None) -> None:
    for n, s in by_backend.items():
        points = [(lv.concurrency, lv.p99(key), lv.holds) for lv in s.levels if lv.p99(key) is not None]
        if not points:
            continue
        xs, ys, held = zip(*points)
        line = ax.plot(xs, ys, "-", label=backend_label(summary, n))[0]
        ax.scatter([x for x, h in zip(xs, held) if h], [y for y, h in zip(ys, held) if h], color=line.get_color(),
                   zorder=3)
        ax.scatter([x for x, h in zip(xs, held) if not h], [y for y, h in zip(ys, held) if not h],
                   facecolors="none", edgecolors=line.get_color(), zorder=3)
    if limit is not None:
        ax.axhline(limit, color="#C44E52", linestyle="--", label=f"target {limit:,g} ms")
    ax.set_xscale("log", base=2)
    ticks = sorted({lv.concurrency for s in by_backend.values() for lv in s.levels})
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("concurrency (requests in flight)")
    ax.set_ylabel(f"{LIMIT_LABELS[key]} p99 ms")
    ax.set_title(f"{LIMIT_LABELS[key]} p99 by concurrency")
    ax.legend(fontsize=7)


def draw(summary: Summary, out_dir: Path) -> dict[str, str]:
    """Draw the plot into ``out_dir``; ``{}`` when no level was measured."""
    by_backend = blocks(summary)
    if not by_backend:
        return {}
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    target = next(iter(by_backend.values())).target.model_dump()
    keys = [k for k in TARGET_KEYS if target.get(k) is not None] or ["ttft_p99_ms"]
    fig, axes = plt.subplots(1, len(keys), figsize=(4.2 * len(keys) + 1, 3.8), squeeze=False)
    for ax, key in zip(axes[0], keys):
        _panel(ax, key, summary, by_backend, target.get(key))
    fig.suptitle("Filled: the level held the target; hollow: it missed", fontsize=8)
    fig.tight_layout()
    fig.savefig(out_dir / FILE, dpi=110)
    plt.close(fig)
    return {"slo": FILE}
