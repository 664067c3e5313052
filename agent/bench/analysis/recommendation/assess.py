"""What each measured backend offers for the user's traffic, and what keeps it from being chosen:
requests of the workload its token limits cannot take, no capacity under the target, no tool calls where the
workload needs them, an accuracy below the floor, an answer quality whose upper 95% bound is below the quality floor,
no price, a miss in the open loop at the rate it must carry; and what makes
the evidence thin (few requests, no repeats, an interval that reaches below a floor, a floor that
could not be checked)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ....kinds import PER_TOKEN, descriptor
from ...results.blocks.recommendation import Accuracy
from ...results.blocks.slo import SloBlock, SloLevel
from ...results.run import BackendInfo, Prices
from ...results.summary import BackendSummary
from ..open_loop import per_instance_rate
from ..blocks.cost import measured_mix
from ..traffic import Traffic
from .offers import Offer

MIN_REQUESTS_AT_CAPACITY = 10
"""Fewer requests than this at a backend's capacity level is too thin to choose it."""


@dataclass
class Assessed:
    name: str
    info: BackendInfo | None
    entry: BackendSummary
    offer: Offer | None = None
    level: SloLevel | None = None
    disqualified: str | None = None
    thin: list[str] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)
    accuracy: Accuracy | None = None
    quality: Accuracy | None = None
    open_loop: str | None = None
    """``held the target under ... arrivals at ...``: where the open loop ran at the rate it must carry, or more."""

    @property
    def met_target(self) -> bool | None:
        """Whether it held the target at some level: None when that could not be judged (not
        measured, every request failed, no level measured to the end)."""
        slo = self.entry.slo
        if self.level is not None:
            return True
        if slo is None or slo.every_request_failed or slo.search.bracket[1] is None:
            return None
        return False


def accuracy_of(backend: BackendSummary) -> Accuracy | None:
    """Tool-calling accuracy from the BFCL block, with its 95% Wilson interval; None when not run."""
    b = backend.bfcl
    if not b or not b.cases or b.accuracy is None or b.ci95_low is None or b.ci95_high is None:
        return None
    return Accuracy(accuracy=b.accuracy, ci95=(b.ci95_low, b.ci95_high), cases=b.cases, correct=b.correct,
                    source="BFCL")


def quality_of(backend: BackendSummary) -> Accuracy | None:
    """Answer quality from the quality lane, with its 95% Wilson interval; None when the lane did not run
    or graded nothing."""
    q = backend.quality
    if not q or not q.graded or q.accuracy is None or q.ci95_low is None or q.ci95_high is None:
        return None
    return Accuracy(accuracy=q.accuracy, ci95=(q.ci95_low, q.ci95_high), cases=q.graded, correct=q.right,
                    source="quality lane")


def _below_quality_floor(b: Assessed, min_quality: float | None) -> str | None:
    """The quality floor: a disqualification when even the upper 95% bound is below it; a thin note
    when the floor could not be checked or the interval straddles it."""
    q = b.quality
    if min_quality is None:
        return None
    if q is None:
        b.thin.append(f"{b.name}: answer quality not measured (the quality part did not run or graded nothing), so "
                      "the quality floor cannot be checked")
        return None
    low, high = q.ci95
    if high < min_quality:
        return (f"answer quality {q.accuracy:.1%} [{low:.1%}, {high:.1%}] on {q.cases} graded items: even its upper "
                f"95% bound is below the quality floor {min_quality:.0%}")
    if low < min_quality:
        b.thin.append(f"{b.name}: answer quality {q.accuracy:.1%} [{low:.1%}, {high:.1%}] straddles the quality floor "
                      f"{min_quality:.0%}: more items would tell")
    return None


def _no_capacity(b: Assessed, slo: SloBlock | None) -> str | None:
    """Why the backend has no capacity under the target, or None when it has one."""
    if not slo:
        failures = [f for f in b.entry.failures if f.startswith("chat")]
        return "not measured under the latency target" + (f" ({failures[0]})" if failures else "")
    if b.level is None:
        why = slo.capacity_reason
        if slo.every_request_failed:
            return why
        return why if why.startswith("misses the target") else f"no SLO capacity under the target ({why or 'no level held'})"
    return None


def _does_not_fit(entry: BackendSummary) -> str | None:
    """Some of the workload's requests do not fit the backend's token limits: it cannot serve this traffic, however
    cheap its capacity on the requests that do fit (the limit and the share, from the ``traffic`` block)."""
    return entry.traffic.disqualified if entry.traffic else None


def _no_tool_calls(b: Assessed, traffic: Traffic) -> str | None:
    native = descriptor(b.entry.kind).native_tool_calls
    tool_calls = b.info.tool_calls if b.info and b.info.tool_calls is not None else native
    if not traffic.tool_calls or tool_calls:
        return None
    if b.info and b.info.constrained_tools:
        return "no native tool calls (its tool use is schema-constrained by the server), and the workload needs them"
    return "no tool calls, and the workload needs them (say tool_calls=no in --workload if it does not)"


def _below_floor(b: Assessed, min_accuracy: float | None) -> str | None:
    """The accuracy floor: a disqualification below it, a thin note when its interval reaches it."""
    acc = b.accuracy
    if min_accuracy is None:
        return None
    if acc is None:
        b.thin.append("tool-calling accuracy not measured (the BFCL part did not run), so the accuracy floor "
                      "cannot be checked")
        return None
    low, high = acc.ci95
    if acc.accuracy < min_accuracy:
        reach = " (its interval reaches the floor: more cases would tell)" if high >= min_accuracy else ""
        return (f"tool-calling accuracy {acc.accuracy:.0%} [{low:.0%}, {high:.0%}] on {acc.cases} BFCL cases is "
                f"below the floor {min_accuracy:.0%}{reach}")
    if low < min_accuracy:
        b.thin.append(f"tool-calling accuracy {acc.accuracy:.0%} meets the floor {min_accuracy:.0%}, but its "
                      f"interval [{low:.0%}, {high:.0%}] reaches below it")
    return None


def _offer(b: Assessed, slo: SloBlock, prices: Prices, traffic: Traffic) -> None:
    """The backend's priced offer at its capacity, or the reason it has none; its caveats."""
    level = b.level
    assert level is not None
    goodput = level.goodput_output_tok_per_s
    if not goodput or goodput <= 0:
        b.disqualified = f"no output tokens met the target at its capacity level (c={level.concurrency})"
        return
    lower_bound = slo.capacity_floor
    ci = level.ci95.goodput_output_tok_per_s
    price = prices.of(b.name)
    b.offer = Offer.priced(b.name, price.hourly, price.per_token, traffic, goodput_output_tok_per_s=goodput,
                           goodput_ci95=ci, capacity_lower_bound=lower_bound,
                           input_per_output=measured_mix(slo, b.entry.chat))
    if b.offer is None:
        b.disqualified = ("no price: a CPU-served local toy model, not a way to serve production traffic"
                          if b.entry.toy_model else "no price: " + (price.reason or b.entry.cost.reason or "none on file"))
        return
    if b.offer.billing == "per_token" and goodput < traffic.peak_output_tok_per_s and not lower_bound:
        b.caveats.append(f"{b.name}: its goodput at the target was {goodput:,.1f} tok/s at c={level.concurrency} "
                         f"(the most this run measured within the target), below the workload's peak of "
                         f"{traffic.peak_output_tok_per_s:,.1f} tok/s; a managed service scales past one client's "
                         "concurrency, within the account's quotas")
    if level.requests < MIN_REQUESTS_AT_CAPACITY:
        b.thin.append(f"{b.name}: only {level.requests} requests at its capacity level c={level.concurrency} "
                      f"(fewer than {MIN_REQUESTS_AT_CAPACITY})")
    if ci is None or level.repeats < 2:
        b.thin.append(f"{b.name}: its capacity level was measured once (no repeats), so its goodput has no interval")


def _open_loop(b: Assessed, traffic: Traffic) -> None:
    """The open loop's verdict, where it ran: judged against the rate one instance must carry at the peak. A
    miss at that rate or below disqualifies; a hold at it or above confirms; anything else is a caveat."""
    ol = b.entry.open_loop
    if ol is None or ol.rate_req_per_s is None:
        return
    goodput = b.offer.goodput_output_tok_per_s if b.offer and b.offer.billing == "hourly" else None
    if goodput is None and descriptor(b.entry.kind).pricing != PER_TOKEN:
        return  # no capacity: the rate one instance carries is unknown
    needed, _ = per_instance_rate(traffic.peak_req_per_s, traffic.peak_output_tok_per_s, goodput)
    rate = ol.rate_req_per_s
    where = (f"under {ol.arrival} arrivals at {rate:.4g} req/s for {ol.duration_s:g} s" if ol.mode == "rate"
             else f"replaying the trace ({rate:.4g} req/s on average)")
    share = f"the {needed:.4g} req/s one instance must carry at the workload's peak"
    if ol.verdict == "holds" and rate >= needed * 0.99:
        b.open_loop = f"held the target {where}, at least {share}"
    elif ol.verdict in ("not_sustaining", "misses") and rate <= needed * 1.01:
        b.disqualified = f"{ol.reason} {where}, at most {share}"
    elif ol.verdict == "holds":
        b.caveats.append(f"{b.name}: held the target {where}, below {share}: not shown at that rate")
    elif ol.verdict == "undecided":
        b.caveats.append(f"{b.name}: open loop {where}: {ol.reason}")
    else:
        b.caveats.append(f"{b.name}: open loop {ol.verdict.replace('_', ' ')} {where}, above {share}, so it does "
                         "not decide")


def assess(name: str, info: BackendInfo | None, entry: BackendSummary, prices: Prices, traffic: Traffic,
           min_accuracy: float | None, min_quality: float | None = None) -> Assessed:
    """What one measured backend offers, and what keeps it from being chosen."""
    b = Assessed(name, info, entry, accuracy=accuracy_of(entry), quality=quality_of(entry))
    slo = entry.slo
    b.level = slo.at_capacity() if slo else None
    b.disqualified = (_does_not_fit(entry) or _no_capacity(b, slo) or _no_tool_calls(b, traffic)
                      or _below_floor(b, min_accuracy) or _below_quality_floor(b, min_quality))
    if b.disqualified is None and slo is not None:
        _offer(b, slo, prices, traffic)
    if b.disqualified is None:
        _open_loop(b, traffic)
    return b
