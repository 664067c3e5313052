"""The report's scoreboard: one row per backend with its chat figures at concurrency 1, its counting
grades with their intervals, $/M at concurrency 1 and whether it completed; then what failed and what
was not run."""

from __future__ import annotations

from ...results.blocks.chat import ChatSummary
from ...results.blocks.counting import CountingSummary
from ...results.formatting import MISSING, cell, percent_range
from ...results.summary import BackendSummary, Summary
from ..labels import backend_label
from ..markdown import table

HEADER = ["backend", "decode tok/s p50", "TTFT ms p50", "e2e ms p50", "client tok/s p50", "correct", "right filter",
          "strict correct", "strict right filter", "$/M out (c=1)", "completed"]


def grade(block: CountingSummary | None, key: str, interval: bool = False, failed: bool = True) -> str:
    """``k/n`` over the graded (not failed) runs, with its 95% interval and the failed runs beside
    it when asked."""
    value = getattr(block, key) if block else None
    if block is None or value is None:
        return MISSING
    ci95 = getattr(block, f"{key}_ci95", None)
    ci = f" [{percent_range(ci95)}]" if interval and ci95 else ""
    apart = f" ({block.errors} failed)" if failed and block.errors else ""
    return f"{value}/{block.graded}{ci}{apart}"


def decode_p50(chat: ChatSummary | None) -> str:
    if not chat or chat.decode_tok_per_s.p50 is None:
        return MISSING
    value = cell(chat.decode_tok_per_s.p50)
    return value if chat.decode_comparable else f"{value} (multi-token)"


def _row(summary: Summary, name: str, b: BackendSummary) -> list[str]:
    chat = b.chat
    c1 = next((lv for lv in b.cost.per_concurrency if lv.concurrency == 1), None)
    return [
        backend_label(summary, name), decode_p50(chat),
        cell(chat.ttft_ms.p50) if chat else MISSING, cell(chat.e2e_ms.p50, 0) if chat else MISSING,
        cell(chat.client_tok_per_s.p50) if chat else MISSING,
        grade(b.counting, "correct", interval=True), grade(b.counting, "right_filter", interval=True),
        grade(b.counting_strict, "correct", interval=True), grade(b.counting_strict, "right_filter", interval=True),
        cell(c1.usd_per_m_output, 2) if c1 else MISSING, "yes" if b.completed else "**no**",
    ]


def section(summary: Summary) -> list[str]:
    out = ["## Scoreboard", ""] + table(HEADER, [_row(summary, n, b) for n, b in summary.backends.items()]) + [""]
    failures = [(n, f) for n, b in summary.backends.items() for f in b.failures]
    if failures:
        out += ["Failures:", ""] + [f"- {n}: {f}" for n, f in failures] + [""]
    skipped = [(n, p, r) for n, b in summary.backends.items() for p, r in b.skipped.items()]
    if skipped:
        out += ["Not run:", ""] + [f"- {n} {p}: {r}" for n, p, r in skipped] + [""]
    return out
