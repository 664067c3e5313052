"""The "Precision: what you trade" section: per backend what it serves (the catalog's statement of the
model, its weights' precision, bytes per weight and memory), what it measured (decode rate, answer
quality with its interval, $/M at the target), and every backend against the quality reference on
the same items, with the lane's power at the run's n. Read from the summary only."""

from __future__ import annotations

from typing import Sequence

from ...results.blocks.quality import QualityLane, QualityPair, QualityRate, QualitySummary
from ...results.formatting import MISSING, cell, percent
from ...results.summary import BackendSummary, Summary
from ..labels import backend_label, not_run
from ..markdown import table

METHOD = [
    "Items: the quality lane's seeded items (`--quality-n`, `--quality-seed`), the same on every backend, sent "
    "through each backend's own chat interface at temperature 0; `python -m agent.quality export` writes them.",
    "Quality: right / graded, graded = right + wrong + unreadable, with its 95% Wilson interval; a failed request "
    "and an item not sent are counted apart, never right and never wrong. Items sent: those that went out (answered, "
    "i.e. graded, or failed); not sent: over the backend's prompt limit, or left unsent or cut off in flight when "
    "the run was interrupted or the backend stopped.",
    "Pairs: on the items both backends had graded; \"right on A only\" counts the items A got right and B did not "
    "(wrong or unreadable). McNemar's exact test on those flips (p < 0.05 is significant, each pair on its own). "
    "The difference is B's accuracy minus A's on those items, with Newcombe's hybrid score 95% interval for paired "
    "proportions (method 10 of Newcombe, Statistics in Medicine 17, 1998).",
    "Model, precision, bytes per weight, weight memory and engine are the catalog's statement (`rigs/catalog.yaml`, "
    "each with its public source), not measured here. Two backends with the same model id, precision and engine "
    "serve the same weights with the same engine: a significant difference between them is flagged as an engine or "
    "configuration fault. Between two different models it is a model difference, not a precision effect.",
]


def _quality(q: QualityRate | None) -> str:
    if q is None or not q.graded or q.accuracy is None:
        return MISSING
    return f"{percent(q.accuracy, 1)} [{percent(q.ci95_low, 1)}, {percent(q.ci95_high, 1)}] (n={q.graded})"


def _decode(b: BackendSummary) -> str:
    chat = b.chat
    if chat is None or not chat.decode_tok_per_s.n or chat.decode_tok_per_s.p50 is None:
        return "not measured (chat not run)" if chat is None else MISSING
    return cell(chat.decode_tok_per_s.p50) + ("" if chat.decode_comparable else " (multi-token chunks)")


def _usd(b: BackendSummary) -> str:
    usd_m = b.slo.usd_per_million_output_at_slo if b.slo else None
    return "not measured (no latency target run)" if b.slo is None else ("-" if usd_m is None else f"${usd_m:,.3f}")


def _unsent_why(summary: Summary, b: BackendSummary) -> str:
    return "interrupted" if summary.run.interrupted else "stopped" if b.stopped else "no record"


def _not_sent(summary: Summary, b: BackendSummary, q: QualitySummary) -> str:
    """``0``, or ``3 over the prompt limit + 575 (interrupted)``."""
    parts = ([f"{q.not_sent} over the prompt limit"] if q.not_sent else []) + \
        ([f"{q.unsent} ({_unsent_why(summary, b)})"] if q.unsent else [])
    return " + ".join(parts) or "0"


def _row(summary: Summary, name: str, b: BackendSummary) -> list[str]:
    w, q = b.weights, b.quality
    memory = MISSING if w is None or w.memory_gib is None else f"{w.memory_gib:g} GiB"
    return [backend_label(summary, name), w.model if w else f"{b.model_id} (not in the catalog)",
            w.precision if w else MISSING, MISSING if w is None else f"{w.bytes_per_weight:g}" if w.bytes_per_weight
            is not None else "not published", memory, w.engine if w else MISSING, _decode(b),
            MISSING if q is None else f"{q.items - q.not_sent} ({q.graded})", _quality(q),
            MISSING if q is None else f"{q.unreadable} ({q.refusals})",
            MISSING if q is None else f"{q.failed} / {_not_sent(summary, b, q)}", _usd(b)]  # fmt: skip


def _short(summary: Summary, blocks: dict[str, BackendSummary]) -> list[str]:
    """A line per backend whose planned items were not all sent: sent, answered, and not sent, and why."""
    out = []
    for n, b in blocks.items():
        q = b.quality
        if q is not None and q.unsent and q.planned:
            out.append(f"- **{n}: {q.items - q.not_sent} of {q.planned} items sent, {q.graded} answered (graded), "
                       f"{q.unsent} not sent or cut off in flight ({_unsent_why(summary, b)}).**")
    return out + [""] if out else []


def _points(pair: QualityPair) -> str:
    if pair.difference is None:
        return MISSING
    ci = f" [{pair.ci95[0] * 100:+.1f}, {pair.ci95[1] * 100:+.1f}]" if pair.ci95 else ""
    return f"{pair.difference * 100:+.1f}{ci}"


def _against(lane: QualityLane, pairs: Sequence[QualityPair]) -> list[str]:
    ref = lane.reference
    mine = [p for p in pairs if p.a == ref]
    out = [f"**Reference: {ref}** ({lane.reference_reason}; `--quality-reference NAME` names another). Every other "
           "backend on the items both had graded; the difference is its accuracy minus the reference's:", ""]
    if not mine:
        return out[:1] + ["", "No other backend had items graded: nothing to compare.", ""]
    rows = [[p.b, p.relation, p.both, p.a_right_b_wrong, p.a_wrong_b_right, _points(p), f"{p.mcnemar_p:.2g}",
             percent(p.power), p.verdict] for p in mine]
    out += table(["backend", "what differs", "items graded on both", f"right on {ref} only", "right on it only",
                  "difference, points [95% CI]", "McNemar p", "power at this n", "verdict"], rows)
    differ = [f"- {p.b} against {ref}, besides what they serve: {'; '.join(p.differs)}." for p in mine if p.differs]
    return out + ([""] + differ if differ else []) + [""]


def _agreement(pairs: Sequence[QualityPair], ref: str | None) -> list[str]:
    out = []
    for p in pairs:
        if not p.same_weights:
            continue
        head = f"**{p.a} and {p.b} serve the same weights with the same engine** (the catalog's statement): "
        if p.flag:
            out.append(f"- {head}**flagged: {p.flag}.**")
        else:
            out.append(f"- {head}of {p.both} items both graded they differ on {len(p.flipped)} ({p.a_right_b_wrong} "
                       f"right on {p.a} only, {p.a_wrong_b_right} on {p.b} only); {p.verdict}.")
    others = [p for p in pairs if not p.same_weights and p.significant and ref not in (p.a, p.b)]
    out += [f"- {p.a} against {p.b} ({p.relation}): {p.verdict}." for p in others]
    return (["Agreement and other differences:", ""] + out + [""]) if out else []


def _power(lane: QualityLane) -> list[str]:
    n = lane.power_items if lane.power_items is not None else lane.items
    if n is None or lane.power is None:
        return []
    half = f" A 95% interval on 80% accuracy is ±{lane.wilson_half_width_at_80 * 100:.1f} points at this n." \
        if lane.wilson_half_width_at_80 is not None else ""
    fewer = "" if n == lane.items else f" (the fewest items a backend had graded; {lane.items:,} were planned)"
    return [f"**Power at n = {n:,}{fewer}:** when {lane.design_changed_share:.0%} of the answers change between two "
            f"backends, a {lane.design_drop * 100:.0f}-point drop is detected {percent(lane.power)} of the time "
            f"(exact McNemar, p < {lane.alpha:g}), with false alarms {percent(lane.false_alarm, 1)} of the time when "
            f"there is no drop; a pair with fewer items graded on both has less (its own power is in the table).{half} "
            f"A difference that is not significant and whose interval reaches past ±{lane.design_drop * 100:.0f} "
            "points is \"not enough items to tell\", never \"no difference\".", ""]


def _suites(summary: Summary, blocks: dict[str, BackendSummary]) -> list[str]:
    suites = list(dict.fromkeys(s for b in blocks.values() if b.quality for s in b.quality.by_suite))
    rows = [[backend_label(summary, n)] + [_quality(b.quality.by_suite.get(s)) if b.quality else MISSING
                                           for s in suites] for n, b in blocks.items()]
    return ["By suite (right / graded, 95% Wilson interval):", ""] + table(["backend", *suites], rows) + [""]


def section(summary: Summary) -> list[str]:
    """The section's lines; none when the lane was neither selected nor run."""
    lane = summary.quality_lane
    blocks = {n: b for n, b in summary.backends.items() if b.quality}
    if lane is None and not blocks:
        return []
    out = ["## Precision: what you trade", ""]
    if not blocks or lane is None:
        return out + [not_run(summary, "quality", "The quality lane ran on no backend (see \"Not run\" above)."), ""]
    o = summary.run.options
    out += [f"{o.quality_n or MISSING} items planned per backend, seed {o.quality_seed if o.quality_seed is not None else MISSING}"
            f", lane `{o.quality_lane or MISSING}`. Model, precision, bytes per weight, weight memory and engine are "
            "stated, not measured (the catalog's `weights`; the local rig's in `agent/local_rig.py`); decode rate, "
            "quality and $/M were measured in this run.", ""]
    out += [f"- **{n}: every figure here is the toy model's ({b.model_id} on this machine's CPU): it shows the lane "
            "working, not what a real model answers.**" for n, b in blocks.items() if b.toy_model]
    out += [""] if any(b.toy_model for b in blocks.values()) else []
    out += _short(summary, blocks)
    rows = [_row(summary, n, b) for n, b in summary.backends.items() if b.quality or b.weights]
    out += table(["backend", "model", "weight precision (catalog)", "bytes per weight (catalog)",
                  "weight memory (catalog)", "engine (catalog)", "decode tok/s p50", "items sent (answered)",
                  "quality [95% CI] (graded)", "unreadable (refusals)", "failed / not sent",
                  "$/M output at the target"], rows) + [""]
    bases = [f"- {n}: {b.weights.memory_gib:g} GiB: {b.weights.memory_basis}" for n, b in summary.backends.items()
             if b.weights and b.weights.memory_gib is not None and b.weights.memory_basis]
    out += (["Weight memory, where the catalog's figure comes from:", ""] + bases + [""]) if bases else []
    out += _against(lane, summary.quality_pairs) + _agreement(summary.quality_pairs, lane.reference) + _power(lane)
    out += _suites(summary, blocks)
    return out + ["How these figures are computed:", ""] + [f"- {m}" for m in METHOD] + [""]
