"""Cost at the latency target, and the recommendation for the user's traffic.

A pure function of the summary (itself a pure function of ``requests.jsonl`` and ``run.json``):
:func:`attach` adds to every ``backends.<name>.slo`` block what that capacity costs, and writes the
top-level ``recommendation``. Inputs, all already in the summary: the ``slo`` block (SLO capacity
and goodput per level, with 95% intervals over repeats), the price (``prices``), the ``bfcl`` block
(tool-calling accuracy), whether the backend makes native tool calls, and the user's traffic and
accuracy floor (``run.json`` options ``workload`` and ``min_accuracy``).

The cost model, stated in every report:

* **a rig billed by the hour** must serve the busiest hour within the target, so it needs
  ``n = ceil(peak output tok/s / goodput output tok/s at its SLO capacity)`` instances (at least
  one), each running all month: monthly = n x $/h x 730 h. Its $ per million output tokens at the
  target = $/h / (goodput x 3600) x 1e6: only tokens of requests that met the target count.
* **a per-token backend** (Bedrock) costs volume x (output $/M + input tokens per output token x
  input $/M) / 1e6 a month; its $/M at the target is that price x (all output tokens / output tokens
  of requests that met the target) at its capacity level.
* the **answer** at a volume is the cheapest backend that meets the target (capacity of at least
  concurrency 1), the accuracy floor and the workload's need for tool calls; the **switch points**
  are the volumes where that answer changes (an instance added, or a per-token line crossing).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from .cost import bedrock_usd_per_million_output, monthly_24x7, prices_of, usd_per_million_output
from .slo import at_capacity
from .stats import intervals_overlap
from .traffic import SECONDS_PER_MONTH, Traffic, WorkloadError, describe_volume, parse_spec

MIN_REQUESTS_AT_CAPACITY = 10
"""Fewer requests than this at a backend's capacity level is too thin to choose it."""
VOLUME_SPAN = 100.0
"""Switch points are looked for up to this many times the user's volume (and plotted from 1/this)."""
MAX_STEPS = 20_000
"""At most this many instance steps per backend are examined for switch points."""


# --- options ----------------------------------------------------------------------------------------


def workload_option(text: str) -> Traffic:
    """``--workload`` for argparse: a WorkloadError becomes an argparse error (one line, exit 2)."""
    try:
        return parse_spec(text)
    except WorkloadError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--workload").strip(" :")) from None


def parse_accuracy(text: str) -> float:
    """``0.8`` or ``80%`` as a share in [0, 1]."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100.0 if raw.endswith("%") else float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a share (e.g. 0.8 or 80%)") from None
    if not 0.0 <= value <= 1.0 or math.isnan(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not between 0 and 1 (or 0% and 100%)")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--workload`` and ``--min-accuracy`` (recorded in run.json by :func:`options_record`)."""
    g = parser.add_argument_group("recommendation")
    g.add_argument("--workload", type=workload_option, metavar="SPEC|FILE",
                   help="your traffic, as KEY=VALUE,... or a YAML file with the same keys: output_tokens_per_month "
                        "(e.g. 2B), input_per_output (input tokens per output token), peak_to_average (busiest "
                        "hour over the average), tool_calls (yes/no). Default: 100M, 5, 3, yes (stated in the "
                        "report)")
    g.add_argument("--min-accuracy", type=parse_accuracy, metavar="SHARE",
                   help="tool-calling accuracy floor (BFCL part), e.g. 0.8 or 80%%; a backend below it is "
                        "disqualified (default: no floor)")


def options_record(options: argparse.Namespace | None) -> dict[str, Any]:
    """What ``run.json`` options keep of this module's options."""
    traffic = getattr(options, "workload", None)
    if not isinstance(traffic, Traffic):
        traffic = Traffic.from_dict(None)
    return {"workload": traffic.as_dict(), "min_accuracy": getattr(options, "min_accuracy", None)}


# --- one backend's offer ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Offer:
    """A priced way to serve the traffic: an hourly rig with its goodput, or a per-token service."""

    name: str
    billing: str
    usd_per_hour: float | None = None
    usd_per_m_output_effective: float | None = None
    """Per-token only: output $/M + input per output x input $/M at the workload's mix."""
    goodput_output_tok_per_s: float | None = None
    goodput_ci95: tuple[float, float] | None = None
    capacity_lower_bound: bool = False
    measured: bool = True

    @classmethod
    def priced(cls, name: str, hourly: Mapping[str, Any] | None, per_token: Mapping[str, Any] | None,
               traffic: Traffic, **measured: Any) -> Offer | None:
        """From ``run.json``'s price entries: hourly when the backend has an hourly price, else per
        token at the workload's input:output mix; None without either. ``measured`` holds the
        goodput fields (and ``measured=False`` for a list price alone)."""
        if hourly:
            return cls(name, "hourly", usd_per_hour=float(hourly["usd_per_hour"]), **measured)
        if per_token:
            return cls(name, "per_token", usd_per_m_output_effective=_effective(per_token, traffic), **measured)
        return None

    def instance_volume(self, traffic: Traffic) -> float:
        """The monthly volume one instance serves with its peak within the target."""
        assert self.goodput_output_tok_per_s
        return self.goodput_output_tok_per_s * SECONDS_PER_MONTH / traffic.peak_to_average

    def instances(self, volume: float, traffic: Traffic, goodput: float | None = None) -> int | None:
        if self.billing != "hourly":
            return None
        goodput = self.goodput_output_tok_per_s if goodput is None else goodput
        if not goodput or goodput <= 0:
            return None
        peak = volume / SECONDS_PER_MONTH * traffic.peak_to_average
        return max(1, math.ceil(peak / goodput - 1e-9))

    def monthly(self, volume: float, traffic: Traffic) -> float:
        if self.billing == "hourly":
            n = self.instances(volume, traffic)
            if n is None and not self.measured:
                n = 1  # not run: its capacity is unknown, so only the floor of one instance is known
            assert n is not None and self.usd_per_hour is not None
            return n * monthly_24x7(self.usd_per_hour)
        assert self.usd_per_m_output_effective is not None
        return volume * self.usd_per_m_output_effective / 1e6

    def monthly_interval(self, volume: float, traffic: Traffic) -> tuple[float, float | None]:
        """Low and high monthly cost from the goodput's 95% interval (high None: unbounded)."""
        if self.billing != "hourly":
            cost = self.monthly(volume, traffic)
            return cost, cost
        assert self.usd_per_hour is not None
        low_g, high_g = self.goodput_ci95 or (self.goodput_output_tok_per_s, self.goodput_output_tok_per_s)
        unit = monthly_24x7(self.usd_per_hour)
        n_low = 1 if self.capacity_lower_bound else self.instances(volume, traffic, high_g)
        n_high = self.instances(volume, traffic, low_g) if low_g and low_g > 0 else None
        return (n_low or 1) * unit, None if n_high is None else n_high * unit


def switch_points(offers: Sequence[Offer], traffic: Traffic, v_max: float) -> tuple[list[dict[str, Any]], bool]:
    """The volumes in (0, v_max] where the cheapest of ``offers`` changes.

    Hourly costs are steps (constant between instance boundaries k x one instance's volume);
    per-token costs are lines through the origin. Within each step every cost is constant or
    linear, so the changes are found exactly: at a boundary or where a line meets a constant.

    Returns:
        ``([{"output_tokens_per_month", "below", "above", "kind"}], truncated)``; ``truncated``
        is True when a backend had more than :data:`MAX_STEPS` instance steps in the range.
    """
    if len(offers) < 2 or v_max <= 0:
        return [], False
    truncated = False
    bounds = {v_max}
    for o in offers:
        if o.billing == "hourly":
            width = o.instance_volume(traffic)
            steps = int(v_max // width)
            if steps > MAX_STEPS:
                steps, truncated = MAX_STEPS, True
            bounds.update(k * width for k in range(1, steps + 1))
    edges = sorted(b for b in bounds if 0 < b <= v_max)
    points: set[float] = set(edges)
    lines = [o for o in offers if o.billing != "hourly"]
    start = 0.0
    for end in edges:
        mid = (start + end) / 2
        constants = [o.monthly(mid, traffic) for o in offers if o.billing == "hourly"]
        for line in lines:
            slope = line.usd_per_m_output_effective / 1e6 if line.usd_per_m_output_effective else 0.0
            if slope <= 0:
                continue
            for c in constants:
                v = c / slope
                if start < v < end:
                    points.add(v)
        start = end
    ordered = sorted(points)
    out: list[dict[str, Any]] = []
    previous: Offer | None = None
    lo = 0.0
    for hi in ordered:
        mid = (lo + hi) / 2
        best = min(offers, key=lambda o: o.monthly(mid, traffic))
        if previous is not None and best.name != previous.name:
            kind = "instance step" if lo in edges else "crossing"
            out.append({"output_tokens_per_month": lo, "below": previous.name, "above": best.name, "kind": kind})
        previous, lo = best, hi
    return out, truncated


def break_even_volume(rig: Offer, per_token: Offer, traffic: Traffic) -> tuple[float | None, float | None, str]:
    """Where the hourly ``rig`` becomes cheaper than ``per_token`` for this traffic's shape.

    Returns ``(first, always, note)``: the lowest monthly volume at which the rig is cheaper, and
    the volume above which it stays cheaper (the two differ when an added instance makes the rig
    dearer again for a while). Both None when the per-token service is cheaper at every volume (its
    price per token is below the rig's with its instances fully used at the peak).
    """
    assert rig.usd_per_hour is not None and per_token.usd_per_m_output_effective
    per_token_usd = per_token.usd_per_m_output_effective / 1e6
    full_use_usd = monthly_24x7(rig.usd_per_hour) / rig.instance_volume(traffic)
    if per_token_usd <= full_use_usd:
        return None, None, (f"never: {per_token.name} costs ${per_token.usd_per_m_output_effective:.4g}/M output, "
                            f"less than {rig.name}'s ${full_use_usd * 1e6:.4g}/M with its instances fully used "
                            "at the peak")
    bound = monthly_24x7(rig.usd_per_hour) / (per_token_usd - full_use_usd) * 1.001
    changes, truncated = switch_points([rig, per_token], traffic, bound)
    ups = [c["output_tokens_per_month"] for c in changes if c["above"] == rig.name]
    if not ups:
        return None, None, "no crossing found"
    note = "approximate (too many instance steps to examine exactly)" if truncated else "exact"
    return ups[0], ups[-1], note


# --- reading the summary ----------------------------------------------------------------------------


def _ci(level: Mapping[str, Any], key: str) -> tuple[float, float] | None:
    pair = (level.get("ci95") or {}).get(key)
    if not pair or len(pair) != 2 or pair[0] is None or pair[1] is None:
        return None
    return float(pair[0]), float(pair[1])


def accuracy_of(backend: Mapping[str, Any]) -> dict[str, Any] | None:
    """Tool-calling accuracy from the BFCL block, with its 95% Wilson interval; None when not run."""
    b = backend.get("bfcl")
    if not b or not b.get("cases"):
        return None
    return {"accuracy": b["accuracy"], "ci95": [b["ci95_low"], b["ci95_high"]], "cases": b["cases"],
            "correct": b.get("correct"), "source": "BFCL"}


def _target(backends: Mapping[str, Any]) -> dict[str, Any] | None:
    for b in backends.values():
        slo = b.get("slo")
        if slo and slo.get("target"):
            return {**slo["target"], "source": slo.get("target_source")}
    return None


def describe_target(target: Mapping[str, Any] | None) -> str:
    if not target:
        return "no latency target"
    names = {"ttft_p99_ms": "TTFT p99", "itl_p99_ms": "ITL p99", "e2e_p99_ms": "e2e p99"}
    parts = [f"{label} <= {target[k]:,.0f} ms" for k, label in names.items() if target.get(k) is not None]
    return ", ".join(parts) or "no latency target"


def usd(value: float | None) -> str:
    return "-" if value is None else f"${value:,.2f}"


# --- the recommendation -----------------------------------------------------------------------------


@dataclass
class _Backend:
    name: str
    info: Mapping[str, Any]
    entry: Mapping[str, Any]
    offer: Offer | None = None
    level: Mapping[str, Any] | None = None
    disqualified: str | None = None
    thin: list[str] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)
    accuracy: dict[str, Any] | None = None


def _effective(per_token: Mapping[str, Any], traffic: Traffic) -> float:
    return bedrock_usd_per_million_output(per_token["usd_per_m_input"], per_token["usd_per_m_output"],
                                          traffic.input_per_output)


def _assess(name: str, info: Mapping[str, Any], entry: Mapping[str, Any], prices: Mapping[str, Any],
            traffic: Traffic, min_accuracy: float | None) -> _Backend:
    """What one measured backend offers, and what keeps it from being chosen."""
    b = _Backend(name, info, entry, accuracy=accuracy_of(entry))
    slo = entry.get("slo")
    hourly, per_token = prices_of(prices, name)
    level = at_capacity(slo)
    b.level = level
    if not slo:
        failures = [f for f in entry.get("failures") or [] if f.startswith("chat")]
        b.disqualified = ("not measured under the latency target" + (f" ({failures[0]})" if failures else ""))
        return b
    if level is None:
        why = slo.get("capacity_reason") or ""
        b.disqualified = (why if why.startswith("misses the target") else
                          f"no SLO capacity under the target ({why or 'no level held'})")
        return b
    if traffic.tool_calls and not info.get("tool_calls", entry.get("kind") != "neuron"):
        b.disqualified = ("no native tool calls (its tool use is schema-constrained by the server), and the workload "
                          "needs them" if info.get("constrained_tools") else
                          "no tool calls, and the workload needs them (say tool_calls=no in --workload if it does not)")
        return b
    acc = b.accuracy
    if min_accuracy is not None:
        if acc is None:
            b.thin.append("tool-calling accuracy not measured (the BFCL part did not run), so the accuracy floor "
                          "cannot be checked")
        elif acc["accuracy"] < min_accuracy:
            reach = " (its interval reaches the floor: more cases would tell)" if acc["ci95"][1] >= min_accuracy else ""
            b.disqualified = (f"tool-calling accuracy {acc['accuracy']:.0%} [{acc['ci95'][0]:.0%}, {acc['ci95'][1]:.0%}] "
                              f"on {acc['cases']} BFCL cases is below the floor {min_accuracy:.0%}{reach}")
            return b
        elif acc["ci95"][0] < min_accuracy:
            b.thin.append(f"tool-calling accuracy {acc['accuracy']:.0%} meets the floor {min_accuracy:.0%}, but its "
                          f"interval [{acc['ci95'][0]:.0%}, {acc['ci95'][1]:.0%}] reaches below it")
    goodput = level.get("goodput_output_tok_per_s")
    if not goodput or goodput <= 0:
        b.disqualified = f"no output tokens met the target at its capacity level (c={level.get('concurrency')})"
        return b
    bracket = (slo.get("search") or {}).get("bracket")
    if isinstance(bracket, list) and len(bracket) == 2:  # [capacity, first level that missed]
        lower_bound = bracket[1] is None
    else:
        levels = [lv.get("concurrency") for lv in slo.get("levels") or []]
        lower_bound = level.get("concurrency") == max(levels) and all(lv.get("holds", True) for lv in slo["levels"])
    ci = _ci(level, "goodput_output_tok_per_s")
    b.offer = Offer.priced(name, hourly, per_token, traffic, goodput_output_tok_per_s=goodput, goodput_ci95=ci,
                           capacity_lower_bound=lower_bound)
    if b.offer is None:
        b.disqualified = "no price: " + (((prices.get("backends") or {}).get(name) or {}).get("reason")
                                         or (entry.get("cost") or {}).get("reason") or "none on file")
        if entry.get("toy_model"):
            b.disqualified = "no price: a CPU-served local toy model, not a way to serve production traffic"
        return b
    if b.offer.billing == "per_token" and goodput < traffic.peak_output_tok_per_s and not lower_bound:
        b.caveats.append(f"{name}: its goodput at the target was {goodput:,.1f} tok/s at c={level['concurrency']} "
                         f"(the most this run measured within the target), below the workload's peak of "
                         f"{traffic.peak_output_tok_per_s:,.1f} tok/s; a managed service scales past one client's "
                         "concurrency, within the account's quotas")
    requests = level.get("requests") or 0
    if requests < MIN_REQUESTS_AT_CAPACITY:
        b.thin.append(f"{name}: only {requests} requests at its capacity level c={level['concurrency']} "
                      f"(fewer than {MIN_REQUESTS_AT_CAPACITY})")
    if ci is None or (level.get("repeats") or 1) < 2:
        b.thin.append(f"{name}: its capacity level was measured once (no repeats), so its goodput has no interval")
    if lower_bound:
        b.caveats.append(f"{name}: the target held at every level measured, up to c={level['concurrency']}; its "
                         "capacity may be higher and its cost lower")
    return b


def _money_line(b: _Backend, traffic: Traffic) -> str:
    o = b.offer
    assert o is not None and b.level is not None
    volume = traffic.output_tokens_per_month
    low, high = o.monthly_interval(volume, traffic)
    span = "" if high == low else f" [{usd(low)}, {usd(high) if high is not None else 'unbounded'}]"
    ci = o.goodput_ci95
    ci_text = f" [{ci[0]:,.1f}, {ci[1]:,.1f}]" if ci and ci[0] != ci[1] else ""
    if o.billing == "hourly":
        n = o.instances(volume, traffic)
        return (f"{b.name}: {usd(o.monthly(volume, traffic))} a month{span}: {n} instance{'' if n == 1 else 's'} at "
                f"${o.usd_per_hour}/h "
                f"x 730 h, each with an SLO capacity of c={b.level['concurrency']} and a goodput of "
                f"{o.goodput_output_tok_per_s:,.1f}{ci_text} output tok/s within the target, against the "
                f"{traffic.peak_output_tok_per_s:,.1f} tok/s of the busiest hour")
    return (f"{b.name}: {usd(o.monthly(volume, traffic))} a month: {describe_volume(volume)} output tokens x "
            f"${o.usd_per_m_output_effective:.4g}/M (output price + {traffic.input_per_output:g} input tokens per "
            f"output token); meets the target up to c={b.level['concurrency']} "
            f"({o.goodput_output_tok_per_s:,.1f}{ci_text} output tok/s)")


def _slo_costs(b: _Backend, traffic: Traffic, bedrock: Offer | None, bedrock_meets: bool | None) -> dict[str, Any]:
    """The keys this module adds to ``backends.<name>.slo``."""
    out: dict[str, Any] = {"usd_per_million_output_at_slo": None, "usd_per_million_output_at_slo_ci95": None,
                           "instances_for_peak": None, "instances_for_peak_ci95": None,
                           "monthly_usd": None, "break_even_vs_bedrock": None, "cost_reason": b.disqualified}
    o, level = b.offer, b.level
    if o is None or level is None:
        if b.disqualified is None:
            out["cost_reason"] = "no price"
        return out
    out["cost_reason"] = None
    volume = traffic.output_tokens_per_month
    g, ci = o.goodput_output_tok_per_s, o.goodput_ci95
    assert g is not None
    if o.billing == "hourly":
        assert o.usd_per_hour is not None
        hourly = o.usd_per_hour
        out["usd_per_million_output_at_slo"] = round(usd_per_million_output(hourly, g), 4)
        if ci:
            out["usd_per_million_output_at_slo_ci95"] = [
                round(usd_per_million_output(hourly, ci[1]), 4) if ci[1] > 0 else None,
                round(usd_per_million_output(hourly, ci[0]), 4) if ci[0] > 0 else None]
        out["instances_for_peak"] = o.instances(volume, traffic)
        if ci:
            out["instances_for_peak_ci95"] = [1 if o.capacity_lower_bound else o.instances(volume, traffic, ci[1]),
                                              o.instances(volume, traffic, ci[0]) if ci[0] > 0 else None]
        always_on = monthly_24x7(o.usd_per_hour)
    else:
        assert o.usd_per_m_output_effective is not None
        total = level.get("output_tok_per_s") or g
        out["usd_per_million_output_at_slo"] = round(o.usd_per_m_output_effective * max(1.0, total / g), 4)
        always_on = None
    low, high = o.monthly_interval(volume, traffic)
    out["monthly_usd"] = {
        "billing": o.billing,
        "always_on_one_instance": None if always_on is None else round(always_on, 2),
        "at_workload": round(o.monthly(volume, traffic), 2),
        "at_workload_ci95": [round(low, 2), None if high is None else round(high, 2)],
        "output_tokens_per_month": volume,
    }
    if o.billing == "hourly" and bedrock is not None:
        v, always, note = break_even_volume(o, bedrock, traffic)
        out["break_even_vs_bedrock"] = {
            "against": bedrock.name,
            "bedrock_measured": bedrock.measured,
            "bedrock_meets_target": bedrock_meets,
            "bedrock_usd_per_m_output_effective": round(bedrock.usd_per_m_output_effective or 0.0, 6),
            "output_tokens_per_month": None if v is None else round(v),
            "average_output_tok_per_s": None if v is None else round(v / SECONDS_PER_MONTH, 1),
            "always_cheaper_from_output_tokens_per_month": None if always is None else round(always),
            "note": note,
        }
    return out


def _not_run(prices: Mapping[str, Any], run_names: set[str], traffic: Traffic) -> dict[str, dict[str, Any]]:
    """Backends of the catalog this run did not measure, with the least they could cost here."""
    out: dict[str, dict[str, Any]] = {}
    for name, entry in (prices.get("not_run") or {}).items():
        if name in run_names:
            continue
        item: dict[str, Any] = {"label": entry.get("label"), "tool_calls": entry.get("tool_calls"),
                                "lower_bound_monthly_usd": None, "basis": None}
        if entry.get("hourly"):
            h = float(entry["hourly"]["usd_per_hour"])
            item["lower_bound_monthly_usd"] = round(monthly_24x7(h), 2)
            item["basis"] = f"at least one instance at ${h}/h x 730 h"
        elif entry.get("per_token"):
            e = _effective(entry["per_token"], traffic)
            item["lower_bound_monthly_usd"] = round(traffic.output_tokens_per_month * e / 1e6, 2)
            item["basis"] = f"list price ${e:.4g}/M output at this mix; its latency under the target is unknown"
        out[name] = item
    return out


def _bedrock_offer(assessed: Mapping[str, _Backend], prices: Mapping[str, Any],
                   traffic: Traffic) -> tuple[Offer | None, bool | None]:
    """Bedrock to break even against: the measured one when it ran, else its list price."""
    for b in assessed.values():
        if b.entry.get("kind") == "bedrock":
            _, per_token = prices_of(prices, b.name)
            meets = None if not b.entry.get("slo") else b.level is not None
            if per_token:
                return Offer.priced(b.name, None, per_token, traffic), meets
    ref = prices.get("bedrock_reference")
    if ref:
        return Offer.priced("bedrock", None, ref, traffic, measured=False), None
    return None, None


def recommend(summary: Mapping[str, Any], run: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, dict]]:
    """The ``recommendation`` block and the per-backend ``slo`` additions (``{name: {...}}``)."""
    options = run.get("options") or {}
    traffic = Traffic.from_dict(options.get("workload"))
    min_accuracy = options.get("min_accuracy")
    prices = summary.get("prices") or {}
    backends: Mapping[str, Any] = summary["backends"]
    infos = {b["name"]: b for b in run.get("backends") or []}
    volume = traffic.output_tokens_per_month

    assessed = {n: _assess(n, infos.get(n, {}), e, prices, traffic, min_accuracy) for n, e in backends.items()}
    bedrock, bedrock_meets = _bedrock_offer(assessed, prices, traffic)
    additions = {n: _slo_costs(b, traffic, bedrock, bedrock_meets) for n, b in assessed.items()
                 if backends[n].get("slo")}
    not_run = _not_run(prices, set(backends), traffic)
    target = _target(backends)
    floor = f" and the accuracy floor of {min_accuracy:.0%}" if min_accuracy is not None else ""
    rec: dict[str, Any] = {
        "workload": traffic.as_dict(),
        "min_accuracy": min_accuracy,
        "target": target,
        "verdict": None, "choice": None, "runner_up": None, "leader": None, "headline": "",
        "ranking": [], "switch_points": [], "reasons": [],
        "disqualified": {n: b.disqualified for n, b in assessed.items() if b.disqualified},
        "not_run": not_run,
        "backends": {n: {"accuracy": b.accuracy, "thin": b.thin, "caveats": b.caveats} for n, b in assessed.items()},
        "volume_range": [volume / VOLUME_SPAN, volume * VOLUME_SPAN],
    }
    workload_text = f"{describe_volume(volume)} output tokens a month"
    if target is None:
        rec["verdict"] = "not_measured"
        rec["headline"] = ("No backend was measured under a latency target in this run (no SLO capacity in the "
                           "summary), so none is recommended.")
        return rec, additions
    offers = {n: b for n, b in assessed.items() if b.offer is not None and b.disqualified is None}
    if not offers:
        rec["verdict"] = "none_qualifies"
        why = "; ".join(f"{n}: {r}" for n, r in rec["disqualified"].items()) or "no backend ran"
        rec["headline"] = f"No backend meets the target ({describe_target(target)}){floor} for this workload: {why}."
        if not_run:
            rec["headline"] += f" Not run here: {', '.join(not_run)}."
        return rec, additions

    ranked = sorted(offers.values(), key=lambda b: (b.offer.monthly(volume, traffic), b.name))  # type: ignore[union-attr]
    rec["ranking"] = [b.name for b in ranked]
    leader = ranked[0]
    runner = ranked[1] if len(ranked) > 1 else None
    rec["leader"] = leader.name
    lead_cost = leader.offer.monthly(volume, traffic)  # type: ignore[union-attr]
    reasons = [_money_line(b, traffic) for b in ranked]

    thin = list(leader.thin)
    undercut = {n: x for n, x in not_run.items() if x["lower_bound_monthly_usd"] is not None
                and x["lower_bound_monthly_usd"] < lead_cost and not (traffic.tool_calls and x["tool_calls"] is False)}
    for n, x in undercut.items():
        thin.append(f"{n} was not run and could cost less here ({x['basis']}: from {usd(x['lower_bound_monthly_usd'])} "
                    f"a month against {leader.name}'s {usd(lead_cost)})")
    tie = False
    if runner is not None:
        a = leader.offer.monthly_interval(volume, traffic)  # type: ignore[union-attr]
        b = runner.offer.monthly_interval(volume, traffic)  # type: ignore[union-attr]
        inf = float("inf")
        tie = intervals_overlap((a[0], inf if a[1] is None else a[1]), (b[0], inf if b[1] is None else b[1]))
        if tie:
            reasons.append(f"{leader.name} and {runner.name} tie: their monthly costs overlap within the 95% "
                           f"intervals of their goodput ({usd(a[0])} to {usd(a[1]) if a[1] is not None else 'unbounded'}"
                           f" against {usd(b[0])} to {usd(b[1]) if b[1] is not None else 'unbounded'})")
    for b_ in ranked:
        reasons += b_.caveats
    mix = [(n, (e.get("chat") or {}).get("input_per_output")) for n, e in backends.items() if n in offers]
    measured_mix = [m for _, m in mix if m is not None]
    if measured_mix and traffic.input_per_output > 2 * max(measured_mix):
        reasons.append(f"Capacity was measured with the benchmark's prompt ({max(measured_mix):.2g} input tokens per "
                       f"output token at most); the workload's {traffic.input_per_output:g} makes prefill heavier, so "
                       "real capacity may be lower and an hourly rig's cost higher")
    reasons += thin

    points, truncated = switch_points([b.offer for b in ranked], traffic, volume * VOLUME_SPAN)  # type: ignore[misc]
    rec["switch_points"] = [_describe_switch(p, offers, traffic) for p in points]
    if truncated:
        reasons.append("Switch points beyond the first 20,000 instance steps of a backend were not examined")

    if thin:
        rec["verdict"] = "too_thin"
        rec["headline"] = (f"Not enough evidence to choose at {workload_text}: " + "; ".join(thin) +
                           f". Cheapest measured: {leader.name} ({usd(lead_cost)} a month).")
    elif tie:
        assert runner is not None
        rec["verdict"] = "tie"
        rec["headline"] = (f"No single choice at {workload_text}: {leader.name} and {runner.name} meet the target"
                           f"{floor} and tie on cost within their intervals ({usd(lead_cost)} and "
                           f"{usd(runner.offer.monthly(volume, traffic))} a month).")  # type: ignore[union-attr]
    else:
        rec["verdict"] = "choice"
        rec["choice"] = leader.name
        rec["runner_up"] = runner.name if runner else None
        second = (f"; runner-up {runner.name} at {usd(runner.offer.monthly(volume, traffic))}"  # type: ignore[union-attr]
                  if runner else "; no other backend qualifies")
        rec["headline"] = (f"{leader.name}: the cheapest backend that meets the target ({describe_target(target)})"
                           f"{floor} at {workload_text}, {usd(lead_cost)} a month{second}.")
    rec["reasons"] = reasons
    return rec, additions


def _describe_switch(point: Mapping[str, Any], offers: Mapping[str, _Backend], traffic: Traffic) -> dict[str, Any]:
    v = point["output_tokens_per_month"]
    at = traffic.with_volume(v)
    below, above = offers[point["below"]].offer, offers[point["above"]].offer
    assert below is not None and above is not None
    eps = v * 1e-6

    def figures(o: Offer) -> dict[str, Any]:
        return {"billing": o.billing, "usd_per_hour": o.usd_per_hour,
                "usd_per_m_output_effective": o.usd_per_m_output_effective,
                "goodput_output_tok_per_s": o.goodput_output_tok_per_s,
                "monthly_usd_below": round(o.monthly(v - eps, at), 2), "monthly_usd_above": round(o.monthly(v + eps, at), 2),
                "instances_below": o.instances(v - eps, at), "instances_above": o.instances(v + eps, at)}

    fb, fa = figures(below), figures(above)
    why = ("an instance is added" if point["kind"] == "instance step" else "their monthly costs cross")
    text = (f"Below {describe_volume(v)} output tokens a month ({v / SECONDS_PER_MONTH:,.1f} tok/s on average) "
            f"{below.name} is cheaper ({usd(fb['monthly_usd_below'])} against {above.name}'s "
            f"{usd(fa['monthly_usd_below'])}); above it {above.name} ({usd(fa['monthly_usd_above'])} against "
            f"{usd(fb['monthly_usd_above'])}): {why}")
    return {**point, "output_tokens_per_month": round(v), "average_output_tok_per_s": round(v / SECONDS_PER_MONTH, 2),
            "text": text, "figures": {below.name: fb, above.name: fa}}


def attach(summary: dict[str, Any], run: Mapping[str, Any]) -> None:
    """Add the cost at the target to every ``slo`` block and the top-level ``recommendation``."""
    rec, additions = recommend(summary, run)
    for name, extra in additions.items():
        summary["backends"][name]["slo"].update(extra)
    summary["recommendation"] = rec


def offers_for_plot(summary: Mapping[str, Any]) -> tuple[Traffic, list[tuple[Offer, str]]]:
    """Every priced cost curve the summary supports, with its label: qualifying backends, disqualified
    ones (marked) and Bedrock at list price when it was not run. For the monthly-cost plot."""
    rec = summary.get("recommendation") or {}
    traffic = Traffic.from_dict(rec.get("workload"))
    prices = summary.get("prices") or {}
    curves: list[tuple[Offer, str]] = []
    for name, entry in summary["backends"].items():
        level = at_capacity(entry.get("slo"))
        goodput = level.get("goodput_output_tok_per_s") if level else None
        hourly, per_token = prices_of(prices, name)
        if not goodput or goodput <= 0:
            continue
        why = (rec.get("disqualified") or {}).get(name)
        label = name if not why else f"{name} (disqualified)"
        offer = (Offer.priced(name, hourly, None, traffic, goodput_output_tok_per_s=goodput) if hourly
                 else Offer.priced(name, None, per_token, traffic))
        if offer is not None:
            curves.append((offer, label))
    ref = prices.get("bedrock_reference")
    if ref and not any(e.get("kind") == "bedrock" for e in summary["backends"].values()):
        curves.append((Offer.priced("bedrock", None, ref, traffic, measured=False), "bedrock (list price; not run)"))
    for name, entry in (prices.get("not_run") or {}).items():
        if name in summary["backends"] or not entry.get("hourly"):
            continue
        curves.append((Offer.priced(name, entry["hourly"], None, traffic, measured=False),
                       f"{name} (not run: at least 1 instance)"))
    return traffic, curves


def volumes(low: float, high: float, n: int = 400) -> Iterable[float]:
    """``n`` volumes spaced evenly on a log scale from ``low`` to ``high``."""
    ratio = (high / low) ** (1 / (n - 1))
    return [low * ratio**i for i in range(n)]


def not_run_prices(book: Any, run_names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The prices of the catalog's backends this run does not measure, for ``run.json`` ``prices``.

    The one function here that looks anything up (through ``book``, a :class:`rigs.pricing.PriceBook`):
    the recommendation uses these prices to say when a backend that was not run could have been
    cheaper, while the summary stays a pure function of ``run.json`` and ``requests.jsonl``.
    """
    from rigs.catalog import BedrockBackend, load_catalog
    from rigs.pricing import PriceError

    skip = set(run_names)
    out: dict[str, dict[str, Any]] = {}
    for rig in load_catalog().rigs.values():
        if rig.name in skip:
            continue
        item: dict[str, Any] = {"label": rig.label, "tool_calls": rig.tool_calls}
        region = rig.regions[0] if rig.regions else "us-east-1"
        try:
            if isinstance(rig, BedrockBackend):
                p = book.bedrock_token_prices(rig.model_id, region).as_dict()
                item["per_token"] = {"usd_per_m_input": p["usd_per_million_input"],
                                     "usd_per_m_output": p["usd_per_million_output"], "source": p["source"],
                                     "as_of": p["as_of"]}
            else:
                item["hourly"] = book.hourly_price(rig, region).as_dict()
        except PriceError as exc:
            item["reason"] = str(exc)[:300]
        out[rig.name] = item
    return out
