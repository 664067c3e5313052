"""One item of the quality lane (:class:`Item`), the system prompt and output caps every backend gets,
and the prompt-size rule that makes every item fit every backend.

**Prompt size.** The Neuron rigs take prompts of at most 128 tokens (``max_prompt_tokens`` in
``rigs/catalog.yaml``), the smallest limit of any backend, so every item's whole prompt (the
system turn, the question and the chat template) is kept under it. No Gemma tokenizer ships in a
package, so the count is an estimate meant to be an upper bound (:func:`estimate_tokens`): every
digit, non-letter byte and newline counts one token, a run of letters one per four letters, a space
one unless a word follows, and :data:`TEMPLATE_ALLOWANCE` tokens are left for the chat template.
Checked against SmolLM2's own template and tokenizer on every item the lane makes at seeds 0 to 2
(``benchmarks/quality_lane.py``: never low, at least 10 tokens above every real count); Gemma's
counts are seen only on AWS, in each record's ``prompt_tokens``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Final, Mapping

SYSTEM_PROMPT: Final = "Answer briefly. Give only what is asked, with no explanation."
"""The one system turn of every item, recorded with every reply."""

MAX_TOKENS: Final = {"number": 12, "choice": 10, "instructions": 32}
"""Output cap per grading kind. The system turn asks for the answer alone: a number or a label, or a
short sentence stating it ("The answer is **-1234**." is about 10 tokens with one token per digit),
fits; an instruction item needs a sentence or a short list in the asked form. Small on purpose: on the
local rig every token, read or written, is compute on one CPU thread (docs/timings.md, "How long
the quality lane takes"). A reply cut at the cap before it states an answer is unreadable, never guessed at
(:mod:`agent.bench.grading.quality`)."""

PROMPT_TOKEN_LIMIT: Final = 128
"""The smallest prompt limit of any backend (the Neuron rigs')."""

TEMPLATE_ALLOWANCE: Final = 16
"""Tokens left for the chat template's markers around the system and user turns and before the
reply."""

_PIECES = re.compile(r"[A-Za-z]+|\d|\n+|[^\S\n]+|[^\sA-Za-z\d]")


def estimate_tokens(text: str) -> int:
    """An upper estimate of ``text``'s token count (see the module's docstring)."""
    pieces = _PIECES.findall(text)
    count = 0
    for i, piece in enumerate(pieces):
        if piece[0] == "\n":
            count += 1
        elif piece.isspace():
            following = pieces[i + 1] if i + 1 < len(pieces) else ""
            count += 0 if following[:1].isascii() and following[:1].isalpha() else 1
        elif piece.isascii() and piece.isalpha():
            count += math.ceil(len(piece) / 4)
        else:
            count += len(piece.encode())
    return count


def estimate_prompt_tokens(messages: tuple[Mapping[str, str], ...]) -> int:
    """The whole prompt's estimate: every turn's text and the template allowance."""
    return sum(estimate_tokens(m["content"]) for m in messages) + TEMPLATE_ALLOWANCE


@dataclass(frozen=True, slots=True)
class Item:
    """One question of the lane.

    Attributes:
        id: Stable across runs, backends and lane sizes: ``suite/seed/index`` (the index in the
            suite's own seeded stream, counting items skipped for size).
        suite: The suite's name.
        source: Where the item came from (the generator and its index).
        question: The user turn.
        answer: The reference answer; for an instruction item, one reply that follows the
            instruction (any reply that passes the checks is right).
        grading: How a reply is graded (``kind``: ``number``, ``choice`` with its ``labels``, or
            ``instructions`` with the instruction ids and arguments); the record carries it, so
            a run can be regraded without making the items again.
    """

    id: str
    suite: str
    source: str
    question: str
    answer: str
    grading: Mapping[str, Any]

    @property
    def messages(self) -> tuple[Mapping[str, str], ...]:
        return ({"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": self.question})

    @property
    def max_tokens(self) -> int:
        return MAX_TOKENS[self.grading["kind"]]

    @property
    def prompt_tokens_estimate(self) -> int:
        return estimate_prompt_tokens(self.messages)

    def fits(self, limit: int | None = PROMPT_TOKEN_LIMIT) -> bool:
        """Whether the whole prompt fits ``limit`` tokens by the estimate (None: no limit)."""
        return limit is None or self.prompt_tokens_estimate <= limit

    def row(self, lane: str) -> dict[str, Any]:
        """The item as exported: what is sent, the reference, and how it is graded."""
        return {
            "id": self.id, "suite": self.suite, "lane": lane, "source": self.source,
            "messages": [dict(m) for m in self.messages], "max_tokens": self.max_tokens, "temperature": 0,
            "answer": self.answer, "grading": dict(self.grading), "prompt_tokens_estimate": self.prompt_tokens_estimate,
        }  # fmt: skip
