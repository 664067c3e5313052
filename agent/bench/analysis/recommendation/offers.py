"""The cost model of the recommendation: what one way of serving the traffic costs a month at a
volume (an hourly rig, stepping by instances; a per-token service, a line), and the volumes where the
cheapest of several changes.

* **a rig billed by the hour** must serve the busiest hour within the target, so it needs
  ``n = ceil(peak output tok/s / goodput output tok/s at its SLO capacity)`` instances (at least
  one), each running all month: monthly = n x $/h x 730 h.
* **a per-token backend** (Bedrock) costs volume x (output $/M + input tokens per output token x
  input $/M) / 1e6 a month, at the mix it was measured at: the prompt and output tokens of its requests that met
  the target, as the server counted them (the workload's stated ``input_per_output`` only where nothing was
  measured: a list price, or a server that sent no usage).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from ...results.run import HourlyPrice, TokenPrice
from ..cost import bedrock_usd_per_million_output, monthly_24x7
from ..traffic import SECONDS_PER_MONTH, Traffic

MAX_STEPS = 20_000
"""At most this many instance steps per backend are examined for switch points."""


def effective_usd_per_m(price: TokenPrice, traffic: Traffic, input_per_output: float | None = None) -> float:
    """A per-token price per million output tokens at the measured input:output mix (``input_per_output``), else
    the workload's stated one."""
    mix = traffic.input_per_output if input_per_output is None else input_per_output
    return bedrock_usd_per_million_output(price.usd_per_m_input, price.usd_per_m_output, mix)


@dataclass(frozen=True, slots=True)
class Offer:
    """A priced way to serve the traffic: an hourly rig with its goodput, or a per-token service."""

    name: str
    billing: str
    usd_per_hour: float | None = None
    usd_per_m_output_effective: float | None = None
    """Per-token only: output $/M + input per output x input $/M at the workload's mix."""
    goodput_output_tok_per_s: float | None = None
    goodput_ci95: tuple[float, float] | None = None
    capacity_lower_bound: bool = False
    measured: bool = True
    input_per_output: float | None = None
    """Per-token only: the mix it is priced at, measured (None: the workload's stated one)."""

    @classmethod
    def priced(cls, name: str, hourly: HourlyPrice | None, per_token: TokenPrice | None, traffic: Traffic,
               **measured: Any) -> Offer | None:
        """Hourly when the backend has an hourly price, else per token at the measured input:output mix
        (``input_per_output`` in ``measured``; none: the workload's); None without either. ``measured`` holds
        the goodput fields (and ``measured=False`` for a list price alone)."""
        mix = measured.pop("input_per_output", None)
        if hourly:
            return cls(name, "hourly", usd_per_hour=float(hourly.usd_per_hour), **measured)
        if per_token:
            return cls(name, "per_token", usd_per_m_output_effective=effective_usd_per_m(per_token, traffic, mix),
                       input_per_output=mix, **measured)
        return None

    def instance_volume(self, traffic: Traffic) -> float:
        """The monthly volume one instance serves with its peak within the target."""
        assert self.goodput_output_tok_per_s
        return self.goodput_output_tok_per_s * SECONDS_PER_MONTH / traffic.peak_to_average

    def instances(self, volume: float, traffic: Traffic, goodput: float | None = None) -> int | None:
        if self.billing != "hourly":
            return None
        goodput = self.goodput_output_tok_per_s if goodput is None else goodput
        if not goodput or goodput <= 0:
            return None
        peak = volume / SECONDS_PER_MONTH * traffic.peak_to_average
        return max(1, math.ceil(peak / goodput - 1e-9))

    def monthly(self, volume: float, traffic: Traffic) -> float:
        if self.billing == "hourly":
            n = self.instances(volume, traffic)
            if n is None and not self.measured:
                n = 1  # not run: its capacity is unknown, so only the floor of one instance is known
            assert n is not None and self.usd_per_hour is not None
            return n * monthly_24x7(self.usd_per_hour)
        assert self.usd_per_m_output_effective is not None
        return volume * self.usd_per_m_output_effective / 1e6

    def monthly_interval(self, volume: float, traffic: Traffic) -> tuple[float, float | None] | None:
        """Low and high monthly cost from the goodput's 95% interval (high None: unbounded); None where
        there is none (no interval on the goodput, or a per-token price, which fixes the cost)."""
        ci = self.goodput_ci95
        if self.billing != "hourly" or not ci or ci[0] == ci[1]:
            return None
        assert self.usd_per_hour is not None
        unit = monthly_24x7(self.usd_per_hour)
        n_low = self.instances(volume, traffic, ci[1])
        n_high = self.instances(volume, traffic, ci[0]) if ci[0] > 0 else None
        return (n_low or 1) * unit, None if n_high is None else n_high * unit

    def monthly_span(self, volume: float, traffic: Traffic) -> tuple[float, float | None]:
        """:meth:`monthly_interval`, or the cost itself where there is no interval."""
        cost = self.monthly(volume, traffic)
        return self.monthly_interval(volume, traffic) or (cost, cost)

    def low_if_capacity_higher(self, volume: float, traffic: Traffic) -> float | None:
        """An hourly rig whose capacity is only a floor: its cost if the real capacity let one instance serve
        the peak (a bound from what was not measured, not an interval); None when the capacity is measured,
        the price is per token, or one instance is the cost already."""
        if self.billing != "hourly" or not self.capacity_lower_bound:
            return None
        assert self.usd_per_hour is not None
        unit = monthly_24x7(self.usd_per_hour)
        return unit if self.monthly(volume, traffic) > unit else None


def _edges(offers: Sequence[Offer], traffic: Traffic, v_max: float) -> tuple[list[float], bool]:
    """Every instance boundary of the hourly offers up to ``v_max`` (and ``v_max``), and whether a
    backend had more than :data:`MAX_STEPS` of them."""
    truncated = False
    bounds = {v_max}
    for o in offers:
        if o.billing == "hourly":
            width = o.instance_volume(traffic)
            steps = int(v_max // width)
            if steps > MAX_STEPS:
                steps, truncated = MAX_STEPS, True
            bounds.update(k * width for k in range(1, steps + 1))
    return sorted(b for b in bounds if 0 < b <= v_max), truncated


def _crossings(offers: Sequence[Offer], traffic: Traffic, edges: Sequence[float]) -> set[float]:
    """Where a per-token line meets an hourly cost, which is constant between two edges."""
    points: set[float] = set()
    lines = [o for o in offers if o.billing != "hourly"]
    start = 0.0
    for end in edges:
        mid = (start + end) / 2
        constants = [o.monthly(mid, traffic) for o in offers if o.billing == "hourly"]
        for line in lines:
            slope = line.usd_per_m_output_effective / 1e6 if line.usd_per_m_output_effective else 0.0
            if slope <= 0:
                continue
            points.update(c / slope for c in constants if start < c / slope < end)
        start = end
    return points


def switch_points(offers: Sequence[Offer], traffic: Traffic, v_max: float) -> tuple[list[dict[str, Any]], bool]:
    """The volumes in (0, v_max] where the cheapest of ``offers`` changes.

    Hourly costs are steps (constant between instance boundaries k x one instance's volume);
    per-token costs are lines through the origin. Within each step every cost is constant or
    linear, so the changes are found exactly: at a boundary or where a line meets a constant.

    Returns:
        ``([{"output_tokens_per_month", "below", "above", "kind"}], truncated)``; ``truncated``
        is True when a backend had more than :data:`MAX_STEPS` instance steps in the range.
    """
    if len(offers) < 2 or v_max <= 0:
        return [], False
    edges, truncated = _edges(offers, traffic, v_max)
    out: list[dict[str, Any]] = []
    previous: Offer | None = None
    lo = 0.0
    for hi in sorted(set(edges) | _crossings(offers, traffic, edges)):
        mid = (lo + hi) / 2
        best = min(offers, key=lambda o: o.monthly(mid, traffic))
        if previous is not None and best.name != previous.name:
            kind = "instance step" if lo in edges else "crossing"
            out.append({"output_tokens_per_month": lo, "below": previous.name, "above": best.name, "kind": kind})
        previous, lo = best, hi
    return out, truncated


def break_even_volume(rig: Offer, per_token: Offer, traffic: Traffic) -> tuple[float | None, float | None, str]:
    """Where the hourly ``rig`` becomes cheaper than ``per_token`` for this traffic's shape.

    Returns ``(first, always, note)``: the lowest monthly volume at which the rig is cheaper, and
    the volume above which it stays cheaper (the two differ when an added instance makes the rig
    dearer again for a while). Both None when the per-token service is cheaper at every volume (its
    price per token is below the rig's with its instances fully used at the peak).
    """
    assert rig.usd_per_hour is not None and per_token.usd_per_m_output_effective
    per_token_usd = per_token.usd_per_m_output_effective / 1e6
    full_use_usd = monthly_24x7(rig.usd_per_hour) / rig.instance_volume(traffic)
    if per_token_usd <= full_use_usd:
        return None, None, (f"never: {per_token.name} costs ${per_token.usd_per_m_output_effective:.4g}/M output, "
                            f"less than {rig.name}'s ${full_use_usd * 1e6:.4g}/M with its instances fully used "
                            "at the peak")
    bound = monthly_24x7(rig.usd_per_hour) / (per_token_usd - full_use_usd) * 1.001
    changes, truncated = switch_points([rig, per_token], traffic, bound)
    ups = [c["output_tokens_per_month"] for c in changes if c["above"] == rig.name]
    if not ups:
        return None, None, "no crossing found"
    note = "approximate (too many instance steps to examine exactly)" if truncated else "exact"
    return ups[0], ups[-1], note
