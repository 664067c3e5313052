"""The Tasks section: BFCL's multi-turn tasks done by the agent on each backend: how many succeeded, with the
interval; what a task takes (turns, tool calls, tokens, seconds) and costs ($ per task, $ per successful task); every
two backends compared on the same tasks; and the plot of $ per successful task against success."""

from __future__ import annotations

from typing import Mapping, Sequence

from ...results.blocks.tasks import TasksPair, TasksSummary
from ...results.formatting import MISSING, cell, percent, percent_range, usd_small
from ...results.summary import Summary
from ..labels import backend_label, not_run
from ..markdown import table
from ..plots import tasks as tasks_plot

LISTED = 10
"""Failed tasks listed per backend (the rest are in ``summary.json``)."""

METHOD = [
    "Tasks: a seeded sample of one of the Berkeley Function Calling Leaderboard's multi-turn categories "
    "(`bfcl-eval`'s own files), the same tasks for every backend. Each task is done by a fresh strands agent on the "
    "backend, with a fresh instance of the task's simulated APIs (BFCL's own classes) as its tools; the user turns "
    "are given in order in one conversation, and every tool call is run on those instances.",
    "Grade: BFCL's own multi-turn checker, which runs the calls and the ground truth on fresh instances and compares "
    "the APIs' state and the calls' results after each turn (never the wording). A task stopped by a limit (turns, "
    "tool calls, time, BFCL's 20 model calls per turn) fails, as BFCL's \"force-terminated\". A task whose model "
    "request failed is an error, counted apart and never graded.",
    "Success: succeeded / graded, with the 95% Wilson interval. Pairs: McNemar's exact test on the tasks both "
    "backends had graded, and the difference in success with Newcombe's 95% interval for paired proportions.",
    "$ per task: per token (Bedrock), each task's input and output tokens at the list price; an hourly rig, the "
    "instance's $/h x the lane's span on it (first task's start to last task's end, at the concurrency shown), "
    "shared over the tasks it served. $ per successful task: the same cost over the tasks that succeeded (the "
    "failed ones are paid for too).",
    "Reasoning: strands' usage does not count reasoning tokens apart (they are inside the output tokens); the "
    "characters of reasoning content a model returned are shown instead.",
]


def _success(b: TasksSummary) -> str:
    if not b.graded:
        return MISSING
    return f"{b.succeeded}/{b.graded} = {percent(b.success, 1)} ({percent_range(b.interval)})"


def _pairs(pairs: Sequence[TasksPair]) -> list[str]:
    if not pairs:
        return []
    rows = [[p.a, p.b, p.tasks, p.only_a, p.only_b,
             MISSING if p.difference is None else f"{p.difference * 100:+.1f}",
             MISSING if p.ci95 is None else f"[{p.ci95[0] * 100:+.1f}, {p.ci95[1] * 100:+.1f}]",
             f"{p.p_value:.2g}", p.verdict] for p in pairs]
    return ["", "### Paired comparison (the same tasks, McNemar exact test)", ""] + table(
        ["A", "B", "graded on both", "only A succeeded", "only B succeeded", "B - A (points)", "95% interval", "p",
         "verdict"], rows) + [""]


def _agents(summary: Summary, blocks: Mapping[str, TasksSummary]) -> list[str]:
    """How many agents at once each backend serves within the per-agent target, level by level."""
    searched = {n: b.agents for n, b in blocks.items() if b.agents}
    if not searched:
        return []
    target = next(iter(searched.values())).target
    limits = ", ".join(f"{k} {'>=' if k == 'agent_output_tok_s' else '<='} {v:g}" for k, v in target.items())
    out = ["", f"### How many agents at once (target: {limits})", "",
           "N agents run the tasks back to back; a level meets the target when the median task's output tokens per "
           "second and the p90 seconds per task are within it. Levels 1, 2, 4 ... then bisection, as the capacity "
           "search.", ""]
    rows = [[backend_label(summary, n), a.agents_per_instance if a.agents_per_instance is not None else "none",
             usd_small(a.usd_per_success_at_load),
             "; ".join(f"{lv.agents}: {lv.succeeded}/{lv.graded}, {cell(lv.agent_output_tok_s_p50)} tok/s, p90 "
                       f"{cell(lv.task_s_p90, 2)} s, {'met' if lv.met else 'missed'}" for lv in a.levels)]
            for n, a in searched.items()]
    return out + table(["backend", "agents per instance", "$ / successful task at that load",
                        "levels (agents: succeeded, tok/s per agent p50, s / task p90)"], rows) + [""]


def _failed(blocks: Mapping[str, TasksSummary]) -> list[str]:
    out = []
    for n, b in blocks.items():
        failed = [d for d in b.detail if d.outcome == "failed"]
        out += [f"- {n} `{d.task}` (record {d.seq}): {d.reason or ''}" for d in failed[:LISTED]]
        if len(failed) > LISTED:
            out.append(f"- {n}: {len(failed) - LISTED} more failed tasks in `summary.json` (`backends.{n}.tasks.detail`)")
        out += [f"- {n}: error: {reason} (x{k})" for reason, k in b.error_reasons.items()]
    return (["Failed tasks (each names its record in `requests.jsonl`) and errors:", ""] + out + [""]) if out else []


def section(summary: Summary) -> list[str]:
    """The section's lines; none when the lane was neither selected nor run."""
    blocks = {n: b.tasks for n, b in summary.backends.items() if b.tasks}
    o = summary.run.options
    if not blocks and "tasks" not in (o.demos or []):
        return []
    out = ["## Tasks (BFCL multi-turn, done by the agent)", ""]
    if not blocks:
        return out + [not_run(summary, "tasks", "Not run on any backend (see \"Not run\" above)."), ""]
    out += [f"{o.tasks_n} tasks per backend from `multi_turn_{o.tasks_category}`, seed {o.tasks_seed}, bfcl-eval "
            f"{o.tasks_bfcl_eval}; limits: {f'{o.tasks_max_turns} turns' if o.tasks_max_turns else 'every turn'}, "
            f"{o.tasks_max_tool_calls} tool calls "
            f"and {o.tasks_time_limit_s:g} s per task, {o.tasks_steps_per_turn} model calls per turn; "
            f"{o.tasks_concurrency} tasks in flight per backend.", ""]
    rows = [[backend_label(summary, n), b.run, _success(b), b.stopped, b.errors, cell(b.turns.mean), cell(b.tool_calls.mean),
             cell(b.input_tokens.mean, 0), cell(b.output_tokens.mean, 0), cell(b.reasoning_chars.mean, 0),
             cell(b.task_s_p50, 2), cell(b.task_s_p90, 2), usd_small(b.usd_per_task), usd_small(b.usd_per_success)]
            for n, b in blocks.items()]
    out += table(["backend", "tasks run", "succeeded (95% interval)", "stopped by a limit", "errors", "turns / task",
                  "tool calls / task", "input tokens / task", "output tokens / task", "reasoning chars / task",
                  "s / task p50", "s / task p90", "$ / task", "$ / successful task"], rows)
    out.append("")
    out += [f"- {n}: {b.price_basis or b.cost_reason}" + (f"; {b.cost_reason}" if b.price_basis and b.cost_reason else "")
            for n, b in blocks.items()]
    out += [f"- {n}: {b.unsent} of the {b.planned} planned tasks did not run (interrupted or stopped)"
            for n, b in blocks.items() if b.unsent]
    out += [f"- **{n}: constrained.** Its first agent turn is a JSON-schema-constrained choice of one tool call; "
            "later turns answer in text, so multi-turn tasks mostly fail there." for n, b in blocks.items()
            if b.constrained]
    out.append("")
    if tasks_plot.drawable(summary):
        out += [f"![{tasks_plot.TITLE}]({tasks_plot.FILE})", ""]
    out += _agents(summary, blocks) + _pairs(summary.tasks_pairs) + _failed(blocks)
    return out + ["How these figures are computed:", ""] + [f"- {m}" for m in METHOD] + [""]
