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
is looked up elsewhere and saved with the evidence. The ``cost`` block of the summary is built from
these in :mod:`agent.bench.analysis.blocks.cost`.
"""

from __future__ import annotations

HOURS_PER_MONTH = 730.0


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
