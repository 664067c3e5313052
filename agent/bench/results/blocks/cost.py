"""The ``cost`` block ($ per million output tokens per level, 24x7 month, break-even against
Bedrock) and the ``ceiling`` block (the decode rate's bandwidth ceiling)."""

from __future__ import annotations

from typing import Literal

from ..base import Frozen


class CostAtLevel(Frozen):
    concurrency: int
    output_tok_per_s: float | None
    usd_per_m_output: float | None


class BreakEvenRow(Frozen):
    mix: str
    input_per_output: float
    bedrock_usd_per_m_output_effective: float
    output_tok_per_s: float
    monthly_output_tokens: int


class BreakEven(Frozen):
    against: str | None
    bedrock_usd_per_m_input: float
    bedrock_usd_per_m_output: float
    rows: list[BreakEvenRow]


class CostBlock(Frozen):
    billing: Literal["hourly", "per_token"] | None
    usd_per_hour: float | None
    price_source: str | None
    price_as_of: str | None
    per_concurrency: list[CostAtLevel]
    monthly_24x7_usd: float | None
    break_even: BreakEven | None
    input_per_output: float | None
    reason: str | None


class CeilingBlock(Frozen):
    device: str | None
    bandwidth_gb_s: float | None
    bandwidth_basis: str | None
    bytes_per_step_gb: float | None
    precision: str | None
    ceiling_tok_per_s: float | None
    measured_decode_tok_per_s: float | None
    share: float | None
    chip_ceiling_tok_per_s: float | None
    chip_share: float | None
    sources: list[str]
    reason: str | None
