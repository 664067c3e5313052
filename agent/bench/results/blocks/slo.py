"""The ``slo`` block (capacity under a latency target, with what that capacity costs) and the
``slo_pairs`` comparisons."""

from __future__ import annotations

from typing import Literal

from ..base import Frozen, Interval
from ..formatting import capacity


class TargetLimits(Frozen):
    """Per-request limits in ms (null: not set)."""

    ttft_p99_ms: float | None
    itl_p99_ms: float | None
    e2e_p99_ms: float | None

    def same_as(self, other: TargetLimits) -> bool:
        return self.model_dump() == other.model_dump()


class SloSearch(Frozen):
    """How the levels were chosen, and ``bracket``: [capacity, first level that missed]."""

    mode: str
    rule: str
    order: list[int]
    levels_measured: int
    max_concurrency: int | None
    max_levels: int | None
    budget_s: float | None
    seconds: float | None
    stopped: str | None
    bracket: tuple[int | None, int | None]
    exact: bool


class RepeatFigures(Frozen):
    repeat: int
    requests: int
    errors: int
    met: int
    wall_s: float
    goodput_req_per_s: float | None
    goodput_output_tok_per_s: float | None
    output_tok_per_s: float | None


class LevelIntervals(Frozen):
    """95% intervals: Student t over the repeats (``[v, v]`` with one repeat: not estimated), Wilson
    over the requests for the met share."""

    goodput_req_per_s: Interval | None
    goodput_output_tok_per_s: Interval | None
    output_tok_per_s: Interval | None
    met_share: Interval | None


class SloLevel(Frozen):
    concurrency: int
    repeats: int
    requests: int
    errors: int
    met: int
    met_share: float | None
    goodput_req_per_s: float | None
    goodput_output_tok_per_s: float | None
    output_tok_per_s: float | None
    ttft_p99_ms: float | None
    itl_p99_ms: float | None
    e2e_p99_ms: float | None
    ttft_p50_ms: float | None
    itl_p50_ms: float | None
    e2e_p50_ms: float | None
    holds: bool
    verdict: Literal["holds", "misses", "undecided"]
    planned_requests: int | None
    stopped: str | None
    missed_by: dict[str, int]
    one_piece_replies: int
    ci95: LevelIntervals
    per_repeat: list[RepeatFigures]
    goodput_input_tok_per_s: float | None = None
    """The prompt tokens of the requests that met the target per second (servers' usage; null when one lacks it)."""
    met_input_per_output: float | None = None
    """Prompt tokens per output token of the requests that met the target, as the servers counted them: the
    mix a per-token price is applied at (null when one of them lacks a count)."""
    stream_bytes_per_s: float | None = None
    """The stream bytes a second it carried: its responses' bytes read off the wire over each repeat's wall time,
    their mean (null where the client cannot tell: an AWS SDK call)."""
    bytes_per_token: float | None = None
    """Those bytes per output token."""
    from_rig: bool = False
    """Every request of it was sent by the rig's own load generator on the instance (``--load-from rig``): none
    crossed the tunnel, so it is never bound by it."""
    bound_by_tunnel: bool = False
    """It carried 70% or more of its port forwards' measured capacity: never taken as the server's capacity
    (``backends.<name>.tunnel``)."""

    def p99(self, key: str) -> float | None:
        """The level's p99 for a target key (``ttft_p99_ms``, ``itl_p99_ms``, ``e2e_p99_ms``)."""
        return {"ttft_p99_ms": self.ttft_p99_ms, "itl_p99_ms": self.itl_p99_ms, "e2e_p99_ms": self.e2e_p99_ms}[key]


class MonthlyCost(Frozen):
    billing: Literal["hourly", "per_token"]
    always_on_one_instance: float | None
    at_workload: float
    at_workload_ci95: tuple[float, float | None] | None
    """From the 95% interval of the goodput at the capacity (high null: unbounded); null where there is no
    interval (one repeat, or a per-token price)."""
    output_tokens_per_month: float
    low_if_capacity_higher: float | None = None
    """An hourly rig whose SLO capacity is a floor (:attr:`SloBlock.capacity_floor`): what it would cost if
    its real capacity were high enough for one instance to serve the peak. A bound from what was not
    measured, not a 95% interval; null when the capacity is not a floor or the cost is one instance already."""


class BreakEvenVsBedrock(Frozen):
    against: str
    bedrock_measured: bool
    bedrock_meets_target: bool | None
    bedrock_usd_per_m_output_effective: float
    output_tokens_per_month: int | None
    average_output_tok_per_s: float | None
    always_cheaper_from_output_tokens_per_month: int | None
    note: str


class SloBlock(Frozen):
    """A backend's capacity under the target and, added by the recommendation, what it costs there."""

    target: TargetLimits
    target_source: Literal["default", "option"]
    target_text: str
    target_basis: str
    attainment: float
    capacity_concurrency: int | None
    capacity_reason: str
    every_request_failed: bool
    """Every request measured failed: the target could not be judged (not "missed")."""
    search: SloSearch
    levels: list[SloLevel]
    usd_per_million_output_at_slo: float | None = None
    usd_per_million_output_at_slo_ci95: tuple[float | None, float | None] | None = None
    instances_for_peak: int | None = None
    instances_for_peak_ci95: tuple[int | None, int | None] | None = None
    monthly_usd: MonthlyCost | None = None
    break_even_vs_bedrock: BreakEvenVsBedrock | None = None
    cost_reason: str | None = None

    @property
    def capacity_floor(self) -> bool:
        """The capacity is only a floor: no level above it was seen to miss the target (every level measured
        held), so the real capacity may be higher."""
        return self.capacity_concurrency is not None and self.search.bracket[1] is None

    def capacity_text(self) -> str:
        """The capacity as a reader must take it: ``4``, or a floor, ``≥ 1 (only c=1 measured)``."""
        return capacity(self.capacity_concurrency, self.capacity_floor, [lv.concurrency for lv in self.levels])

    def at_capacity(self) -> SloLevel | None:
        """The level at the SLO capacity, or None."""
        if self.capacity_concurrency is None:
            return None
        return next((lv for lv in self.levels if lv.concurrency == self.capacity_concurrency), None)


class SloPair(Frozen):
    """Two backends compared on goodput (output tok/s) at their SLO capacity."""

    a: str
    b: str
    figure: str
    a_capacity: int | None
    b_capacity: int | None
    a_value: float | None
    b_value: float | None
    a_ci95: Interval | None
    b_ci95: Interval | None
    verdict: Literal["a", "b", "tie", "thin", "neither"]
    better: str | None
    reason: str
