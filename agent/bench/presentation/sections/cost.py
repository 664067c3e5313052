"""The cost section: each backend's price and where it came from, $ per million output tokens per
concurrency level, and the 24x7 month with the break-even against Bedrock; then the bandwidth-ceiling
section: each backend's decode ceiling from memory bandwidth, the measured decode rate as a share of
it, and the sources of every device and model figure."""

from __future__ import annotations

from ...results.formatting import MISSING, cell, percent
from ...results.run import BackendPrice
from ...results.summary import Summary
from ..labels import backend_label
from ..markdown import table


def tier(service_tier: str | None) -> str:
    """``, Standard tier``: the Bedrock service tier a price is for (a price recorded before tiers: Standard)."""
    return f", {(service_tier or 'standard').capitalize()} tier"


def _price_row(label: str, p: BackendPrice, fallback: str | None) -> list[str]:
    price = p.hourly or p.per_token
    if price is None:
        return [label, MISSING, MISSING, MISSING, p.reason or fallback or MISSING]
    given = price.model_dump()
    what = (f"${given['usd_per_hour']}/h {given.get('instance_type', '')}" if p.hourly
            else f"${given['usd_per_m_input']}/M in, ${given['usd_per_m_output']}/M out{tier(given.get('service_tier'))}")
    where = f"{given.get('region', '')} {given.get('note', '')}".strip()
    return [label, what, str(given.get("source")), str(given.get("as_of")), where or MISSING]


def _prices(summary: Summary) -> list[str]:
    prices = summary.prices
    out = []
    if prices.offline:
        out += [f"**Prices come from the dated offline price file** ({prices.offline_reason or 'offline'}), "
                "not from the Pricing API.", ""]
    rows = [_price_row(backend_label(summary, n), prices.of(n), b.cost.reason) for n, b in summary.backends.items()]
    out += table(["backend", "price", "source", "as of", "region / note"], rows)
    ref = prices.bedrock_reference
    if ref:
        out += ["", f"Break-even is against Bedrock {ref.model_id}{tier(ref.service_tier)}: ${ref.usd_per_m_input}/M input, "
                f"${ref.usd_per_m_output}/M output ({ref.source}, as of {ref.as_of})."]
    return out + [""]


def _monthly(summary: Summary) -> list[str]:
    rows = []
    for n, b in summary.backends.items():
        cost = b.cost
        if cost.monthly_24x7_usd is None:
            continue
        for r in (cost.break_even.rows if cost.break_even else [None]):
            rows.append([backend_label(summary, n), cell(cost.usd_per_hour, 4), cell(cost.monthly_24x7_usd, 2),
                         r.mix if r else MISSING, cell(r.input_per_output if r else None, 3),
                         cell(r.bedrock_usd_per_m_output_effective if r else None, 4),
                         cell(r.output_tok_per_s if r else None), cell(r.monthly_output_tokens if r else None)])
    if not rows:
        return []
    return ["24x7 monthly cost and break-even against Bedrock (input:output mix stated per row):", ""] + table(
        ["backend", "$/h", "24x7 $/month (730 h)", "mix", "input tokens per output token",
         "Bedrock $/M output at that mix", "break-even output tok/s", "break-even tokens/month"], rows) + [""]


CEILING_HEADER = ["backend", "device", "GB/s", "basis", "precision", "GB per step", "ceiling tok/s",
                  "measured decode p50", "share", "share of whole chip", "note"]


def ceiling(summary: Summary) -> list[str]:
    """The bandwidth-ceiling section."""
    rows, sources = [], []
    for n, b in summary.backends.items():
        c = b.ceiling
        rows.append([backend_label(summary, n), c.device or MISSING, cell(c.bandwidth_gb_s, 0),
                     c.bandwidth_basis or MISSING, c.precision or MISSING, cell(c.bytes_per_step_gb, 2),
                     cell(c.ceiling_tok_per_s), cell(c.measured_decode_tok_per_s), percent(c.share),
                     percent(c.chip_share), c.reason or ""])
        sources += [s for s in c.sources if s not in sources]
    return (["## Bandwidth ceiling", ""] + table(CEILING_HEADER, rows) + ["", "Sources:", ""]
            + [f"- {s}" for s in sources] + [""])


def section(summary: Summary) -> list[str]:
    """The cost section, then the bandwidth-ceiling section."""
    out = ["## Cost", ""] + _prices(summary)
    rows = [[backend_label(summary, n), lv.concurrency, cell(lv.output_tok_per_s), cell(lv.usd_per_m_output, 3)]
            for n, b in summary.backends.items() for lv in b.cost.per_concurrency]
    if rows:
        out += table(["backend", "concurrency", "output tok/s", "$ per M output tokens"], rows) + [""]
    return out + _monthly(summary) + ceiling(summary)
