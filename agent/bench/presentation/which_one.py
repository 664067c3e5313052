"""The "Which one?" section at the top of ``REPORT.md``: the recommendation, the figures it rests on,
the switch points, what disqualifies each backend, and the plot. Formats ``summary.json`` only.
"""

from __future__ import annotations

from typing import Any, Mapping

from . import cost_plot
from .markdown import table
from ..analysis.recommend import describe_target, usd
from ..analysis.slo import at_capacity
from ..analysis.traffic import DEFAULTS, describe_volume

def _cell(value: Any) -> str:
    return "-" if value is None else str(value)


def _pair(pair: Any, fmt: str = "{:,.1f}", prefix: str = "") -> str:
    """`` [low, high]``; nothing for a missing or zero-width interval (one repeat: not estimated)."""
    if not pair or pair[0] is None or pair[0] == pair[1]:
        return ""
    high = "unbounded" if pair[1] is None else prefix + fmt.format(pair[1])
    return f" [{prefix}{fmt.format(pair[0])}, {high}]"


def workload_lines(rec: Mapping[str, Any]) -> list[str]:
    w = rec["workload"]
    defaulted = set(w.get("defaulted") or ())
    mark = lambda key: " (default)" if key in defaulted else ""  # noqa: E731
    lines = [
        f"- **Workload**: {describe_volume(w['output_tokens_per_month'])} output tokens a month"
        f"{mark('output_tokens_per_month')} ({w['average_output_tok_per_s']:,.1f} tok/s on average, "
        f"{w['peak_output_tok_per_s']:,.1f} tok/s in the busiest hour: peak-to-average {w['peak_to_average']:g}"
        f"{mark('peak_to_average')}); {w['input_per_output']:g} input tokens per output token"
        f"{mark('input_per_output')}; tool calls {'needed' if w['tool_calls'] else 'not needed'}{mark('tool_calls')}.",
    ]
    if defaulted:
        lines.append(f"  Defaults ({', '.join(sorted(defaulted))}) are assumptions, not measurements: "
                     f"{', '.join(f'{k}={DEFAULTS[k]}' for k in DEFAULTS if k in defaulted)}; give yours with "
                     "`--workload KEY=VALUE,...` or a YAML file.")
    target = rec.get("target")
    source = f" ({'default' if target.get('source') == 'default' else '--slo'})" if target else ""
    lines.append(f"- **Target**: {describe_target(target)}{source}.")
    floor = rec.get("min_accuracy")
    lines.append("- **Accuracy floor**: " + (f"{floor:.0%} tool-calling accuracy (BFCL)." if floor is not None
                                              else "none (`--min-accuracy` not given)."))
    return lines


def section(summary: Mapping[str, Any]) -> list[str]:
    """The section's lines (Markdown)."""
    rec = summary.get("recommendation")
    out = ["## Which one?", ""]
    if not rec:
        return out + ["No recommendation in this summary.", ""]
    out += [f"> **{rec['headline']}**", ""]
    out += workload_lines(rec) + [""]
    rows = []
    for name, b in summary["backends"].items():
        slo = b.get("slo") or {}
        extra = (rec.get("backends") or {}).get(name) or {}
        monthly = slo.get("monthly_usd") or {}
        acc = extra.get("accuracy")
        be = slo.get("break_even_vs_bedrock") or {}
        if be.get("output_tokens_per_month") is not None:
            meets = {True: "meets the target", False: "misses the target", None: "not measured"}[be["bedrock_meets_target"]]
            be_text = f"{describe_volume(be['output_tokens_per_month'])}/month ({meets})"
        else:
            be_text = "never" if be.get("note", "").startswith("never") else "-"
        status = ("**chosen**" if rec.get("choice") == name else "runner-up" if rec.get("runner_up") == name
                  else (rec.get("disqualified") or {}).get(name) or ("thin evidence" if extra.get("thin") else "qualifies"))
        level = at_capacity(slo)
        goodput = "-" if not level else (f"{level['goodput_output_tok_per_s']:,.1f}" + _pair(
            (level.get("ci95") or {}).get("goodput_output_tok_per_s"))
            + f" ({level.get('requests')} requests in {level.get('repeats') or 1} repeat"
            + ("" if (level.get("repeats") or 1) == 1 else "s") + f", {level.get('errors')} errors)")
        rows.append([
            name, status,
            _cell(slo.get("capacity_concurrency")) if slo else "not measured",
            goodput,
            "-" if slo.get("usd_per_million_output_at_slo") is None else
            f"${slo['usd_per_million_output_at_slo']:,.3f}" + _pair(slo.get("usd_per_million_output_at_slo_ci95"),
                                                                     "{:,.3f}", "$"),
            _cell(slo.get("instances_for_peak")),
            usd(monthly.get("always_on_one_instance")),
            "-" if not monthly else usd(monthly["at_workload"]) + (
                "" if monthly["at_workload_ci95"][0] == monthly["at_workload_ci95"][1] else
                _pair(monthly["at_workload_ci95"], "{:,.2f}", "$")),
            be_text,
            "-" if not acc else f"{acc['accuracy']:.0%} [{acc['ci95'][0]:.0%}, {acc['ci95'][1]:.0%}] n={acc['cases']}",
        ])
    header = ["backend", "status", "SLO capacity (concurrency)", "goodput output tok/s at capacity [95% CI] (n)",
              "$/M output at the target [95% CI]", "instances for the peak", "$/month 24x7, one instance",
              "$/month at this workload [95% CI]", "break-even against Bedrock", "tool-calling accuracy [95% CI]"]
    out += table(header, rows)
    out.append("")
    if rec.get("switch_points"):
        out += ["Where the answer changes (the cheapest qualifying backend, by monthly volume):", ""]
        out += [f"- {p['text']}." for p in rec["switch_points"][:12]]
        if len(rec["switch_points"]) > 12:
            out.append(f"- ... and {len(rec['switch_points']) - 12} more (see `summary.json`).")
        out.append("")
    if rec.get("reasons"):
        out += ["The figures it rests on:", ""] + [f"- {r}." for r in rec["reasons"]] + [""]
    not_run = {n: x for n, x in (rec.get("not_run") or {}).items() if x.get("lower_bound_monthly_usd") is not None}
    if not_run:
        out += ["Not run in this run (what each would cost here at least):", ""]
        out += [f"- {n} ({x.get('label')}): from {usd(x['lower_bound_monthly_usd'])} a month ({x['basis']})"
                for n, x in not_run.items()] + [""]
    if cost_plot.drawable(summary):
        out += [f"![{cost_plot.TITLE}]({cost_plot.FILE})", ""]
    out += ["How: an hourly rig needs ceil(peak output tok/s / goodput at its SLO capacity) instances, each billed "
            "730 h a month; a per-token service costs volume x (output $/M + input tokens per output token x "
            "input $/M); goodput counts only requests that met the target. Two backends whose monthly costs overlap "
            "within the 95% intervals of their goodput are a tie. `agent/bench/analysis/recommend.py` states every rule.", ""]
    return out
