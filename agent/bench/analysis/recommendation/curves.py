"""The cost curves of the monthly-cost plot: every way of serving the traffic the summary can price
(qualifying backends, disqualified ones marked, and the catalog's backends this run did not measure
at list price), as the parameters of their curves."""

from __future__ import annotations

from typing import Mapping

from ....kinds import PER_TOKEN, descriptor
from ...results.blocks.recommendation import CostCurve
from ...results.run import Prices
from ...results.summary import BackendSummary
from ..cost import monthly_24x7
from ..blocks.cost import measured_mix
from ..traffic import Traffic
from .offers import Offer


def _curve(offer: Offer, label: str, style: str, traffic: Traffic) -> CostCurve:
    hourly = offer.billing == "hourly"
    assert not hourly or offer.usd_per_hour is not None
    return CostCurve(
        name=offer.name, label=label, style=style, billing=offer.billing,
        usd_per_month_per_instance=monthly_24x7(offer.usd_per_hour) if hourly and offer.usd_per_hour else None,
        output_tokens_per_month_per_instance=offer.instance_volume(traffic)
        if hourly and offer.goodput_output_tok_per_s else None,
        usd_per_m_output=None if hourly else offer.usd_per_m_output_effective)


def cost_curves(backends: Mapping[str, BackendSummary], prices: Prices, disqualified: Mapping[str, str],
                traffic: Traffic) -> list[CostCurve]:
    """A measured backend with goodput within the target (dashed when disqualified), Bedrock at its
    list price when it was not run, each other per-token backend not run (Bedrock's OpenAI-compatible endpoint) at
    its list price, and each hourly backend not run at one instance (dotted)."""
    curves: list[CostCurve] = []
    for name, entry in backends.items():
        level = entry.slo.at_capacity() if entry.slo else None
        goodput = level.goodput_output_tok_per_s if level else None
        price = prices.of(name)
        if not goodput or goodput <= 0:
            continue
        offer = (Offer.priced(name, price.hourly, None, traffic, goodput_output_tok_per_s=goodput) if price.hourly
                 else Offer.priced(name, None, price.per_token, traffic, input_per_output=measured_mix(entry.slo,
                                                                                                     entry.chat)))
        if offer is not None:
            why = disqualified.get(name)
            curves.append(_curve(offer, f"{name} (disqualified)" if why else name,
                                 "disqualified" if why else "measured", traffic))
    ref = prices.bedrock_reference
    if ref and not any(descriptor(e.kind).pricing == PER_TOKEN for e in backends.values()):
        offer = Offer.priced("bedrock", None, ref, traffic, measured=False)
        assert offer is not None
        curves.append(_curve(offer, "bedrock (list price; not run)", "list_price", traffic))
    drawn = {c.name for c in curves}
    for name, entry in prices.not_run.items():
        if name in backends or name in drawn or not (entry.hourly or entry.per_token):
            continue
        offer = Offer.priced(name, entry.hourly, None if entry.hourly else entry.per_token, traffic, measured=False)
        assert offer is not None
        label = f"{name} (not run: at least 1 instance)" if entry.hourly else f"{name} (list price; not run)"
        curves.append(_curve(offer, label, "list_price", traffic))
    return curves
