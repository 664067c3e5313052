"""The three plots of the chat part: decode rate by backend, $ per million output tokens by
concurrency, and the time to first token of the timed requests."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ...results.summary import Summary
from ..labels import backend_label

DECODE, COST, TTFT = "decode_tok_per_s.png", "usd_per_m_output.png", "ttft_ms.png"


def names(summary: Summary) -> dict[str, str]:
    """The plots :func:`draw` draws for ``summary``: ``{key: file name}``."""
    backends = summary.backends.values()
    out: dict[str, str] = {}
    if any(b.chat and b.chat.decode_tok_per_s.n for b in backends):
        out["decode"] = DECODE
    if any(lv.usd_per_m_output is not None for b in backends for lv in b.cost.per_concurrency):
        out["cost"] = COST
    if any(b.chat and b.chat.ttft_ms.values for b in backends):
        out["ttft"] = TTFT
    return out


def _save(plt: Any, fig: Any, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _decode(plt: Any, summary: Summary, path: Path) -> None:
    chat = {n: b.chat.decode_tok_per_s for n, b in summary.backends.items() if b.chat and b.chat.decode_tok_per_s.n}
    fig, ax = plt.subplots(figsize=(7, 3.8))
    p50 = [d.p50 or 0.0 for d in chat.values()]
    low = [p - (d.min or 0.0) for d, p in zip(chat.values(), p50)]
    high = [(d.max or 0.0) - p for d, p in zip(chat.values(), p50)]
    ax.bar([backend_label(summary, n) for n in chat], p50, yerr=[low, high], capsize=4, color="#4C72B0")
    ax.set_ylabel("decode tok/s (p50, min-max)")
    ax.set_title("Decode rate by backend")
    _save(plt, fig, path)


def _cost(plt: Any, summary: Summary, path: Path) -> None:
    rows = [(n, lv) for n, b in summary.backends.items() for lv in b.cost.per_concurrency
            if lv.usd_per_m_output is not None]
    fig, ax = plt.subplots(figsize=(7, 3.8))
    ax.bar([f"{backend_label(summary, n)}\nc={lv.concurrency}" for n, lv in rows],
           [lv.usd_per_m_output for _, lv in rows], color="#55A868")
    ax.set_ylabel("$ per million output tokens")
    ax.set_title("$ per million output tokens, by concurrency")
    _save(plt, fig, path)


def _ttft(plt: Any, summary: Summary, path: Path) -> None:
    ttft = {n: b.chat.ttft_ms.values for n, b in summary.backends.items() if b.chat and b.chat.ttft_ms.values}
    fig, ax = plt.subplots(figsize=(7, 3.8))
    ax.boxplot(list(ttft.values()), showfliers=True)
    ax.set_xticks(range(1, len(ttft) + 1), [backend_label(summary, n) for n in ttft])
    for i, values in enumerate(ttft.values(), start=1):
        ax.plot([i] * len(values), values, "o", alpha=0.5, color="#C44E52", markersize=4)
    ax.set_ylabel("TTFT ms")
    ax.set_title("Time to first token, timed requests")
    _save(plt, fig, path)


DRAW: dict[str, Callable[[Any, Summary, Path], None]] = {"decode": _decode, "cost": _cost, "ttft": _ttft}


def draw(summary: Summary, out_dir: Path) -> dict[str, str]:
    """Draw the chat plots into ``out_dir``; returns ``{key: file name}`` of those drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    drawn = names(summary)
    for key, file in drawn.items():
        DRAW[key](plt, summary, out_dir / file)
    return drawn
