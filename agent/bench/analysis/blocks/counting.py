"""The ``counting`` and ``counting_strict`` blocks: every run graded from its transcript
(:mod:`agent.bench.grading.counting`), the verdicts counted over the graded runs."""

from __future__ import annotations

from collections import Counter
from typing import Sequence

from ...results.blocks.counting import CountingRun, CountingSummary, InvalidCall, TextCall
from ...results.records import CountingRecord
from ...tasks.reference import QUESTION_SETS, QuestionSet
from ...grading.counting import CountingGrade, grade_counting
from .. import stats
from .distribution import distribution

COUNTING_PARTS = {q.name: q for q in QUESTION_SETS}


def question_set(part: str, record: CountingRecord) -> QuestionSet:
    """The part's question set, with the ids and question the record says were asked."""
    base = COUNTING_PARTS[part]
    return QuestionSet(base.name, tuple(record.ids or base.ids), record.question or base.question, base.truth_op,
                       base.truth_value)


def _ci95(successes: int, n: int) -> tuple[float, float] | None:
    interval = stats.wilson_interval(successes, n)
    return None if interval is None else (round(interval[0], 4), round(interval[1], 4))


def _run(r: CountingRecord, g: CountingGrade) -> CountingRun:
    return CountingRun(
        run=r.run, seq=r.seq, verdict=g.verdict, correct=g.correct, quoted=g.quoted, reading=g.reading,
        right_filter=g.right_filter, first_call_right=g.first_call_right, last_filter=g.last_filter,
        filters=list(g.filters), distinct_filters=g.distinct_filters, tool_calls=len(g.calls),
        invalid_tool_calls=len(g.invalid_calls), text_tool_calls=len(g.text_tool_calls), failure=g.failure,
        error=r.error, seconds=r.seconds, answer=(r.answer or "")[-300:],
        output_tokens=r.usage.output_tokens if r.usage else None)


def summarize_counting(records: Sequence[CountingRecord], part: str) -> CountingSummary | None:
    """Grade every run of one question set on one backend and count the verdicts.

    Failed runs (an error or an empty reply) are counted apart: ``graded`` = ``runs`` - ``errors``
    is the denominator of ``correct``, ``right_filter`` and their 95% Wilson intervals.
    """
    if not records:
        return None
    qset = question_set(part, records[0])
    tools = records[0].tools
    grades = [grade_counting(qset, r.tools, r.answer, [c.model_dump(exclude_unset=True) for c in r.calls], r.texts,
                             r.error) for r in records]  # fmt: skip
    runs = [_run(r, g) for r, g in zip(records, grades)]
    graded = [d for d in runs if d.verdict != "failed"]
    correct = sum(1 for d in graded if d.correct)
    engine = tools != "rows"
    right = sum(1 for d in graded if d.right_filter) if engine else None
    verdicts = Counter(g.verdict for g in grades)
    return CountingSummary(
        question=qset.question, ids=list(qset.ids), truth=qset.truth, truth_filter=f"id {qset.truth_op} {qset.truth_value}",
        tools=tools, constrained=any(r.constrained for r in records), runs=len(runs), errors=len(runs) - len(graded),
        graded=len(graded), correct=correct, wrong=verdicts["wrong"], unreadable=verdicts["unreadable"],
        correct_ci95=_ci95(correct, len(graded)), right_filter=right,
        right_filter_ci95=_ci95(right, len(graded)) if right is not None else None,
        first_call_right=sum(1 for d in graded if d.first_call_right) if engine else None,
        several_filters=sum(1 for d in graded if d.distinct_filters > 1),
        tool_calls=sum(d.tool_calls for d in runs), invalid_tool_calls=sum(d.invalid_tool_calls for d in runs),
        text_tool_calls=sum(d.text_tool_calls for d in runs),
        text_calls_describing_made_calls=sum(len(g.text_calls) - len(g.text_tool_calls) for g in grades),
        answer_status=dict(sorted(verdicts.items())),
        failure_reasons=dict(Counter(g.failure for g in grades if g.failure).most_common()),
        filters_sent=dict(Counter(f for g in grades for f in g.filters).most_common()),
        invalid_calls=[InvalidCall(run=r.run, **c.model_dump()) for r, g in zip(records, grades) for c in g.invalid_calls],
        text_calls=[TextCall(run=r.run, snippet=c.snippet) for r, g in zip(records, grades) for c in g.text_tool_calls],
        seconds=distribution([r.seconds for r, g in zip(records, grades) if not g.failed], keep_values=False),
        detail=runs)
