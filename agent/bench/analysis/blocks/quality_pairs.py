"""The quality lane compared between backends: the top-level ``quality_pairs`` and ``quality_lane`` of
``summary.json``, and each backend's ``weights`` (what the catalog states it serves), from the
records and ``run.json`` only.

Every two backends are paired on the items both had graded (right, wrong or unreadable on both
sides: a failed request, or an item not sent, drops the item from the pair). On those items:

* the flips: right on one side and not the other ("wrong" here is wrong or unreadable);
* McNemar's exact test on the flips (:func:`..stats.mcnemar_exact`), significant below 0.05;
* the difference, accuracy of ``b`` - accuracy of ``a``, with Newcombe's hybrid score 95% interval
  for paired proportions (:func:`..stats.paired_difference_interval`);
* what the two serve, from the catalog: the same weights with the same engine (they should agree,
  so a significant difference is flagged as an engine or configuration fault, not a precision
  effect), the same model at another precision or on another engine, different models (a model
  difference), or unknown;
* the verdict: a significant difference; "no difference larger than 3 points" only when the whole
  95% interval lies within 3 points; otherwise "not enough items to tell", never "no difference".

The reference (``a`` in every pair that includes it) is ``--quality-reference``, else the
highest-precision backend measured (the most bytes per weight the catalog states).

A backend is paired with itself across two runs the same way (:func:`between_runs`, for ``python -m
agent.report A B``): on the items both runs graded, the second run's accuracy minus the first's.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Iterable, Mapping, Sequence

from ...results.blocks.quality import QualityLane, QualityPair, QualitySummary, Relation, Weights
from ...results.constants import WEIGHTS_METADATA_PREFIX
from ...results.records import QualityRecord, RequestRecord, parse_record
from ...results.run import BackendInfo, RunFile
from .. import stats
from .quality import verdict_of

ALPHA = 0.05
DESIGN_CHANGED_SHARE = 0.06
"""The share of answers the lane is sized for changing between two precisions (docs/quality.md)."""
DESIGN_DROP = 0.03
"""The drop in accuracy the lane is sized to detect; an interval wider than this either way cannot
say "no difference"."""
_DIGITS = 4


def weights_of(info: BackendInfo) -> Weights | None:
    """What the catalog states ``info`` serves, from its ``weights_*`` metadata (None when absent)."""
    meta = {k.removeprefix(WEIGHTS_METADATA_PREFIX): v for k, v in info.metadata.items()
            if k.startswith(WEIGHTS_METADATA_PREFIX)}
    if not meta.get("model") or not meta.get("precision") or not meta.get("engine"):
        return None

    def number(key: str) -> float | None:
        try:
            return float(meta[key]) if meta.get(key) not in (None, "") else None
        except (TypeError, ValueError):
            return None

    return Weights(model=str(meta["model"]), precision=str(meta["precision"]), bytes_per_weight=number("bytes_per_weight"),
                   memory_gib=number("memory_gib"), memory_basis=meta.get("memory_basis") or None,
                   engine=str(meta["engine"]), source=meta.get("source") or None)


def relation(a: BackendInfo | None, b: BackendInfo | None, wa: Weights | None, wb: Weights | None) -> Relation:
    """What two backends serve, from the catalog's statement of their weights and engine."""
    if a is None or b is None or wa is None or wb is None:
        return "unknown"
    if wa.model != wb.model:
        return "different models"
    if a.model_id == b.model_id and wa.precision == wb.precision and wa.engine == wb.engine:
        return "same weights and engine"
    return "same model"


def reference(run: RunFile, measured: Sequence[str], weights: Mapping[str, Weights | None]) -> tuple[str | None, str]:
    """The backend the report compares the others against, and why it is that one."""
    chosen = run.options.quality_reference
    if chosen and chosen in measured:
        return chosen, "chosen with --quality-reference"
    if not measured:
        return None, "no backend had items graded"
    best = max(measured, key=lambda n: (weights.get(n) and weights[n].bytes_per_weight) or -1.0)  # type: ignore[union-attr]
    w = weights.get(best)
    if w is None or w.bytes_per_weight is None:
        why = "the first backend measured (no weight precision on file for any)"
    else:
        why = (f"the highest-precision backend measured: {w.precision}, {w.bytes_per_weight:g} bytes per weight as the "
               "catalog states")
    if chosen:
        why = f"--quality-reference {chosen} was not measured in this run, so {why}"
    return best, why


def _points(x: float) -> str:
    return f"{x * 100:+.1f}"


@lru_cache(maxsize=64)
def design_power(n: int) -> tuple[float, float]:
    """The chance ``n`` paired items detect the design's drop, and the chance of a false alarm with no drop."""
    power = stats.mcnemar_power(n, (DESIGN_CHANGED_SHARE + DESIGN_DROP) / 2, (DESIGN_CHANGED_SHARE - DESIGN_DROP) / 2,
                                ALPHA)
    alarm = stats.mcnemar_power(n, DESIGN_CHANGED_SHARE / 2, DESIGN_CHANGED_SHARE / 2, ALPHA)
    return round(power, 3), round(alarm, 3)


_CAUSE = {"same weights and engine": "an engine or configuration fault, not a precision effect",
          "same model": "a precision or engine effect (the same model)",
          "different models": "a model difference, not a precision effect", "unknown": "what each serves is not on file"}


def verdict(a: str, b: str, flips: tuple[int, int], p: float, difference: float | None,
            ci: tuple[float, float] | None, rel: Relation) -> tuple[str, str | None]:
    """The pair's verdict in words, and the flag for two backends that should agree and do not.
    ``flips``: (right on ``a`` only, right on ``b`` only); ``difference`` and ``ci``: b - a."""
    only_a, only_b = flips
    if ci is None or difference is None:
        return "no item graded on both", None
    ci_text = f"95% interval [{_points(ci[0])}, {_points(ci[1])}] points"
    if p < ALPHA and only_a != only_b:
        worse, better = (b, a) if only_a > only_b else (a, b)
        low, high = (-ci[1] * 100, -ci[0] * 100) if difference < 0 else (ci[0] * 100, ci[1] * 100)
        text = (f"{worse} answers {abs(difference) * 100:.1f} points worse than {better} (95% interval {low:.1f} to "
                f"{high:.1f} points, McNemar p = {p:.2g}): {_CAUSE[rel]}")
        flag = None
        if rel == "same weights and engine":
            flag = (f"{a} and {b} serve the same weights with the same engine, yet {only_a} items went right on {a} "
                    f"only and {only_b} on {b} only (p = {p:.2g}): an engine or configuration fault, not a precision "
                    "effect")
        return text, flag
    if -DESIGN_DROP <= ci[0] and ci[1] <= DESIGN_DROP:
        return f"no difference larger than {DESIGN_DROP * 100:.0f} points ({ci_text})", None
    return f"not enough items to tell ({ci_text}, McNemar p = {p:.2g})", None


def _pair(a: str, b: str, graded: Mapping[str, Mapping[str, bool]], infos: Mapping[str, BackendInfo],
          weights: Mapping[str, Weights | None]) -> QualityPair:
    ra, rb = graded[a], graded[b]
    common = [item for item in ra if item in rb]
    both_right = sum(1 for i in common if ra[i] and rb[i])
    only_a = sum(1 for i in common if ra[i] and not rb[i])
    only_b = sum(1 for i in common if rb[i] and not ra[i])
    n = len(common)
    interval = stats.paired_difference_interval(both_right, only_a, only_b, n - both_right - only_a - only_b)
    ci = (round(interval[0], _DIGITS), round(interval[1], _DIGITS)) if interval else None
    p = stats.mcnemar_exact(only_a, only_b)
    difference = round((only_b - only_a) / n, _DIGITS) if n else None
    rel = relation(infos.get(a), infos.get(b), weights.get(a), weights.get(b))
    text, flag = verdict(a, b, (only_a, only_b), p, difference, ci, rel)
    return QualityPair(
        a=a, b=b, both=n, a_right_b_wrong=only_a, a_wrong_b_right=only_b,
        a_accuracy=round((both_right + only_a) / n, _DIGITS) if n else None,
        b_accuracy=round((both_right + only_b) / n, _DIGITS) if n else None,
        mcnemar_p=float(f"{p:.4g}"), difference=difference, ci95=ci,
        significant=bool(n) and p < ALPHA and only_a != only_b, same_weights=rel == "same weights and engine",
        relation=rel, power=design_power(n)[0] if n else 0.0, verdict=text, flag=flag,
        differs=[d for side in (a, b) if side in infos for d in infos[side].not_like_for_like()],
        flipped=[i.split("\x00", 1)[1] for i in common if ra[i] != rb[i]])


def _graded(records: Sequence[QualityRecord]) -> dict[str, bool]:
    """Each item graded (keyed by the lane's version and the item) and whether it was right."""
    return {f"{r.lane}\x00{r.item}": v.outcome == "right" for r in records if (v := verdict_of(r)).graded}


def between_runs(base: tuple[str, Iterable[RequestRecord | Mapping[str, Any]], RunFile],
                 other: tuple[str, Iterable[RequestRecord | Mapping[str, Any]], RunFile]) -> dict[str, QualityPair]:
    """Each backend that answered the lane in two runs, paired with itself (``python -m agent.report A B``).

    ``base`` and ``other`` are (label, records, ``run.json``); ``a`` is the backend in ``base``, ``b`` in ``other``,
    each named ``<backend> in <label>``, on the items both runs graded (the same lane version and item: none when the
    runs drew other items), so the difference is ``other`` - ``base`` with Newcombe's paired interval.
    """
    (base_label, base_records, base_run), (other_label, other_records, other_run) = base, other
    base_quality, other_quality = _by_backend(base_records), _by_backend(other_records)
    base_infos, other_infos = ({info.name: info for info in run.backends} for run in (base_run, other_run))
    out: dict[str, QualityPair] = {}
    for name in [b.name for b in base_run.backends if b.name in base_quality and b.name in other_quality]:
        a, b = f"{name} in {base_label}", f"{name} in {other_label}"
        infos = {side: info for side, info in ((a, base_infos.get(name)), (b, other_infos.get(name))) if info}
        out[name] = _pair(a, b, {a: _graded(base_quality[name]), b: _graded(other_quality[name])}, infos,
                          {side: weights_of(info) for side, info in infos.items()})
    return out


def _by_backend(records: Iterable[RequestRecord | Mapping[str, Any]]) -> dict[str, list[QualityRecord]]:
    out: dict[str, list[QualityRecord]] = {}
    for raw in records:
        if isinstance(raw, Mapping) and raw.get("part") != "quality":
            continue
        record = parse_record(raw) if isinstance(raw, Mapping) else raw
        if isinstance(record, QualityRecord):
            out.setdefault(record.backend, []).append(record)
    return out


def pairs(records: Mapping[str, Sequence[QualityRecord]], run: RunFile, ref: str | None,
          weights: Mapping[str, Weights | None]) -> list[QualityPair]:
    """Every two backends with quality records, in ``run.json``'s order; the reference is ``a``
    in the pairs that include it."""
    order = [b.name for b in run.backends if b.name in records] + [n for n in records if n not in
                                                                     {b.name for b in run.backends}]
    graded = {name: _graded(records[name]) for name in order}
    infos = {b.name: b for b in run.backends}
    out = []
    for i, x in enumerate(order):
        for y in order[i + 1:]:
            a, b = (y, x) if y == ref else (x, y)
            out.append(_pair(a, b, graded, infos, weights))
    return out


def lane(run: RunFile, blocks: Mapping[str, QualitySummary | None], weights: Mapping[str, Weights | None]
         ) -> QualityLane | None:
    """The lane's reference and its power at the run's ``--quality-n``, or, where a backend's items went unsent
    (an interrupted or stopped run), at the fewest items a backend had graded (None when the lane did not run)."""
    if "quality" not in (run.options.demos or []) and not any(blocks.values()):
        return None
    measured = [n for n, q in blocks.items() if q is not None and q.graded]
    ref, why = reference(run, measured, weights)
    n = run.options.quality_n
    graded = [q.graded for q in blocks.values() if q is not None]
    at = min([n, *graded]) if n and any(q is not None and q.unsent for q in blocks.values()) else n
    half = power = alarm = None
    if at:
        interval = stats.wilson_interval(round(0.8 * at), at)
        half = round((interval[1] - interval[0]) / 2, _DIGITS) if interval else None
        power, alarm = design_power(at)
    return QualityLane(items=n, reference=ref, reference_reason=why, alpha=ALPHA,
                       design_changed_share=DESIGN_CHANGED_SHARE, design_drop=DESIGN_DROP, power=power,
                       false_alarm=alarm, wilson_half_width_at_80=half, power_items=at)
