"""What the terminal says at the end of a run about what failed, from ``summary.json`` alone.

A run whose every request failed used to print only where its evidence went. Now each backend
that did not complete gets one line per failed part, with the reason, and a backend whose chat
requests partly failed gets one line saying how many and why, so the terminal alone tells a user
what to look at.
"""

from __future__ import annotations

from typing import Any, Mapping

WIDTH = 240


def failure_lines(summary: Mapping[str, Any]) -> list[str]:
    """One line per failed backend/part, then one per backend whose chat had some failed requests."""
    lines: list[str] = []
    for name, b in (summary.get("backends") or {}).items():
        failures = list(b.get("failures") or [])
        for failure in failures:
            lines.append(_clip(f"{name}: {failure}"))
        chat = b.get("chat")
        reasons = (chat or {}).get("error_reasons") or {}
        if reasons and not any(f.startswith("chat:") for f in failures):
            total = (1 if chat.get("cold") else 0) + sum(lv["requests"] for lv in chat.get("levels") or [])
            top, count = next(iter(reasons.items()))
            lines.append(_clip(f"{name}: chat: {sum(reasons.values())} of {total} requests failed, left out of "
                               f"every figure (most often: {top}, x{count})"))  # fmt: skip
    return lines


def _clip(line: str) -> str:
    line = " ".join(line.split())
    return line if len(line) <= WIDTH else line[: WIDTH - 3] + "..."
