"""The ``quality`` block of ``summary.json``, from the records only: each backend's outcomes on the
quality lane's items, overall and per suite, accuracy with its 95% Wilson interval.

Accuracy = right / graded, graded = right + wrong + unreadable. A failed request is never right and
never wrong, and an item not sent (over the backend's prompt limit) is not graded either: both are
counted apart. ``python -m agent.quality grade`` prints the same figures (:func:`grades`).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable, Mapping, Sequence

from ...grading.quality import FAILED, OUTCOMES, Verdict, grade
from ...results.blocks.quality import QualityRate, QualitySummary
from ...results.records import QualityRecord, parse_record
from ...results.run import RunFile
from .. import stats

_DIGITS = 4


def tally(verdicts: Sequence[tuple[str, Verdict]]) -> dict[str, Any]:
    """The counts of ``(suite, verdict)`` pairs: each outcome, refusals, accuracy and its Wilson interval."""
    counts = Counter(v.outcome for _, v in verdicts)
    graded = sum(1 for _, v in verdicts if v.graded)
    interval = stats.wilson_interval(counts["right"], graded)
    return {
        "items": len(verdicts), **{o: counts[o] for o in OUTCOMES},
        "refusals": sum(1 for _, v in verdicts if v.refusal), "graded": graded,
        "accuracy": round(counts["right"] / graded, _DIGITS) if graded else None,
        "ci95_low": round(interval[0], _DIGITS) if interval else None,
        "ci95_high": round(interval[1], _DIGITS) if interval else None,
    }  # fmt: skip


def verdict_of(record: QualityRecord) -> Verdict:
    """One record's verdict (the grading reads the record as its line holds it)."""
    return grade(record.model_dump())


def summarize(records: Sequence[QualityRecord]) -> QualitySummary | None:
    """One backend's ``quality`` block from its ``part: quality`` records (None when there are none)."""
    if not records:
        return None
    verdicts = [(r.suite, verdict_of(r)) for r in records]
    suites = sorted({suite for suite, _ in verdicts})
    failed = Counter(v.reason.removeprefix("failed request: ") for _, v in verdicts if v.outcome == FAILED)
    return QualitySummary(
        **tally(verdicts), lane=sorted({r.lane for r in records}), seed=records[0].seed,
        by_suite={s: QualityRate(**tally([x for x in verdicts if x[0] == s])) for s in suites},
        failure_reasons=dict(failed.most_common()))


def planned(block: QualitySummary | None, run: RunFile) -> QualitySummary | None:
    """``block`` with the items the run planned for the backend (``--quality-n``) and how many of them have no
    record (the run interrupted, or the backend stopped, before they were sent or while they were in flight)."""
    n = run.options.quality_n
    if block is None or not n:
        return block
    return block.model_copy(update={"planned": n, "unsent": max(0, n - block.items)})


def grades(records: Iterable[Mapping[str, Any] | QualityRecord]) -> dict[str, QualitySummary]:
    """Every backend's ``quality`` block from the quality records among ``records`` (other parts are
    skipped), in the records' order: what ``python -m agent.quality grade`` prints."""
    by_backend: dict[str, list[QualityRecord]] = {}
    for r in records:
        part = r.get("part") if isinstance(r, Mapping) else getattr(r, "part", None)
        if part == "quality":
            typed = parse_record(r)
            assert isinstance(typed, QualityRecord)
            by_backend.setdefault(typed.backend, []).append(typed)
    return {name: block for name, recs in by_backend.items() if (block := summarize(recs)) is not None}


def failures(block: QualitySummary | None, parts: Iterable[str], skipped: Mapping[str, str]) -> list[str]:
    """Why the part did not complete on a backend (a skip that starts with "failed" is reported with
    the other skips)."""
    if "quality" not in parts or "quality" in skipped:
        return []
    if block is None:
        return ["quality: no items recorded"]
    sent = block.items - block.not_sent
    if sent and block.failed == sent:
        return [f"quality: every item failed ({next(iter(block.failure_reasons), 'no reason')})"]
    return []
