"""Side-by-side comparison of evidence folders (before/after): the same backends' figures with their
95% intervals, the first folder as the baseline, and every difference larger than the intervals
marked. Reads summaries only.

A difference is **marked** when both figures carry an interval and the intervals do not overlap
(:func:`agent.bench.analysis.stats.intervals_overlap`); a figure measured once, or a count without an
interval, is shown but never marked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from .markdown import table
from ..analysis.slo import at_capacity
from ..analysis.stats import intervals_overlap, mean_interval


@dataclass(frozen=True, slots=True)
class Figure:
    value: float | None
    ci95: tuple[float, float] | None
    n: int | None = None


Reader = Callable[[Mapping[str, Any]], Figure]


def _mean(path: tuple[str, str]) -> Reader:
    def read(b: Mapping[str, Any]) -> Figure:
        values = ((b.get(path[0]) or {}).get(path[1]) or {}).get("values") or []
        m = mean_interval(values)
        if m is None:
            return Figure(None, None, 0)
        return Figure(m[0], (m[1], m[2]) if len(values) > 1 else None, len(values))

    return read


def _share(part: str) -> Reader:
    def read(b: Mapping[str, Any]) -> Figure:
        block = b.get(part)
        if not block or not block.get("graded"):
            return Figure(None, None, 0)
        ci = block.get("correct_ci95")
        return Figure(block["correct"] / block["graded"], tuple(ci) if ci else None, block["graded"])

    return read


def _bfcl(b: Mapping[str, Any]) -> Figure:
    block = b.get("bfcl")
    if not block or not block.get("cases"):
        return Figure(None, None, 0)
    return Figure(block["accuracy"], (block["ci95_low"], block["ci95_high"]), block["cases"])


def _capacity(b: Mapping[str, Any]) -> Figure:
    slo = b.get("slo")
    return Figure(None if not slo else slo.get("capacity_concurrency"), None)


def _goodput(b: Mapping[str, Any]) -> Figure:
    level = at_capacity(b.get("slo"))
    if not level:
        return Figure(None, None)
    ci = (level.get("ci95") or {}).get("goodput_output_tok_per_s")
    return Figure(level.get("goodput_output_tok_per_s"), tuple(ci) if ci and None not in ci else None,
                  level.get("requests"))


def _slo_value(key: str, ci_key: str) -> Reader:
    def read(b: Mapping[str, Any]) -> Figure:
        slo = b.get("slo") or {}
        ci = slo.get(ci_key)
        return Figure(slo.get(key), tuple(ci) if ci and None not in ci else None)

    return read


def _monthly(b: Mapping[str, Any]) -> Figure:
    m = (b.get("slo") or {}).get("monthly_usd")
    if not m:
        return Figure(None, None)
    ci = m.get("at_workload_ci95")
    return Figure(m["at_workload"], tuple(ci) if ci and None not in ci and ci[0] != ci[1] else None)


FIGURES: Sequence[tuple[str, Reader, bool, int]] = (
    ("TTFT ms, mean at c=1", _mean(("chat", "ttft_ms")), False, 1),
    ("e2e ms, mean at c=1", _mean(("chat", "e2e_ms")), False, 0),
    ("decode tok/s, mean at c=1", _mean(("chat", "decode_tok_per_s")), True, 1),
    ("counting correct", _share("counting"), True, 2),
    ("strict counting correct", _share("counting_strict"), True, 2),
    ("BFCL accuracy", _bfcl, True, 3),
    ("SLO capacity (concurrency)", _capacity, True, 0),
    ("goodput output tok/s at capacity", _goodput, True, 1),
    ("$/M output at the target", _slo_value("usd_per_million_output_at_slo", "usd_per_million_output_at_slo_ci95"),
     False, 3),
    ("$/month at the workload", _monthly, False, 2),
)
"""(name, reader, higher is better, digits)."""


def compare(folders: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """Compare summaries; ``folders`` is ``[(label, summary)]`` with the baseline first."""
    names = [set(s["backends"]) for _, s in folders]
    common = [n for n in folders[0][1]["backends"] if all(n in ns for ns in names)]
    out: dict[str, Any] = {
        "folders": [label for label, _ in folders],
        "common": common,
        "only_in": {label: sorted(set(s["backends"]) - set(common)) for label, s in folders},
        "recommendations": [((s.get("recommendation") or {}).get("headline") or "no recommendation") for _, s in folders],
        "backends": {},
    }
    for name in common:
        rows = []
        for figure, read, higher_better, digits in FIGURES:
            values = [read(s["backends"][name]) for _, s in folders]
            if all(v.value is None for v in values):
                continue
            base = values[0]
            changes = []
            for v in values[1:]:
                changes.append(_change(base, v, higher_better))
            rows.append({"figure": figure, "digits": digits, "values": [
                {"value": v.value, "ci95": list(v.ci95) if v.ci95 else None, "n": v.n} for v in values],
                "changes": changes})
        out["backends"][name] = rows
    return out


def _change(base: Figure, new: Figure, higher_better: bool) -> dict[str, Any]:
    if base.value is None or new.value is None:
        return {"marked": False, "text": "not in both"}
    if base.ci95 is None or new.ci95 is None:
        same = base.value == new.value
        return {"marked": False, "text": "same" if same else "differs (no interval to judge)"}
    if intervals_overlap(base.ci95, new.ci95):
        return {"marked": False, "text": "within the intervals"}
    higher = new.value > base.value
    better = higher == higher_better
    return {"marked": True, "text": f"{'higher' if higher else 'lower'} ({'better' if better else 'worse'})"}


def _fmt(v: Mapping[str, Any], digits: int) -> str:
    if v["value"] is None:
        return "-"
    text = f"{v['value']:,.{digits}f}"
    if v["ci95"]:
        text += f" [{v['ci95'][0]:,.{digits}f}, {v['ci95'][1]:,.{digits}f}]"
    if v.get("n"):
        text += f" n={v['n']}"
    return text


def render(cmp: Mapping[str, Any]) -> str:
    """The comparison as Markdown."""
    folders = cmp["folders"]
    out = ["# Comparison", "", f"Baseline: `{folders[0]}`; compared: " + ", ".join(f"`{f}`" for f in folders[1:]) + ".",
           "", "A change is **marked** only when both figures have a 95% interval and the intervals do not overlap.",
           ""]
    out += ["## Recommendations", ""] + [f"- `{f}`: {h}" for f, h in zip(folders, cmp["recommendations"])] + [""]
    for label, only in cmp["only_in"].items():
        if only:
            out.append(f"- Only in `{label}`: {', '.join(only)} (not compared)")
    if any(cmp["only_in"].values()):
        out.append("")
    for name, rows in cmp["backends"].items():
        out += [f"## {name}", ""]
        header = ["figure"] + [f"`{f}`" for f in folders] + [f"change in `{f}`" for f in folders[1:]]
        cells = [[row["figure"], *(_fmt(v, row["digits"]) for v in row["values"]),
                  *(f"**{c['text']}**" if c["marked"] else c["text"] for c in row["changes"])] for row in rows]
        out += table(header, cells)
        out.append("")
    if not cmp["backends"]:
        out += ["No backend appears in every folder: nothing to compare.", ""]
    return "\n".join(out)
