"""What each backend's capacity costs at the user's workload: the keys the recommendation adds to
``backends.<name>.slo`` (``$/M`` at the target, instances for the peak, the month, the break-even
against Bedrock), and the one-line account of each qualifying backend's monthly cost."""

from __future__ import annotations

from typing import Any

from ...results.blocks.slo import BreakEvenVsBedrock, MonthlyCost
from ...results.formatting import usd, volume as describe_volume
from ..cost import monthly_24x7, usd_per_million_output
from ..traffic import SECONDS_PER_MONTH, Traffic
from .assess import Assessed
from .offers import Offer, break_even_volume

NO_COSTS = {"usd_per_million_output_at_slo": None, "usd_per_million_output_at_slo_ci95": None,
            "instances_for_peak": None, "instances_for_peak_ci95": None, "monthly_usd": None,
            "break_even_vs_bedrock": None}


def money_line(b: Assessed, traffic: Traffic) -> str:
    """``g6: $587.50 a month: 1 instance at $0.8048/h x 730 h, each with ...``: the 95% interval where there
    is one, and apart from it the bound of a capacity that is only a floor."""
    o, slo = b.offer, b.entry.slo
    assert o is not None and b.level is not None and slo is not None
    volume = traffic.output_tokens_per_month
    interval = o.monthly_interval(volume, traffic)
    span = "" if interval is None else (f" [95% CI {usd(interval[0])}, "
                                        f"{usd(interval[1]) if interval[1] is not None else 'unbounded'}]")
    ci = o.goodput_ci95
    ci_text = f" [{ci[0]:,.1f}, {ci[1]:,.1f}]" if ci and ci[0] != ci[1] else ""
    if o.billing == "hourly":
        n = o.instances(volume, traffic)
        low = o.low_if_capacity_higher(volume, traffic)
        bound = "" if low is None else (f"; its capacity is only a floor, so it could cost as little as {usd(low)} "
                                        "(one instance) if the real capacity is higher")
        return (f"{b.name}: {usd(o.monthly(volume, traffic))} a month{span}: {n} instance{'' if n == 1 else 's'} at "
                f"${o.usd_per_hour}/h x 730 h, each with an SLO capacity of {slo.capacity_text()} and a goodput of "
                f"{o.goodput_output_tok_per_s:,.1f}{ci_text} output tok/s within the target, against the "
                f"{traffic.peak_output_tok_per_s:,.1f} tok/s of the busiest hour{bound}")
    mix = (f"{o.input_per_output:.3g} input tokens per output token, as measured" if o.input_per_output is not None
           else f"the stated {traffic.input_per_output:g} input tokens per output token (no usage measured)")
    return (f"{b.name}: {usd(o.monthly(volume, traffic))} a month: {describe_volume(volume)} output tokens x "
            f"${o.usd_per_m_output_effective:.4g}/M (output price + {mix}); meets the target up to "
            f"c={b.level.concurrency} "
            f"({o.goodput_output_tok_per_s:,.1f}{ci_text} output tok/s)")


def _hourly(o: Offer, g: float, ci: tuple[float, float] | None, traffic: Traffic) -> dict[str, Any]:
    assert o.usd_per_hour is not None
    volume = traffic.output_tokens_per_month
    out: dict[str, Any] = {"usd_per_million_output_at_slo": round(usd_per_million_output(o.usd_per_hour, g), 4),
                           "instances_for_peak": o.instances(volume, traffic)}
    if ci:
        out["usd_per_million_output_at_slo_ci95"] = (
            round(usd_per_million_output(o.usd_per_hour, ci[1]), 4) if ci[1] > 0 else None,
            round(usd_per_million_output(o.usd_per_hour, ci[0]), 4) if ci[0] > 0 else None)
        out["instances_for_peak_ci95"] = (o.instances(volume, traffic, ci[1]),
                                          o.instances(volume, traffic, ci[0]) if ci[0] > 0 else None)
    return out


def _break_even(o: Offer, bedrock: Offer, bedrock_meets: bool | None, traffic: Traffic) -> BreakEvenVsBedrock:
    v, always, note = break_even_volume(o, bedrock, traffic)
    return BreakEvenVsBedrock(
        against=bedrock.name, bedrock_measured=bedrock.measured, bedrock_meets_target=bedrock_meets,
        bedrock_usd_per_m_output_effective=round(bedrock.usd_per_m_output_effective or 0.0, 6),
        output_tokens_per_month=None if v is None else round(v),
        average_output_tok_per_s=None if v is None else round(v / SECONDS_PER_MONTH, 1),
        always_cheaper_from_output_tokens_per_month=None if always is None else round(always), note=note)


def slo_costs(b: Assessed, traffic: Traffic, bedrock: Offer | None, bedrock_meets: bool | None) -> dict[str, Any]:
    """The keys this module adds to ``backends.<name>.slo``."""
    o, level = b.offer, b.level
    if o is None or level is None:
        return {**NO_COSTS, "cost_reason": b.disqualified or "no price"}
    volume = traffic.output_tokens_per_month
    g = o.goodput_output_tok_per_s
    assert g is not None
    out: dict[str, Any] = {**NO_COSTS, "cost_reason": None}
    if o.billing == "hourly":
        assert o.usd_per_hour is not None
        out.update(_hourly(o, g, o.goodput_ci95, traffic))
        always_on: float | None = monthly_24x7(o.usd_per_hour)
    else:
        assert o.usd_per_m_output_effective is not None
        total = level.output_tok_per_s or g
        out["usd_per_million_output_at_slo"] = round(o.usd_per_m_output_effective * max(1.0, total / g), 4)
        always_on = None
    interval = o.monthly_interval(volume, traffic)
    low = o.low_if_capacity_higher(volume, traffic)
    out["monthly_usd"] = MonthlyCost(
        billing=o.billing, always_on_one_instance=None if always_on is None else round(always_on, 2),
        at_workload=round(o.monthly(volume, traffic), 2),
        at_workload_ci95=None if interval is None else (round(interval[0], 2),
                                                        None if interval[1] is None else round(interval[1], 2)),
        output_tokens_per_month=volume, low_if_capacity_higher=None if low is None else round(low, 2))
    if o.billing == "hourly" and bedrock is not None:
        out["break_even_vs_bedrock"] = _break_even(o, bedrock, bedrock_meets, traffic)
    return out
