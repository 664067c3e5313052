"""The SLO part of ``REPORT.md`` and its plot (latency against concurrency with the target
drawn), rendered from ``summary.json`` only, like the rest of the report."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .markdown import table
from ..analysis.slo import ATTAINMENT_PERCENT, DEFAULT_BASIS, LABEL_OF, TARGET_KEYS, Target

PLOT = "slo_latency_ms.png"
Namer = Callable[[Mapping[str, Any], str], str]


def _blocks(summary: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {n: b["slo"] for n, b in summary["backends"].items() if b.get("slo") and b["slo"]["levels"]}


def _num(value: Any, digits: int) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _with_ci(value: Any, ci: Sequence[float] | None, digits: int, repeats: int) -> str:
    if value is None:
        return "-"
    if not ci or repeats < 2:
        return _num(value, digits)
    return f"{_num(value, digits)} [{_num(ci[0], digits)}, {_num(ci[1], digits)}]"


def _share(lv: Mapping[str, Any]) -> str:
    if lv["met_share"] is None:
        return "-"
    ci = lv["ci95"]["met_share"]
    text = f"{lv['met_share'] * 100:.1f}%"
    return text + (f" [{ci[0] * 100:.1f}, {ci[1] * 100:.1f}]" if ci else "")


def section(summary: Mapping[str, Any], name: Namer) -> list[str]:
    """``## Capacity under a latency target (goodput)``: the target, the rule, and every level."""
    blocks = _blocks(summary)
    out = ["## Capacity under a latency target (goodput)", ""]
    if not blocks:
        return out + ["No chat levels were measured.", ""]
    first = next(iter(blocks.values()))
    default = first.get("target_source") == "default"
    text = first.get("target_text") or Target(**{k: first["target"].get(k) for k in TARGET_KEYS}).describe()
    out += [f"**Target** ({'the default' if default else 'set with `--slo`'}): {text}.", ""]
    if default:
        out += [f"Why this default: {first.get('target_basis') or DEFAULT_BASIS}. Set your own with `--slo`.", ""]
    out += [
        f"A request **meets** the target when it succeeded and each limit holds for it: TTFT = its first content "
        f"chunk (a reply that arrives in one piece: its arrival), ITL = its mean gap between content chunks, e2e "
        f"= its last byte. A failed request never meets it. A level **holds** when at least {ATTAINMENT_PERCENT}% "
        f"of its requests met the target (with fewer than 100 requests: every one of them). **Goodput** counts "
        f"only the requests that met it, per second of the level's wall time. The **SLO capacity** is the "
        f"highest concurrency that held with every lower level measured holding.",
        "",
        "Figures are means over the level's repeats with their 95% interval in brackets (Student t over the "
        "repeats; for the met share, Wilson over the requests); one repeat gives no interval.",
        "",
    ]
    rows = []
    for n, s in blocks.items():
        search = s.get("search") or {}
        order = search.get("order") or [lv["concurrency"] for lv in s["levels"]]
        how = ("auto: " + " -> ".join(map(str, order)) if search.get("mode") == "auto"
               else "levels given: " + ", ".join(map(str, order)))
        rows.append([name(summary, n), _num(s["capacity_concurrency"], 0), how,
                     _num(search.get("seconds"), 0), s["capacity_reason"]])
    out += table(["backend", "SLO capacity", "levels (in the order measured)", "seconds", "why"], rows) + [""]
    auto = next((s["search"] for s in blocks.values() if (s.get("search") or {}).get("mode") == "auto"), None)
    if auto:
        out += [f"Search (`--concurrency auto`): {auto['rule']}; up to `--max-concurrency` "
                f"{auto['max_concurrency']}, within `--slo-budget` {auto['budget_s']:,.0f} s per backend.", ""]
    for n, s in blocks.items():
        out += [f"### {name(summary, n)}", ""]
        rows = []
        for lv in s["levels"]:
            r, ci = lv["repeats"], lv["ci95"]
            verdict = {"holds": "yes", "misses": "**no**", "undecided": "undecided"}[lv.get("verdict") or
                                                                                     ("holds" if lv["holds"] else "misses")]
            if lv.get("stopped"):
                verdict += f" (stopped: {lv['stopped']})"
            rows.append([lv["concurrency"], r, lv["requests"], lv["errors"], lv["met"], _share(lv),
                         _with_ci(lv["goodput_req_per_s"], ci["goodput_req_per_s"], 3, r),
                         _with_ci(lv["goodput_output_tok_per_s"], ci["goodput_output_tok_per_s"], 1, r),
                         _with_ci(lv["output_tok_per_s"], ci.get("output_tok_per_s"), 1, r),
                         _num(lv["ttft_p99_ms"], 0), _num(lv["itl_p99_ms"], 1), _num(lv["e2e_p99_ms"], 0), verdict])
        out += table(["concurrency", "repeats", "requests", "errors", "met", "met share", "goodput req/s",
                     "goodput output tok/s", "output tok/s", "TTFT p99 ms", "ITL p99 ms", "e2e p99 ms", "holds"], rows)
        out.append("")
    pairs = summary.get("slo_pairs") or []
    if pairs:
        out += ["Goodput at SLO capacity, backend against backend (ranked only when the 95% intervals do not "
                "overlap):", ""]
        for p in pairs:
            head = f"{p['better']} ahead" if p["better"] else {"tie": "tie", "thin": "not ranked",
                                                               "neither": "neither holds"}[p["verdict"]]
            out.append(f"- {p['a']} ({_num(p['a_value'], 1)} tok/s at c={_num(p['a_capacity'], 0)}) vs {p['b']} "
                       f"({_num(p['b_value'], 1)} tok/s at c={_num(p['b_capacity'], 0)}): **{head}**: {p['reason']}")
        out.append("")
    return out


def plot_names(summary: Mapping[str, Any]) -> dict[str, str]:
    return {"slo": PLOT} if _blocks(summary) else {}


def make_plot(summary: Mapping[str, Any], out_dir: Path, name: Namer) -> dict[str, str]:
    """Latency p99 against concurrency, one panel per limit of the target, the limit drawn across."""
    blocks = _blocks(summary)
    if not blocks:
        return {}
    import matplotlib.pyplot as plt

    target = next(iter(blocks.values()))["target"]
    keys = [k for k in TARGET_KEYS if target.get(k) is not None] or ["ttft_p99_ms"]
    fig, axes = plt.subplots(1, len(keys), figsize=(4.2 * len(keys) + 1, 3.8), squeeze=False)
    for ax, key in zip(axes[0], keys):
        for n, s in blocks.items():
            points = [(lv["concurrency"], lv[key], lv["holds"]) for lv in s["levels"] if lv[key] is not None]
            if not points:
                continue
            xs, ys, held = zip(*points)
            line = ax.plot(xs, ys, "-", label=name(summary, n))[0]
            ax.scatter([x for x, h in zip(xs, held) if h], [y for y, h in zip(ys, held) if h],
                       color=line.get_color(), zorder=3)
            ax.scatter([x for x, h in zip(xs, held) if not h], [y for y, h in zip(ys, held) if not h],
                       facecolors="none", edgecolors=line.get_color(), zorder=3)
        if target.get(key) is not None:
            ax.axhline(target[key], color="#C44E52", linestyle="--", label=f"target {target[key]:,g} ms")
        ax.set_xscale("log", base=2)
        ticks = sorted({lv["concurrency"] for s in blocks.values() for lv in s["levels"]})
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.minorticks_off()
        ax.set_xlabel("concurrency (requests in flight)")
        ax.set_ylabel(f"{LABEL_OF[key]} p99 ms")
        ax.set_title(f"{LABEL_OF[key]} p99 by concurrency")
        ax.legend(fontsize=7)
    fig.suptitle("Filled: the level held the target; hollow: it missed", fontsize=8)
    fig.tight_layout()
    fig.savefig(out_dir / PLOT, dpi=110)
    plt.close(fig)
    return {"slo": PLOT}
