"""The ``bfcl`` block of ``summary.json`` and the paired comparisons, from the records only.

Per backend: accuracy overall and per category with its 95% Wilson interval and n; how many
answers wrote a call as text instead of making it, made no call where one was due, or made one
where none was; how many requests failed. A failed request is an error, never a wrong answer: it
is left out of every accuracy and counted apart. A case the backend's endpoint does not offer what
it needs for (parallel tool calls) was not sent: it is left out of every accuracy and pair too, and
counted apart as "not offered", never as a failure.

Between every two backends: McNemar's exact test on the cases both answered (a failed request on
either side drops the case from that pair).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Iterable, Mapping, Sequence

from ...grading.bfcl_grading import grade
from ...results.blocks.bfcl import BfclCase, BfclPair, BfclSummary, CategoryRate
from ...results.records import BfclRecord
from ...results.summary import BackendSummary
from ...tasks.bfcl_cases import CATEGORIES
from .. import stats
from .distribution import distribution

ALPHA = 0.05
"""Below this p-value a pair's difference is called measurable."""
NO_DIFFERENCE = "no measurable difference"
_DIGITS = 4


def _rate(correct: int, cases: int) -> dict[str, Any]:
    ci = stats.wilson_interval(correct, cases)
    return {
        "cases": cases,
        "correct": correct,
        "accuracy": round(correct / cases, _DIGITS) if cases else None,
        "ci95_low": round(ci[0], _DIGITS) if ci else None,
        "ci95_high": round(ci[1], _DIGITS) if ci else None,
    }


def _case(r: BfclRecord) -> BfclCase:
    g = grade(r.model_dump())
    return BfclCase(seq=r.seq, case=r.case, category=r.category, outcome=g.outcome, correct=g.correct,
                    reason=g.reason, text_call=g.text_call, calls=g.calls)


UNGRADED = ("error", "not_offered")
"""Outcomes that are not answers: a failed request, a case not sent because its endpoint does not offer what it
needs."""


def _by_category(detail: Sequence[BfclCase]) -> dict[str, CategoryRate]:
    out = {}
    for category in CATEGORIES:
        mine = [d for d in detail if d.category == category and d.outcome != "not_offered"]
        if mine:
            ok = [d for d in mine if d.outcome != "error"]
            out[category] = CategoryRate(**_rate(sum(1 for d in ok if d.correct), len(ok)), errors=len(mine) - len(ok))
    return out


def summarize(records: Sequence[BfclRecord]) -> BfclSummary | None:
    """One backend's ``bfcl`` block from its ``part: bfcl`` records (None when there are none)."""
    if not records:
        return None
    detail = [_case(r) for r in records]
    graded = [d for d in detail if d.outcome not in UNGRADED]
    answered = [r for r in records if not r.error and not r.not_offered]
    not_offered = [d for d in detail if d.outcome == "not_offered"]
    return BfclSummary(
        **_rate(sum(1 for d in graded if d.correct), len(graded)),
        text_calls=sum(1 for d in graded if d.text_call), missed_calls=sum(1 for d in graded if d.outcome == "missed_call"),
        spurious_calls=sum(1 for d in graded if d.outcome == "spurious_call"),
        errors=sum(1 for d in detail if d.outcome == "error"), requests=len(detail) - len(not_offered),
        relevant_cases=sum(1 for d in graded if d.category != "irrelevance"),
        irrelevance_cases=sum(1 for d in graded if d.category == "irrelevance"),
        outcomes=dict(Counter(d.outcome for d in detail).most_common()),
        error_reasons=dict(Counter(d.reason for d in detail if d.outcome == "error").most_common()),
        by_category=_by_category(detail), not_offered=dict(Counter(d.category for d in not_offered)),
        not_offered_why=sorted({str(d.reason) for d in not_offered}), interface=records[0].interface,
        constrained=any(r.constrained for r in records), streamed=any(r.streamed for r in records),
        seed=records[0].seed,
        output_tokens=distribution([r.output_tokens for r in answered], keep_values=False, digits=0),
        prompt_tokens=distribution([r.prompt_tokens for r in answered], keep_values=False, digits=0),
        seconds=distribution([r.seconds for r in answered], keep_values=False),
        detail=detail)


def pairs(backends: Mapping[str, BackendSummary]) -> list[BfclPair]:
    """McNemar's exact test between every two backends with a ``bfcl`` block, in registry order.

    Besides the test, each pair says how often the two agree: the same verdict, and the very same
    decoded calls (two servers with the same weights and tool parser should agree on nearly all).
    """
    graded = {name: {d.case: d for d in b.bfcl.detail if d.outcome not in UNGRADED}
              for name, b in backends.items() if b.bfcl}  # fmt: skip
    names = list(graded)
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            common = [c for c in graded[a] if c in graded[b]]
            only_a = sum(1 for c in common if graded[a][c].correct and not graded[b][c].correct)
            only_b = sum(1 for c in common if graded[b][c].correct and not graded[a][c].correct)
            p = stats.mcnemar_exact(only_a, only_b)
            out.append(BfclPair(
                a=a, b=b, cases=len(common), only_a=only_a, only_b=only_b, p_value=float(f"{p:.4g}"),
                verdict=verdict(a, b, only_a, only_b, p, len(common)), same_verdict=len(common) - only_a - only_b,
                same_calls=sum(1 for c in common if _same_calls(graded[a][c], graded[b][c])),
                differing_cases=[c for c in common if graded[a][c].correct != graded[b][c].correct]))
    return out


def verdict(a: str, b: str, only_a: int, only_b: int, p: float, cases: int) -> str:
    """``no measurable difference`` or ``<winner> is better than <loser> on these cases (p = ...)``."""
    if cases == 0:
        return "no case answered by both"
    if p >= ALPHA or only_a == only_b:
        return NO_DIFFERENCE
    better, worse = (a, b) if only_a > only_b else (b, a)
    return f"{better} is better than {worse} on these cases (p = {p:.2g})"


def _same_calls(x: BfclCase, y: BfclCase) -> bool:
    return _canonical(x.calls) == _canonical(y.calls)


def _canonical(calls: Iterable[Any] | None) -> str | None:
    return None if calls is None else json.dumps(list(calls), sort_keys=True)


def failures(block: BfclSummary | None, parts: Iterable[str], skipped: Mapping[str, str]) -> list[str]:
    """Why the part did not complete on a backend (a skip that starts with "failed" is reported
    with the other skips)."""
    if "bfcl" not in parts or "bfcl" in skipped:
        return []
    if block is None:
        return ["bfcl: no cases recorded"]
    if block.requests and block.errors == block.requests:
        return [f"bfcl: every case failed ({next(iter(block.error_reasons), 'no reason')})"]
    return []
