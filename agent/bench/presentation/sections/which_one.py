"""The "Which one?" section that opens ``REPORT.md``: the recommendation, what to read it with (an
interrupted run, a toy model, a stand-in), the figures it rests on, the switch points, what
disqualifies each backend, and the plot."""

from __future__ import annotations

from ...results.blocks.recommendation import Recommendation, Workload
from ...results.blocks.slo import MonthlyCost
from ...results.formatting import MISSING, bracket, target, usd, volume
from ...results.summary import BackendSummary, Summary
from ..markdown import table
from ..plots import cost_volume

HOW = ("How: an hourly rig needs ceil(peak output tok/s / goodput at its SLO capacity) instances, each billed "
       "730 h a month; a per-token service costs volume x (output $/M + input tokens per output token x "
       "input $/M), at the mix its requests that met the target had, as the server counted them; goodput counts "
       "only requests that met the target. Where the open loop ran at the rate one instance must carry at the "
       "peak, a backend that missed it there is disqualified. Two backends whose monthly costs overlap "
       "within the 95% intervals of their goodput are a tie. A capacity marked ≥ is a floor (no level above it "
       "was seen to miss): it widens no interval, and what one instance would cost if it is higher is shown apart, "
       "as a bound. `agent/bench/analysis/recommendation/` states every rule.")


TOY = "{name}: a CPU-served toy model ({model}): the harness works; not how fast a real rig is"


def brief_caveats(summary: Summary) -> list[str]:
    """The caveats of :func:`caveats` in a line each, for the terminal: a partial run, toy models, capacities
    that are only floors, prompts heavier than those measured."""
    rec = summary.recommendation
    out = ["Partial run: every figure covers only what finished"] if summary.run.interrupted else []
    out += [TOY.format(name=n, model=b.model_id) for n, b in summary.backends.items() if b.toy_model]
    return out + list(rec.caveats)


def caveats(summary: Summary) -> list[str]:
    """What the answer must be read with: an interrupted run, the run's notes, capacities that are only
    floors, prompts heavier than those measured, toy models, constrained tool use, a managed endpoint that is not
    like for like (features it does not offer, reasoning by default)."""
    out = []
    if summary.run.interrupted:
        out.append("- **Interrupted**: a partial run; every figure covers only what finished, and each section says "
                   "what did not run.")
    out += [f"- {note}" for note in summary.run.notes]
    out += [f"- {c}" for c in summary.recommendation.caveats]
    for name, b in summary.backends.items():
        if b.toy_model:
            out.append(f"- **{name}: figures come from a CPU-served toy model ({b.model_id}), not from "
                       "accelerator hardware. They show that the harness works, not how fast a real rig is.**")
        if b.constrained:
            out.append(f"- **{name}: constrained tool use.** Its first agent turn is a JSON-schema-constrained "
                       "choice among the tools made by the server's grammar, not the model's own tool call. "
                       "The grader still judges the filter it picked.")
    out += [f"- **{info.name}: not like for like.** {'; '.join(info.not_like_for_like())}."
            for info in summary.run.backends if info.name in summary.backends and info.not_like_for_like()]
    return out + [""] if out else []


def _value(value: object, key: str = "") -> str:
    if key == "output_tokens_per_month" and isinstance(value, float):
        return volume(value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def traffic_words(w: Workload) -> str:
    """What the chat part sent, in a few words: ``the reference's prompt and 100 output tokens``."""
    if w.prompts or w.trace:
        return f"the requests of the {'prompts file' if w.prompts else 'trace'} {w.prompts or w.trace}"
    if w.preset == "reference":
        return f"the reference's prompt and {_value(w.output_tokens_mean)} output tokens"
    shape = (f"prompts of {_value(w.prompt_input_tokens_mean)} +- {_value(w.prompt_input_tokens_stddev)} tokens and "
             f"{_value(w.output_tokens_mean)} +- {_value(w.output_tokens_stddev)} output tokens")
    if w.shared_prefix_tokens:
        shape += f" after a shared prefix of {w.shared_prefix_tokens} tokens"
    if w.turns and w.turns > 1:
        shape += f", in sessions of {w.turns} turns"
    return shape + (f" (preset {w.preset})" if w.preset else "")


def workload_lines(rec: Recommendation) -> list[str]:
    w = rec.workload
    defaulted = set(w.defaulted)

    def mark(key: str) -> str:
        return " (default)" if key in defaulted else " (from the lengths sent)" if key in w.derived else ""

    lines = [
        f"- **Workload**: {volume(w.output_tokens_per_month)} output tokens a month"
        f"{mark('output_tokens_per_month')} ({w.average_output_tok_per_s:,.1f} tok/s on average, "
        f"{w.peak_output_tok_per_s:,.1f} tok/s in the busiest hour: peak-to-average {w.peak_to_average:g}"
        f"{mark('peak_to_average')}); {w.input_per_output:g} input tokens per output token"
        f"{mark('input_per_output')}; tool calls {'needed' if w.tool_calls else 'not needed'}{mark('tool_calls')}; "
        f"{traffic_words(w)} (\"Your traffic\").",
    ]
    if defaulted:
        lines.append(f"  Defaults ({', '.join(sorted(defaulted))}) are assumptions, not measurements: "
                     f"{', '.join(f'{k}={_value(getattr(w, k), k)}' for k in sorted(defaulted))}; give yours "
                     "with `--workload KEY=VALUE,...` or a YAML file.")
    measured = {n: a.input_per_output_measured for n, a in rec.backends.items()
                if a.input_per_output_measured is not None}
    if measured:
        lines.append(f"- **Input tokens per output token**: {w.input_per_output:g} in the workload{mark('input_per_output')}; "
                     f"measured (the servers' usage): {', '.join(f'{n} {m:.3g}' for n, m in measured.items())}. "
                     "A per-token price is applied at the measured mix.")
    used = rec.target
    source = f" ({'default' if used.source == 'default' else '--slo'})" if used else ""
    lines.append(f"- **Target**: {target(used.model_dump() if used else None)}{source}.")
    floor = rec.min_accuracy
    lines.append("- **Accuracy floor**: " + (f"{floor:.0%} tool-calling accuracy (BFCL)." if floor is not None
                                              else "none (`--min-accuracy` not given)."))
    quality = rec.min_quality
    lines.append("- **Quality floor**: " + (f"{quality:.0%} answer quality on the quality lane (a backend whose upper "
                                             "95% bound is below it is disqualified)." if quality is not None
                                             else "none (`--min-quality` not given)."))
    lines += model_lines(rec)
    if rec.backends_chosen is not None:
        lines.append(f"- **Backends**: chosen with `--backends` ({', '.join(rec.backends_chosen)}): the choice is "
                     "among them; one left out that could cost less is named below.")
    return lines


def model_lines(rec: Recommendation) -> list[str]:
    """The model the comparison is for, and each backend of another model: "different models", compared or not."""
    models = rec.models
    if models is None or models.compared is None:
        return []
    line = f"- **Model**: {models.compared} ({models.why})."
    cannot = [f"- **Cannot serve {models.compared}** (not run): {n}: {why}." for n, why in models.cannot_serve.items()]
    if not models.different:
        return [line, *cannot]
    others = ", ".join(f"{n} serves {models.served[n].model} ({models.served[n].source})" for n in models.different)
    if models.compare_models:
        rule = ("compared with `--compare-models`: the quality lane is the arbiter (each must have its answers graded; "
                "one that answers worse than the best of the model compared beyond the lane's 95% interval cannot be "
                "chosen, nor one the lane cannot yet show within its design drop)")
    else:
        rule = "measured and shown, never chosen: compared only with `--compare-models` (and the quality lane)"
    return [line, f"- **Different models**: {others}; {rule}.", *cannot]


def _status(rec: Recommendation, name: str) -> str:
    if rec.choice == name:
        return "**chosen**"
    if rec.runner_up == name:
        return "runner-up"
    assessment = rec.backends.get(name)
    return rec.disqualified.get(name) or ("thin evidence" if assessment and assessment.thin else "qualifies")


def _row(rec: Recommendation, name: str, b: BackendSummary) -> list[str]:
    slo = b.slo
    acc = rec.backends[name].accuracy if name in rec.backends else None
    quality = rec.backends[name].quality if name in rec.backends else None
    level = slo.at_capacity() if slo else None
    monthly = slo.monthly_usd if slo else None
    be = slo.break_even_vs_bedrock if slo else None
    if be and be.output_tokens_per_month is not None:
        meets = {True: "meets the target", False: "misses the target", None: "not measured"}[be.bedrock_meets_target]
        be_text = f"{volume(be.output_tokens_per_month)}/month ({meets})"
    else:
        be_text = "never" if be and be.note.startswith("never") else MISSING
    goodput = MISSING if not level else (
        f"{level.goodput_output_tok_per_s:,.1f}" + bracket(level.ci95.goodput_output_tok_per_s)
        + f" ({level.requests} requests in {level.repeats} repeat{'' if level.repeats == 1 else 's'}, "
          f"{level.errors} errors)")
    usd_m = slo.usd_per_million_output_at_slo if slo else None
    capacity = "not measured" if not slo else ("every request failed" if slo.every_request_failed
                                               else slo.capacity_text())
    return [
        name, _status(rec, name), capacity, goodput,
        MISSING if usd_m is None else f"${usd_m:,.3f}" + bracket(slo.usd_per_million_output_at_slo_ci95, 3, "$"),  # type: ignore[union-attr]
        MISSING if not slo or slo.instances_for_peak is None else str(slo.instances_for_peak),
        usd(monthly.always_on_one_instance if monthly else None),
        _monthly(monthly),
        be_text,
        MISSING if not acc else f"{acc.accuracy:.0%} [{acc.ci95[0]:.0%}, {acc.ci95[1]:.0%}] n={acc.cases}",
        MISSING if not quality else f"{quality.accuracy:.0%} [{quality.ci95[0]:.0%}, {quality.ci95[1]:.0%}] "
                                    f"n={quality.cases}",
    ]


def _monthly(monthly: MonthlyCost | None) -> str:
    """``$5,875.04 [$5,287.54, $7,050.05]``: the 95% interval where there is one; apart from it, the bound a
    capacity that is only a floor leaves."""
    if monthly is None:
        return MISSING
    low = monthly.low_if_capacity_higher
    bound = "" if low is None else f"; bound, not an interval: as little as {usd(low)} if the capacity (a floor) is higher"
    return usd(monthly.at_workload) + bracket(monthly.at_workload_ci95, 2, "$") + bound


def bedrock_tier(summary: Summary) -> str:
    """`` (Standard tier)``: the Bedrock service tier the break-even is against (none without a Bedrock price)."""
    ref = summary.prices.bedrock_reference
    return f" ({(ref.service_tier or 'standard').capitalize()} tier)" if ref else ""


def by_task(rec: Recommendation) -> list[str]:
    """How the choice by $ per successful task was made, when the answer is that choice."""
    choice = rec.by_task
    if rec.chosen_by != "usd_per_successful_task" or choice is None:
        return []
    why = ("`--min-task-success` was given" if choice.min_task_success is not None
           else "no latency target was measured in this run")
    out = [f"Chosen by $ per successful task on BFCL's multi-turn tasks (\"Tasks\" below), because {why}: the lowest "
           "$ per successful task among the backends priced"
           + ("" if choice.min_task_success is None else " whose task success is at or above the floor") + "."]
    if choice.ranking:
        out.append(f"Ranking: {', '.join(choice.ranking)}.")
    out += [f"- {n}: not eligible: {w}" for n, w in choice.disqualified.items()]
    return out + [""]


def section(summary: Summary) -> list[str]:
    """The section's lines (Markdown)."""
    rec = summary.recommendation
    out = ["## Which one?", "", f"> **{rec.headline}**", ""] + by_task(rec) + caveats(summary) + workload_lines(rec) \
        + [""]
    header = ["backend", "status", "SLO capacity (concurrency)", "goodput output tok/s at capacity [95% CI] (n)",
              "$/M output at the target [95% CI]", "instances for the peak", "$/month 24x7, one instance",
              "$/month at this workload [95% CI]", f"break-even against Bedrock{bedrock_tier(summary)}",
              "tool-calling accuracy [95% CI]", "answer quality [95% CI]"]
    out += table(header, [_row(rec, n, b) for n, b in summary.backends.items()]) + [""]
    if rec.switch_points:
        out += ["Where the answer changes (the cheapest qualifying backend, by monthly volume):", ""]
        out += [f"- {p.text}." for p in rec.switch_points[:12]]
        if len(rec.switch_points) > 12:
            out.append(f"- ... and {len(rec.switch_points) - 12} more (see `summary.json`).")
        out.append("")
    if rec.reasons:
        out += ["The figures it rests on:", ""] + [f"- {r}." for r in rec.reasons] + [""]
    not_run = {n: x for n, x in rec.not_run.items() if x.lower_bound_monthly_usd is not None}
    if not_run:
        out += ["Not run in this run (what each would cost here at least):", ""]
        out += [f"- {n} ({x.label}): from {usd(x.lower_bound_monthly_usd)} a month ({x.basis})"
                for n, x in not_run.items()] + [""]
    if cost_volume.drawable(summary):
        out += [f"![{cost_volume.TITLE}]({cost_volume.FILE})", ""]
    return out + [HOW, ""]
