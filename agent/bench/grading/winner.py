"""Which backend an orchestrator's answer names as the winner.

Two readings, both pure functions of the recorded answer:

* :func:`read_winner` reads the free-text reply. In each sentence that speaks of a winner
  ("fastest", "won", "came first" ...), a backend counts only when the nearest rank word to it is
  a winner word and it is not the object of a comparison ("compared with Bedrock", "faster than
  Bedrock", "ahead of trn1"); "Compared with Bedrock, g6 was the fastest." names g6. Table rows
  are skipped, and so are ``<thinking>`` blocks. One backend named: ``named``; none: ``none``;
  several: ``unclear``.
* :func:`resolve_backend` reads the ``winner`` argument of the structured answer
  (``submit_summary``): a backend's name, its tool name or its label. Anything else is
  ``unclear``: a winner that cannot be read is never graded wrong.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from .count_reading import strip_reasoning

NAMED, NONE, UNCLEAR = "named", "none", "unclear"

_WINNER = (r"fastest|quickest|winner|won|wins|first\s+place|came\s+(?:in\s+)?first|ranked\s+first|ranks\s+first|"
           r"top\s+spot|at\s+the\s+top|topped|lowest\s+latency|best\s+(?:time|latency|speed)|most\s+quickly|"
           r"number\s+one|in\s+the\s+lead|led|leads")  # fmt: skip
_LOSER = (r"slowest|second|third|fourth|fifth|last|behind|trailing|trailed|slower|highest\s+latency|worst|"
          r"runner-?up|followed\s+by")  # fmt: skip
_WINNER_WORDS = re.compile(rf"\b(?:{_WINNER})\b", re.IGNORECASE)
_RANK_WORDS = re.compile(rf"\b(?:(?P<win>{_WINNER})|(?P<lose>{_LOSER}))\b", re.IGNORECASE)
_COMPARED = re.compile(
    r"(?:\bthan|\bcompared\s+(?:with|to)|\bvs\.?|\bversus|\bover|\bahead\s+of|\bbeating|\bbeat|\boutpacing|"
    r"\boutperforming|\bunlike|\bagainst|\bfollowed\s+by|\brelative\s+to)\s+(?:the\s+)?$",
    re.IGNORECASE,
)

_LIST_GAP = re.compile(r"\s*,?\s*(?:and|or|&)\s+(?:the\s+)?$", re.IGNORECASE)
_BOUNDARY = re.compile(r",|;|\band\b|\bbut\b|\bwhile\b|\bwhereas\b|\bthen\b", re.IGNORECASE)


def aliases(backend: Mapping[str, Any]) -> list[str]:
    """How a reply may name a backend: its name, its label, the label before any parenthesis."""
    label = str(backend.get("label") or "")
    out = [str(backend["name"]), label]
    short = label.split("(")[0].strip()
    if len(short) >= 4:
        out.append(short)
    if backend.get("tool"):
        out.append(str(backend["tool"]))
    return [a for a in dict.fromkeys(out) if a]


def _mentions(text: str, backends: Sequence[Mapping[str, Any]]) -> list[tuple[int, int, str]]:
    """Every backend mention as ``(start, end, name)``; a longer alias wins over one inside it."""
    found: list[tuple[int, int, str]] = []
    pairs = sorted(((a, str(b["name"])) for b in backends for a in aliases(b)), key=lambda p: -len(p[0]))
    for alias, name in pairs:
        for m in re.finditer(r"(?<![A-Za-z0-9_])" + re.escape(alias) + r"(?![A-Za-z0-9_])", text, re.IGNORECASE):
            if not any(s < m.end() and m.start() < e for s, e, _ in found):
                found.append((m.start(), m.end(), name))
    return sorted(found)


def _distance(text: str, a: tuple[int, int], b: tuple[int, int]) -> int:
    """Characters between two spans, plus a penalty for each clause boundary between them."""
    gap = text[a[1] : b[0]] if b[0] >= a[1] else text[b[1] : a[0]]
    return len(gap) + 25 * len(_BOUNDARY.findall(gap))


def read_winner(reply: str, backends: Sequence[Mapping[str, Any]]) -> tuple[str, str | None]:
    """``(status, backend)`` the free-text reply names as the winner: ``named``, ``none`` or ``unclear``."""
    text = strip_reasoning(reply or "")
    prose = "\n".join(ln for ln in text.splitlines() if not ln.strip().startswith("|"))
    named: list[str] = []
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", prose):
        if not _WINNER_WORDS.search(sentence):
            continue
        ranks = [(m.start(), m.end(), m.group("win") is not None) for m in _RANK_WORDS.finditer(sentence)]
        compared_end = None  # "beating g6 and trn1": the whole list is compared against
        for start, end, name in _mentions(sentence, backends):
            listed = compared_end is not None and _LIST_GAP.match(sentence[compared_end:start])
            if _COMPARED.search(sentence[:start]) or listed:
                compared_end = end
                continue
            compared_end = None
            nearest = min(ranks, key=lambda r: _distance(sentence, (start, end), (r[0], r[1])))
            if nearest[2] and name not in named:
                named.append(name)
    if not named:
        return NONE, None
    return (NAMED, named[0]) if len(named) == 1 else (UNCLEAR, None)


def resolve_backend(value: Any, backends: Sequence[Mapping[str, Any]]) -> str | None:
    """The backend a structured ``winner`` argument names, or None when it names none (or several)."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    for b in backends:
        if any(text.lower() == a.lower() for a in aliases(b)):
            return str(b["name"])
    names = {name for _, _, name in _mentions(text, backends)}
    return names.pop() if len(names) == 1 else None
