"""The section "Your traffic": what the chat part and the open loop sent (the workload, where it came from, every
key that took its default or followed from others), and per backend what was asked against what its server
counted, the share of the workload that fits its limits, its calibration, and where asked and counted part."""

from __future__ import annotations

from ...results.blocks.recommendation import Workload
from ...results.blocks.traffic import Lengths, TrafficBlock
from ...results.formatting import MISSING, percent
from ...results.summary import Summary
from ..labels import backend_label
from ..markdown import table
from ..plots import traffic as plot

TITLE = "## Your traffic"
SHAPE = ("preset", "prompt_input_tokens_mean", "prompt_input_tokens_stddev", "output_tokens_mean",
         "output_tokens_stddev", "shared_prefix_tokens", "turns", "think_time_s", "prompts", "trace", "trace_speed",
         "seed", "input_per_output")

PEERS = ("AIPerf and GuideLLM ask lengths of the user text alone, so the same length asked is that many tokens of "
         "text there and fewer here, by what the chat template adds")


def _mark(w: Workload, key: str) -> str:
    if key in w.defaulted:
        return "default"
    if key in w.derived:
        return f"from {w.derived[key]}"
    return "given"


def workload_lines(w: Workload) -> list[str]:
    """The workload as sent: its source, then every key of the request's shape with where its value came from."""
    what = {"defaults": "no --workload given", "option": "--workload KEY=VALUE"}.get(w.source, f"--workload {w.source}")
    rows = [(f"`{k}`", f"{getattr(w, k):g}" if isinstance(getattr(w, k), float) else str(getattr(w, k)), _mark(w, k))
            for k in SHAPE if getattr(w, k, None) is not None]
    return [f"The workload's source: {what}. Lengths are tokens as each server counts them (`usage`), the chat "
            f"template included ({PEERS}); the input tokens per output token priced are those the lengths send.", "",
            *table(["key", "value", "where it came from"], rows), ""]


def _lengths(x: Lengths | None) -> str:
    if x is None or x.mean is None:
        return MISSING
    return f"{x.mean:,.1f} +- {x.stddev:,.1f} (n={x.n})"


def _fit(t: TrafficBlock) -> str:
    if t.fit is None:
        return MISSING
    limits = ", ".join(x for x in (f"prompt <= {t.fit.max_prompt_tokens}" if t.fit.max_prompt_tokens else "",
                                   f"total <= {t.fit.max_total_tokens}" if t.fit.max_total_tokens else "") if x)
    return f"{percent(t.fit.share, 1)} ({limits or 'no limit known'})"


def _calibration(t: TrafficBlock) -> str:
    c = t.calibration
    if c is None:
        return "not needed (the prompt is given)"
    return f"{c.slope:.3f} tokens a unit + {c.offset:.1f}" if c.calibrated else "not calibrated"


def _output(t: TrafficBlock) -> str:
    how = "exactly asked (ignore_eos)" if t.ignore_eos else "as the server chose"
    return f"{_lengths(t.output_counted)}, {how}"


def section(summary: Summary) -> list[str]:
    """The section's lines (none when no backend's chat part sent the workload)."""
    sent = {n: b.traffic for n, b in summary.backends.items() if b.traffic is not None}
    if not sent:
        return []
    out = [TITLE, "", *workload_lines(summary.recommendation.workload)]
    rows = [(backend_label(summary, n), _fit(t), _calibration(t), _lengths(t.prompt_asked), _lengths(t.prompt_counted),
             _lengths(t.output_asked), _output(t),
             MISSING if t.within_goal is None else ("yes" if t.within_goal else "**no**"))
            for n, t in sent.items()]
    out += table(["backend", "fits its limits", "calibration", "prompt tokens asked", "counted by the server",
                  "output tokens asked", "came back", "within the goal"], rows) + [""]
    out += ["The goal: the mean prompt tokens each server counts within 2% of the mean asked, their standard "
            "deviation within 10% of the asked one (over the same requests; the cold request, sent before the "
            "calibration, apart).", ""]
    notes = [f"- **{backend_label(summary, n)}**: {line}." for n, t in sent.items()
             for line in ([t.disqualified] if t.disqualified else []) + t.differs]
    asked = any(t.prompt_asked for t in sent.values())
    out += (["**Where asked and counted differ, and what does not fit:**", ""] + notes if notes else
            ["Asked and counted agree on every backend." if asked else
             "No length was asked: the prompt is given, and each server's own count is in the table."]) + [""]
    if plot.names(summary):
        out += [f"![Asked against counted]({plot.FILE})", ""]
    return out
