"""A backend's SLO capacity under the target (``backends.<name>.slo``), why it is what it is, and
every two backends compared on goodput at their capacity (``slo_pairs``)."""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Mapping, Sequence

from ....kinds import descriptor
from ...results.constants import LIMIT_LABELS
from ...results.blocks.slo import SloBlock, SloLevel, SloPair, SloSearch, TargetLimits
from ...results.records import TimingRecord
from ...results.run import RunFile, SearchLog
from ...results.summary import BackendSummary
from .. import stats
from ..slo import ATTAINMENT_PERCENT, DEFAULT_BASIS, Target
from .levels import level_block
from .tunnel import Forwards, tunnel_reason

NEURON_REASON = (
    "The Neuron server answers one request at a time: its model is a graph compiled ahead of time for "
    "one sequence of fixed shape (batch 1), and requests take turns behind one lock, so a second request "
    "in flight waits for the whole of the first"
)
LEVELS_RULE = "the levels given with --concurrency, each measured in full"


def capacity_of(levels: Sequence[SloLevel]) -> tuple[int | None, int | None]:
    """``(capacity, first level that missed)`` over the decided levels in order of concurrency. A level bound by
    the tunnel is left out like an undecided one: it measured the tunnel as much as the server, so it is neither
    the capacity nor a miss (with none missed above the capacity, the capacity is a floor)."""
    capacity = first_miss = None
    for lv in sorted(levels, key=lambda x: x.concurrency):
        if lv.verdict == "undecided" or lv.bound_by_tunnel:
            continue
        if lv.verdict == "misses":
            first_miss = lv.concurrency
            break
        capacity = lv.concurrency
    return capacity, first_miss


def _why_missed(lv: SloLevel, target: Target) -> str:
    parts = [f"{lv.met}/{lv.requests} requests met it"]
    by = lv.missed_by
    if by.get("error"):
        parts.append(f"{by['error']} failed")
    for key, limit in target.limits().items():
        if by.get(key):
            value = lv.p99(key)
            shown = f", p99 {value:,.0f} ms" if value is not None else ""
            parts.append(f"{by[key]} over the {LIMIT_LABELS[key]} limit of {limit:,g} ms{shown}")
    if by.get("ttft_p99_ms") and lv.one_piece_replies:
        parts.append(f"{lv.one_piece_replies} replies came in one piece, so their first token came with the last")
    if lv.stopped == "missed":
        parts.append("stopped early once it could no longer hold")
    return "; ".join(parts)


def _held_reason(by_c: Mapping[int, SloLevel], capacity: int, first_miss: int | None, target: Target,
                 search: SloSearch) -> str:
    held = by_c[capacity]
    reason = f"held at {capacity} ({held.met}/{held.requests} requests met it)"
    if first_miss is not None:
        reason += f"; missed at {first_miss} ({_why_missed(by_c[first_miss], target)})"
        if first_miss - capacity > 1:
            reason += (f". Levels {capacity + 1} to {first_miss - 1} were not measured, so the capacity lies "
                       f"between {capacity} and {first_miss - 1}")
        later = [c for c, lv in sorted(by_c.items()) if c > first_miss and lv.verdict == "holds"]
        if later:
            reason += (f". Level(s) {', '.join(map(str, later))} held after {first_miss} missed; the capacity "
                       "is taken below the first miss")
        return reason
    why = {"max_concurrency": "--max-concurrency", "max_levels": f"the {search.max_levels}-level limit of the search",
           "budget": "the time budget"}.get(str(search.stopped))
    return reason + "; every level measured held" + (f", up to {why}" if why else "") + \
        ", so the real capacity may be higher"


def capacity_reason(levels: Sequence[SloLevel], capacity: int | None, first_miss: int | None, target: Target,
                    kind: str, search: SloSearch, failed: str | None = None) -> str:
    """Why the capacity is what it is; ``failed`` is the most frequent error when every request failed
    (then the target could not be judged, which is not a miss)."""
    by_c = {lv.concurrency: lv for lv in levels}
    if not levels:
        return "no chat requests were measured"
    if failed is not None:
        total = sum(lv.requests for lv in levels)
        return f"every request failed ({total} of {total}; most often: {failed}), so the target could not be judged"
    if capacity is None:
        if first_miss is None:
            return "no level was measured to the end (the time budget ran out)"
        return f"misses the target even at concurrency {first_miss} ({_why_missed(by_c[first_miss], target)})"
    reason = _held_reason(by_c, capacity, first_miss, target, search)
    one_at_a_time = descriptor(kind).concurrency_limit == 1
    if one_at_a_time and capacity == 1:
        reason += f". {NEURON_REASON}."
    elif one_at_a_time:
        reason += (". Note: the Neuron server is documented as serving one request at a time; this run "
                   "measured more")
    return reason


def _reason(levels: Sequence[SloLevel], capacity: int | None, first_miss: int | None, target: Target, kind: str,
            search: SloSearch, failed: str | None, forwards: Forwards | None) -> str:
    """The capacity's reason over the levels the tunnel did not bind, then what it bound."""
    free = [lv for lv in levels if not lv.bound_by_tunnel]
    bound = tunnel_reason(levels, forwards)
    if not free and bound:
        return bound
    return capacity_reason(free, capacity, first_miss, target, kind, search, failed) + (f". {bound}" if bound else "")


def chat_levels(records: Iterable[TimingRecord]) -> dict[int, list[TimingRecord]]:
    """The timed and sweep chat records of one backend by concurrency (the cold request is apart)."""
    out: dict[int, list[TimingRecord]] = {}
    for r in records:
        if r.phase in ("timed", "sweep"):
            out.setdefault(int(r.concurrency), []).append(r)
    return out


def _search(log: SearchLog, by_level: Mapping[int, list[TimingRecord]], levels: Sequence[SloLevel],
            bracket: tuple[int | None, int | None]) -> SloSearch:
    capacity, first_miss = bracket
    return SloSearch(
        mode=log.mode or "levels", rule=log.rule or LEVELS_RULE, order=[int(c) for c in log.order or sorted(by_level)],
        levels_measured=len(levels), max_concurrency=log.max_concurrency, max_levels=log.max_levels,
        budget_s=log.budget_s, seconds=log.seconds, stopped=log.stopped, bracket=bracket,
        exact=first_miss is not None and (capacity or 0) + 1 == first_miss)


def slo_block(records: Sequence[TimingRecord], run: RunFile, name: str, kind: str,
              forwards: Forwards | None = None) -> SloBlock | None:
    """``summary.json`` ``backends.<name>.slo`` (before its costs) from the backend's chat records; a level that
    carried 70% of what the port ``forwards`` it could use were measured to carry is bound by the tunnel."""
    by_level = chat_levels(records)
    if not by_level:
        return None
    target = run.options.target()
    log = run.slo_search.get(name) or SearchLog()
    level_logs = {int(e.concurrency): e for e in log.levels}
    levels = [level_block(c, by_level[c], target, level_logs.get(c)) for c in sorted(by_level)]
    if forwards is not None:
        levels = [lv.model_copy(update={"bound_by_tunnel": not lv.from_rig
                                        and forwards.bound(lv.stream_bytes_per_s, lv.concurrency)}) for lv in levels]
    capacity, first_miss = capacity_of(levels)
    search = _search(log, by_level, levels, (capacity, first_miss))
    measured = [r for rs in by_level.values() for r in rs]
    every_failed = all(r.error for r in measured)
    failed = Counter(str(r.error) for r in measured).most_common(1)[0][0] if every_failed else None
    return SloBlock(
        target=TargetLimits(**target.as_dict()), target_source=target.source, target_text=target.describe(),
        target_basis="set with --slo" if target.given else DEFAULT_BASIS,
        attainment=ATTAINMENT_PERCENT / 100, capacity_concurrency=capacity,
        capacity_reason=_reason(levels, capacity, first_miss, target, kind, search, failed, forwards),
        every_request_failed=every_failed, search=search, levels=levels)


def slo_pairs(backends: Mapping[str, BackendSummary]) -> list[SloPair]:
    """Every two backends compared on goodput (output tok/s) at their SLO capacity.

    A backend that misses the target at its lowest level loses to one that holds somewhere. Two
    that both hold are ranked only when their 95% intervals do not overlap (else ``tie``), and
    only with at least two repeats each (else ``thin``: one repeat gives no interval).
    """
    blocks = {n: b.slo for n, b in backends.items() if b.slo}
    names = list(blocks)
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            la, lb = blocks[a].at_capacity(), blocks[b].at_capacity()
            out.append(SloPair(
                a=a, b=b, figure="goodput_output_tok_per_s at SLO capacity",
                a_capacity=blocks[a].capacity_concurrency, b_capacity=blocks[b].capacity_concurrency,
                a_value=la and la.goodput_output_tok_per_s, b_value=lb and lb.goodput_output_tok_per_s,
                a_ci95=la and la.ci95.goodput_output_tok_per_s, b_ci95=lb and lb.ci95.goodput_output_tok_per_s,
                **_verdict(a, b, la, lb)))
    return out


def _verdict(a: str, b: str, la: SloLevel | None, lb: SloLevel | None) -> dict[str, str | None]:
    if la is None and lb is None:
        return {"verdict": "neither", "better": None, "reason": "neither meets the target at any level measured"}
    if la is None or lb is None:
        better = b if la is None else a
        return {"verdict": "b" if la is None else "a", "better": better,
                "reason": f"only {better} meets the target at some level"}
    ia, ib = la.ci95.goodput_output_tok_per_s, lb.ci95.goodput_output_tok_per_s
    if min(la.repeats, lb.repeats) < 2 or not ia or not ib:
        return {"verdict": "thin", "better": None,
                "reason": "fewer than two repeats at a capacity level: no interval, not ranked"}
    if stats.intervals_overlap(ia, ib):
        return {"verdict": "tie", "better": None, "reason": "the 95% intervals overlap"}
    better = a if (la.goodput_output_tok_per_s or 0) > (lb.goodput_output_tok_per_s or 0) else b
    return {"verdict": "a" if better == a else "b", "better": better, "reason": "the 95% intervals do not overlap"}
