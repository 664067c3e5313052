"""Grading of the counting demo: a pure function of what the model wrote and called.

Nothing here runs a model. The runner stores the raw facts of each agent run (its final
answer, every tool call with its arguments, every assistant text block, the error) in
``requests.jsonl``; :func:`grade_counting` turns them into a verdict, so the summary can be
recomputed from the evidence at any time.

Rules (written into the report):

* **failed**: the run raised (timeout, transport error, ``max_tokens``) or its reply was empty.
  A failed run gets no grade: it is counted apart, and the grades' denominators leave it out.
* **correct / wrong / unreadable**: the count the final answer states
  (:func:`agent.bench.grading.count_reading.read_count`) equals the truth, differs from it, or cannot be
  read with confidence (no count, conflicting counts, a hedged count). Unreadable is its own
  verdict, never a wrong count.
* **right filter** (engine tools): the call the final answer relied on, the *last valid*
  ``count_ids`` call, selects exactly the true id set. A call is valid when the tool name is
  known, ``op`` is one of the five operators, ``value`` is an integer (not a string, float or
  bool) and no argument is missing or extra. Reported beside it: whether the *first* call was
  already right, and how many distinct filters the run tried (a model that sprays thresholds
  shows up there).
* **invalid calls** are listed with their reason; **text tool calls** are calls written as text
  instead of being made, one per call (:mod:`agent.bench.grading.text_calls`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..results.blocks.counting import ToolCallVerdict
from .count_reading import UNREADABLE, read_count
from .text_calls import TextCall, find_text_calls
from ..tasks.reference import OPS, QuestionSet, select_ids

TOOL_PARAMETERS = {"count_ids": ("op", "value"), "list_ids": ()}
"""The counting tools and their parameters in order (to read a call written as text)."""
EXPECTED_TOOL = {"engine": "count_ids", "rows": "list_ids"}


def _verdict(name: str, args: Any, valid: bool, reason: str, filter_: str | None = None,
             selects_truth: bool | None = None) -> ToolCallVerdict:
    return ToolCallVerdict(name=name, input=args, valid=valid, reason=reason, filter=filter_,
                           selects_truth=selects_truth)


@dataclass(frozen=True, slots=True)
class CountingGrade:
    """The verdict on one counting run.

    Attributes:
        verdict: ``correct``, ``wrong``, ``unreadable`` or ``failed``.
        quoted: The count the answer states (None when none could be read or the run failed).
        reading: How the count was read, why it could not be, or why the run failed.
        right_filter: The last valid ``count_ids`` call selects the true ids (None in rows mode
            and for a failed run).
        first_call_right: The first call was a valid ``count_ids`` call selecting the true ids
            (None in rows mode and for a failed run).
        last_filter: ``id <op> <value>`` of the last valid call (None when there was none).
        calls: Every tool call with its verdict.
        text_calls: Every tool call found written in the text (charged or describing a real one).
        failure: Why the run failed (None when it did not).
    """

    verdict: str
    quoted: int | None
    reading: str
    right_filter: bool | None
    first_call_right: bool | None
    last_filter: str | None
    calls: tuple[ToolCallVerdict, ...]
    text_calls: tuple[TextCall, ...]
    failure: str | None = None

    @property
    def correct(self) -> bool:
        return self.verdict == "correct"

    @property
    def failed(self) -> bool:
        return self.verdict == "failed"

    @property
    def invalid_calls(self) -> tuple[ToolCallVerdict, ...]:
        return tuple(c for c in self.calls if not c.valid)

    @property
    def text_tool_calls(self) -> tuple[TextCall, ...]:
        """The calls written as text instead of being made (descriptions of real calls left out)."""
        return tuple(c for c in self.text_calls if c.charged)

    @property
    def filters(self) -> tuple[str, ...]:
        """``id <op> <value>`` of every valid call, in order."""
        return tuple(c.filter for c in self.calls if c.filter)

    @property
    def distinct_filters(self) -> int:
        return len(set(self.filters))


def run_failure(answer: str | None, error: str | None) -> str | None:
    """Why an agent run failed, or None: an error, else an empty reply (a 200 with no text)."""
    if error:
        return str(error)
    if not (answer or "").strip():
        return "empty reply: the model returned no text"
    return None


def judge_call(name: str, args: Any, qset: QuestionSet, tools: str) -> ToolCallVerdict:
    """Judge one tool call against the tool set that was offered (``engine`` or ``rows``)."""
    expected = EXPECTED_TOOL[tools]
    if name != expected:
        return _verdict(name, args, False, f"unknown tool {name!r}", None, None)
    if not isinstance(args, Mapping):
        return _verdict(name, args, False, f"arguments are {type(args).__name__}, not an object", None, None)
    if tools == "rows":
        extra = sorted(set(args))
        if extra:
            return _verdict(name, args, False, f"unexpected argument(s) {extra}", None, None)
        return _verdict(name, args, True, "", None, None)
    problems = []
    missing = [k for k in ("op", "value") if k not in args]
    if missing:
        problems.append(f"missing {', '.join(missing)}")
    extra = sorted(set(args) - {"op", "value"})
    if extra:
        problems.append(f"unexpected argument(s) {extra}")
    op, value = args.get("op"), args.get("value")
    if "op" in args and (not isinstance(op, str) or op not in OPS):
        problems.append(f"bad op {op!r}")
    if "value" in args and (isinstance(value, bool) or not isinstance(value, int)):
        problems.append(f"bad type: value is {type(value).__name__} {value!r}")
    if problems:
        return _verdict(name, args, False, "; ".join(problems), None, None)
    assert isinstance(op, str) and isinstance(value, int)
    selects = select_ids(qset.ids, op, value) == qset.truth_ids
    return _verdict(name, args, True, "", f"id {op} {value}", selects)


def grade_counting(
    qset: QuestionSet,
    tools: str,
    answer: str | None,
    calls: Sequence[Mapping[str, Any]],
    texts: Sequence[str] = (),
    error: str | None = None,
) -> CountingGrade:
    """Grade one counting run.

    Args:
        qset: The question set the run answered.
        tools: ``engine`` (``count_ids``) or ``rows`` (``list_ids``).
        answer: The final answer text (None or empty when there was none).
        calls: Every tool call the model made, in order, as ``{"name", "input"}``.
        texts: Every text block the model wrote, the final answer included.
        error: The run's error, if it failed.

    Returns:
        The verdict. Never raises on odd input: a missing answer, an odd argument type or an
        error is graded for what it is.
    """
    verdicts = tuple(judge_call(str(c.get("name", "")), c.get("input"), qset, tools) for c in calls)
    offered = [EXPECTED_TOOL[tools]]
    all_texts = list(texts) if texts else ([answer] if answer else [])
    made = [c for c in calls if isinstance(c, Mapping)]
    text_calls = tuple(find_text_calls(all_texts, made, offered, {t: TOOL_PARAMETERS[t] for t in offered}))
    valid = [v for v in verdicts if v.valid and v.filter]
    last = valid[-1] if valid else None
    failure = run_failure(answer, error)
    if failure is not None:
        return CountingGrade("failed", None, failure, None, None, last.filter if last else None, verdicts,
                             text_calls, failure)  # fmt: skip
    reading = read_count(answer, qset)
    if reading.status == UNREADABLE:
        verdict = "unreadable"
    else:
        verdict = "correct" if reading.value == qset.truth else "wrong"
    right_filter = first_right = None
    if tools == "engine":
        right_filter = bool(last and last.selects_truth)
        first_right = bool(verdicts and verdicts[0].valid and verdicts[0].selects_truth)
    return CountingGrade(
        verdict=verdict,
        quoted=reading.value,
        reading=reading.reason,
        right_filter=right_filter,
        first_call_right=first_right,
        last_filter=last.filter if last else None,
        calls=verdicts,
        text_calls=text_calls,
    )
