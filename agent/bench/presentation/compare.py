"""Side-by-side comparison of evidence folders (before/after): the same backends' figures with their
95% intervals, the first folder as the baseline, and every difference larger than the intervals
marked. Reads typed summaries only, and the quality lane's pairs of a backend with itself across two
runs (:func:`..analysis.blocks.quality_pairs.between_runs`, which the command computes).

A difference is **marked** when both figures carry an interval and the intervals do not overlap; a
figure measured once (one repeat, one request), or a count without an interval, is shown but never
marked. Answer quality has a second row where the runs graded the same items: the paired difference
with its 95% interval, marked when McNemar's test on the items that flipped says it is one. Runs measured
under different latency targets, and interrupted runs, are compared with a warning first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from ..results.blocks.chat import Distribution
from ..results.blocks.quality import QualityPair
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


FIGURES: Sequence[tuple[str, Reader, bool, int]] = (
    ("TTFT ms, mean at c=1", _mean("ttft_ms"), False, 1),
    ("e2e ms, mean at c=1", _mean("e2e_ms"), False, 0),
    ("decode tok/s, mean at c=1", _mean("decode_tok_per_s"), True, 1),
    ("counting correct", _share("counting"), True, 2),
    ("strict counting correct", _share("counting_strict"), True, 2),
    ("BFCL accuracy", _bfcl, True, 3),
    ("answer quality (accuracy)", _quality, True, 3),
    ("SLO capacity (concurrency)", _capacity, True, 0),
    ("goodput output tok/s at capacity", _goodput, True, 1),
    ("$/M output at the target", _usd_per_m, False, 3),
    ("$/month at the workload", _monthly, False, 2),
)
"""(name, reader, higher is better, digits)."""


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
        warnings=_warnings(folders))
    for name in common:
        rows = []
        for figure, read, higher_better, digits in FIGURES:
            values = [read(s.backends[name]) for _, s in folders]
            if all(v.value is None for v in values):
                continue
            rows.append(Row(figure, digits, values, [_change(values[0], v, higher_better) for v in values[1:]]))
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
