"""The counting sections: per question set, the grades over the graded runs with their intervals,
every run with the record it came from, and every invalid call and call written as text."""

from __future__ import annotations

from typing import Any, Mapping

from ...results.blocks.counting import CountingSummary
from ...results.formatting import MISSING, cell, percent_range
from ...results.summary import Summary
from ..labels import backend_label, not_run
from ..markdown import table
from .scoreboard import grade

TITLES = (("counting", "Reference question set"), ("counting_strict", "Strict question set"))
GAP = {"counting": "The reference's ids have a gap from 4 to 9, so any threshold from `id > 3` to `id >= 10` selects "
                   "the same ids and grades as the right filter here; the strict set below closes it.",
       "counting_strict": "Every id from 0 to 14 is present, so only `id >= 10` (or its integer twin `id > 9`) selects "
                          "the true ids."}
GRADES = ["backend", "runs", "failed", "correct", "correct 95% CI", "wrong", "unreadable", "right filter",
          "right filter 95% CI", "first call right", "runs with several filters", "tool calls", "invalid calls",
          "text tool calls", "filters sent", "s p50"]
RUNS = ["backend", "run", "seq", "verdict", "count read", "how it was read / why not", "last filter", "right filter",
        "first call right", "filters tried", "answer (end)"]


def _args(value: Any) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={v!r}" for k, v in value.items())
    return repr(value)


def _grades(summary: Summary, blocks: Mapping[str, CountingSummary]) -> list[str]:
    rows = [[backend_label(summary, n), c.runs, c.errors, grade(c, "correct", failed=False), percent_range(c.correct_ci95),
             c.wrong, c.unreadable, grade(c, "right_filter", failed=False), percent_range(c.right_filter_ci95),
             grade(c, "first_call_right", failed=False), c.several_filters, c.tool_calls, c.invalid_tool_calls,
             c.text_tool_calls, ", ".join(f"`{k}` x{v}" for k, v in c.filters_sent.items()) or MISSING,
             cell(c.seconds.p50, 2)] for n, c in blocks.items()]
    return table(GRADES, rows) + ["", "Correct, right filter and first call right count the graded runs (failed runs "
                                  "apart); 95% CI: Wilson score interval.", ""]


def _runs(summary: Summary, blocks: Mapping[str, CountingSummary]) -> list[str]:
    rows = [[backend_label(summary, n), d.run, cell(d.seq), d.verdict, cell(d.quoted), d.reading[:120],
             cell(d.last_filter), cell(d.right_filter), cell(d.first_call_right), d.distinct_filters,
             " ".join(d.answer.split())[-120:] or MISSING] for n, c in blocks.items() for d in c.detail]
    out = ["Every run, with the record it came from (`seq` in requests.jsonl):", ""] + table(RUNS, rows) + [""]
    for n, c in blocks.items():
        out += [f"- {n} run {call.run}: invalid call `{call.name}({_args(call.input)})`: {call.reason}"
                for call in c.invalid_calls]
        out += [f"- {n} run {t.run}: tool call written as text instead of being made: `{t.snippet[:120]}`"
                for t in c.text_calls]
    return out + [""]


def section(summary: Summary) -> list[str]:
    """The section's lines; none when the part was neither selected nor run."""
    ran = {part: {n: getattr(b, part) for n, b in summary.backends.items() if getattr(b, part)} for part, _ in TITLES}
    if "counting" not in (summary.run.options.demos or []) and not any(ran.values()):
        return []
    out = ["## Counting (graded tool use)", ""]
    if not any(ran.values()):
        return out + [not_run(summary, "counting", "Not run on any backend (see \"Not run\" above)."), ""]
    for part, title in TITLES:
        blocks = ran[part]
        if not blocks:
            out += [f"### {title}", "", not_run(summary, part, "Not run on any backend (see \"Not run\" above)."), ""]
            continue
        first = next(iter(blocks.values()))
        out += [f"### {title}", "",
                f"Question: \"{first.question}\" Ids: {first.ids}. True answer: {first.truth} "
                f"({first.truth_filter}). Tools: {first.tools}.", "", GAP[part], ""]
        out += _grades(summary, blocks) + _runs(summary, blocks)
    return out
