"""Cost arithmetic: pure functions of explicit prices and measured rates.

* $ per million output tokens = $/h / (output tok/s x 3600) x 1e6, at each measured
  concurrency (the reference's formula, docs/reference-run.md "Cost arithmetic");
* 24x7 monthly cost = $/h x 730 h;
* Bedrock's price per output token at an input:output mix ``m`` (input tokens per output
  token) = (output $/M + m x input $/M) / 1e6;
* break-even against Bedrock: the sustained output tok/s above which an hourly-billed rig is
  cheaper = $/h / (Bedrock $ per output token x 3600), and the monthly output tokens that rate
  sustains over 730 h.

Prices come in as numbers; where they were read from (Pricing API or the dated offline file)
is looked up elsewhere and saved with the evidence.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

HOURS_PER_MONTH = 730.0


def prices_of(prices: Mapping[str, Any], name: str) -> tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]:
    """``(hourly, per_token)`` price entries of backend ``name`` in ``run.json``'s ``prices``."""
    entry = (prices.get("backends") or {}).get(name) or {}
    return entry.get("hourly"), entry.get("per_token")


def usd_per_million_output(usd_per_hour: float, output_tok_per_s: float) -> float:
    """$ per million output tokens for a rig billed by the hour at a sustained output rate."""
    if output_tok_per_s <= 0:
        raise ValueError("output tok/s must be positive")
    return usd_per_hour / (output_tok_per_s * 3600.0) * 1e6


def monthly_24x7(usd_per_hour: float, hours: float = HOURS_PER_MONTH) -> float:
    """Cost of running the rig around the clock for a month of 730 hours."""
    return usd_per_hour * hours


def bedrock_usd_per_million_output(usd_per_m_input: float, usd_per_m_output: float, input_per_output: float) -> float:
    """Bedrock's cost per million output tokens when each output token brings ``input_per_output``
    input tokens with it."""
    return usd_per_m_output + input_per_output * usd_per_m_input


def break_even_tok_per_s(usd_per_hour: float, bedrock_usd_per_m_output_effective: float) -> float:
    """Sustained output tok/s above which the hourly rig costs less than Bedrock."""
    if bedrock_usd_per_m_output_effective <= 0:
        raise ValueError("Bedrock price must be positive")
    return usd_per_hour / (bedrock_usd_per_m_output_effective / 1e6 * 3600.0)


def monthly_tokens(tok_per_s: float, hours: float = HOURS_PER_MONTH) -> float:
    """Output tokens a sustained rate produces in a month of ``hours``."""
    return tok_per_s * 3600.0 * hours


def cost_block(
    *,
    hourly: Mapping[str, Any] | None,
    per_token: Mapping[str, Any] | None,
    levels: Sequence[Mapping[str, Any]],
    bedrock_price: Mapping[str, Any] | None,
    input_per_output: float | None,
) -> dict[str, Any]:
    """The ``cost`` block of one backend's summary.

    Args:
        hourly: ``{"usd_per_hour", "source", "as_of", ...}`` for an hourly-billed rig, else None.
        per_token: ``{"usd_per_m_input", "usd_per_m_output", ...}`` for a per-token backend (Bedrock).
        levels: ``[{"concurrency", "output_tok_per_s"}]`` measured by the chat benchmark.
        bedrock_price: Bedrock's per-token price to break even against (None: no break-even).
        input_per_output: The measured input:output token mix of this backend's chat requests.
    """
    out: dict[str, Any] = {
        "billing": "hourly" if hourly else ("per_token" if per_token else None),
        "usd_per_hour": hourly["usd_per_hour"] if hourly else None,
        "price_source": (hourly or per_token or {}).get("source"),
        "price_as_of": (hourly or per_token or {}).get("as_of"),
        "per_concurrency": [],
        "monthly_24x7_usd": None,
        "break_even": None,
        "input_per_output": None if input_per_output is None else round(input_per_output, 4),
        "reason": None,
    }
    if hourly is None and per_token is None:
        out["reason"] = "no price on file for this backend"
        return out
    for level in levels:
        rate = level.get("output_tok_per_s")
        usd = None
        if rate and math.isfinite(rate) and rate > 0:
            if hourly:
                usd = usd_per_million_output(hourly["usd_per_hour"], rate)
            elif per_token and input_per_output is not None:
                usd = bedrock_usd_per_million_output(
                    per_token["usd_per_m_input"], per_token["usd_per_m_output"], input_per_output
                )
        out["per_concurrency"].append(
            {
                "concurrency": level["concurrency"],
                "output_tok_per_s": None if rate is None else round(rate, 2),
                "usd_per_m_output": None if usd is None else round(usd, 4),
            }
        )
    if hourly:
        out["monthly_24x7_usd"] = round(monthly_24x7(hourly["usd_per_hour"]), 2)
        if bedrock_price:
            mixes = [("output only", 0.0)]
            if input_per_output is not None:
                mixes.append(("measured mix", input_per_output))
            rows = []
            for label, mix in mixes:
                effective = bedrock_usd_per_million_output(
                    bedrock_price["usd_per_m_input"], bedrock_price["usd_per_m_output"], mix
                )
                rate = break_even_tok_per_s(hourly["usd_per_hour"], effective)
                rows.append(
                    {
                        "mix": label,
                        "input_per_output": round(mix, 4),
                        "bedrock_usd_per_m_output_effective": round(effective, 6),
                        "output_tok_per_s": round(rate, 1),
                        "monthly_output_tokens": round(monthly_tokens(rate)),
                    }
                )
            out["break_even"] = {
                "against": bedrock_price.get("model_id"),
                "bedrock_usd_per_m_input": bedrock_price["usd_per_m_input"],
                "bedrock_usd_per_m_output": bedrock_price["usd_per_m_output"],
                "rows": rows,
            }
    return out
