"""Grading the quality lane: one record (``part: quality``) to its :class:`Verdict`.

The record carries everything needed (the reply, the reference answer and the item's grading), so a
finished run is regraded from ``requests.jsonl`` alone (``python -m agent.quality grade``).

Outcomes: **right**, **wrong**, **unreadable** (no answer could be read from the reply: its own
count, never a wrong answer), **failed** (the request failed: never graded, neither right nor
wrong) and **not_sent** (the item's prompt is over that backend's limit). A **refusal** ("I'm sorry,
I can't ...", with no answer given) is unreadable, and flagged.

How an answer is read, robust to the words, units and markup around it:

* the text is first cleaned: Nova's inline ``<thinking>`` blocks dropped (as the counting grade
  does), markdown emphasis and code marks, LaTeX (``\\boxed{}``, ``\\frac{a}{b}``, ``\\text{}``,
  ``$``), thousands separators (``1,234``) and the unicode minus;
* **number**: the last number in a ``\\boxed{}``, else the first after the last "answer is" /
  "answer:" / "result is" / "total is", else the last number in bold, else the last number of
  the reply; compared exactly as rationals (``6.0`` is ``6``; ``$12 per hour`` is ``12``);
* **choice**: a label (``Yes``, ``mother-in-law``) read as a whole word, case-insensitively,
  from a ``\\boxed{}``, an "answer is" phrase, bold text, the reply's first word, or the one label
  the reply names; a reply naming several labels with none of these cues is unreadable;
* a reply **cut off at the output cap** (``finish_reason`` ``length``, Bedrock's ``max_tokens``) is
  read only from those cues; its last number or lone label is not taken for an answer (a reply cut
  at "Sarah is Elizabeth's mother" had not finished saying "mother-in-law"): without a cue it is
  unreadable;
* **instructions**: IFEval's strict checks (:mod:`.instruction_checks`) on the reply as it came,
  less any ``<thinking>`` block (Nova's reasoning is not part of the answer it gives), and the task
  the item states (a few words about its topic, :func:`.instruction_checks.task_undone`): a reply
  that follows the instruction without doing the task is wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping, Sequence

from .count_reading import strip_reasoning
from .instruction_checks import failed_checks, task_undone

RIGHT, WRONG, UNREADABLE, FAILED, NOT_SENT = "right", "wrong", "unreadable", "failed", "not_sent"
OUTCOMES = (RIGHT, WRONG, UNREADABLE, FAILED, NOT_SENT)
CUT_OFF = frozenset({"length", "max_tokens"})
"""Finish reasons that say the reply was stopped by the output cap (OpenAI-style; Bedrock)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """What one reply scored.

    Attributes:
        outcome: One of :data:`OUTCOMES`.
        read: The answer read from the reply (a number or a label as written), None when none was.
        refusal: The reply declined to answer.
        reason: Why, in a few words (for a reader checking the grade by hand).
    """

    outcome: str
    read: str | None = None
    refusal: bool = False
    reason: str = ""

    @property
    def graded(self) -> bool:
        """Whether the reply was graded (right, wrong or unreadable); failed and unsent items are not."""
        return self.outcome in (RIGHT, WRONG, UNREADABLE)


_REFUSAL = re.compile(
    r"^\W*(?:(?:I['’]m|I\s+am)\s+(?:sorry|unable|not\s+able)|sorry\b|as\s+an\s+ai\b|"
    r"I\s+(?:can(?:no|['’])t|cannot|won['’]t|will\s+not|do\s+not|don['’]t)\s+(?:help|answer|assist|provide|"
    r"comply|do|complete|fulfil|determine|solve|calculate|give|respond))",
    re.IGNORECASE,
)
_MARKER = re.compile(r"\b(?:final\s+answer|answer|result|total)\s*(?:is|was|would\s+be|=|:)\s*:?", re.IGNORECASE)
_BOXED = re.compile(r"\\boxed\s*\{((?:[^{}]|\{[^{}]*\})*)\}")
_BOLD = re.compile(r"\*\*(.+?)\*\*|__(.+?)__", re.DOTALL)
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:\s*/\s*\d+)?(?![\d])")
_THOUSANDS = re.compile(r"(?<![\d.])(\d{1,3}(?:,\d{3})+)(?![\d])")


def _clean(text: str) -> str:
    """LaTeX and number formatting undone; markdown left for :data:`_BOLD` to see."""
    text = strip_reasoning(text).replace("\u2212", "-").replace("\u00a0", " ")
    text = re.sub(r"\\d?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}", r"\1/\2", text)
    text = re.sub(r"\\(?:text|mathrm|textbf|mathbf)\s*\{([^{}]*)\}", r"\1", text)
    text = re.sub(r"\\[(\[)\]]|\$|\\[,!;:]", " ", text)
    return _THOUSANDS.sub(lambda m: m.group(1).replace(",", ""), text)


def _plain(text: str) -> str:
    return re.sub(r"\*\*|__|`", "", text)


def _number(text: str, cut: bool) -> str | None:
    boxed = _BOXED.findall(text)
    if boxed:
        found = _NUMBER.findall(_plain(boxed[-1]))
        if found:
            return found[-1]
    plain = _plain(text)
    markers = list(_MARKER.finditer(plain))
    if markers:
        after = _NUMBER.search(plain, markers[-1].end())
        if after:
            return after.group(0)
    bold = [n for m in _BOLD.finditer(text) for n in _NUMBER.findall(m.group(1) or m.group(2))]
    if bold:
        return bold[-1]
    found = _NUMBER.findall(plain)
    return found[-1] if found and not cut else None


def _value(number: str) -> Fraction | None:
    try:
        return Fraction(number.replace(" ", ""))
    except (ValueError, ZeroDivisionError):
        return None


def _label_pattern(labels: Sequence[str]) -> re.Pattern[str]:
    names = sorted(labels, key=len, reverse=True)
    return re.compile(r"(?<![A-Za-z-])(" + "|".join(re.escape(n) for n in names) + r")(?![A-Za-z-])", re.IGNORECASE)


def _choice(text: str, labels: Sequence[str], cut: bool) -> tuple[str | None, str]:
    pattern = _label_pattern(labels)
    canonical = {n.lower(): n for n in labels}

    def named(part: str) -> list[str]:
        return list(dict.fromkeys(canonical[m.lower()] for m in pattern.findall(part)))

    boxed = _BOXED.findall(text)
    plain = _plain(text)
    markers = list(_MARKER.finditer(plain))
    cues = [("boxed", named(boxed[-1]) if boxed else []),
            ("after 'answer'", named(plain[markers[-1].end():][:40]) if markers else []),
            ("in bold", named(" ".join(m.group(1) or m.group(2) for m in _BOLD.finditer(text))))]
    for how, found in cues:
        if len(found) == 1:
            return found[0], how
    first = pattern.match(plain.lstrip(" \t\n\"'*#>-:."))
    if first:
        return canonical[first.group(1).lower()], "the first word"
    found = named(plain)
    if len(found) == 1 and not cut:
        return found[0], "the only label named"
    if cut:
        return None, "was cut off at the output cap before naming a label as its answer"
    return None, f"names several labels ({', '.join(found)})" if found else "names no label"


def grade_reply(text: str, answer: str, grading: Mapping[str, Any], cut: bool = False) -> Verdict:
    """The verdict on one reply's text, against the item's reference answer and grading; ``cut``: the
    reply was stopped by the output cap."""
    kind = grading["kind"]
    clean = _clean(text)
    if kind == "instructions":
        if _REFUSAL.match(_plain(clean)):
            return Verdict(UNREADABLE, refusal=True, reason="refused")
        reply = strip_reasoning(text)
        failed = failed_checks(reply, grading["instructions"])
        if failed:
            return Verdict(WRONG, reason="does not follow " + ", ".join(failed))
        undone = task_undone(reply, grading.get("task"))
        return Verdict(WRONG, reason=f"does not do {undone}") if undone else Verdict(RIGHT)
    explicit = bool(_BOXED.search(clean) or _MARKER.search(_plain(clean)))
    if _REFUSAL.match(_plain(clean)) and not explicit:
        return Verdict(UNREADABLE, refusal=True, reason="refused")
    if kind == "number":
        read = _number(clean, cut)
        if read is None:
            return Verdict(UNREADABLE, reason="cut off at the output cap before an answer" if cut
                           else "no number in the reply")
        right = _value(read) is not None and _value(read) == _value(answer)
        return Verdict(RIGHT if right else WRONG, read=read, reason=f"read {read}, expected {answer}")
    if kind == "choice":
        read, how = _choice(clean, grading["labels"], cut)
        if read is None:
            return Verdict(UNREADABLE, reason=f"the reply {how}")
        right = read.lower() == answer.lower()
        return Verdict(RIGHT if right else WRONG, read=read, reason=f"read {read} ({how}), expected {answer}")
    raise ValueError(f"unknown grading kind {kind!r}")


def grade(record: Mapping[str, Any]) -> Verdict:
    """The verdict on one ``part: quality`` record. A failed request is never graded."""
    if record.get("not_sent"):
        return Verdict(NOT_SENT, reason=str(record["not_sent"]))
    if record.get("error"):
        return Verdict(FAILED, reason=f"failed request: {record['error']}")
    return grade_reply(record.get("text") or "", str(record["answer"]), record["grading"],
                       cut=record.get("finish_reason") in CUT_OFF)


def verdicts(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Verdict]]:
    """Every quality record's verdict, by backend and then by item id, in the records' order (the
    per-item table two backends are paired on). A later record of the same item replaces an earlier one."""
    out: dict[str, dict[str, Verdict]] = {}
    for r in records:
        if r.get("part") == "quality":
            out.setdefault(r["backend"], {})[r["item"]] = grade(r)
    return out
