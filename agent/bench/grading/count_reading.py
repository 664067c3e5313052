"""Reading the count a free-text answer states, or saying that none can be read.

Chatty models restate the table ("8 of the 11 ids"), the threshold ("ten or more"), the other
side of it ("and 3 ids < 10"), correct themselves ("8, not 10") and wrap it all in markdown. A
reader that takes "the last number" punishes them for talking. :func:`read_count` instead gives
every number in the answer a role and reads the count from the numbers that can only be counts:

1. Drop ``<thinking>`` blocks (Nova's reasoning) unless nothing else is left; normalise
   markdown, list markers, unicode comparisons and number words (``Eight`` -> ``8``).
2. Give a role to every number that is not a count: a threshold or condition (``>= 10``,
   ``10 or more``, ``at least 10``, ``below 10``: each parsed to an operator and a value), a
   range (``10-23``), a list of ids (``10, 11, 12``, one id per line), an id (``id 23``), a tool
   argument (``value=10``, ``"min": 10``), the table's size restated (``of the 11``,
   ``out of 19``, ``11 ids in total``), a negated number (``not 10``), a percentage, a time, a
   decimal.
3. Attach each remaining number to the nearest condition in its sentence: the question's own
   condition (``id >= 10`` or its integer twin ``id > 9``), a looser one in the same direction
   (``above 10``), or the complement (``< 10``: that count is of the other ids, not an answer).
4. Rank what is left: an explicit answer (``answer: 8``, ``the count is 8``, ``"count": 8``, a
   line holding only the number) over a count-like phrase (``there are 8``, ``8 ids``) over a
   bare number. A correction (``no wait``, ``actually``) drops what came before it.

One distinct value is the count. Several are resolved, in order, by an explicit answer with no
later contradiction, by the numbers tied to the question's own condition, by the only count-like
phrase among bare numbers, or by a concluding sentence (``so``, ``therefore``, ``in total``); if
none settles it, or the count is hedged
(``about 8``, ``8 or 9``), or no count is stated at all, the answer is **unreadable**: reported
as such, never graded as a wrong count.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Iterable

from ..tasks.reference import QuestionSet

READ, UNREADABLE = "read", "unreadable"

_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}  # fmt: skip
_TENS = {"twenty": 20, "thirty": 30}
_COUNT_NOUN = r"(?:ids?|numbers?|values?|entries|items?|rows?|elements?|matches|results?)"


@dataclass(frozen=True, slots=True)
class CountReading:
    """What an answer states as its count.

    Attributes:
        status: ``read`` (one count read with confidence) or ``unreadable``.
        value: The count read (None when unreadable).
        reason: How it was read, or why it could not be (for the report).
        candidates: Every value that was considered a count, in order.
    """

    status: str
    value: int | None
    reason: str
    candidates: tuple[int, ...] = ()


@dataclass(slots=True)
class _Mention:
    value: int
    start: int
    end: int
    role: str = "count"  # count, hedge, or why the number is not a count
    tier: int = 0  # 2 explicit answer, 1 count-like phrase, 0 bare number
    relation: str = "none"  # exact, loose, complement or none: the condition it is tied to


@dataclass(frozen=True, slots=True)
class _Condition:
    start: int
    end: int
    op: str
    value: int


# --- normalisation ----------------------------------------------------------------------------

_REASONING = re.compile(r"<(thinking|think|reasoning)>.*?(?:</\1>|$)", re.IGNORECASE | re.DOTALL)
_UNICODE = str.maketrans({"≥": ">=", "≤": "<=", "⩾": ">=", "⩽": "<=", "≠": "!=", "–": "-", "—": "-", "−": "-",
                          "\u00a0": " ", "’": "'", "“": '"', "”": '"', "•": "-"})  # fmt: skip
_NUMBER_WORD = re.compile(
    r"\b(?:(" + "|".join(_TENS) + r")(?:[- ](" + "|".join(k for k in _UNITS if _UNITS[k] and _UNITS[k] < 10) + r"))?"
    r"|(" + "|".join(_UNITS) + r"))\b",
    re.IGNORECASE,
)
# "one" is a count only where a count is expected; "one of the ids", "the one that" are not
_ONE_NOT_A_COUNT = re.compile(r"\b(?:the|each|this|that|which|any|every|no|another)\s+$", re.IGNORECASE)
_NO_COUNT = re.compile(
    r"\bno\s+(?=(?:such\s+)?" + _COUNT_NOUN + r"\b)|\bnone\s+(?=of\s+(?:the\s+|these\s+|those\s+|them\b))", re.IGNORECASE
)


def _words_to_digits(text: str) -> str:
    def sub(m: re.Match[str]) -> str:
        if m.group(3):
            word = m.group(3).lower()
            if word == "one":
                after = text[m.end() : m.end() + 12]
                if re.match(r"\s+(?:of|by|another|at\s+a)\b", after, re.IGNORECASE) or _ONE_NOT_A_COUNT.search(
                    text[max(0, m.start() - 12) : m.start()]
                ):
                    return m.group(0)
            return str(_UNITS[word])
        return str(_TENS[m.group(1).lower()] + (_UNITS[m.group(2).lower()] if m.group(2) else 0))

    return _NUMBER_WORD.sub(sub, text)


def strip_reasoning(answer: str) -> str:
    """The answer without its ``<thinking>`` blocks (Nova writes them inline in the text), or, when
    they are all there is, their content without the tags."""
    text = _REASONING.sub(" ", answer)
    if not re.search(r"\w", text):
        text = re.sub(r"</?(?:thinking|think|reasoning)>", " ", answer, flags=re.IGNORECASE)
    return text


def normalize(answer: str) -> str:
    """The answer as the reader sees it: reasoning blocks dropped (unless that is all there is),
    markdown and list markers removed, comparisons in ASCII, number words as digits."""
    text = strip_reasoning(answer).translate(_UNICODE)
    text = re.sub(r"\*\*|__|~~|[*`]", "", text)
    text = re.sub(r"(?m)^[ \t]*#{1,6}[ \t]*", "", text)
    text = re.sub(r"(?m)^[ \t]*>[ \t]+(?![\d=])", "", text)
    text = re.sub(r"(?m)^[ \t]*[-+][ \t]+(?=\S)", "", text)
    numbered = re.compile(r"(?m)^[ \t]*\d{1,2}[.)][ \t]+(?=\S)")
    if len(numbered.findall(text)) >= 2:
        text = numbered.sub("", text)
    text = _NO_COUNT.sub("0 ", text)
    return _words_to_digits(text)


# --- conditions ---------------------------------------------------------------------------------

_GE = (r"at\s+least|no\s+less\s+than|not\s+less\s+than|no\s+fewer\s+than|(?:greater|more|larger|bigger|higher)\s+than\s+"
       r"or\s+equal\s+to|equal\s+to\s+or\s+(?:greater|more|larger|higher)\s+than|at\s+or\s+above|min(?:imum)?\s+of")
_GT = r"(?:greater|more|larger|bigger|higher)\s+than|above|over|exceeding|exceeds?|beyond"
_LE = r"at\s+most|no\s+more\s+than|not\s+more\s+than|(?:less|smaller|lower|fewer)\s+than\s+or\s+equal\s+to|at\s+or\s+below"
_LT = r"(?:less|fewer|smaller|lower)\s+than|below|under"
_CONDITIONS: list[tuple[re.Pattern[str], str | None]] = [
    # symbolic, number after: >= 10, id > 9, == 10
    (re.compile(r"(>=|=>|<=|=<|==|!=|>|<)\s*(-?\d+)"), None),
    # symbolic, number first: 10 <= id
    (re.compile(r"(-?\d+)\s*(<=|<|>=|>)\s*(?:id|x|n)\b", re.IGNORECASE), "flip"),
    (re.compile(rf"\b(?:{_GE})\s+(-?\d+)", re.IGNORECASE), ">="),
    (re.compile(rf"\b(?:{_LE})\s+(-?\d+)", re.IGNORECASE), "<="),
    (re.compile(rf"\b(?:{_GT})\s+(-?\d+)", re.IGNORECASE), ">"),
    (re.compile(rf"\b(?:{_LT})\s+(-?\d+)", re.IGNORECASE), "<"),
    (re.compile(r"\b(\d+)\s*(?:or|and)\s+(?:more|greater|higher|above|larger|bigger|up|over|beyond)\b", re.IGNORECASE),
     ">="),
    (re.compile(r"\b(\d+)\s*\+(?!\s*\d)"), ">="),
    (re.compile(r"\b(\d+)\s*(?:or|and)\s+(?:less|fewer|lower|below|smaller|under)\b", re.IGNORECASE), "<="),
]
_DOUBLE_DIGIT = re.compile(r"\b(?:double|two)[- ]digits?\b", re.IGNORECASE)
_FLIP = {">=": "<", ">": "<=", "<": ">=", "<=": ">", "==": "!=", "!=": "=="}
_MIRROR = {"<=": ">=", "<": ">", ">=": "<=", ">": "<"}
_NEGATION_BEFORE = re.compile(r"(?:\bnot|n't|\bnever)\s+(?:\w+\s+)?$", re.IGNORECASE)


def _find_conditions(text: str) -> list[_Condition]:
    taken = bytearray(len(text))  # characters already inside a condition
    found: list[_Condition] = []
    for pattern, kind in _CONDITIONS:
        for m in pattern.finditer(text):
            if any(taken[m.start() : m.end()]):
                continue
            if kind is None:
                op, value = m.group(1), int(m.group(2))
                op = {"=>": ">=", "=<": "<="}.get(op, op)
            elif kind == "flip":
                op, value = _MIRROR[m.group(2)], int(m.group(1))
            else:
                op, value = kind, int(m.group(1))
            if _NEGATION_BEFORE.search(text[max(0, m.start() - 16) : m.start()]):
                op = _FLIP[op]
            taken[m.start() : m.end()] = b"\x01" * (m.end() - m.start())
            found.append(_Condition(m.start(), m.end(), op, value))
    for m in _DOUBLE_DIGIT.finditer(text):
        found.append(_Condition(m.start(), m.end(), ">=", 10))
    return sorted(found, key=lambda c: c.start)


def _relation(cond: _Condition, qset: QuestionSet) -> str:
    """How a condition relates to the question's: ``exact`` (the same predicate on integers),
    ``loose`` (same direction, another threshold, or ``==``) or ``complement``."""
    up = {">=", ">"}
    truth_up = qset.truth_op in up
    exact = {(qset.truth_op, qset.truth_value)}
    if qset.truth_op == ">=":
        exact.add((">", qset.truth_value - 1))
    elif qset.truth_op == "<=":
        exact.add(("<", qset.truth_value + 1))
    elif qset.truth_op == ">":
        exact.add((">=", qset.truth_value + 1))
    elif qset.truth_op == "<":
        exact.add(("<=", qset.truth_value - 1))
    if (cond.op, cond.value) in exact:
        return "exact"
    if cond.op in ("==", "!="):
        return "loose"
    return "loose" if (cond.op in up) == truth_up else "complement"


# --- numbers that are not counts ----------------------------------------------------------------

_OTHER = [
    re.compile(r"\d+(?:\.\d+)?\s*%"),
    re.compile(r"\d+\.\d+"),
    re.compile(r"\b\d+\s*(?:ms|s|sec|secs|seconds?|minutes?|tokens?|tok/s)\b", re.IGNORECASE),
    re.compile(r"\b(?:step|run|call|attempt|turn|round|line|version|v)\s*#?\s*\d+", re.IGNORECASE),
    re.compile(r"\b\d+\s+(?:calls?|times|tries|attempts|steps|tools?|queries|requests|turns)\b", re.IGNORECASE),
    re.compile(r"\b\d+(?:\s*[+*×]\s*\d+)+"),  # the operands of a sum: 5 + 4 = 9
]
_TOOL_ARGS = [
    re.compile(r"\bvalue\"?'?\s*(?:=|:|of)?\s*-?\d+", re.IGNORECASE),
    re.compile(r"\b(?:min|max|minimum|maximum|smallest|largest|lowest|highest|biggest|threshold|cut-?off|limit|"
               r"bound(?:ary)?)(?:\s+(?:id|value|one|number))?\"?'?\s*(?:=|:|is|of|was|at|being)?\s*-?\d+",
               re.IGNORECASE),
    re.compile(r"\b\d+\s+as\s+(?:the\s+|a\s+|my\s+)?(?:value|threshold|cut-?off|limit|boundary)\b", re.IGNORECASE),
]
_RANGE = re.compile(
    r"\b(?:between\s+(\d+)\s+and\s+(\d+)|from\s+(\d+)\s+(?:up\s+)?to\s+(\d+)|(\d+)\s*(?:-|to|through|thru)\s*(\d+))\b",
    re.IGNORECASE,
)
_RANGE_IS_A_COUNT_AFTER = re.compile(r"^\s*(?:" + _COUNT_NOUN + r"|of\s+them|such|matching)\b", re.IGNORECASE)
_RANGE_IS_A_COUNT_BEFORE = re.compile(
    r"(?:\bis|\bare|\bbe|\bcount|\banswer|\btotal|\bfound|\bhas|\bhave|\bsomewhere)\s*:?\s*$", re.IGNORECASE
)
_ID_LISTS = [
    re.compile(r"\b\d+(?:\s*,\s*\d+){2,}(?:\s*,?\s*(?:and|&|or)\s+\d+)?\b"),
    re.compile(r"\b\d+\s*,\s*\d+\s*,?\s*(?:and|&)\s+\d+\b"),
    re.compile(r"[\[(]\s*\d+(?:\s*,\s*\d+)+\s*[\])]"),
    re.compile(r"\bids?\s*(?:#\s*)?\d+(?:\s*(?:,|and|&|or)\s*\d+)*", re.IGNORECASE),
    re.compile(r"\bid\s*(?:=|equals?|equal\s+to|is)\s*\d+", re.IGNORECASE),
]
_TOTAL_OF = re.compile(
    r"\b(out\s+of|of|among(?:st)?|from)\s+(?:the\s+|all\s+|these\s+|those\s+|a\s+total\s+of\s+)?(\d+)\b", re.IGNORECASE
)
_NOT_A_TOTAL_BEFORE = re.compile(
    r"\b(?:count|total|number|answer|result|value|sum|tally|list|set|group|consist(?:s|ing)?|made\s+up|"
    r"made|amount|a\s+maximum|a\s+minimum)\s*$",
    re.IGNORECASE,
)
_SIZE_PHRASES = [
    re.compile(r"\b(?:all|the)\s+(\d+)\s+" + _COUNT_NOUN, re.IGNORECASE),
    re.compile(
        r"\b(\d+)\s+" + _COUNT_NOUN + r"\s+(?:in\s+(?:total|all|the\s+(?:table|list|data(?:set)?))|total|overall|altogether)",
        re.IGNORECASE,
    ),
    re.compile(r"\b(?:table|list|dataset|data)\s+(?:has|contains|holds|includes|of|with)\s+(\d+)", re.IGNORECASE),
    re.compile(r"\b\d+\s*/\s*(\d+)\b"),
    re.compile(r"\btotal\s+of\s+(\d+)", re.IGNORECASE),
]
_NEGATED = re.compile(
    r"(?:\bnot|n't|\bnever|\brather\s+than|\binstead\s+of|\bnor|\bneither)\s+(?:exactly\s+|just\s+|quite\s+|the\s+)?(\d+)",
    re.IGNORECASE,
)
_HEDGES = [
    re.compile(r"\b(?:about|around|approximately|approx\.?|roughly|nearly|almost|maybe|perhaps|probably|possibly|"
               r"likely|estimated|some|could\s+be|might\s+be|may\s+be)\s+(\d+)", re.IGNORECASE),
    re.compile(r"~\s*(\d+)"),
    re.compile(r"\b(\d+)\s+or\s+so\b", re.IGNORECASE),
    re.compile(r"\b(\d+)\s+or\s+(\d+)\b", re.IGNORECASE),
]

# --- cues --------------------------------------------------------------------------------------------

_EXPLICIT_BEFORE = re.compile(
    r"(?:\banswer|\bcount|\btotal|\bresult|\btally|\bsum)\s*(?:is|was|=|:|of|comes\s+to|would\s+be|will\s+be|equals)"
    r"\s*:?\s*$|\banswer\s+$|\"count\"\s*:\s*$",
    re.IGNORECASE,
)
_EXPLICIT_AFTER = re.compile(r"^\s*(?:in\s+(?:total|all)|altogether|total\b)", re.IGNORECASE)
_COUNT_BEFORE = re.compile(
    r"(?:\bis|\bare|\bwas|\bwere|=|:|\bthere\s+(?:are|is|were)|\bfound|\bfinds|\bgives?|\bgave|\breturns?|\breturned|"
    r"\breturning|\byields?|\byielded|\bshows?|\bshowed|\bexactly|\bonly|\bjust|\bhas|\bhave|\bhad|\bwith|\bgot|"
    r"\bcounted|\bcounts?|\bmakes?|\bmade|\bsays?|\bsaid|\breports?|\breported|\bis\s+equal\s+to)\s*$",
    re.IGNORECASE,
)
_COUNT_AFTER = re.compile(
    r"^\s*(?:" + _COUNT_NOUN + r"\b|such\b|of\s+(?:them|the\s+ids|these|those|which)\b|matching\b|are\b|were\b|"
    r"satisfy|meet|qualify|match\b|\.?\s*$)",
    re.IGNORECASE,
)
_CORRECTION = re.compile(
    r"\b(?:no,?\s+wait|wait|actually|correction|correcting|sorry|i\s+mean|i\s+meant|on\s+second\s+thought|"
    r"let\s+me\s+re-?count|re-?counting|recount|re-?checking|my\s+mistake|mistake|my\s+bad|oops|scratch\s+that|"
    r"that'?s\s+wrong|that\s+is\s+wrong|corrected)\b",
    re.IGNORECASE,
)
_CONCLUSION = re.compile(
    r"\b(?:so|therefore|thus|hence|in\s+total|in\s+conclusion|overall|altogether|final(?:ly)?|in\s+summary|"
    r"to\s+summari[sz]e|answer)\b",
    re.IGNORECASE,
)
_BOUNDARY = re.compile(r",|;|\||\bbut\b|\bwhile\b|\bwhereas\b|\band\b|\bso\b", re.IGNORECASE)


def _sentences(text: str) -> list[tuple[int, int]]:
    spans = []
    for line in re.finditer(r"[^\n]+", text):
        for m in re.finditer(r".+?(?:[.!?]+(?=\s|$)|$)", line.group(0)):
            if m.group(0).strip():
                spans.append((line.start() + m.start(), line.start() + m.end()))
    return spans


def _mentions(text: str, qset: QuestionSet, conditions: list[_Condition]) -> list[_Mention]:
    mentions = [_Mention(int(m.group(0)), m.start(), m.end()) for m in re.finditer(r"(?<![\w.])\d+(?![\w])", text)]
    starts = [x.start for x in mentions]

    def mark(start: int, end: int, role: str) -> None:
        for x in mentions[bisect.bisect_left(starts, start) : bisect.bisect_left(starts, end)]:
            if x.role == "count" and x.end <= end:
                x.role = role

    for pattern in _OTHER:
        for m in pattern.finditer(text):
            mark(m.start(), m.end(), "other")
    for pattern in _TOOL_ARGS:
        for m in pattern.finditer(text):
            mark(m.start(), m.end(), "tool argument")
    for c in conditions:
        mark(c.start, c.end, "threshold")
    for m in _RANGE.finditer(text):
        hedge = _RANGE_IS_A_COUNT_AFTER.match(text[m.end() :]) or _RANGE_IS_A_COUNT_BEFORE.search(text[: m.start()])
        mark(m.start(), m.end(), "hedge" if hedge else "range")
    for pattern in _ID_LISTS:
        for m in pattern.finditer(text):
            mark(m.start(), m.end(), "id")
    lone = [m for m in re.finditer(r"(?m)^[ \t]*(\d+)[ \t]*[.,]?[ \t]*$", text)]
    if len(lone) >= 2:
        for m in lone:
            mark(m.start(1), m.end(1), "id")
    for m in _TOTAL_OF.finditer(text):
        if m.group(1).lower() == "out of" or not _NOT_A_TOTAL_BEFORE.search(text[: m.start()]):
            mark(m.start(2), m.end(2), "table size")
    size = len(qset.ids)
    for pattern in _SIZE_PHRASES:
        for m in pattern.finditer(text):
            if int(m.group(1)) == size:
                mark(m.start(1), m.end(1), "table size")
    for m in _NEGATED.finditer(text):
        mark(m.start(1), m.end(1), "negated")
    for pattern in _HEDGES:
        for m in pattern.finditer(text):
            for g in range(1, (m.lastindex or 0) + 1):
                if m.group(g):
                    mark(m.start(g), m.end(g), "hedge")
    return mentions


def _tier(text: str, x: _Mention) -> int:
    before, after = text[max(0, x.start - 40) : x.start], text[x.end : x.end + 40]
    line_start = text.rfind("\n", 0, x.start) + 1
    line_end = text.find("\n", x.end)
    line = text[line_start : len(text) if line_end < 0 else line_end]
    if _EXPLICIT_BEFORE.search(before) or _EXPLICIT_AFTER.match(after) or re.fullmatch(r"\s*\d+\s*[.!]?\s*", line):
        return 2
    if _COUNT_BEFORE.search(before) or _COUNT_AFTER.match(after):
        return 1
    return 0


def _attach(text: str, x: _Mention, conditions: list[_Condition], window: tuple[int, int], qset: QuestionSet) -> str:
    """The relation of the condition ``x`` counts: the nearest one inside ``window`` (its sentence,
    cut at the counts before and after it: in ``11 ids, and 8 of them are 10 or more`` the
    condition is 8's, not 11's)."""
    best: tuple[int, str] | None = None
    first = bisect.bisect_left(conditions, window[0], key=lambda c: c.start)
    for c in conditions[first:]:
        if c.start >= window[1]:
            break
        if c.end > window[1]:
            continue
        gap = text[x.end : c.start] if c.start >= x.end else text[c.end : x.start]
        distance = len(gap) + 25 * len(_BOUNDARY.findall(gap))
        if best is None or distance < best[0]:
            best = (distance, _relation(c, qset))
    return best[1] if best else "none"


def read_count(answer: str | None, qset: QuestionSet) -> CountReading:
    """The count ``answer`` states for ``qset``'s question, or why none can be read.

    Never raises: any text is read or declared unreadable.
    """
    text = normalize(answer or "")
    conditions = _find_conditions(text)
    mentions = _mentions(text, qset, conditions)
    sentences = _sentences(text)

    sentence_starts = [s[0] for s in sentences]

    def sentence_of(x: _Mention) -> tuple[int, int]:
        i = bisect.bisect_right(sentence_starts, x.start) - 1
        return sentences[i] if i >= 0 and x.start < sentences[i][1] else (0, len(text))

    cands = [x for x in mentions if x.role in ("count", "hedge")]
    for i, x in enumerate(cands):
        sentence = sentence_of(x)
        window = (max(sentence[0], cands[i - 1].end if i else 0),
                  min(sentence[1], cands[i + 1].start if i + 1 < len(cands) else len(text)))
        x.tier = _tier(text, x)
        x.relation = _attach(text, x, conditions, window, qset)
    cands = [x for x in cands if x.relation != "complement"]
    if not cands:
        return CountReading(UNREADABLE, None, "no count stated")
    cut = [m.end() for m in _CORRECTION.finditer(text) if any(x.start >= m.end() for x in cands)]
    if cut:
        cands = [x for x in cands if x.start >= cut[-1]]
    # the table's size or the threshold, said in passing, beside another count
    restated = {len(qset.ids), qset.truth_value}
    if len({x.value for x in cands}) > 1:
        kept = [x for x in cands if not (x.value in restated and x.tier < 2 and x.relation == "none")]
        cands = kept or cands
    values = tuple(x.value for x in cands)
    hedged = [x for x in cands if x.role == "hedge"]
    if hedged:
        h = hedged[0]
        return CountReading(UNREADABLE, None, f"hedged count: {text[max(0, h.start - 20) : h.end + 12].strip()!r}", values)
    chosen = _settle(text, cands, sentences)
    if chosen is None:
        listed = ", ".join(str(v) for v in dict.fromkeys(values))
        return CountReading(UNREADABLE, None, f"conflicting counts: {listed}", values)
    return CountReading(READ, chosen[0], chosen[1], values)


def _single(xs: Iterable[_Mention]) -> int | None:
    values = {x.value for x in xs}
    return values.pop() if len(values) == 1 else None


def _settle(text: str, cands: list[_Mention], sentences: list[tuple[int, int]]) -> tuple[int, str] | None:
    """One value out of the candidates, with how it was chosen; None when they conflict."""
    one = _single(cands)
    if one is not None:
        return one, "the only count stated"
    explicit = [x for x in cands if x.tier == 2]
    value = _single(explicit)
    if value is not None:
        last = max(x.start for x in explicit)
        if not any(x.start > last and x.value != value for x in cands):
            return value, "the explicit answer"
    for subset, how in (([x for x in cands if x.relation == "exact"], "the count tied to the question's own condition"),
                        ([x for x in cands if x.tier >= 1], "the only count-like phrase")):
        value = _single(subset)
        if value is not None and not any(x.value != value for x in explicit):
            return value, how
    last_sentence = max((s for s in sentences if any(s[0] <= x.start < s[1] for x in cands)), default=None)
    if last_sentence is not None and _CONCLUSION.search(text[last_sentence[0] : last_sentence[1]]):
        value = _single(x for x in cands if last_sentence[0] <= x.start < last_sentence[1])
        if value is not None:
            return value, "the concluding sentence"
    return None
