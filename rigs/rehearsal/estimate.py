"""What a rehearsal will cost and how long it will take, before anything is created.

An upper bound computed from the catalog, not a forecast: every rig is assumed to take its full
``ready_timeout_minutes`` (the longest ``rigs up`` waits for it), and the benchmark and the
destroy take the allowances below. The rigs of a phase come up in parallel and are benchmarked
together once the last is ready, so each bills for the phase's whole length:

    phase minutes = max(ready timeouts of the phase's rigs) + benchmark + quality lane + destroy
    phase cost    = sum(hourly price of each rig) x phase minutes / 60

The quality lane (``--demos ...,quality``, run by default in a rehearsal) sends its items to one
backend after another, so it adds each rig's lane allowance (:func:`lane_minutes`; Bedrock's too in
the small phase) to the phase every rig bills for.

With ``--big`` the small model's rigs are destroyed after their benchmark, and the rigs that have
a ``big`` variant come up again in a second phase computed the same way (with the variant's
ready timeout). The total is the sum of the phases. If everything failed, this command's own
clean-up included, each rig's lifetime limit (``max_hours``) stops it: ``backstop_usd`` is what
the rigs cost until then. Bedrock is billed per token and is not in the estimate (the plan says
so, with its price).

``--max-usd`` (``rigs up`` and ``rigs rehearse``) refuses to start when that backstop, every rig's
hourly price x its lifetime limit, is above the limit (:func:`over_limit`), each rig priced in the
priciest of the regions it may use (:func:`lifetime_plans`): before anything else is checked or set up
(:func:`cost_refusal`), so it needs no credentials (the Pricing API, else ``rigs/prices.yaml``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from rigs.catalog.model import DeployableRig
from rigs.catalog.pricing import PriceBook, PriceError
from rigs.catalog.runtimes import runtime as runtime_of
from rigs.sizing import readiness

BENCHMARK_ALLOWANCE_MINUTES = 20.0
"""Time allowed for the benchmark with its default options, on the rigs of one phase (an allowance)."""
DESTROY_ALLOWANCE_MINUTES = 10.0
"""Time allowed for ``cdk destroy`` of a phase's stacks: instances terminated, endpoints deleted (an allowance)."""
SMALL, BIG = "small", "big"


@dataclass(frozen=True, slots=True)
class PhasePlan:
    """One rig in one phase: where it goes first, what it serves, how long it may take to answer, its price."""

    rig: str
    phase: str
    """``small`` (the catalog's model) or ``big`` (the rig's ``big`` variant)."""
    region: str
    instance_type: str
    model_id: str
    ready_timeout_minutes: int
    max_hours: float
    usd_per_hour: float | None
    """None when no price is known (the plan says so; the estimate leaves the rig out)."""
    price: str = ""
    """Where the price comes from, one line."""
    lane_minutes: float = 0.0
    """The quality lane's allowance on this rig (0 when the benchmark does not run the lane)."""
    ready_basis: str = ""
    """How the ready timeout is made up: boot, the weights' download, the compile and their load
    (``rigs/sizing/readiness.py``)."""


@dataclass(frozen=True, slots=True)
class PhaseEstimate:
    phase: str
    rigs: tuple[str, ...]
    ready_minutes: float
    minutes: float
    usd: float
    """What its priced rigs cost (:attr:`unpriced` are not in it)."""
    lane_minutes: float = 0.0
    ready_basis: str = ""
    """The longest ready timeout's rig and how it is made up."""
    unpriced: tuple[str, ...] = ()
    """Its rigs whose size has no known price: the phase costs more than :attr:`usd` by what they cost."""


@dataclass(frozen=True, slots=True)
class Estimate:
    phases: tuple[PhaseEstimate, ...]
    benchmark_minutes: float
    destroy_minutes: float
    backstop_usd: float
    unpriced: tuple[str, ...] = field(default=())
    """The rigs whose size has no known price (each with its phase and size): no figure here counts them."""
    rigs: int = 0
    """How many rig plans it adds up (the unpriced among them too)."""

    @property
    def minutes(self) -> float:
        return sum(p.minutes for p in self.phases)

    @property
    def usd(self) -> float:
        return sum(p.usd for p in self.phases)


def lane_minutes(runtime: str, items: int) -> float:
    """The quality lane's allowance for ``items`` items on a backend of ``runtime`` (its
    ``quality_seconds_per_item``, :mod:`rigs.catalog.runtimes`)."""
    return items * runtime_of(runtime).quality_seconds_per_item / 60.0


def estimate(plans: Sequence[PhasePlan], benchmark_minutes: float = BENCHMARK_ALLOWANCE_MINUTES,
             destroy_minutes: float = DESTROY_ALLOWANCE_MINUTES, bedrock_lane_minutes: float = 0.0) -> Estimate:
    """The upper bound of time and cost for ``plans`` (see the module's docstring for the formulas);
    ``bedrock_lane_minutes``: the lane on Bedrock, benchmarked with the small phase."""
    phases = []
    for phase in (SMALL, BIG):
        members = [p for p in plans if p.phase == phase]
        if not members:
            continue
        longest = max(members, key=lambda p: p.ready_timeout_minutes)
        ready = longest.ready_timeout_minutes
        lane = sum(p.lane_minutes for p in members) + (bedrock_lane_minutes if phase == SMALL else 0.0)
        minutes = ready + benchmark_minutes + lane + destroy_minutes
        usd = sum(p.usd_per_hour for p in members if p.usd_per_hour is not None) * minutes / 60.0
        basis = f"{longest.rig}, {longest.ready_basis}" if longest.ready_basis else longest.rig
        phases.append(PhaseEstimate(phase, tuple(p.rig for p in members), ready, minutes, usd, lane, basis,
                                    tuple(f"{p.rig} ({p.instance_type})" for p in members if p.usd_per_hour is None)))
    backstop = sum(p.usd_per_hour * p.max_hours for p in plans if p.usd_per_hour is not None)
    unpriced = tuple(f"{p.rig} ({p.phase}, {p.instance_type})" for p in plans if p.usd_per_hour is None)
    return Estimate(tuple(phases), benchmark_minutes, destroy_minutes, backstop, unpriced, len(plans))


def duration(minutes: float) -> str:
    """``70 min``, ``2 h 30 min``."""
    whole = round(minutes)
    return f"{whole} min" if whole < 60 else f"{whole // 60} h {whole % 60:02d} min"


def cost(bound: str, usd: float, unpriced: Sequence[str], rigs: int) -> str:
    """``up to $1.23``; where some rigs have no price, what the priced ones cost and that the others are unpriced;
    where none has, ``unpriced``: never a dollar figure that leaves a rig out without saying so."""
    if not unpriced:
        return f"{bound} ${usd:.2f}"
    if len(unpriced) >= rigs:
        return f"unpriced ({', '.join(unpriced)}: no price known)"
    return f"{bound} ${usd:.2f} for the priced rigs, plus unpriced {', '.join(unpriced)}"


def describe(result: Estimate, model: str | None = None) -> list[str]:
    """The estimate in a few lines, each figure with what it rests on (``model``: ``--model``, the small phase's
    model; None: the catalog's). A rig whose size has no known price is said ``unpriced`` wherever a figure leaves
    it out (:func:`cost`)."""
    lines = []
    for phase in result.phases:
        named = (model or "the catalog's model") if phase.phase == SMALL else "the big variant"
        lane = f", the quality lane {phase.lane_minutes:.0f}" if phase.lane_minutes else ""
        lines.append(f"{phase.phase} model ({named}; {', '.join(phase.rigs)}): up to {duration(phase.minutes)} "
                     f"(ready within {phase.ready_minutes:g} min, the longest ready timeout ({phase.ready_basis}); "
                     f"benchmark "
                     f"{result.benchmark_minutes:g}{lane} and destroy {result.destroy_minutes:g} min, allowances), "
                     + cost("up to", phase.usd, phase.unpriced, len(phase.rigs)))
    every = tuple(rig for phase in result.phases for rig in phase.unpriced)
    if len(result.phases) > 1:
        lines.append(f"total: up to {duration(result.minutes)}, "
                     + cost("up to", result.usd, every, sum(len(p.rigs) for p in result.phases)))
    lines.append("if everything failed, this command's clean-up included, the lifetime limit stops each rig: "
                 + cost("at most", result.backstop_usd, result.unpriced, result.rigs))
    return lines


def lifetime_plans(rigs: Sequence[DeployableRig], hourly: Callable[[DeployableRig, str], tuple[float | None, str]],
                   max_hours: float | None = None, phase: str = SMALL) -> list[PhasePlan]:
    """One plan per rig for its lifetime bound: the priciest of its catalog regions (``hourly`` gives the price and
    where it comes from, None when unknown), its lifetime limit (``max_hours``, else the catalog's)."""
    plans = []
    for rig in rigs:
        priced = [(hourly(rig, region), region) for region in rig.regions]  # the catalog lists one at least
        (usd, where), region = max(priced, key=lambda item: -1.0 if item[0][0] is None else item[0][0])
        plans.append(PhasePlan(rig=rig.name, phase=phase, region=region, instance_type=rig.instance_type,
                               model_id=rig.model_id, ready_timeout_minutes=rig.ready_timeout_minutes,
                               ready_basis=readiness.describe(rig),
                               max_hours=max_hours or rig.max_hours, usd_per_hour=usd, price=where))
    return plans


def cost_refusal(book: PriceBook, max_usd: float, max_hours: float | None, small: Sequence[DeployableRig],
                 big: Sequence[DeployableRig] = ()) -> str | None:
    """``--max-usd``, checked before anything else: the refusal when the rigs (``big``: the big variants a rehearsal
    moves to) could cost more than ``max_usd`` until their lifetime limits stop them, each in the priciest region it
    may use (``book``'s prices); None within it."""

    def hourly(rig: DeployableRig, region: str) -> tuple[float | None, str]:
        try:
            price = book.hourly_price(rig, region)
        except PriceError as exc:
            return None, str(exc)
        return price.usd_per_hour, price.describe()

    plans = lifetime_plans(small, hourly, max_hours) + lifetime_plans(big, hourly, max_hours, BIG)
    return over_limit(estimate(plans), max_usd)


def over_limit(result: Estimate, max_usd: float) -> str | None:
    """The one line that refuses to start when the rigs could cost more than ``max_usd`` (None: within it).

    The bound is the backstop: every rig's hourly price x its lifetime limit. A rig without a known price
    cannot be bounded, so it refuses too.
    """
    if result.unpriced:
        return (f"--max-usd {max_usd:g}: no price known for {', '.join(result.unpriced)}, so the cost cannot be "
                "bounded; nothing deployed")
    if result.backstop_usd <= max_usd:
        return None
    return (f"--max-usd {max_usd:g}: the rigs could cost up to ${result.backstop_usd:.2f} (each rig's hourly price x "
            f"its lifetime limit), ${result.backstop_usd - max_usd:.2f} above the limit; nothing deployed (lower "
            "--max-hours, leave rigs out, or raise --max-usd)")
