"""The ``cost`` block of one backend: $ per million output tokens at each measured concurrency, the
24x7 month, and the break-even against Bedrock (formulas: :mod:`agent.bench.analysis.cost`)."""

from __future__ import annotations

import math
from typing import Sequence

from ...results.blocks.chat import ChatLevel, ChatSummary
from ...results.blocks.cost import BreakEven, BreakEvenRow, CostAtLevel, CostBlock
from ...results.blocks.slo import SloBlock
from ...results.run import HourlyPrice, TokenPrice
from ..cost import bedrock_usd_per_million_output, break_even_tok_per_s, monthly_24x7, monthly_tokens, \
    usd_per_million_output


def measured_mix(slo: SloBlock | None, chat: ChatSummary | None) -> float | None:
    """The backend's one measured input:output mix, prompt tokens per output token as its server counted them: of
    the requests that met the target at its SLO capacity, else of its timed chat requests (None: no usage). Every
    figure priced at a measured mix (a per-token price, the break-even, "Your traffic") uses this one."""
    level = slo.at_capacity() if slo else None
    if level is not None and level.met_input_per_output is not None:
        return level.met_input_per_output
    return chat.input_per_output if chat else None


def _at_level(level: ChatLevel, hourly: HourlyPrice | None, per_token: TokenPrice | None,
              input_per_output: float | None) -> CostAtLevel:
    rate = level.output_tok_per_s
    usd = None
    if rate and math.isfinite(rate) and rate > 0:
        if hourly:
            usd = usd_per_million_output(hourly.usd_per_hour, rate)
        elif per_token and input_per_output is not None:
            usd = bedrock_usd_per_million_output(per_token.usd_per_m_input, per_token.usd_per_m_output,
                                                 input_per_output)
    return CostAtLevel(concurrency=level.concurrency, output_tok_per_s=None if rate is None else round(rate, 2),
                       usd_per_m_output=None if usd is None else round(usd, 4))


def _break_even(hourly: HourlyPrice, bedrock: TokenPrice, input_per_output: float | None) -> BreakEven:
    mixes = [("output only", 0.0)] + ([("measured mix", input_per_output)] if input_per_output is not None else [])
    rows = []
    for label, mix in mixes:
        effective = bedrock_usd_per_million_output(bedrock.usd_per_m_input, bedrock.usd_per_m_output, mix)
        rate = break_even_tok_per_s(hourly.usd_per_hour, effective)
        rows.append(BreakEvenRow(mix=label, input_per_output=round(mix, 4),
                                 bedrock_usd_per_m_output_effective=round(effective, 6),
                                 output_tok_per_s=round(rate, 1), monthly_output_tokens=round(monthly_tokens(rate))))
    return BreakEven(against=bedrock.model_id, bedrock_usd_per_m_input=bedrock.usd_per_m_input,
                     bedrock_usd_per_m_output=bedrock.usd_per_m_output, rows=rows)


def cost_block(*, hourly: HourlyPrice | None, per_token: TokenPrice | None, levels: Sequence[ChatLevel],
               bedrock_price: TokenPrice | None, input_per_output: float | None) -> CostBlock:
    """The ``cost`` block of one backend's summary.

    Args:
        hourly: the price of an hourly-billed rig, else None.
        per_token: the per-token price of a per-token backend (Bedrock), else None.
        levels: the chat part's concurrency levels with their aggregate output rate.
        bedrock_price: Bedrock's per-token price to break even against (None: no break-even).
        input_per_output: the backend's measured input:output token mix (:func:`measured_mix`).
    """
    price = hourly or per_token
    priced = hourly is not None or per_token is not None
    return CostBlock(
        billing="hourly" if hourly else ("per_token" if per_token else None),
        usd_per_hour=hourly.usd_per_hour if hourly else None,
        price_source=price.source if price else None, price_as_of=price.as_of if price else None,
        per_concurrency=[_at_level(lv, hourly, per_token, input_per_output) for lv in levels] if priced else [],
        monthly_24x7_usd=round(monthly_24x7(hourly.usd_per_hour), 2) if hourly else None,
        break_even=_break_even(hourly, bedrock_price, input_per_output) if hourly and bedrock_price else None,
        input_per_output=None if input_per_output is None else round(input_per_output, 4),
        reason=None if priced else "no price on file for this backend")
