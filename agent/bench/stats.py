"""Metric formulas and percentiles. Pure functions on numbers.

Percentiles use the **nearest-rank** method: the p-th percentile of n sorted samples is the
sample at rank ``ceil(p/100 * n)`` (1-based). Every reported percentile is therefore a value
that was actually measured; nothing is interpolated (the reference reported the mean of the
two middle samples of an even-sized set as a measured rate, e.g. 132.45 tok/s).
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

PERCENTILES = (50, 90, 99)
PERCENTILE_METHOD = "nearest-rank (the sample at rank ceil(p/100*n), 1-based; never interpolated)"


def percentile(values: Sequence[float], p: float) -> float | None:
    """Nearest-rank percentile of ``values``; None for an empty sample."""
    if not values:
        return None
    if not 0 < p <= 100:
        raise ValueError(f"percentile must be in (0, 100], got {p}")
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def distribution(values: Iterable[float | None], *, keep_values: bool = True, digits: int = 3) -> dict[str, Any]:
    """``{"p50", "p90", "p99", "n", "min", "max", "mean", "values"}`` of the non-None values.

    ``values`` (rounded) is kept so a reader or a plot can recompute every figure.
    """
    sample = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    out: dict[str, Any] = {f"p{p}": _round(percentile(sample, p), digits) for p in PERCENTILES}
    out["n"] = len(sample)
    out["min"] = _round(min(sample), digits) if sample else None
    out["max"] = _round(max(sample), digits) if sample else None
    out["mean"] = _round(sum(sample) / len(sample), digits) if sample else None
    if keep_values:
        out["values"] = [_round(v, digits) for v in sample]
    return out


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def ttft_s(t_sent: float, t_first_token: float | None) -> float | None:
    """Time to first token: first content chunk's arrival minus the request's send time."""
    return None if t_first_token is None else t_first_token - t_sent


def e2e_s(t_sent: float, t_done: float | None) -> float | None:
    """End to end: the response's last byte minus the send time."""
    return None if t_done is None else t_done - t_sent


def inter_token_gaps_s(token_times: Sequence[float]) -> list[float]:
    """Gaps between successive content chunks (first token excluded, as GuideLLM does).

    A chunk may carry more than one token; the gap is per chunk as received.
    """
    return [b - a for a, b in zip(token_times, token_times[1:])]


def decode_tok_per_s(output_tokens: int | None, t_first: float | None, t_last: float | None) -> float | None:
    """Decode rate = (output tokens - 1) / (last token time - first token time).

    None when the server reported no usage, fewer than two tokens came back, or the whole
    reply arrived in one chunk (no measurable decode interval).
    """
    if output_tokens is None or t_first is None or t_last is None or output_tokens < 2:
        return None
    span = t_last - t_first
    if span <= 0:
        return None
    return (output_tokens - 1) / span


def client_tok_per_s(output_tokens: int | None, e2e: float | None) -> float | None:
    """The reference's figure: output tokens / client wall time (prefill and network included)."""
    if output_tokens is None or not e2e or e2e <= 0:
        return None
    return output_tokens / e2e


def aggregate_tok_per_s(output_tokens: Sequence[int], first_sent: float, last_done: float) -> float | None:
    """Aggregate output rate of a concurrency level: all output tokens / the level's wall time."""
    span = last_done - first_sent
    if span <= 0:
        return None
    return sum(output_tokens) / span
