"""Latency targets (SLOs): the target, its options, whether one request meets it, and the running
tally that stops a level once it can no longer hold. A level's figures and a backend's capacity are
in :mod:`agent.bench.analysis.blocks.levels` and :mod:`agent.bench.analysis.blocks.capacity`.

The definitions follow goodput as vLLM's benchmark (``--goodput``), GuideLLM (SLO attainment)
and DistServe (Zhong et al., OSDI 2024) define it; docs/capacity.md states them in full:

* A **target** is a limit per request on time to first token, inter-token latency and/or end
  to end, in ms, named for the share of requests that must meet it: ``ttft_p99_ms=1000`` reads
  "99% of requests see their first token within 1,000 ms" (GuideLLM's phrasing).
* A request **meets** the target when it succeeded (no ``error``) and every set limit holds for
  it. Its TTFT is the first content chunk's arrival (for a reply that arrives in one piece, the
  whole reply's arrival: that is when its reader sees the first token); its ITL is its mean gap
  between content chunks, (last - first) / (chunks - 1) (none for a one-piece reply, which then
  passes that limit); its e2e is the last byte. A failed request never meets it.
* A level **holds** when at least 99% of its requests met the target: ``100 x met >= 99 x
  requests``, failed requests included in ``requests`` (SLO attainment).
* **Goodput** = requests that met the target (and their output tokens) per second of the
  level's wall time, per repeat; a level's figure is the mean over its repeats with a 95%
  Student t interval (:func:`agent.bench.analysis.stats.mean_interval`).
* The **SLO capacity** is the highest concurrency that held with every lower level measured
  holding too (the first level that missed bounds it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Mapping

from ..results.constants import TARGET_KEYS
from ..results.target import ATTAINMENT_PERCENT, Target

if TYPE_CHECKING:
    from ..results.records import TimingRecord

METRIC_OF = {"ttft_p99_ms": "ttft_ms", "itl_p99_ms": "itl_ms", "e2e_p99_ms": "e2e_ms"}

DEFAULT_BASIS = (
    "interactive chat: the first words within 1 s, the limit within which a user's flow of thought "
    "stays uninterrupted (Nielsen, 'Response Times: The 3 Important Limits', 1993); then a new chunk "
    "at least every 100 ms, i.e. 10 tokens/s or more, about twice as fast as people read (238 words a "
    "minute, Brysbaert 2019, about 5 tokens/s); no end-to-end limit, since that depends on the reply's "
    "length. Looser than GuideLLM's chat-application example (TTFT 200 ms, ITL 50 ms for 99% of "
    "requests), which assumes a server next to its users rather than one reached through a tunnel"
)


# --- the target (:class:`~..results.target.Target`) -------------------------------------------


EXAMPLE = f"e.g. --slo {Target.default().spec()}"


def parse_target(text: str) -> Target:
    """``ttft_p99_ms=1000,itl_p99_ms=100`` as a :class:`Target`; only the keys given are set.

    Raises:
        ValueError: one line naming the problem and what to write instead.
    """
    limits: dict[str, float] = {}
    items = [p.strip() for p in text.split(",") if p.strip()]
    if not items:
        raise ValueError(f"give at least one limit, {EXAMPLE}")
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep:
            raise ValueError(f"{item!r} is not KEY=MS ({EXAMPLE})")
        if key not in TARGET_KEYS:
            raise ValueError(f"unknown limit {key!r}; use {', '.join(TARGET_KEYS)} ({EXAMPLE})")
        if key in limits:
            raise ValueError(f"{key} is given twice")
        try:
            ms = float(value)
        except ValueError:
            raise ValueError(f"{key}={value.strip()!r} is not a number of milliseconds ({EXAMPLE})") from None
        if not math.isfinite(ms) or ms <= 0:
            raise ValueError(f"{key}={value.strip()}: a limit must be a positive, finite number of milliseconds")
        limits[key] = ms
    return Target(**limits, source="option")


DEFAULT_REPEATS_WITH_TARGET = 3
DEFAULT_MAX_CONCURRENCY = 64
DEFAULT_BUDGET_S = 600.0


# --- one request ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RequestFigures:
    """What one chat record says about the target (ms; None where not measured)."""

    ok: bool
    ttft_ms: float | None
    itl_ms: float | None
    e2e_ms: float | None
    output_tokens: int | None


def request_figures(record: TimingRecord | Mapping[str, Any]) -> RequestFigures:
    """TTFT, mean inter-chunk gap and e2e of one chat record (its model, or the mapping a part emits),
    as the target judges them."""
    get = record.get if isinstance(record, Mapping) else partial(getattr, record)
    ok = not get("error")
    chunks = [c for c in (get("chunk_ms") or []) if c is not None]
    itl = (chunks[-1] - chunks[0]) / (len(chunks) - 1) if ok and len(chunks) >= 2 else None
    tokens = get("output_tokens")
    return RequestFigures(
        ok=ok,
        ttft_ms=get("first_ms") if ok else None,
        itl_ms=itl,
        e2e_ms=get("done_ms") if ok else None,
        output_tokens=tokens if ok and isinstance(tokens, int) else None,
    )


def missed_limits(fig: RequestFigures, target: Target) -> list[str]:
    """The set limits this request missed (``["error"]`` for a failed request); empty = it met the target."""
    if not fig.ok:
        return ["error"]
    out = []
    for key, limit in target.limits().items():
        value = getattr(fig, METRIC_OF[key])
        if value is None:
            if key == "itl_p99_ms":
                continue  # one piece or one chunk: no gap after the first token
            out.append(key)  # not measured: cannot be shown to meet it
        elif value > limit:
            out.append(key)
    return out


def request_met(record: TimingRecord | Mapping[str, Any], target: Target) -> bool:
    return not missed_limits(request_figures(record), target)


def attains(met: int, requests: int) -> bool:
    """Whether ``met`` of ``requests`` reach the attainment (99%), in integers: 100 x met >= 99 x n."""
    return requests > 0 and 100 * met >= ATTAINMENT_PERCENT * requests


def allowed_misses(planned: int) -> int:
    """Misses a level of ``planned`` requests can have and still hold: n - ceil(0.99 n) = floor(n / 100)."""
    return planned * (100 - ATTAINMENT_PERCENT) // 100


class LevelTally:
    """Running count of one level's requests while it runs, to stop it once it cannot hold."""

    def __init__(self, target: Target, planned: int) -> None:
        self.target = target
        self.planned = planned
        self.requests = 0
        self.met = 0

    def add(self, record: TimingRecord | Mapping[str, Any]) -> None:
        self.requests += 1
        self.met += request_met(record, self.target)

    @property
    def missed(self) -> int:
        return self.requests - self.met

    @property
    def decided_miss(self) -> bool:
        """More requests missed than the planned total allows: the level cannot hold any more."""
        return self.missed > allowed_misses(self.planned)

    @property
    def holds(self) -> bool:
        return self.requests >= self.planned and attains(self.met, self.requests)
