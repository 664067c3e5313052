"""The distribution of a figure over requests, as every block reports one."""

from __future__ import annotations

import math
from typing import Iterable

from ...results.blocks.chat import Distribution
from .. import stats


def distribution(values: Iterable[float | None], *, keep_values: bool = True, digits: int = 3,
                 mean_ci95: bool = False) -> Distribution:
    """Nearest-rank p50/p90/p99, n, min, max and mean of the non-None finite values.

    Args:
        keep_values: keep the values (rounded), so a reader or a plot can recompute every figure.
        mean_ci95: add the mean's 95% Student t interval (none below two values), its low end held
            at 0: every figure it is asked for (a time, a rate) is never negative, and a t interval
            over two values of a noisy time easily reaches below zero.
    """
    sample = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    given = {}
    if keep_values:
        given["values"] = [round(v, digits) for v in sample]
    if mean_ci95:
        interval = stats.mean_interval(sample) if len(sample) > 1 else None
        given["mean_ci95"] = None if interval is None else (round(max(0.0, interval[1]), digits),
                                                            round(interval[2], digits))
    return Distribution(
        p50=stats.round_or_none(stats.percentile(sample, 50), digits),
        p90=stats.round_or_none(stats.percentile(sample, 90), digits),
        p99=stats.round_or_none(stats.percentile(sample, 99), digits),
        n=len(sample),
        min=round(min(sample), digits) if sample else None,
        max=round(max(sample), digits) if sample else None,
        mean=round(sum(sample) / len(sample), digits) if sample else None,
        **given,
    )
