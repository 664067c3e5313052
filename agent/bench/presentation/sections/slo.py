"""The capacity section: the target and the rules, each backend's SLO capacity and why, every level
with its intervals, and the backends compared on goodput at their capacity."""

from __future__ import annotations

from typing import Mapping, Sequence

from ...results.blocks.slo import SloBlock, SloLevel, SloPair
from ...results.blocks.tunnel import TunnelBlock
from ...results.formatting import MISSING, number, with_interval
from ...results.summary import Summary
from ..labels import backend_label, not_run
from ..markdown import table
from ..plots.slo_latency import blocks as slo_blocks

LEVEL_HEADER = ["concurrency", "repeats", "requests", "errors", "met", "met share", "goodput req/s",
                "goodput output tok/s", "output tok/s", "TTFT p99 ms", "ITL p99 ms (per-request mean gaps)", "e2e p99 ms", "holds"]
HOLDS = {"holds": "yes", "misses": "**no**", "undecided": "undecided"}


def _rules(attainment: float) -> list[str]:
    share = f"{attainment * 100:g}"
    return [
        f"A request **meets** the target when it succeeded and each limit holds for it: TTFT = its first content "
        f"chunk (a reply that arrives in one piece: its arrival), ITL = its mean gap between content chunks, e2e "
        f"= its last byte. A failed request never meets it. A level **holds** when at least {share}% "
        f"of its requests met the target (with fewer than 100 requests: every one of them). **Goodput** counts "
        f"only the requests that met it, per second of the level's wall time. The **SLO capacity** is the "
        f"highest concurrency that held with every lower level measured holding.",
        "",
        "Figures are means over the level's repeats with their 95% interval in brackets (Student t over the "
        "repeats; for the met share, Wilson over the requests); one repeat gives no interval.",
        "",
    ]


def _share(lv: SloLevel) -> str:
    if lv.met_share is None:
        return MISSING
    ci = lv.ci95.met_share
    return f"{lv.met_share * 100:.1f}%" + (f" [{ci[0] * 100:.1f}, {ci[1] * 100:.1f}]" if ci else "")


def _estimate(value: float | None, interval: Sequence[float] | None, digits: int, repeats: int) -> str:
    """The figure with its interval over the repeats (none with one repeat)."""
    return with_interval(value, interval if repeats >= 2 else None, digits)


def _levels(s: SloBlock) -> list[str]:
    rows = []
    for lv in s.levels:
        r, ci = lv.repeats, lv.ci95
        holds = HOLDS[lv.verdict] + (f" (stopped: {lv.stopped})" if lv.stopped else "")
        rows.append([lv.concurrency, r, lv.requests, lv.errors, lv.met, _share(lv),
                     _estimate(lv.goodput_req_per_s, ci.goodput_req_per_s, 3, r),
                     _estimate(lv.goodput_output_tok_per_s, ci.goodput_output_tok_per_s, 1, r),
                     _estimate(lv.output_tok_per_s, ci.output_tok_per_s, 1, r),
                     number(lv.ttft_p99_ms, 0), number(lv.itl_p99_ms, 1), number(lv.e2e_p99_ms, 0), holds])
    return table(LEVEL_HEADER, rows) + [""]


def _capacities(summary: Summary, blocks: Mapping[str, SloBlock]) -> list[str]:
    rows = []
    for n, s in blocks.items():
        order = s.search.order or [lv.concurrency for lv in s.levels]
        how = ("auto: " + " -> ".join(map(str, order)) if s.search.mode == "auto"
               else "levels given: " + ", ".join(map(str, order)))
        rows.append([backend_label(summary, n), s.capacity_text(), how, number(s.search.seconds, 0),
                     s.capacity_reason])
    out = table(["backend", "SLO capacity", "levels (in the order measured)", "seconds", "why"], rows) + [""]
    auto = next((s.search for s in blocks.values() if s.search.mode == "auto"), None)
    if auto:
        out += [f"Search (`--concurrency auto`): {auto.rule}; up to `--max-concurrency` {auto.max_concurrency}, "
                f"within `--slo-budget` {number(auto.budget_s, 0)} s per backend.", ""]
    return out


def _load_from(tunnel: TunnelBlock | None) -> list[str]:
    """Where each level's load came from, for a backend reached through port forwards (docs/tunnel.md)."""
    if tunnel is None:
        return []
    here = [lv.concurrency for lv in tunnel.levels if lv.load_from == "tunnel"]
    rig = [lv.concurrency for lv in tunnel.levels if lv.load_from == "rig"]
    said = []
    if here:
        bound = f", bound by the tunnel at {', '.join(map(str, tunnel.bound_levels))}" if tunnel.bound_levels else ""
        said.append(f"level(s) {', '.join(map(str, here))} from this machine through {tunnel.forwards} port "
                    f"forward(s) ({tunnel.kind}){bound}")
    if rig:
        said.append(f"level(s) {', '.join(map(str, rig))} from the rig: {tunnel.load_from} (none through the "
                    "tunnel)")
    if tunnel.open_loop is not None:
        said.append("the open loop from " + ("the rig" if tunnel.open_loop.load_from == "rig" else "this machine"))
    return [f"Where the load came from: {'; '.join(said)}.", ""] if said else []


def _pairs(pairs: Sequence[SloPair]) -> list[str]:
    if not pairs:
        return []
    out = ["Goodput at SLO capacity, backend against backend (ranked only when the 95% intervals do not overlap):", ""]
    for p in pairs:
        head = f"{p.better} ahead" if p.better else {"tie": "tie", "thin": "not ranked",
                                                     "neither": "neither holds"}[p.verdict]
        out.append(f"- {p.a} ({number(p.a_value, 1)} tok/s at c={number(p.a_capacity, 0)}) vs {p.b} "
                   f"({number(p.b_value, 1)} tok/s at c={number(p.b_capacity, 0)}): **{head}**: {p.reason}")
    return out + [""]


def section(summary: Summary) -> list[str]:
    """``## Capacity under a latency target (goodput)``: the target, the rule, and every level."""
    blocks = slo_blocks(summary)
    out = ["## Capacity under a latency target (goodput)", ""]
    if not blocks:
        return out + [not_run(summary, "chat", "No chat levels were measured."), ""]
    first = next(iter(blocks.values()))
    default = first.target_source == "default"
    out += [f"**Target** ({'the default' if default else 'set with `--slo`'}): {first.target_text}.", ""]
    if default:
        out += [f"Why this default: {first.target_basis}. Set your own with `--slo`.", ""]
    out += _rules(first.attainment) + _capacities(summary, blocks)
    for n, s in blocks.items():
        out += [f"### {backend_label(summary, n)}", ""] + _levels(s) + _load_from(summary.backends[n].tunnel)
    return out + _pairs(summary.slo_pairs)
