"""The rehearsal's plan, said before anything is created: with ``--model``, what each rig serves it on (with
``--workload``, at what context); each rig's phase, region (and the regions after it), instance type, model and
price; the rigs left out and why; the benchmark's command; the estimate (:mod:`.estimate`). Printed, and written as
``plan.json`` in the evidence folder."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, SkipValidation, field_serializer

from kit.files import Number, write_json
from rigs.rehearsal.estimate import Estimate, PhasePlan, describe

OFFLINE_NOTE = ("offline: a rehearsal of the flow in moto, not of the hardware; nothing is billed, and the estimate "
                "is what a real account would pay")


def lines(plans: Sequence[PhasePlan], then: Mapping[tuple[str, str], Sequence[str]], result: Estimate, *,
          offline: bool, bedrock_prices: Mapping[str, str], skipped: Mapping[str, str],
          no_big_model: Mapping[str, str], benchmark: str, model: str | None = None,
          sized: Sequence[str] = (), context_tokens: int | None = None) -> list[str]:
    """The plan as the terminal shows it. ``then``: (rig, phase) -> the regions tried after the first;
    ``bedrock_prices``: each Bedrock backend benchmarked too -> its token prices; ``model``: ``--model`` (None: each
    rig's catalog model), ``sized``: what each rig serves it on and why; ``context_tokens``: the context the
    workload asks of the rigs that serve any model (None: their own)."""
    out = ["Rehearsal plan" + (f" ({OFFLINE_NOTE})" if offline else "")]
    if model is not None:
        out.append(f"model: {model} on every rig that can serve it (python -m rigs fit --model {model} shows every "
                   "size)")
    if context_tokens is not None:
        out.append(f"context: {context_tokens:,} tokens, the workload's longest request as the benchmark counts it, "
                   f"on every rig that serves any model (-c max_model_len.<rig>={context_tokens}; never above the "
                   "model's longest)")
    if model is not None or context_tokens is not None:
        out += [f"  {line}" for line in sized]
    table = [_row(plan, then[(plan.rig, plan.phase)]) for plan in plans]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))] if table else []
    out += ["  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in table]
    out += [f"  {name:<10} {'':<5} benchmarked, nothing to deploy; billed per token ({price}), not in the estimate"
            for name, price in bedrock_prices.items()]
    out += [f"  {name}: skipped: {reason}" for name, reason in skipped.items()]
    out += [f"  {name}: no big model: {reason}" for name, reason in no_big_model.items()]
    out.append(f"benchmark: {benchmark}")
    out.append("estimate, an upper bound (every rig takes its full ready timeout):")
    out += [f"  {line}" for line in describe(result, model)]
    out += [f"  price: {price}" for price in sorted({p.price for p in plans if p.price})]
    return out


def _row(plan: PhasePlan, after: Sequence[str]) -> list[str]:
    return [plan.rig, plan.phase, plan.region + (f" (then {', '.join(after)})" if after else ""),
            plan.instance_type, plan.model_id,
            f"ready within {plan.ready_basis or f'{plan.ready_timeout_minutes} min'}",
            f"${plan.usd_per_hour:.4f}/h" if plan.usd_per_hour is not None else "unpriced"]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class PhaseCost(_Record):
    """One phase of the estimate: its rigs, how long they may take, what they cost."""

    phase: str
    rigs: list[str]
    ready_minutes: Number
    lane_minutes: Number
    minutes: Number
    usd: Number
    """What its priced rigs cost."""
    unpriced: list[str] = []
    """Its rigs whose size has no known price, not in ``usd``."""


class EstimateRecord(_Record):
    """The estimate, an upper bound: every rig takes its full ready timeout."""

    minutes: Number
    usd: Number
    backstop_usd: Number
    """What the priced rigs would cost if each ran to its lifetime limit."""
    unpriced: list[str] = []
    """The rigs whose size has no known price, in no figure here."""
    benchmark_allowance_minutes: Number
    destroy_allowance_minutes: Number
    phases: list[PhaseCost]


class PlanRecord(_Record):
    """``plan.json``: what the rehearsal said it would do before it created anything."""

    account: str
    offline: bool
    big: bool
    model: str | None
    """``--model``: the model every rig that can serves; None: each rig's catalog model."""
    sized: list[str]
    """With ``--model`` or ``--workload``, what each rig serves on (the size it fits) and why."""
    context_tokens: int | None = None
    """With ``--workload``, the context every rig that serves any model is served at (``-c max_model_len.<rig>``)."""
    phases: SkipValidation[list[PhasePlan]]
    """Each rig in each phase: its first region, instance type, model, ready timeout, lifetime and price (the
    estimate made them, typed)."""
    skipped: dict[str, str]
    no_big_model: dict[str, str]
    benchmark: str
    """The benchmark's command line."""
    estimate: EstimateRecord

    @field_serializer("phases")
    def _lane_in_the_estimate(self, phases: list[PhasePlan]) -> list[dict[str, Any]]:
        """Each plan's values as computed; a rig's quality-lane allowance is kept once, in the estimate's phases."""
        return [{k: v for k, v in dataclasses.asdict(p).items() if k != "lane_minutes"} for p in phases]


def record(plans: Sequence[PhasePlan], result: Estimate, *, account: str, offline: bool, big: bool,
           skipped: Mapping[str, str], no_big_model: Mapping[str, str], benchmark: str, model: str | None = None,
           sized: Sequence[str] = (), context_tokens: int | None = None) -> PlanRecord:
    """``plan.json``'s record (sums rounded to a hundredth of a cent, the lane's minutes to a hundredth)."""
    estimate = EstimateRecord(
        minutes=result.minutes, usd=round(result.usd, 4), backstop_usd=round(result.backstop_usd, 4),
        benchmark_allowance_minutes=result.benchmark_minutes, destroy_allowance_minutes=result.destroy_minutes,
        phases=[PhaseCost(phase=p.phase, rigs=list(p.rigs), ready_minutes=p.ready_minutes,
                          lane_minutes=round(p.lane_minutes, 2), minutes=p.minutes, usd=round(p.usd, 4),
                          unpriced=list(p.unpriced))
                for p in result.phases], unpriced=list(result.unpriced))
    return PlanRecord(account=account, offline=offline, big=big, model=model, sized=list(sized),
                      context_tokens=context_tokens, phases=list(plans),
                      skipped=dict(skipped),
                      no_big_model=dict(no_big_model), benchmark=benchmark, estimate=estimate)


def write(folder: Path, plan: PlanRecord) -> Path:
    """``plan.json`` in the evidence folder."""
    return write_json(folder / "plan.json", plan)
