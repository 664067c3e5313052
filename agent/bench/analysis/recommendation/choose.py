"""The recommendation: the cheapest backend that meets the target, the accuracy and quality floors and
the workload's need for tool calls, at the user's volume; a tie when the monthly costs overlap within
the goodput intervals; not enough evidence when the evidence is thin; and where the answer changes
(the switch points: an instance added, or a per-token line crossing).

A catalog backend this run did not measure that could cost less makes the evidence thin, unless the
user chose the backends (``--backends``, recorded in ``run.json`` ``options.backends``): then the
choice is among those, and each one left out that could cost less is named as a caveat. A backend
that answers significantly worse than the quality reference is named in the reasons, with the figure."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ....kinds import PER_TOKEN, descriptor
from ...results.blocks.quality import QualityPair
from ...results.blocks.recommendation import NotRunOffer, Recommendation, SwitchFigures, SwitchPoint, TargetUsed
from ...results.formatting import target as describe_target
from ...results.formatting import usd, volume as describe_volume
from ...results.run import Prices, RunFile
from ...results.summary import BackendSummary
from ..cost import monthly_24x7
from ..stats import intervals_overlap
from ..blocks.cost import measured_mix
from ..traffic import SECONDS_PER_MONTH, Traffic
from .assess import Assessed, assess
from .by_task import answer as task_answer, applies as by_task_applies, task_choice
from .costs import money_line, slo_costs
from .curves import cost_curves
from .models import Models, comparison, judge, with_models
from .offers import Offer, effective_usd_per_m, switch_points

VOLUME_SPAN = 100.0
"""Switch points are looked for up to this many times the user's volume (and plotted from 1/this)."""


def _not_run(prices: Prices, run_names: set[str], traffic: Traffic) -> dict[str, NotRunOffer]:
    """Backends of the catalog this run did not measure, with the least they could cost here."""
    out: dict[str, NotRunOffer] = {}
    for name, entry in prices.not_run.items():
        if name in run_names:
            continue
        low = basis = None
        if entry.hourly:
            h = float(entry.hourly.usd_per_hour)
            low, basis = round(monthly_24x7(h), 2), f"at least one instance at ${h}/h x 730 h"
        elif entry.per_token:
            e = effective_usd_per_m(entry.per_token, traffic)
            low = round(traffic.output_tokens_per_month * e / 1e6, 2)
            basis = f"list price ${e:.4g}/M output at this mix; its latency under the target is unknown"
        out[name] = NotRunOffer(label=entry.label, tool_calls=entry.tool_calls, lower_bound_monthly_usd=low,
                                basis=basis, model=entry.model)
    return out


def _bedrock_offer(assessed: Mapping[str, Assessed], prices: Prices, traffic: Traffic,
                   models: Models) -> tuple[Offer | None, bool | None]:
    """Bedrock to break even against: the measured one when it ran (one serving the comparison's model first), else
    its list price; and whether it met the target (None: not judged)."""
    for b in sorted(assessed.values(), key=lambda a: a.name in models.different):
        per_token = prices.of(b.name).per_token
        if descriptor(b.entry.kind).pricing == PER_TOKEN and per_token:
            mix = measured_mix(b.entry.slo, b.entry.chat)
            return Offer.priced(b.name, None, per_token, traffic, input_per_output=mix), b.met_target
    ref = prices.bedrock_reference
    if ref:
        return Offer.priced("bedrock", None, ref, traffic, measured=False), None
    return None, None


def _target(backends: Mapping[str, BackendSummary]) -> TargetUsed | None:
    for b in backends.values():
        if b.slo:
            return TargetUsed(**b.slo.target.model_dump(), source=b.slo.target_source)
    return None


def _describe_switch(point: Mapping[str, Any], offers: Mapping[str, Assessed], traffic: Traffic) -> SwitchPoint:
    v = point["output_tokens_per_month"]
    at = traffic.with_volume(v)
    below, above = offers[point["below"]].offer, offers[point["above"]].offer
    assert below is not None and above is not None
    eps = v * 1e-6

    def figures(o: Offer) -> SwitchFigures:
        return SwitchFigures(billing=o.billing, usd_per_hour=o.usd_per_hour,  # type: ignore[arg-type]
                             usd_per_m_output_effective=o.usd_per_m_output_effective,
                             goodput_output_tok_per_s=o.goodput_output_tok_per_s,
                             monthly_usd_below=round(o.monthly(v - eps, at), 2),
                             monthly_usd_above=round(o.monthly(v + eps, at), 2),
                             instances_below=o.instances(v - eps, at), instances_above=o.instances(v + eps, at))

    fb, fa = figures(below), figures(above)
    why = "an instance is added" if point["kind"] == "instance step" else "their monthly costs cross"
    text = (f"Below {describe_volume(v)} output tokens a month ({v / SECONDS_PER_MONTH:,.1f} tok/s on average) "
            f"{below.name} is cheaper ({usd(fb.monthly_usd_below)} against {above.name}'s "
            f"{usd(fa.monthly_usd_below)}); above it {above.name} ({usd(fa.monthly_usd_above)} against "
            f"{usd(fb.monthly_usd_above)}): {why}")
    return SwitchPoint(output_tokens_per_month=round(v), below=point["below"], above=point["above"],
                       kind=point["kind"], average_output_tok_per_s=round(v / SECONDS_PER_MONTH, 2), text=text,
                       figures={below.name: fb, above.name: fa})


def _none_qualifies(assessed: Mapping[str, Assessed], disqualified: Mapping[str, str], target: TargetUsed,
                    floor: str, not_run: Mapping[str, NotRunOffer]) -> dict[str, Any]:
    """The headline when nothing qualifies: "meets" only when every backend really missed the target
    (one that met it and was disqualified for another reason, or whose every request failed, did not)."""
    why = "; ".join(f"{n}: {r}" for n, r in disqualified.items()) or "no backend ran"
    limits = describe_target(target.model_dump())
    if assessed and all(b.met_target is False for b in assessed.values()):
        headline = f"No backend meets the target ({limits}){floor} for this workload: {why}."
    else:
        headline = f"No backend qualifies for this workload under the target ({limits}){floor}: {why}."
    if not_run:
        headline += f" Not run here: {', '.join(not_run)}."
    return {"verdict": "none_qualifies", "headline": headline}


def _thin(leader: Assessed, lead_cost: float, not_run: Mapping[str, NotRunOffer], traffic: Traffic,
          models: Models, chosen: Sequence[str] | None = None) -> tuple[list[str], list[str]]:
    """Why the evidence is too thin to choose: the leader's own, and each backend not run that could
    cost less (and could serve the workload, and serves the model compared unless ``--compare-models``); and the
    caveats: those of them the user left out of ``--backends`` (``chosen``), which do not stop the choice among the
    ones chosen."""
    thin, caveats = list(leader.thin), []
    for n, x in not_run.items():
        low = x.lower_bound_monthly_usd
        if x.model is not None and x.model != models.compared and not models.compare_models:
            continue
        if low is not None and low < lead_cost and not (traffic.tool_calls and x.tool_calls is False):
            line = (f"{n} was not run and could cost less here ({x.basis}: from {usd(low)} a month against "
                    f"{leader.name}'s {usd(lead_cost)})")
            if chosen is not None and n not in chosen:
                caveats.append(line.replace(" was not run ", " was not among --backends ", 1))
            else:
                thin.append(line)
    return thin, caveats


def _tie(leader: Assessed, runner: Assessed | None, traffic: Traffic) -> str | None:
    """The reason the two cheapest tie (their monthly costs overlap within the goodput intervals), or None."""
    if runner is None:
        return None
    assert leader.offer is not None and runner.offer is not None
    volume = traffic.output_tokens_per_month
    a = leader.offer.monthly_span(volume, traffic)
    b = runner.offer.monthly_span(volume, traffic)
    inf = float("inf")
    if not intervals_overlap((a[0], inf if a[1] is None else a[1]), (b[0], inf if b[1] is None else b[1])):
        return None
    return (f"{leader.name} and {runner.name} tie: their monthly costs overlap within the 95% intervals of their "
            f"goodput ({usd(a[0])} to {usd(a[1]) if a[1] is not None else 'unbounded'} against {usd(b[0])} to "
            f"{usd(b[1]) if b[1] is not None else 'unbounded'})")


def _mix_reason(offers: Mapping[str, Assessed], traffic: Traffic) -> list[str]:
    """Each per-token price is at the mix measured: said where it differs from the stated one by more than 5%."""
    out = []
    for b in offers.values():
        o = b.offer
        if o is not None and o.input_per_output is not None and \
                abs(o.input_per_output - traffic.input_per_output) > 0.05 * max(traffic.input_per_output, 1e-9):
            out.append(f"{b.name} is priced at the mix measured, {o.input_per_output:.3g} input tokens per output "
                       f"token (the servers' usage of the requests that met the target), not the "
                       f"{traffic.input_per_output:g} stated")
    return out


def caveats(backends: Mapping[str, BackendSummary], traffic: Traffic) -> list[str]:
    """What the answer must be read with, whichever backend it names: each capacity that is only a floor,
    and a workload whose prompts are much heavier than those capacity was measured with."""
    out = [f"{n}: SLO capacity {e.slo.capacity_text()}: a floor, not the most it serves; its real capacity may be "
           "higher and an hourly rig's cost lower" for n, e in backends.items() if e.slo and e.slo.capacity_floor]
    measured = [e.chat.input_per_output for e in backends.values()
                if e.slo and e.chat and e.chat.input_per_output is not None]
    if measured and traffic.input_per_output > 2 * max(measured):
        out.append(f"Capacity was measured with the benchmark's prompt ({max(measured):.2g} input tokens per output "
                   f"token at most); the workload's {traffic.input_per_output:g} makes prefill heavier, so real "
                   "capacity may be lower and an hourly rig's cost higher")
    return out


def _floors_below(ranked: Sequence[Assessed], lead_cost: float, traffic: Traffic) -> list[str]:
    """Backends ranked after the leader whose capacity is only a floor and that could cost less than the
    leader if it were higher: the choice waits for their capacity to be measured."""
    out = []
    for b in ranked[1:]:
        low = b.offer.low_if_capacity_higher(traffic.output_tokens_per_month, traffic)  # type: ignore[union-attr]
        if low is not None and low < lead_cost and b.entry.slo:
            out.append(f"{b.name}'s SLO capacity, {b.entry.slo.capacity_text()}, is only a floor: with a higher one it "
                       f"could cost as little as {usd(low)} a month, below {ranked[0].name}'s {usd(lead_cost)}; "
                       "measure higher levels to tell (--concurrency auto)")
    return out


def _ranked(offers: Mapping[str, Assessed], target: TargetUsed, floor: str, not_run: Mapping[str, NotRunOffer],
            traffic: Traffic, models: Models, chosen: Sequence[str] | None = None) -> dict[str, Any]:
    """The verdict among the backends that qualify: a choice, a tie, or too thin to choose."""
    volume = traffic.output_tokens_per_month
    ranked = sorted(offers.values(), key=lambda b: (b.offer.monthly(volume, traffic), b.name))  # type: ignore[union-attr]
    leader, runner = ranked[0], (ranked[1] if len(ranked) > 1 else None)
    lead_cost = leader.offer.monthly(volume, traffic)  # type: ignore[union-attr]
    thin, left_out = _thin(leader, lead_cost, not_run, traffic, models, chosen)
    thin += _floors_below(ranked, lead_cost, traffic)
    tie = _tie(leader, runner, traffic)
    reasons = [money_line(b, traffic) for b in ranked] + ([tie] if tie else [])
    reasons += [f"{b.name}: {b.open_loop}" for b in ranked if b.open_loop]
    reasons += [c for b in ranked for c in b.caveats] + _mix_reason(offers, traffic) + left_out + thin
    points, truncated = switch_points([b.offer for b in ranked], traffic, volume * VOLUME_SPAN)  # type: ignore[misc]
    if truncated:
        reasons.append("Switch points beyond the first 20,000 instance steps of a backend were not examined")
    out: dict[str, Any] = {"ranking": [b.name for b in ranked], "leader": leader.name, "reasons": reasons,
                           "switch_points": [_describe_switch(p, offers, traffic) for p in points]}
    workload = f"{describe_volume(volume)} output tokens a month"
    if thin:
        return {**out, "verdict": "too_thin", "headline": f"Not enough evidence to choose at {workload}: "
                + "; ".join(thin) + f". Cheapest measured: {leader.name} ({usd(lead_cost)} a month)."}
    assert runner is None or runner.offer is not None
    if tie:
        return {**out, "verdict": "tie", "headline": (
            f"No single choice at {workload}: {leader.name} and {runner.name} meet the target{floor} and tie on "  # type: ignore[union-attr]
            f"cost within their intervals ({usd(lead_cost)} and {usd(runner.offer.monthly(volume, traffic))} a month).")}  # type: ignore[union-attr]
    second = (f"; runner-up {runner.name} at {usd(runner.offer.monthly(volume, traffic))}" if runner  # type: ignore[union-attr]
              else "; no other backend qualifies")
    among = f" of those chosen with --backends ({', '.join(chosen)})" if chosen is not None else ""
    caveat = f" Not among them, and could cost less: {', '.join(_names(left_out))}." if left_out else ""
    held = f" It {leader.open_loop}." if leader.open_loop else ""
    return {**out, "verdict": "choice", "choice": leader.name, "runner_up": runner.name if runner else None,
            "headline": f"{leader.name}: the cheapest backend{among} that meets the target "
                        f"({describe_target(target.model_dump())}){floor} at {workload}, {usd(lead_cost)} a month"
                        f"{second}.{held}{caveat}"}


def _names(lines: Sequence[str]) -> list[str]:
    return [line.split(" ", 1)[0] for line in lines]


def quality_reasons(pairs: Sequence[QualityPair], reference: str | None) -> list[str]:
    """Each backend that answers significantly worse than the quality reference, with the figure; and
    each pair serving the same weights with the same engine that differs (a fault, not precision)."""
    out = []
    for p in pairs:
        if p.flag:
            out.append(f"Quality: {p.flag}")
        if reference is None or p.a != reference or not p.significant or p.difference is None or p.difference >= 0:
            continue
        ci = f" [{p.ci95[0] * 100:+.1f}, {p.ci95[1] * 100:+.1f}]" if p.ci95 else ""
        out.append(f"Quality: {p.b} answers {-p.difference * 100:.1f} points worse than {p.a}, the quality reference "
                   f"({p.b_accuracy:.1%} against {p.a_accuracy:.1%} on {p.both} paired items, difference "
                   f"{p.difference * 100:+.1f}{ci} points, McNemar p = {p.mcnemar_p:.2g}; {p.relation})")
    return out


FILE_COUNT = "the servers' count of the prompts file's requests (their usage, the mean over the backends measured)"


def counted(traffic: Traffic, backends: Mapping[str, BackendSummary]) -> Traffic:
    """A prompts file's input tokens per output token as the servers counted them, where they did: the workload's is
    an estimate from its words (:func:`agent.bench.analysis.traffic.from_mapping`), and a price at it (Bedrock's
    list price, a backend not run) would be off by the tokenizer's ratio. Any other traffic as it is."""
    mixes = [m for e in backends.values() if (m := measured_mix(e.slo, e.chat)) is not None]
    if not traffic.prompts or not mixes:
        return traffic
    return traffic.model_copy(update={"input_per_output": round(sum(mixes) / len(mixes), 4),
                                      "derived": {**traffic.derived, "input_per_output": FILE_COUNT}})


def recommend(backends: Mapping[str, BackendSummary], run: RunFile, quality_pairs: Sequence[QualityPair] = (),
              quality_reference: str | None = None) -> tuple[Recommendation, dict[str, dict]]:
    """The ``recommendation`` block and the per-backend ``slo`` additions (``{name: {...}}``)."""
    traffic = counted(Traffic.from_dict(run.options.workload), backends)
    min_accuracy = run.options.min_accuracy
    min_quality = run.options.min_quality if run.options.min_quality is not None else traffic.min_quality
    chosen = run.options.backends
    infos = {b.name: b for b in run.backends}
    volume = traffic.output_tokens_per_month
    assessed = {n: assess(n, infos.get(n), e, run.prices, traffic, min_accuracy, min_quality)
                for n, e in backends.items()}
    models = comparison(backends, run.options.compare_models, infos, run.prices.not_run)
    judge(assessed, models, quality_pairs)
    bedrock, bedrock_meets = _bedrock_offer(assessed, run.prices, traffic, models)
    additions = {n: slo_costs(b, traffic, bedrock, bedrock_meets) for n, b in assessed.items() if backends[n].slo}
    not_run = _not_run(run.prices, set(backends), traffic)
    target = _target(backends)
    floor = _floors(min_accuracy, min_quality)
    disqualified = {n: b.disqualified for n, b in assessed.items() if b.disqualified}
    rec: dict[str, Any] = {
        "workload": traffic.record(), "min_accuracy": min_accuracy, "min_quality": min_quality,
        "backends_chosen": list(chosen) if chosen is not None else None, "target": target,
        "choice": None, "runner_up": None, "leader": None, "ranking": [], "switch_points": [], "reasons": [],
        "disqualified": disqualified, "not_run": not_run,
        "backends": {n: {"accuracy": b.accuracy, "quality": b.quality, "thin": b.thin, "caveats": b.caveats,
                         "input_per_output_measured": measured_mix(backends[n].slo, backends[n].chat),
                         "open_loop": b.open_loop}
                     for n, b in assessed.items()},
        "volume_range": (volume / VOLUME_SPAN, volume * VOLUME_SPAN),
        "curves": cost_curves(backends, run.prices, disqualified, traffic), "caveats": caveats(backends, traffic),
        "models": models,
    }
    offers = {n: b for n, b in assessed.items() if b.offer is not None and b.disqualified is None}
    if target is None:
        rec.update(verdict="not_measured", headline="No backend was measured under a latency target in this run (no "
                                                    "SLO capacity in the summary), so none is recommended.")
    elif not offers:
        rec.update(_none_qualifies(assessed, disqualified, target, floor, not_run))
    else:
        rec.update(_ranked(offers, target, floor, not_run, traffic, models, chosen))
    rec["reasons"] = rec["reasons"] + quality_reasons(quality_pairs, quality_reference)
    rec["by_task"] = by_task = task_choice(backends, run.options.min_task_success)
    if by_task is not None and by_task_applies(by_task, target is not None, run.options.min_task_success):
        rec.update(task_answer(by_task, disqualified))
    elif by_task is not None:
        rec["reasons"].append(f"By $ per successful task: {by_task.headline}")
    rec["headline"] = with_models(rec["headline"], models)
    return Recommendation(**rec), additions


def _floors(min_accuracy: float | None, min_quality: float | None) -> str:
    """`` and the accuracy floor of 80%`` and the quality floor, for the headline."""
    floors = ([f"the accuracy floor of {min_accuracy:.0%}"] if min_accuracy is not None else []) + \
        ([f"the quality floor of {min_quality:.0%}"] if min_quality is not None else [])
    return "".join(f" and {f}" for f in floors)
