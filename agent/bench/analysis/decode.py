"""The decode rate of one streamed reply, kept right when chunks carry several tokens.

The classic figure, (output tokens - 1) / (last chunk - first chunk), assumes each chunk carries
one token: the first token opens the interval and the other N - 1 are decoded inside it. When a
chunk carries several tokens (Bedrock's text deltas, SageMaker payload parts holding several
events, a network read holding several SSE events), the tokens of the *first arrival* were decoded
before the interval opened, and counting them inside it inflates the rate: 100 tokens arriving in
two reads 5 ms apart give 19,800 tok/s. So:

    decode tok/s = (output tokens - tokens of the first arrival) / (last arrival - first arrival)

where an *arrival* is one timestamp (chunks read together share it). The tokens of the first
arrival are counted from its content events when the server's usage matches one token per event,
else estimated from its share of the reply's characters.

The figure is **comparable** with per-token streams (and with a bandwidth ceiling, which is a
per-token rate) only when arrivals carried at most :data:`MAX_TOKENS_PER_ARRIVAL` tokens on
average and each event one token: otherwise the arrival times say when a server or a relay
flushed its buffer, not when tokens were decoded, and the figure is marked ``multi_token``.
"""

from __future__ import annotations

from typing import Sequence

MAX_TOKENS_PER_ARRIVAL = 2.0
"""Above this many tokens per arrival (on average) a stream is treated as buffered."""

PER_TOKEN, MULTI_TOKEN = "per_token", "multi_token"


def decode_rate(
    output_tokens: int | None, chunk_ms: Sequence[float], chunk_chars: Sequence[int] | None
) -> tuple[float | None, str | None]:
    """``(tok/s, basis)`` of one reply, or ``(None, None)`` when it has no decode interval.

    Args:
        output_tokens: The server's completion-token count.
        chunk_ms: Arrival time of each content chunk (ms, ascending; equal for chunks read together).
        chunk_chars: Characters of content in each chunk, parallel to ``chunk_ms`` (None: unknown).

    Returns:
        The rate and ``"per_token"`` (comparable) or ``"multi_token"`` (not comparable); None when
        usage is missing, fewer than two tokens came, everything arrived at once, or the first
        arrival's tokens cannot be counted or estimated.
    """
    if output_tokens is None or output_tokens < 2 or len(chunk_ms) < 2:
        return None, None
    first, last = chunk_ms[0], chunk_ms[-1]
    if last <= first:
        return None, None
    in_first = 1
    while in_first < len(chunk_ms) and chunk_ms[in_first] == first:
        in_first += 1
    arrivals = 1 + sum(1 for a, b in zip(chunk_ms, chunk_ms[1:]) if b != a)
    events = len(chunk_ms)
    one_per_event = output_tokens - 1 <= events <= output_tokens
    if one_per_event:
        first_tokens = float(in_first)
    elif chunk_chars and len(chunk_chars) == events and sum(chunk_chars) > 0:
        first_tokens = output_tokens * sum(chunk_chars[:in_first]) / sum(chunk_chars)
    else:
        return None, None
    rate = (output_tokens - first_tokens) / ((last - first) / 1000.0)
    comparable = one_per_event and output_tokens / arrivals <= MAX_TOKENS_PER_ARRIVAL
    return rate, PER_TOKEN if comparable else MULTI_TOKEN
