"""Metric formulas and percentiles. Pure functions on numbers.

Percentiles use the **nearest-rank** method: the p-th percentile of n sorted samples is the
sample at rank ``ceil(p/100 * n)`` (1-based). Every reported percentile is therefore a value
that was actually measured; nothing is interpolated (the reference reported the mean of the
two middle samples of an even-sized set as a measured rate, e.g. 132.45 tok/s).
"""

from __future__ import annotations

import math
from typing import Sequence

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


def round_or_none(value: float | None, digits: int) -> float | None:
    """``round(value, digits)``, with None kept as None."""
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


# --- intervals and paired tests ------------------------------------------------------------
# Shared by every grade (counting, BFCL) and every repeated aggregate (SLO levels), so that a
# figure and its interval are always computed the same way.

Z95 = 1.959963984540054
"""The two-sided 95% standard-normal quantile."""

# Two-sided 95% Student t quantiles for 1..30 degrees of freedom (standard tables, e.g.
# NIST/SEMATECH e-Handbook of Statistical Methods, section 1.3.6.7.2); beyond 30 the normal
# quantile is within 4% and is used.
_T95 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """Wilson score interval of a proportion (95% by default); None when ``n`` is 0.

    Chosen over the normal ("Wald") interval because it stays inside [0, 1] and keeps its
    coverage at small n and at 0 or n successes: 4 of 5 gives (0.376, 0.964).
    """
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in [0, {n}], got {successes}")
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def t_quantile_95(df: int) -> float:
    """Two-sided 95% Student t quantile for ``df`` degrees of freedom (normal beyond 30)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, got {df}")
    return _T95[df - 1] if df <= len(_T95) else Z95


def mean_interval(values: Sequence[float]) -> tuple[float, float, float] | None:
    """``(mean, low, high)``: the mean of repeated measurements with its 95% t interval.

    None for an empty sample; with one value the interval is the value itself (width 0 means
    "not estimated", and callers that rank must treat n < 2 as too thin).
    """
    sample = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not sample:
        return None
    mean = sum(sample) / len(sample)
    if len(sample) == 1:
        return mean, mean, mean
    var = sum((v - mean) ** 2 for v in sample) / (len(sample) - 1)
    half = t_quantile_95(len(sample) - 1) * math.sqrt(var / len(sample))
    return mean, mean - half, mean + half


def intervals_overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether two closed intervals ``(low, high)`` overlap: two such figures are a tie."""
    return a[0] <= b[1] and b[0] <= a[1]


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value for paired right/wrong outcomes.

    Args:
        only_a: Cases A got right and B got wrong.
        only_b: Cases B got right and A got wrong.

    The discordant pairs follow Binomial(only_a + only_b, 1/2) under "no difference"; the
    p-value is twice the smaller tail, capped at 1. With no discordant pair it is 1.
    """
    if only_a < 0 or only_b < 0:
        raise ValueError("counts must be non-negative")
    n = only_a + only_b
    if n == 0:
        return 1.0
    k = min(only_a, only_b)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def paired_difference_interval(both_right: int, only_a: int, only_b: int, neither: int,
                               z: float = Z95) -> tuple[float, float] | None:
    """95% interval of ``accuracy(b) - accuracy(a)`` on paired right/wrong outcomes; None without pairs.

    Newcombe's hybrid score interval for paired proportions (method 10 of Newcombe, "Improved
    confidence intervals for the difference between binomial proportions based on paired data",
    Statistics in Medicine 17, 1998, 2635-2650; as given in Altman et al., "Statistics with
    Confidence", 2nd ed., 2000): each accuracy's Wilson interval, combined with the correlation of
    the two outcomes (phi, corrected for continuity as Newcombe does). It stays inside [-1, 1], keeps
    its coverage at small n and near 0 or 100%, and shrinks as the two backends agree more (a Wald
    interval would need neither).

    Args:
        both_right: items both got right; ``only_a`` / ``only_b``: right on one side only;
            ``neither``: right on neither side.
    """
    n = both_right + only_a + only_b + neither
    if n == 0:
        return None
    right_a, right_b = both_right + only_a, both_right + only_b
    p_a, p_b = right_a / n, right_b / n
    low_a, high_a = wilson_interval(right_a, n, z)  # type: ignore[misc]
    low_b, high_b = wilson_interval(right_b, n, z)  # type: ignore[misc]
    margins = (right_a * (n - right_a) * right_b * (n - right_b))
    phi = 0.0
    if margins > 0:
        cross = both_right * neither - only_a * only_b
        corrected = cross - n / 2 if cross > n / 2 else (cross if cross < 0 else 0.0)
        phi = corrected / math.sqrt(margins)
    d = p_b - p_a
    low = d - math.sqrt(max(0.0, (p_b - low_b) ** 2 - 2 * phi * (p_b - low_b) * (high_a - p_a) + (high_a - p_a) ** 2))
    high = d + math.sqrt(max(0.0, (high_b - p_b) ** 2 - 2 * phi * (high_b - p_b) * (p_a - low_a) + (p_a - low_a) ** 2))
    return max(-1.0, low), min(1.0, high)


def _binomial_pmf(i: int, n: int, p: float) -> float:
    """P(Binomial(n, p) = i), for 0 < p < 1."""
    return math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * math.log(p)
                    + (n - i) * math.log(1.0 - p))


def _binomial_cdf(k: int, n: int, p: float) -> float:
    """P(Binomial(n, p) <= k), summed from k away from the bulk so that it takes few terms at any n."""
    if k < 0:
        return 0.0
    if k >= n or p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    q = 1.0 - p
    if k < n * p:  # below the mean: the terms shrink going down
        term = total = _binomial_pmf(k, n, p)
        for i in range(k, 0, -1):
            term *= i / (n - i + 1) * q / p
            total += term
            if term < 1e-17 * total:
                break
        return min(1.0, total)
    term = upper = _binomial_pmf(k + 1, n, p)  # above it: 1 - the upper tail, whose terms shrink going up
    for i in range(k + 1, n):
        term *= (n - i) / (i + 1) * p / q
        upper += term
        if term < 1e-17 * upper:
            break
    return max(0.0, 1.0 - upper)


def _mcnemar_critical(d: int, alpha: float) -> int:
    """The largest k with 2 P(Binomial(d, 1/2) <= k) < alpha (-1 when none): the exact McNemar test on d
    discordant items rejects when the smaller of the two flip counts is at most k."""
    k = max(-1, int(d / 2 - 1.96 * math.sqrt(d) / 2) - 2)
    while k >= 0 and 2 * _binomial_cdf(k, d, 0.5) >= alpha:
        k -= 1
    while k + 1 < d and 2 * _binomial_cdf(k + 1, d, 0.5) < alpha:
        k += 1
    return k


def mcnemar_power(n: int, right_to_wrong: float, wrong_to_right: float, alpha: float = 0.05) -> float:
    """The chance that :func:`mcnemar_exact` gives p < ``alpha`` on ``n`` paired items, when each item
    goes right -> wrong with probability ``right_to_wrong`` and wrong -> right with ``wrong_to_right``,
    independently (computed exactly over the multinomial, not simulated; the discordant counts more
    than 12 standard deviations from their mean, which carry no mass a float can hold, are skipped).

    With 6% of items changing and a 3-point drop (right -> wrong 4.5%, wrong -> right 1.5%) it is 0.830
    at n = 600 and 0.492 at 300; with no drop (3% each way), the false-alarm rate, 0.033 at 600.
    """
    changed = right_to_wrong + wrong_to_right
    if n <= 0 or changed <= 0:
        return 0.0
    share = right_to_wrong / changed
    mean, spread = n * changed, 12 * math.sqrt(n * changed * max(0.0, 1 - changed)) + 12
    total = 0.0
    for d in range(max(1, int(mean - spread)), min(n, int(mean + spread) + 1) + 1):
        k = _mcnemar_critical(d, alpha)
        if k < 0:
            continue
        weight = float(d == n) if changed >= 1 else _binomial_pmf(d, n, changed)
        rejected = _binomial_cdf(k, d, share) + 1.0 - _binomial_cdf(d - k - 1, d, share)
        total += weight * rejected
    return min(1.0, total)
