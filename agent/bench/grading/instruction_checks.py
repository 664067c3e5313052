"""IFEval's checks for the instruction types the quality lane uses, as IFEval's own code defines them
(``instruction_following_eval/instructions.py``, Apache-2.0; Zhou et al., 2023, arXiv:2311.07911).

Strict, as IFEval's "strict" score: the reply is checked as it came back. Two differences, both
because the package data they need is downloaded at run time: the case checks do not also run a
language detector (IFEval requires English via ``langdetect``), and no check splits sentences
(IFEval's ``nltk`` punkt); words are counted as IFEval counts them, ``\\w+`` runs.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Final, Mapping, Sequence

from ..tasks.quality.instructions import CONSTRAINED_OPTIONS

_FENCES: Final = ("```json", "```Json", "```JSON", "```")


def _json(text: str, **_: Any) -> bool:
    value = text.strip()
    for fence in _FENCES:
        value = value.removeprefix(fence)
    try:
        json.loads(value.removesuffix("```").strip())
    except ValueError:
        return False
    return True


def _end(text: str, *, end_phrase: str) -> bool:
    return text.strip().strip('"').lower().endswith(end_phrase.strip().lower())


def _words(text: str, *, relation: str, num_words: int) -> bool:
    count = len(re.findall(r"\w+", text))
    return count < num_words if relation == "less than" else count >= num_words


def _title(text: str, **_: Any) -> bool:
    return any(t.lstrip("<").rstrip(">").strip() for t in re.findall(r"<<[^\n]+>>", text))


def _bullets(text: str, *, num_bullets: int) -> bool:
    stars = re.findall(r"^\s*\*[^\*].*$", text, flags=re.MULTILINE)
    dashes = re.findall(r"^\s*-.*$", text, flags=re.MULTILINE)
    return len(stars) + len(dashes) == num_bullets


def _postscript(text: str, *, postscript_marker: str) -> bool:
    pattern = {"P.P.S": r"\s*p\.\s?p\.\s?s.*$", "P.S.": r"\s*p\.\s?s\..*$"}.get(
        postscript_marker, r"\s*" + re.escape(postscript_marker.lower()) + r".*$")
    return bool(re.findall(pattern, text.lower(), flags=re.MULTILINE))


CHECKS: Final[dict[str, Callable[..., bool]]] = {
    "change_case:english_lowercase": lambda text: text.islower(),
    "change_case:english_capital": lambda text: text.isupper(),
    "startend:quotation": lambda text: len(v := text.strip()) > 1 and v[0] == '"' and v[-1] == '"',
    "startend:end_checker": _end,
    "punctuation:no_comma": lambda text: "," not in text,
    "detectable_format:json_format": _json,
    "keywords:existence": lambda text, keywords: all(re.search(re.escape(k), text, re.IGNORECASE) for k in keywords),
    "keywords:forbidden_words": lambda text, forbidden_words: not any(
        re.search(r"\b" + re.escape(w) + r"\b", text, re.IGNORECASE) for w in forbidden_words),
    "length_constraints:number_words": _words,
    "detectable_format:title": _title,
    "detectable_format:number_bullet_lists": _bullets,
    "detectable_format:constrained_response": lambda text: any(o in text.strip() for o in CONSTRAINED_OPTIONS),
    "detectable_content:postscript": _postscript,
}  # fmt: skip


def failed_checks(text: str, instructions: Sequence[Mapping[str, Any]]) -> list[str]:
    """The ids of the instructions ``text`` does not follow (empty: it follows them all).

    Raises:
        KeyError: an instruction id this module does not check.
    """
    return [i["id"] for i in instructions if not CHECKS[i["id"]](text, **(i.get("kwargs") or {}))]


def task_undone(text: str, task: Mapping[str, Any] | None) -> str | None:
    """Why ``text`` does not do the item's task (too short, or not about its topic); None when it does,
    or when the item states no task (a record of the lane before tasks were stated)."""
    if not task:
        return None
    words = re.findall(r"\w+", text)
    if len(words) < task["min_words"]:
        return f"the task asked (at least {task['min_words']} words; the reply has {len(words)})"
    about = task.get("about") or []
    if about and not any(re.search(r"\b" + re.escape(w), text, re.IGNORECASE) for w in about):
        return f"the task asked (a reply about {about[0]}: it names none of {', '.join(about)})"
    return None
