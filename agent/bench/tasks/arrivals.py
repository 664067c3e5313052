"""When the open loop sends each request: the arrival schedule of a window at a rate, or of a trace's
timestamps. Pure and seeded: the same arguments give the same schedule, with no clock and no I/O.

* **constant**: one request every ``1 / rate`` seconds.
* **poisson**: exponential gaps (inter-arrival CV 1), the default of AIPerf's ``--arrival-pattern`` and
  vLLM's ``--burstiness 1``.
* **gamma**: gamma gaps of shape ``burstiness`` (CV ``1 / sqrt(burstiness)``; 1 is Poisson, below 1
  burstier, above 1 smoother), as vLLM's ``--burstiness`` and AIPerf's ``--arrival-smoothness`` shape them.

A window of ``duration_s`` at ``rate`` holds exactly ``round(rate x duration_s)`` requests (at least one):
their gaps are drawn from the process, then scaled together so that the window is ``duration_s`` long,
as JMeter's Poisson arrivals timer holds ``throughput x duration`` events in each duration. Scaling all
gaps by one factor keeps their CV, so the asked rate holds exactly and the shape of the process is kept;
without it the count of a 30 s Poisson window at 200 req/s would vary by 1.3% (one standard deviation)
from run to run. The first request goes at 0.
"""

from __future__ import annotations

import math
import random
from typing import Sequence

from ..results.constants import WORKLOAD_DEFAULTS

ARRIVALS = ("constant", "poisson", "gamma")
DEFAULT_ARRIVAL: str = WORKLOAD_DEFAULTS["arrival"]
DEFAULT_SEED = 0
"""Every backend of a run gets the same schedule, and so does every run."""


def _gaps(n: int, rate: float, arrival: str, burstiness: float, rng: random.Random) -> list[float]:
    if arrival == "constant":
        return [1.0 / rate] * n
    if arrival == "poisson":
        return [rng.expovariate(rate) for _ in range(n)]
    if arrival == "gamma":
        return [rng.gammavariate(burstiness, 1.0 / (burstiness * rate)) for _ in range(n)]
    raise ValueError(f"arrival {arrival!r}: give one of {', '.join(ARRIVALS)}")


def arrival_offsets(rate: float, duration_s: float, arrival: str = DEFAULT_ARRIVAL, burstiness: float = 1.0,
                    seed: int = DEFAULT_SEED) -> list[float]:
    """The send times, in seconds from the window's start, of a window of ``duration_s`` at ``rate``
    requests per second.

    Raises:
        ValueError: a rate, duration or shape that is not positive, or an unknown arrival process.
    """
    if not (rate > 0 and duration_s > 0 and burstiness > 0 and math.isfinite(rate * duration_s * burstiness)):
        raise ValueError("rate, duration and burstiness must be positive, finite numbers")
    n = max(1, round(rate * duration_s))
    gaps = _gaps(n, rate, arrival, burstiness, random.Random(seed))
    scale = duration_s / sum(gaps)
    out, t = [], 0.0
    for gap in gaps:
        out.append(t)
        t += gap * scale
    return out


def replay_offsets(timestamps_ms: Sequence[float], speed: float = 1.0) -> list[float]:
    """A trace's send times, in seconds from its first request: its timestamps (ms) divided by ``speed``
    (2 replays it twice as fast), in the trace's order.

    Raises:
        ValueError: no timestamps, a speed that is not positive, or timestamps that go back in time.
    """
    if not timestamps_ms:
        raise ValueError("the trace has no requests")
    if not speed > 0:
        raise ValueError("trace_speed must be more than 0")
    if any(b < a for a, b in zip(timestamps_ms, timestamps_ms[1:])):
        raise ValueError("the trace's timestamps must not decrease")
    first = timestamps_ms[0]
    return [(t - first) / 1000.0 / speed for t in timestamps_ms]


def gaps_cv(times: Sequence[float]) -> float | None:
    """The coefficient of variation (standard deviation over mean) of the gaps between ``times``; None for
    fewer than three times or gaps that sum to nothing."""
    gaps = [b - a for a, b in zip(times, times[1:])]
    if len(gaps) < 2:
        return None
    mean = sum(gaps) / len(gaps)
    if mean <= 0:
        return None
    variance = sum((g - mean) ** 2 for g in gaps) / (len(gaps) - 1)
    return math.sqrt(variance) / mean


def realized_rate(times: Sequence[float]) -> float | None:
    """Requests per second between the first and the last of ``times``: (n - 1) / span."""
    if len(times) < 2 or max(times) <= min(times):
        return None
    return (len(times) - 1) / (max(times) - min(times))
