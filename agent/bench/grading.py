"""Grading of the counting demo: a pure function of what the model wrote and called.

Nothing here runs a model. The runner stores the raw facts of each agent run (its final
answer, every tool call with its arguments, every assistant text block, the error) in
``requests.jsonl``; :func:`grade_counting` turns them into a verdict, so the summary can be
recomputed from the evidence at any time.

Rules (written into the report):

* **correct**: the count the final answer states equals the true count. The stated count is
  the last count-like number in the answer, after thresholds (``10 or more``, ``id >= 10``,
  ``value=10``), ranges and lists of ids are masked out; number words (``eight``) count.
* **right filter** (engine tools): some *valid* ``count_ids`` call selects exactly the true
  id set. A call is valid when the tool name is known, ``op`` is one of the five operators,
  ``value`` is an integer (not a string, float or bool) and no argument is missing or extra.
* **invalid calls** and **text tool calls** (a tool call written as plain text instead of
  being called) are listed with their reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .workload import OPS, QuestionSet, select_ids

_NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20,
}  # fmt: skip

_MASKS = [
    re.compile(p, re.IGNORECASE)
    for p in (
        # comparisons: id >= 10, > 9, ≥ 10
        r"(?:\bid\s*)?(?:>=|=>|<=|=<|==|!=|>|<|≥|≤)\s*-?\d+",
        # "10 or more", "9 or fewer"
        r"\b\d+\s+or\s+(?:more|greater|higher|above|larger|bigger|less|fewer|lower|below|smaller|over|under)\b",
        # "at least 10", "greater than 9", "above 9"
        r"\b(?:at\s+least|at\s+most|more\s+than|greater\s+than|less\s+than|fewer\s+than|larger\s+than|"
        r"smaller\s+than|bigger\s+than|higher\s+than|lower\s+than|above|below|under|over|exceeding|"
        r"equal\s+to|equals|threshold(?:\s+of)?|of\s+at\s+least)\s+-?\d+",
        # tool arguments written out: value=10, "value": 10, value of 10
        r"\bvalue\s*(?:=|:|of)\s*-?\d+",
        r"\"value\"\s*:\s*-?\d+",
        r"\bop\s*[=:]\s*\S+",
        # ranges: 10-23, 10–23, 10 to 23
        r"\b\d+\s*(?:-|–|—|to|through)\s*\d+\b",
        # lists of three or more numbers (the ids themselves)
        r"\[?\b\d+(?:\s*,\s*(?:and\s+)?\d+){2,}\b\]?",
        r"\b\d+(?:\s*,\s*\d+)+,?\s+and\s+\d+\b",
        # JSON keys the tool returns besides the count
        r"\"(?:min|max)\"\s*:\s*-?\d+",
        r"\b(?:min|max|minimum|maximum)\s*(?:=|:|is|of)?\s*-?\d+",
    )
]
_NUMBER = re.compile(r"\b(\d+|" + "|".join(_NUMBER_WORDS) + r")\b", re.IGNORECASE)
_COUNT_BEFORE = re.compile(
    r"(?:\bis|\bare|\bwas|\bwere|=|:|\btotal(?:\s+of)?|\bcount(?:\s+of)?|\banswer|\bthere\s+are|\bfound|"
    r"\bexactly|\bhas|\bhave)\s*\**\s*$",
    re.IGNORECASE,
)
_COUNT_AFTER = re.compile(
    r"^\s*\**\s*(?:ids?\b|such\b|of\s+(?:them|the\s+ids)\b|numbers?\b|items?\b|entries\b|values?\b|"
    r"matching\b|rows?\b|\.?\s*$)",
    re.IGNORECASE,
)

_TEXT_TOOL_CALL = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\b(?:count_ids|list_ids|scoreboard|ask_[a-z0-9_]+)\s*\(",
        r"\"(?:name|function|tool)\"\s*:\s*\"(?:count_ids|list_ids|scoreboard|ask_[a-z0-9_]+)\"",
        r"<\s*/?\s*tool_call\s*>",
        r"\[TOOL_CALLS\]",
        r"<\|python_tag\|>",
        r"\"op\"\s*:\s*\"[^\"]*\"\s*,\s*\"value\"",
        r"\btool_code\b",
    )
]


@dataclass(frozen=True, slots=True)
class ToolCallVerdict:
    """One tool call as the model made it, with the grader's verdict.

    Attributes:
        name: Tool name the model called.
        input: Arguments exactly as the model sent them.
        valid: Whether the call is well-formed for its tool.
        reason: Why it is invalid (empty when valid).
        filter: ``id <op> <value>`` for a valid ``count_ids`` call, else None.
        selects_truth: Whether a valid ``count_ids`` call selects exactly the true ids.
    """

    name: str
    input: Any
    valid: bool
    reason: str
    filter: str | None
    selects_truth: bool | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "input": self.input,
            "valid": self.valid,
            "reason": self.reason,
            "filter": self.filter,
            "selects_truth": self.selects_truth,
        }


@dataclass(frozen=True, slots=True)
class CountingGrade:
    """The verdict on one counting run.

    Attributes:
        correct: The answer states the true count.
        quoted: The count the answer states (None when none could be read).
        answer_status: ``correct``, ``wrong count``, ``no number``, ``empty`` or ``error``.
        right_filter: Some valid ``count_ids`` call selects the true ids (None in rows mode).
        calls: Every tool call with its verdict.
        text_tool_calls: Snippets of tool calls written as plain text.
        error: The run's error, if it failed.
    """

    correct: bool
    quoted: int | None
    answer_status: str
    right_filter: bool | None
    calls: tuple[ToolCallVerdict, ...]
    text_tool_calls: tuple[str, ...]
    error: str | None = None
    filters: tuple[str, ...] = field(default=())

    @property
    def invalid_calls(self) -> tuple[ToolCallVerdict, ...]:
        return tuple(c for c in self.calls if not c.valid)


def stated_count(answer: str) -> int | None:
    """The count an answer states, or None when it states no number.

    Thresholds, ranges, tool arguments and lists of ids are masked first; of the numbers left,
    the last one that reads as a count (``is 8``, ``8 ids``, ``There are 8``, a bare ``8.``)
    wins, else the last number.
    """
    text = answer
    for mask in _MASKS:
        text = mask.sub(lambda m: " " * len(m.group(0)), text)
    candidates: list[tuple[int, bool]] = []
    for m in _NUMBER.finditer(text):
        token = m.group(1).lower()
        value = int(token) if token.isdigit() else _NUMBER_WORDS[token]
        if token == "one" and not _COUNT_BEFORE.search(text[: m.start()]):
            continue  # "one of the ids", "the one that" are not counts
        count_like = bool(_COUNT_BEFORE.search(text[max(0, m.start() - 40) : m.start()])) or bool(
            _COUNT_AFTER.match(text[m.end() : m.end() + 40])
        )
        candidates.append((value, count_like))
    if not candidates:
        return None
    count_like = [v for v, c in candidates if c]
    return count_like[-1] if count_like else candidates[-1][0]


def find_text_tool_calls(texts: Sequence[str]) -> tuple[str, ...]:
    """Snippets of tool calls written as plain text in the model's text blocks."""
    found: list[str] = []
    for text in texts:
        for pattern in _TEXT_TOOL_CALL:
            for m in pattern.finditer(text):
                start, end = max(0, m.start() - 20), min(len(text), m.end() + 40)
                found.append(text[start:end].strip())
                break
    return tuple(found)


def judge_call(name: str, args: Any, qset: QuestionSet, tools: str) -> ToolCallVerdict:
    """Judge one tool call against the tool set that was offered (``engine`` or ``rows``)."""
    expected = {"engine": "count_ids", "rows": "list_ids"}[tools]
    if name != expected:
        return ToolCallVerdict(name, args, False, f"unknown tool {name!r}", None, None)
    if not isinstance(args, Mapping):
        return ToolCallVerdict(name, args, False, f"arguments are {type(args).__name__}, not an object", None, None)
    if tools == "rows":
        extra = sorted(set(args))
        if extra:
            return ToolCallVerdict(name, args, False, f"unexpected argument(s) {extra}", None, None)
        return ToolCallVerdict(name, args, True, "", None, None)
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
        return ToolCallVerdict(name, args, False, "; ".join(problems), None, None)
    assert isinstance(op, str) and isinstance(value, int)
    selects = select_ids(qset.ids, op, value) == qset.truth_ids
    return ToolCallVerdict(name, args, True, "", f"id {op} {value}", selects)


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
        calls: Every tool call the model made, as ``{"name", "input"}``.
        texts: Every text block the model wrote, the final answer included.
        error: The run's error, if it failed.

    Returns:
        The verdict. Never raises on odd input: a missing answer, an odd argument type or an
        error is graded for what it is.
    """
    verdicts = tuple(judge_call(str(c.get("name", "")), c.get("input"), qset, tools) for c in calls)
    right_filter: bool | None = None
    if tools == "engine":
        right_filter = any(v.valid and v.selects_truth for v in verdicts)
    quoted = stated_count(answer) if answer else None
    if error and not (answer or "").strip():
        status = "error"
    elif not (answer or "").strip():
        status = "empty"
    elif quoted is None:
        status = "no number"
    elif quoted == qset.truth:
        status = "correct"
    else:
        status = "wrong count"
    all_texts = list(texts) if texts else ([answer] if answer else [])
    return CountingGrade(
        correct=status == "correct",
        quoted=quoted,
        answer_status=status,
        right_filter=right_filter,
        calls=verdicts,
        text_tool_calls=find_text_tool_calls(all_texts),
        error=error,
        filters=tuple(v.filter for v in verdicts if v.filter),
    )
