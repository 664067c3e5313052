"""The open loop: requests sent on a schedule, not when the last one is answered, so a server that falls
behind builds a queue instead of slowing the sender (coordinated omission, which a closed loop has by design).

* **The rate one instance must carry at the peak** (``--rate peak``, :func:`per_instance_rate`): an hourly rig
  needs ``n = ceil(peak output tok/s / goodput at its SLO capacity)`` instances (the recommendation's rule), so
  each carries ``peak req/s / n``; a per-token service carries the whole peak.
* **The block** (:func:`open_loop_block`): every request's lag (actual send minus scheduled send; a session's
  later turn is due its think time after the reply before it), the realized rate from the actual sends and the
  gaps' CV from the arrivals' (a session's first turn), the p99s over the window, and its two halves by when
  their requests were due. Each half **attains** when at least 99% of its requests met the target (as a
  level holds, :mod:`agent.bench.analysis.slo`). **holds**: both halves attain; **not sustaining**: the first
  half attains and the second does not (the server keeps up for a while, then a queue builds or it slows);
  **misses**: the first half does not; **undecided**: a half has no request that succeeded.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Mapping, Sequence

from ..results.blocks.open_loop import OpenLoopBlock, OpenLoopHalf
from ..results.records import TimingRecord
from ..tasks.arrivals import gaps_cv, realized_rate
from . import stats
from .blocks.capacity import capacity_of, chat_levels
from .blocks.chat import prompt_cache
from .blocks.levels import level_block, wire_figures
from .slo import RequestFigures, Target, attains, missed_limits, request_figures

if TYPE_CHECKING:
    from ..results.blocks.slo import SloLevel
    from ..results.run import LevelLog, OpenLoopLog

LAG_LIMIT_MS = 10.0
"""A sender whose p99 lag is above this fell behind its schedule; the report says so."""
RESOLUTION_S = 1e-6
"""The records' time resolution (``scheduled_s`` and ``sent_s`` are rounded to the microsecond)."""


def per_instance_rate(peak_req_per_s: float, peak_output_tok_per_s: float,
                      goodput_output_tok_per_s: float | None) -> tuple[float, int | None]:
    """``(requests per second one instance carries at the peak, instances)``; ``goodput`` None: a per-token
    service, which carries the whole peak (instances None)."""
    if goodput_output_tok_per_s is None:
        return peak_req_per_s, None
    instances = max(1, math.ceil(peak_output_tok_per_s / goodput_output_tok_per_s - 1e-9))
    return peak_req_per_s / instances, instances


def capacity_level(records: Sequence[TimingRecord], target: Target,
                   logs: Mapping[int, LevelLog] | None = None) -> SloLevel | None:
    """The chat level at the SLO capacity of one backend's chat records (as the ``slo`` block finds it)."""
    by_level = chat_levels(records)
    levels = [level_block(c, by_level[c], target, (logs or {}).get(c)) for c in sorted(by_level)]
    capacity, _ = capacity_of(levels)
    return next((lv for lv in levels if lv.concurrency == capacity), None)


def _p(values: Sequence[float], p: int, digits: int = 3) -> float | None:
    return stats.round_or_none(stats.percentile(values, p), digits)


def _figures(records: Sequence[TimingRecord]) -> list[RequestFigures]:
    return [request_figures(r) for r in records]


def _half(records: Sequence[TimingRecord], target: Target) -> OpenLoopHalf:
    figures = _figures(records)
    met = sum(1 for f in figures if not missed_limits(f, target))
    ok = [f for f in figures if f.ok]
    return OpenLoopHalf(
        requests=len(records), met=met, attains=attains(met, len(records)),
        ttft_p99_ms=_p([f.ttft_ms for f in ok if f.ttft_ms is not None], 99),
        itl_p99_ms=_p([f.itl_ms for f in ok if f.itl_ms is not None], 99),
        e2e_p99_ms=_p([f.e2e_ms for f in ok if f.e2e_ms is not None], 99))


def _verdict(first: OpenLoopHalf, second: OpenLoopHalf, ok: Sequence[int]) -> str:
    if not all(ok):
        return "undecided"
    if first.attains and second.attains:
        return "holds"
    return "not_sustaining" if first.attains else "misses"


def _half_text(name: str, half: OpenLoopHalf) -> str:
    p99 = f", TTFT p99 {half.ttft_p99_ms:,.0f} ms" if half.ttft_p99_ms is not None else ""
    return f"{name} {half.met}/{half.requests} met it{p99}"


def _reason(verdict: str, first: OpenLoopHalf, second: OpenLoopHalf) -> str:
    halves = f"{_half_text('first half', first)}; {_half_text('second half', second)}"
    return {
        "holds": f"held the target through the window ({halves})",
        "not_sustaining": f"not sustaining: the first half met the target and the second did not ({halves})",
        "misses": f"missed the target from the first half on ({halves})",
        "undecided": f"undecided: a half of the window had no request that succeeded ({halves})",
    }[verdict]


def _behind(lag_p99_ms: float | None, log: OpenLoopLog) -> str | None:
    if lag_p99_ms is None or lag_p99_ms <= LAG_LIMIT_MS:
        return None
    return (f"the sender fell behind its schedule (p99 lag {lag_p99_ms:,.1f} ms, over {LAG_LIMIT_MS:g} ms): the "
            f"machine running the benchmark was too busy, or {log.max_in_flight} requests were in flight and the "
            "next waited for one to end; each request is judged from when it was really sent")


def open_loop_block(records: Sequence[TimingRecord], log: OpenLoopLog, target: Target) -> OpenLoopBlock | None:
    """``backends.<name>.open_loop`` from the backend's open-loop records and its ``run.json`` log."""
    if not records:
        return None
    records = sorted(records, key=lambda r: (r.scheduled_s if r.scheduled_s is not None else r.sent_s, r.run))
    due = [r.scheduled_s if r.scheduled_s is not None else r.sent_s for r in records]
    # Less half the records' resolution (they keep due times to the microsecond): a request due at the very middle
    # is the second half's, where rounding both due times could otherwise put it a hair before.
    middle = due[0] + log.duration_s / 2 - RESOLUTION_S / 2
    first = [r for r, t in zip(records, due) if t < middle]
    second = [r for r, t in zip(records, due) if t >= middle]
    halves = _half(first, target), _half(second, target)
    figures = _figures(records)
    ok = [f for f in figures if f.ok]
    met = [f for f in figures if not missed_limits(f, target)]
    sends = sorted(r.sent_s for r in records)
    arrivals = sorted(r.sent_s for r in records if (r.turn or 1) == 1)
    lags = [(r.sent_s - t) * 1000.0 for r, t in zip(records, due)]
    verdict = _verdict(*halves, [any(not r.error for r in half) for half in (first, second)])
    window = log.duration_s
    lag_p99 = _p(lags, 99)
    rate, cv = realized_rate(sends), gaps_cv(arrivals)
    return OpenLoopBlock(
        mode=log.mode, rate_req_per_s=log.rate_req_per_s, rate_basis=log.rate_basis, arrival=log.arrival,
        burstiness=log.burstiness, duration_s=window, planned=log.planned, turns=log.turns,
        session_rate_per_s=log.session_rate_per_s, sessions=len(arrivals) if log.turns else None, sent=len(records),
        errors=sum(1 for f in figures if not f.ok), met=len(met), met_share=round(len(met) / len(records), 4),
        goodput_req_per_s=round(len(met) / window, 3) if window > 0 else None,
        goodput_output_tok_per_s=round(sum(f.output_tokens or 0 for f in met) / window, 2) if window > 0 else None,
        realized_rate_req_per_s=stats.round_or_none(rate, 3), inter_arrival_cv=stats.round_or_none(cv, 3),
        asked_cv=_asked_cv(log), lag_p50_ms=_p(lags, 50), lag_p99_ms=lag_p99, lag_max_ms=_p(lags, 100),
        max_in_flight=max(r.concurrency for r in records),
        ttft_p99_ms=_p([f.ttft_ms for f in ok if f.ttft_ms is not None], 99),
        itl_p99_ms=_p([f.itl_ms for f in ok if f.itl_ms is not None], 99),
        e2e_p99_ms=_p([f.e2e_ms for f in ok if f.e2e_ms is not None], 99),
        ttft_p50_ms=_p([f.ttft_ms for f in ok if f.ttft_ms is not None], 50),
        first_half=halves[0], second_half=halves[1], verdict=verdict, reason=_reason(verdict, *halves),  # type: ignore[arg-type]
        behind=_behind(lag_p99, log), prompt_cache=prompt_cache(records),
        **dict(zip(("stream_bytes_per_s", "bytes_per_token"), wire_figures(records))))


def _asked_cv(log: OpenLoopLog) -> float | None:
    if log.mode != "rate":
        return None
    return {"constant": 0.0, "poisson": 1.0}.get(log.arrival, round(1 / math.sqrt(log.burstiness or 1.0), 3))
