"""Synthetic prompt text: offline, deterministic per seed, distinct per request, of a length given in *units*.

A unit is this module's own estimate of a token (:func:`units_of`): a word of up to 8 letters is one, a longer
one two, a full stop or a comma one. No server counts like that; the calibration
(:mod:`.calibration`) maps units to each server's own count (``usage.prompt_tokens``), so the length asked
is the length that server sees.

The words are ``words.txt`` (beside this module): 705 common English words, function words first, drawn
with Zipf weights (the word of rank r weighs 1 / (r + 10)), so the text has the word frequencies of prose
and no repeat a tokenizer could merge. Per seed a bank of :data:`BANK_SIZE` sentences of 8 to 20 words is
made once (about 30 ms); a request's text is an opening sentence of its own, drawn afresh from its own
random stream (so no two requests share a prefix a server could cache), then bank sentences in the order its
stream picks them, the last one cut at the word that reaches the length. Longer texts end with
:data:`CLOSING`, which asks the model for a long reply (a server that cannot be told to ignore its
end-of-sequence token then still tends to use the output tokens asked). Making 10,000 prompts of 550 units
takes well under a second on one core (``python benchmarks/prompt_generator.py``, docs/traffic.md).
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from random import Random

BANK_SIZE = 4096
"""Sentences made once per seed; a prompt draws from them."""
EVEN = 0.04
"""How far a sentence's characters per unit may be from the average."""
CLOSING = "Continue these notes in your own words, at length, and do not stop early."
WORDS_FILE = Path(__file__).with_name("words.txt")


def word_units(word: str) -> int:
    """One unit for a word of up to 8 letters, two for a longer one."""
    return 1 if len(word) <= 8 else 2


def units_of(text: str) -> int:
    """The units of any text: its words' units, and one per full stop or comma."""
    return sum(word_units(w.strip(".,")) + w.count(".") + w.count(",") for w in text.split())


@dataclass(frozen=True, slots=True)
class _Sentence:
    words: tuple[str, ...]
    ends: tuple[int, ...]
    """The units up to and including each word."""
    text: str
    units: int
    """With its full stop."""


@lru_cache(maxsize=1)
def _vocabulary() -> tuple[tuple[str, ...], tuple[float, ...]]:
    words = tuple(w for w in WORDS_FILE.read_text().split() if w)
    return words, tuple(itertools.accumulate(1.0 / (rank + 10) for rank in range(len(words))))


@lru_cache(maxsize=1)
def _chars_per_unit() -> float:
    """The characters of a unit of text on average (a word and its space, by the words' weights)."""
    words, cum = _vocabulary()
    weights = [b - a for a, b in zip((0.0, *cum), cum)]
    return sum(w * (len(x) + 1) for w, x in zip(weights, words)) / sum(w * word_units(x) for w, x in zip(weights, words))


def _sentence(rng: Random) -> _Sentence:
    """A sentence of 8 to 20 words whose characters per unit are within :data:`EVEN` of the average, so that a
    server counting characters, words or anything between sees every prompt in the same proportion to its units
    (the calibration's line then holds for every prompt, not only on average)."""
    words, cum = _vocabulary()
    while True:
        picked = rng.choices(words, cum_weights=cum, k=rng.randint(8, 20))
        picked[0] = picked[0].capitalize()
        ends = tuple(itertools.accumulate(word_units(w) for w in picked))
        text = " ".join(picked) + "."
        if abs(len(text) / (ends[-1] + 1) / _chars_per_unit() - 1.0) <= EVEN:
            return _Sentence(tuple(picked), ends, text, ends[-1] + 1)


def _shuffled(s: _Sentence, rng: Random) -> _Sentence:
    """``s``'s words in another order: the same characters and units, a prefix no other request shares."""
    words = [s.words[0].lower(), *s.words[1:]]
    rng.shuffle(words)
    words[0] = words[0].capitalize()
    ends = tuple(itertools.accumulate(word_units(w) for w in words))
    return _Sentence(tuple(words), ends, " ".join(words) + ".", s.units)


@lru_cache(maxsize=4)
def _bank(seed: int) -> tuple[_Sentence, ...]:
    rng = Random(f"traffic-bank:{seed}")
    return tuple(_sentence(rng) for _ in range(BANK_SIZE))


class TextMaker:
    """The text of one seed and draw: :meth:`text` gives any length, the same for the same ``(seed, draw, key,
    units)``; made once per seed, draw and process (:meth:`of`). Another ``draw`` of the same seed makes other text
    of the same statistics (the bank is the seed's): the open loop's, so that it sends nothing the chat part just
    sent and the server could answer from its prefix cache."""

    @classmethod
    @lru_cache(maxsize=4)
    def of(cls, seed: int, draw: str = "") -> TextMaker:
        """The seed's maker for ``draw``, its bank made on first use."""
        return cls(seed, draw)

    def __init__(self, seed: int, draw: str = "") -> None:
        self.seed, self.draw = seed, draw
        self.bank = _bank(seed)
        self.closing_units = units_of(CLOSING)
        self.indexes = range(BANK_SIZE)
        self.mean_units = max(1, sum(s.units for s in self.bank) // BANK_SIZE)

    def stream(self, key: str | int) -> Random:
        """The random stream of one request (``key``: its index, or a name such as ``prefix``)."""
        return Random(f"traffic:{self.seed}:{self.draw}:{key}" if self.draw else f"traffic:{self.seed}:{key}")

    def text(self, units: int, key: str | int, *, closing: bool = True) -> str:
        """About ``units`` units of text (exactly, unless the last word is a long one), distinct for each ``key``;
        ``closing``: a text of at least four times :data:`CLOSING`'s length ends with it."""
        rng = self.stream(key)
        units = max(1, int(units))
        closing = closing and units >= 4 * self.closing_units
        budget = units - self.closing_units if closing else units
        first = _shuffled(self.bank[rng.randrange(BANK_SIZE)], rng)
        parts, n = [], 0
        picks: list[_Sentence] = [first]
        while True:
            for s in picks:
                if n + s.units <= budget:
                    parts.append(s.text)
                    n += s.units
                    if n < budget:
                        continue
                else:
                    cut = bisect.bisect_right(s.ends, budget - n)
                    if cut:
                        parts.append(" ".join(s.words[:cut]))
                break
            else:
                picks = [self.bank[i] for i in rng.choices(self.indexes, k=(budget - n) // self.mean_units + 2)]
                continue
            break
        if closing:
            parts.append(CLOSING)
        return " ".join(parts)
