"""How numbers are written, everywhere a run's results are shown: the sentences the analysis writes
into ``summary.json`` (the headline, the reasons) and every cell of the report, the terminal and a
comparison. A missing figure is ``-``.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from .constants import LIMIT_LABELS, TARGET_KEYS

MISSING = "-"


def number(value: float | None, digits: int = 1) -> str:
    """``1,234.5``: thousands separated, ``digits`` decimals."""
    return MISSING if value is None else f"{value:,.{digits}f}"


def cell(value: Any, digits: int = 1, unit: str = "") -> str:
    """A table cell: a whole number as one (``1,234``), a float with ``digits`` decimals, a bool as
    yes or no, anything else as its text."""
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}{unit}"
    if isinstance(value, float):
        return f"{value:,.{digits}f}{unit}"
    return str(value)


def usd(value: float | None) -> str:
    """``$1,234.56``."""
    return MISSING if value is None else f"${value:,.2f}"


def usd_small(value: float | None) -> str:
    """A small amount in dollars, never in exponent notation: ``$0.0123``, ``$0.000070`` (two significant digits
    below a cent)."""
    if value is None:
        return MISSING
    if value >= 0.01 or value <= 0:
        return f"${value:,.4f}"
    return f"${value:.{1 - math.floor(math.log10(value))}f}"


def percent(share: float | None, digits: int = 0) -> str:
    """A share as a percentage: ``0.853`` is ``85%`` (``85.3%`` with one digit)."""
    return MISSING if share is None else f"{share * 100:.{digits}f}%"


def percent_range(interval: Sequence[float] | None) -> str:
    """An interval of shares as ``38-96%``."""
    return MISSING if not interval else f"{interval[0] * 100:.0f}-{interval[1] * 100:.0f}%"


def bracket(pair: Sequence[float | None] | None, digits: int = 1, prefix: str = "") -> str:
    """`` [low, high]`` after a figure, ``high`` null read as unbounded; nothing for a missing or
    zero-width interval (one repeat: not estimated)."""
    if not pair or pair[0] is None or pair[0] == pair[1]:
        return ""
    high = "unbounded" if pair[1] is None else prefix + number(pair[1], digits)
    return f" [{prefix}{number(pair[0], digits)}, {high}]"


def with_interval(value: float | None, interval: Sequence[float] | None, digits: int) -> str:
    """``12.3 [11.0, 13.6]``, or the figure alone without an interval."""
    if value is None:
        return MISSING
    if not interval:
        return number(value, digits)
    return f"{number(value, digits)} [{number(interval[0], digits)}, {number(interval[1], digits)}]"


def volume(tokens: float) -> str:
    """``1.9 B``, ``250 M``, ``40 k``: a monthly token volume in words a reader scans (3 significant digits)."""
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if tokens >= scale:
            value = tokens / scale
            return f"{value:.3g} {unit}" if value < 1000 else f"{value:,.0f} {unit}"
    return f"{tokens:.3g}"


def target(limits: Mapping[str, Any] | None) -> str:
    """``TTFT p99 <= 1,000 ms, ITL p99 <= 100 ms``, or ``no latency target``."""
    if not limits:
        return "no latency target"
    parts = [f"{LIMIT_LABELS[k]} p99 <= {limits[k]:,.0f} ms" for k in TARGET_KEYS if limits.get(k) is not None]
    return ", ".join(parts) or "no latency target"


def capacity(concurrency: int | None, floor: bool, measured: Sequence[int] = ()) -> str:
    """An SLO capacity as a reader must take it: ``4``; a floor (no level above it missed the target)
    ``≥ 1 (only c=1 measured)`` or ``≥ 4 (every level measured held, up to c=4)``; ``-`` without one."""
    if concurrency is None:
        return MISSING
    if not floor:
        return str(concurrency)
    if set(measured) <= {concurrency}:
        return f"≥ {concurrency} (only c={concurrency} measured)"
    return f"≥ {concurrency} (every level measured held, up to c={concurrency})"
