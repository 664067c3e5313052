"""How one server counts this project's text: a line from units (:func:`.text.units_of`) to the server's own
``usage.prompt_tokens``, fitted on a short exchange before the measured requests.

The exchange (:func:`exchange_units`) is three prompts, each of the workload's shape (its shared prefix, if
any, then one user turn): the backend's *cold* request, which is sent anyway, at the workload's first length
(uncalibrated); then a short prompt and a second long one, each asking for one output token, so the exchange
costs two prefills and two tokens. Where the cold request was counted and is itself long (at least the long
prompt's length), the second long prompt is not sent: two points at those lengths make the line, and a long
workload (a rag prompt of 4,096 tokens) saves a prefill per backend. The line through the points (least
squares) gives the server's tokens per unit (the slope: its tokenizer against this text) and the tokens a request
has beyond its text (the offset: the chat template, a system turn the server adds). With a slope and an offset the asked length
of every later request is met in the server's own count: Gemma's, Nova's and the toy model's tokenizers
each get the asked lengths.

A server that reports no usage, or whose points do not make a line (every prompt failed, a slope of 0 or
less), is not calibrated: its prompts are made at one token per unit, and the report says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

SHORT_UNITS = 24
"""The short prompt of the exchange (about a sentence)."""
LONG_UNITS_MIN = 256
"""The long prompts are at least this long where the backend's limits allow: a line fitted on a few
hundred words has a slope within about 1% of the text's average."""


@dataclass(frozen=True, slots=True)
class Calibration:
    """Server tokens = ``slope`` x units + ``offset`` for a request of the workload's shape.

    Attributes:
        slope: the server's tokens per unit of this text.
        offset: the server's tokens beyond the text of a one-turn request (template, added system turn).
        calibrated: whether the line was fitted on the server's own counts.
        why: how it was obtained, or why it was not.
    """

    slope: float = 1.0
    offset: float = 0.0
    calibrated: bool = False
    why: str = "not calibrated"

    def units_for(self, tokens: float, *, whole_request: bool = True) -> int:
        """The units of text that the server counts as ``tokens`` (``whole_request``: the offset included, as a
        one-turn request's prompt; else a part of a prompt, such as a later user turn or a prefix block)."""
        text_tokens = tokens - self.offset if whole_request else tokens
        return max(1, round(text_tokens / self.slope))

    def tokens_for(self, units: float) -> float:
        """What the server should count for a one-turn request of ``units`` units."""
        return self.slope * units + self.offset


def exchange_units(first_units: int, max_units: int | None) -> tuple[int, int]:
    """The short and second long prompts of the exchange, in units (``max_units``: the most the backend's
    limits leave for text, None for no limit)."""
    long_units = max(first_units, LONG_UNITS_MIN)
    if max_units is not None:
        long_units = max(1, min(long_units, max_units))
    return min(SHORT_UNITS, max(1, long_units // 4)), long_units


def fit(points: Sequence[tuple[int, int | None]]) -> Calibration:
    """The least-squares line through ``(units, server tokens)`` points (a point without a count is left out)."""
    xy = [(float(u), float(t)) for u, t in points if t is not None]
    if len(xy) < 2 or len({x for x, _ in xy}) < 2:
        got = "no usage counts" if not xy else "counts at one length only"
        return Calibration(why=f"not calibrated: {got} from the exchange, so prompts are made at one token per unit")
    n = len(xy)
    mx, my = sum(x for x, _ in xy) / n, sum(y for _, y in xy) / n
    slope = sum((x - mx) * (y - my) for x, y in xy) / sum((x - mx) ** 2 for x, _ in xy)
    if slope <= 0:
        return Calibration(why=f"not calibrated: the server's counts do not grow with the text (slope {slope:.3g})")
    offset = my - slope * mx
    return Calibration(slope=round(slope, 6), offset=round(offset, 3), calibrated=True,
                       why=f"fitted on {n} prompts of the server's own usage.prompt_tokens")
