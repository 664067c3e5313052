"""Side-by-side comparison of evidence folders (before/after): the same backends' figures with their
95% intervals, the first folder as the baseline, and every difference larger than the intervals
marked. Reads typed summaries only, and the quality lane's pairs of a backend with itself across two
runs (:func:`..analysis.blocks.quality_pairs.between_runs`, which the command computes).

A difference is **marked** when both figures carry an interval and the intervals do not overlap; a
figure measured once (one repeat, one request), or a count without an interval, is shown but never
marked. Answer quality has a second row where the runs graded the same items: the paired difference
with its 95% interval, marked when McNemar's test on the items that flipped says it is one. Runs measured
under different latency targets, and interrupted runs, are compared with a warning first. Runs that sent other
traffic (``--workload``: other lengths, a preset, a file, sessions) say so before anything else, and their
latency, capacity and cost figures are shown but not compared: only the fixed tasks' (counting, BFCL, answer
quality) are; a run priced for another volume has its monthly cost not compared.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from ..results.blocks.chat import Distribution
from ..results.blocks.quality import QualityPair
from ..results.blocks.recommendation import Workload
from ..results.blocks.slo import SloLevel
from ..results.formatting import target, with_interval
from ..results.summary import BackendSummary, Summary
from .markdown import table


@dataclass(frozen=True, slots=True)
class Figure:
    value: float | None
    ci95: tuple[float, float] | None
    n: int | None = None
    text: str | None = None
    """How the value reads where a bare number would mislead (a capacity that is only a floor)."""


@dataclass(frozen=True, slots=True)
class Change:
    marked: bool
    text: str


@dataclass(frozen=True, slots=True)
class Row:
    figure: str
    digits: int
    values: list[Figure]
    changes: list[Change]


@dataclass(frozen=True, slots=True)
class Comparison:
    folders: list[str]
    common: list[str]
    only_in: dict[str, list[str]]
    recommendations: list[str]
    warnings: list[str]
    backends: dict[str, list[Row]] = field(default_factory=dict)


Reader = Callable[[BackendSummary], Figure]
NOTHING = Figure(None, None, 0)


def _mean(key: str) -> Reader:
    """The mean at concurrency 1 with its 95% interval (none from fewer than two requests)."""

    def read(b: BackendSummary) -> Figure:
        dist: Distribution | None = getattr(b.chat, key) if b.chat else None
        if dist is None or not dist.n:
            return NOTHING
        return Figure(dist.mean, dist.mean_ci95, dist.n)

    return read


def _share(part: str) -> Reader:
    def read(b: BackendSummary) -> Figure:
        block = getattr(b, part)
        if not block or not block.graded:
            return NOTHING
        return Figure(block.correct / block.graded, block.correct_ci95, block.graded)

    return read


def _bfcl(b: BackendSummary) -> Figure:
    block = b.bfcl
    if not block or not block.cases or block.ci95_low is None or block.ci95_high is None:
        return NOTHING
    return Figure(block.accuracy, (block.ci95_low, block.ci95_high), block.cases)


def _quality(b: BackendSummary) -> Figure:
    q = b.quality
    if not q or not q.graded or q.accuracy is None:
        return NOTHING
    ci = (q.ci95_low, q.ci95_high) if q.ci95_low is not None and q.ci95_high is not None else None
    return Figure(q.accuracy, ci, q.graded)


def _capacity(b: BackendSummary) -> Figure:
    if not b.slo or b.slo.capacity_concurrency is None:
        return Figure(None, None)
    return Figure(b.slo.capacity_concurrency, None, text=b.slo.capacity_text() if b.slo.capacity_floor else None)


def _level(b: BackendSummary) -> SloLevel | None:
    return b.slo.at_capacity() if b.slo else None


def _estimated(level: SloLevel | None, ci: Sequence[float | None] | None) -> tuple[float, float] | None:
    """An interval over repeats, only where there were two or more (one repeat gives ``[v, v]``)."""
    if level is None or level.repeats < 2 or not ci or ci[0] is None or ci[1] is None or ci[0] == ci[1]:
        return None
    return ci[0], ci[1]


def _goodput(b: BackendSummary) -> Figure:
    level = _level(b)
    if not level:
        return Figure(None, None)
    return Figure(level.goodput_output_tok_per_s, _estimated(level, level.ci95.goodput_output_tok_per_s),
                  level.requests)


def _usd_per_m(b: BackendSummary) -> Figure:
    slo = b.slo
    if not slo:
        return Figure(None, None)
    return Figure(slo.usd_per_million_output_at_slo, _estimated(_level(b), slo.usd_per_million_output_at_slo_ci95))


def _monthly(b: BackendSummary) -> Figure:
    m = b.slo.monthly_usd if b.slo else None
    if not m:
        return Figure(None, None)
    return Figure(m.at_workload, _estimated(_level(b), m.at_workload_ci95))


TASKS, TRAFFIC, VOLUME = "tasks", "traffic", "volume"
"""What a figure measures: the fixed tasks (the same for every run), the traffic sent (``--workload``'s shape), or
that traffic priced at the workload's volume."""

FIGURES: Sequence[tuple[str, Reader, bool, int, str]] = (
    ("TTFT ms, mean at c=1", _mean("ttft_ms"), False, 1, TRAFFIC),
    ("e2e ms, mean at c=1", _mean("e2e_ms"), False, 0, TRAFFIC),
    ("decode tok/s, mean at c=1", _mean("decode_tok_per_s"), True, 1, TRAFFIC),
    ("counting correct", _share("counting"), True, 2, TASKS),
    ("strict counting correct", _share("counting_strict"), True, 2, TASKS),
    ("BFCL accuracy", _bfcl, True, 3, TASKS),
    ("answer quality (accuracy)", _quality, True, 3, TASKS),
    ("SLO capacity (concurrency)", _capacity, True, 0, TRAFFIC),
    ("goodput output tok/s at capacity", _goodput, True, 1, TRAFFIC),
    ("$/M output at the target", _usd_per_m, False, 3, TRAFFIC),
    ("$/month at the workload", _monthly, False, 2, VOLUME),
)
"""(name, reader, higher is better, digits, what it measures)."""

SHAPE = ("preset", "prompt_input_tokens_mean", "prompt_input_tokens_stddev", "output_tokens_mean",
         "output_tokens_stddev", "shared_prefix_tokens", "turns", "think_time_s", "prompts", "trace", "trace_speed")
"""The workload's keys that say what a request is (:data:`agent.bench.analysis.traffic.REQUEST_KEYS`, as the
summary keeps them)."""
PRICING = ("output_tokens_per_month", "peak_to_average")


def traffic_text(w: Workload) -> str:
    """What a run sent, in a few words."""
    if w.prompts or w.trace:
        return f"the {'prompts' if w.prompts else 'trace'} file {Path(w.prompts or w.trace or '').name}"
    prompts = "the reference's prompt" if w.preset == "reference" else \
        f"prompts of {_tokens(w.prompt_input_tokens_mean, w.prompt_input_tokens_stddev)}"
    lengths = f"{prompts} and outputs of {_tokens(w.output_tokens_mean, w.output_tokens_stddev)} tokens"
    extra = []
    if w.shared_prefix_tokens:
        extra.append(f"a shared prefix of {w.shared_prefix_tokens}")
    if (w.turns or 1) > 1:
        extra.append(f"sessions of {w.turns} turns")
    named = f"preset {w.preset}: " if w.preset and w.preset != "reference" and "preset" not in w.defaulted else ""
    return named + lengths + "".join(f", {e}" for e in extra)


def _tokens(mean: float | None, stddev: float | None) -> str:
    return f"{mean or 0:,.0f}" + (f" +- {stddev:,.0f}" if stddev else "")


def differs(base: Workload, other: Workload) -> str | None:
    """What ``other``'s traffic is apart from ``base``'s: :data:`TRAFFIC` (another shape), :data:`VOLUME` (the same
    shape priced for another volume), or None."""
    if any(getattr(base, k) != getattr(other, k) for k in SHAPE):
        return TRAFFIC
    return VOLUME if any(getattr(base, k) != getattr(other, k) for k in PRICING) else None


def _comparable(measures: str, apart: str | None) -> bool:
    """Whether a figure that measures ``measures`` compares across runs ``apart`` (:func:`differs`)."""
    return apart is None or measures == TASKS or (apart == VOLUME and measures == TRAFFIC)


def _traffic_warnings(folders: Sequence[tuple[str, Summary]]) -> list[str]:
    """The runs that sent other traffic than the baseline, or priced it for another volume: first, as they decide
    what is compared."""
    base_label, base = folders[0]
    w = base.recommendation.workload
    out = []
    for label, s in folders[1:]:
        other = s.recommendation.workload
        kind = differs(w, other)
        if kind == TRAFFIC:
            out.append(f"The workloads differ: `{label}` sent {traffic_text(other)}, `{base_label}` sent "
                       f"{traffic_text(w)}. Latency, capacity and cost measure different requests, so they are "
                       "shown but not compared; only the fixed tasks (counting, BFCL, answer quality) are")
        elif kind == VOLUME:
            out.append(f"`{label}` is priced for another volume ({other.output_tokens_per_month:,.0f} output "
                       f"tokens a month at peak/average {other.peak_to_average:g}) than `{base_label}` "
                       f"({w.output_tokens_per_month:,.0f} at {w.peak_to_average:g}): its $/month is not compared")
    return out


def _warnings(folders: Sequence[tuple[str, Summary]]) -> list[str]:
    """Different latency targets and interrupted runs: what makes the comparison unfair or partial."""
    out = []
    base_label, base = folders[0]
    base_target = base.recommendation.target
    for label, s in folders[1:]:
        other = s.recommendation.target
        limits = [None if t is None else {k: v for k, v in t.model_dump().items() if k != "source"}
                  for t in (base_target, other)]
        if limits[0] != limits[1]:
            out.append(f"`{label}` was measured under another latency target ({target(limits[1])}) than `{base_label}` "
                       f"({target(limits[0])}): capacities, goodput and costs at the target are not comparable")
    out += [f"`{label}` is an interrupted run: its figures cover only what finished" for label, s in folders
            if s.run.interrupted]
    return out


def _change(base: Figure, new: Figure, higher_better: bool) -> Change:
    if base.value is None or new.value is None:
        return Change(False, "not in both")
    if base.ci95 is None or new.ci95 is None:
        return Change(False, "same" if base.value == new.value else "differs (no interval to judge)")
    if base.ci95[0] <= new.ci95[1] and new.ci95[0] <= base.ci95[1]:
        return Change(False, "within the intervals")
    higher = new.value > base.value
    return Change(True, f"{'higher' if higher else 'lower'} ({'better' if higher == higher_better else 'worse'})")


PAIRED = "answer quality, paired difference on the same items"
NOT_COMPARED = {TRAFFIC: Change(False, "not compared (other traffic)"),
                VOLUME: Change(False, "not compared (another volume)")}


def _paired(pairs: Sequence[QualityPair | None]) -> Row | None:
    """The row of a backend's paired quality differences (one per compared folder), or None when no folder has one."""
    if all(p is None for p in pairs):
        return None
    values, changes = [NOTHING], []
    for pair in pairs:
        if pair is None or not pair.both or pair.difference is None:
            values.append(NOTHING)
            changes.append(Change(False, "no item graded in both" if pair else "not in both"))
            continue
        values.append(Figure(pair.difference, pair.ci95, pair.both))
        if pair.significant:
            higher = pair.difference > 0
            changes.append(Change(True, f"{'higher (better)' if higher else 'lower (worse)'}, McNemar p = "
                                        f"{pair.mcnemar_p:.2g}"))
        else:
            changes.append(Change(False, f"not significant (McNemar p = {pair.mcnemar_p:.2g})"))
    return Row(PAIRED, 3, values, changes)


def compare(folders: Sequence[tuple[str, Summary]],
            quality: Sequence[Mapping[str, QualityPair]] = ()) -> Comparison:
    """Compare summaries; ``folders`` is ``[(label, summary)]`` with the baseline first; ``quality``, one mapping
    per compared folder: each backend's lane paired with its baseline run (backend -> pair)."""
    names = [set(s.backends) for _, s in folders]
    common = [n for n in folders[0][1].backends if all(n in ns for ns in names)]
    out = Comparison(
        folders=[label for label, _ in folders], common=common,
        only_in={label: sorted(set(s.backends) - set(common)) for label, s in folders},
        recommendations=[s.recommendation.headline or "no recommendation" for _, s in folders],
        warnings=_traffic_warnings(folders) + _warnings(folders))
    base_workload = folders[0][1].recommendation.workload
    apart = [differs(base_workload, s.recommendation.workload) for _, s in folders[1:]]
    for name in common:
        rows = []
        for figure, read, higher_better, digits, measures in FIGURES:
            values = [read(s.backends[name]) for _, s in folders]
            if all(v.value is None for v in values):
                continue
            rows.append(Row(figure, digits, values, [
                _change(values[0], v, higher_better) if _comparable(measures, kind) else NOT_COMPARED[kind]
                for v, kind in zip(values[1:], apart)]))
            if read is _quality:
                paired = _paired([pairs.get(name) for pairs in quality])
                rows += [paired] if paired else []
        out.backends[name] = rows
    return out


def _fmt(v: Figure, digits: int) -> str:
    text = v.text or with_interval(v.value, v.ci95, digits)
    return text + (f" n={v.n}" if v.n and v.value is not None else "")


def render(cmp: Comparison) -> str:
    """The comparison as Markdown."""
    folders = cmp.folders
    out = ["# Comparison", "", f"Baseline: `{folders[0]}`; compared: " + ", ".join(f"`{f}`" for f in folders[1:]) + ".",
           "", "A change is **marked** only when both figures have a 95% interval and the intervals do not overlap.",
           ""]
    if cmp.warnings:
        out += ["**Read with care:**", ""] + [f"- **{w}.**" for w in cmp.warnings] + [""]
    out += ["## Recommendations", ""] + [f"- `{f}`: {h}" for f, h in zip(folders, cmp.recommendations)] + [""]
    only = [f"- Only in `{label}`: {', '.join(names)} (not compared)" for label, names in cmp.only_in.items() if names]
    out += only + ([""] if only else [])
    for name, rows in cmp.backends.items():
        header = ["figure"] + [f"`{f}`" for f in folders] + [f"change in `{f}`" for f in folders[1:]]
        cells = [[row.figure, *(_fmt(v, row.digits) for v in row.values),
                  *(f"**{c.text}**" if c.marked else c.text for c in row.changes)] for row in rows]
        out += [f"## {name}", ""] + table(header, cells) + [""]
    if not cmp.backends:
        out += ["No backend appears in every folder: nothing to compare.", ""]
    return "\n".join(out)
