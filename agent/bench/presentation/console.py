"""What the terminal says at the end of a run about what failed, from the typed summary alone.

A run whose every request failed used to print only where its evidence went. Now each backend
that did not complete gets one line per failed part, with the reason, and a backend whose chat
requests partly failed gets one line saying how many and why, so the terminal alone tells a user
what to look at.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .html_report import FILE as HTML_FILE

if TYPE_CHECKING:  # the runner imports this module at start; the models load when a run ends
    from ..results.summary import Summary

WIDTH = 240


def failure_lines(summary: Summary) -> list[str]:
    """One line per failed backend/part, then one per backend whose chat had some failed requests."""
    lines: list[str] = []
    for name, b in summary.backends.items():
        lines += [_clip(f"{name}: {failure}") for failure in b.failures]
        chat = b.chat
        if chat and chat.error_reasons and not any(f.startswith("chat:") for f in b.failures):
            total = (1 if chat.cold else 0) + sum(lv.requests for lv in chat.levels)
            top, count = next(iter(chat.error_reasons.items()))
            lines.append(_clip(f"{name}: chat: {sum(chat.error_reasons.values())} of {total} requests failed, left "
                               f"out of every figure (most often: {top}, x{count})"))
    return lines


def partial_report(summary: Summary | None, out_dir: Path) -> None:
    """After an interrupt: that a partial report was written, where, and what it is missing (or that none
    could be written, and where the evidence is)."""
    report, html = out_dir / "REPORT.md", out_dir / HTML_FILE
    if summary is None or not report.is_file():
        print(f"interrupted: no report could be written; the evidence so far is in {out_dir}", flush=True)
        return
    print(f"Partial report (the run was interrupted): {report}" + (f" and {html}" if html.is_file() else ""),
          flush=True)
    if summary.recommendation.partial:
        print(_clip(summary.recommendation.partial), flush=True)


def _clip(line: str) -> str:
    line = " ".join(line.split())
    return line if len(line) <= WIDTH else line[: WIDTH - 3] + "..."
