"""The ``tasks`` block of ``summary.json`` and the paired comparisons, from the records and the prices only.

Per backend: the tasks that succeeded over those graded (a task whose model request failed is an error, counted
apart and never graded), with the 95% Wilson interval; turns, tool calls, tokens and seconds per task; and what a
task costs:

* a per-token backend (Bedrock): every task's input and output tokens at the list price, summed;
* an hourly rig (EC2, SageMaker): the instance's hour shared over the tasks it served, the lane's span on the
  backend (first task's start to last task's end, ``--tasks-concurrency`` tasks in flight) x $/h;

then $ per task = that cost / tasks run, and $ per successful task = that cost / tasks that succeeded (the
failures are paid for too).

Between every two backends: McNemar's exact test on the tasks both had graded, and the difference in success with
Newcombe's interval for paired proportions (the quality lane's statistics, :mod:`..stats`).
"""

from __future__ import annotations

from collections import Counter
from typing import Mapping, Sequence

from ...grading.tasks import grade
from ...results.blocks.tasks import TaskOutcome, TasksPair, TasksSummary
from ...results.records import TaskRecord
from ...results.run import BackendPrice
from ...results.summary import BackendSummary
from .. import stats
from . import agents
from .bfcl import verdict
from .distribution import distribution

_DIGITS = 4
TOY_PRICE = "CPU-served local rig: no hourly price applies"


def outcome(r: TaskRecord) -> TaskOutcome:
    """One task's verdict and what it took, from its record."""
    g = grade(r.model_dump())
    usage = r.usage
    return TaskOutcome(seq=r.seq, task=r.task, outcome=g.outcome, succeeded=g.succeeded, reason=g.reason,  # type: ignore[arg-type]
                       turns_given=r.turns_given, tool_calls=r.tool_calls, seconds=r.seconds,
                       input_tokens=usage.input_tokens if usage else None,
                       output_tokens=usage.output_tokens if usage else None)


def _usd(value: float) -> float:
    """Dollars to four significant figures (a task on a rig can cost a thousandth of a cent)."""
    return float(f"{value:.4g}")


def _failure_type(reason: str | None) -> str:
    """BFCL's error type of a failed task (``multi_turn:instance_state_mismatch``), or ``other``."""
    return reason.split(": ", 1)[0] if reason and reason.startswith("multi_turn:") else "other"


def _wall_s(records: Sequence[TaskRecord]) -> float | None:
    ends = [r.sent_s + r.seconds for r in records if r.seconds is not None]
    return round(max(ends) - min(r.sent_s for r in records), 3) if ends else None


def cost(records: Sequence[TaskRecord], detail: Sequence[TaskOutcome],
         price: BackendPrice) -> tuple[float | None, str | None, str | None]:
    """What ``records`` (their outcomes ``detail``) cost on one backend in $, how they were priced, and why they could
    not be (one of the two is None)."""
    wall_s = _wall_s(records)
    if price.per_token:
        p = price.per_token
        missing = sum(1 for d in detail if d.input_tokens is None or d.output_tokens is None)
        if missing:
            return None, None, f"token usage not reported for {missing} of {len(detail)} tasks"
        usd = sum((d.input_tokens or 0) * p.usd_per_m_input + (d.output_tokens or 0) * p.usd_per_m_output
                  for d in detail) / 1e6
        return usd, (f"per token: each task's input tokens x ${p.usd_per_m_input:g}/M + output tokens x "
                     f"${p.usd_per_m_output:g}/M"), None
    if price.hourly and wall_s:
        h = price.hourly.usd_per_hour
        return h * wall_s / 3600.0, (f"the hour shared: ${h:g}/h x {wall_s:,.1f} s the lane held the instance, over "
                                     f"{len(records)} tasks at {records[0].concurrency} in flight"), None
    return None, None, price.reason or "no price on file for this backend"


def summarize(all_records: Sequence[TaskRecord], price: BackendPrice, planned: int | None,
              toy_model: bool = False, agent_target: Mapping[str, float] | None = None) -> TasksSummary | None:
    """One backend's ``tasks`` block from its ``part: tasks`` records (None when the lane recorded none); the agents
    search's records (``phase: agents``) make its ``agents`` block."""
    records = [r for r in all_records if r.phase == "lane"]
    if not records:
        return None
    detail = [outcome(r) for r in records]
    graded = [d for d in detail if d.outcome != "error"]
    succeeded = sum(1 for d in graded if d.succeeded)
    interval = stats.wilson_interval(succeeded, len(graded))
    wall_s = _wall_s(records)
    usd, basis, reason = cost(records, detail, price)
    search = [(r, outcome(r)) for r in all_records if r.phase == "agents"]
    if reason and toy_model and not (price.hourly or price.per_token):
        reason = TOY_PRICE
    seconds = distribution([r.seconds for r in records], keep_values=False)
    usage = [r.usage for r in records]
    return TasksSummary(
        category=records[0].category, seed=records[0].seed, planned=planned, run=len(records),
        unsent=max(0, (planned or 0) - len(records)), graded=len(graded), succeeded=succeeded,
        failed=len(graded) - succeeded, errors=len(detail) - len(graded), stopped=sum(1 for r in records if r.stopped),
        success=round(succeeded / len(graded), _DIGITS) if graded else None,
        interval=(round(interval[0], _DIGITS), round(interval[1], _DIGITS)) if interval else None,
        constrained=any(r.constrained for r in records), concurrency=records[0].concurrency, wall_s=wall_s,
        turns=distribution([r.turns_given for r in records], keep_values=False, digits=1),
        tool_calls=distribution([r.tool_calls for r in records], keep_values=False, digits=1),
        input_tokens=distribution([u.input_tokens if u else None for u in usage], keep_values=False, digits=0),
        output_tokens=distribution([u.output_tokens if u else None for u in usage], keep_values=False, digits=0),
        reasoning_chars=distribution([r.reasoning_chars for r in records], keep_values=False, digits=0),
        seconds=seconds, task_s_p50=seconds.p50, task_s_p90=seconds.p90,
        usd_per_task=None if usd is None else _usd(usd / len(records)),
        usd_per_success=None if usd is None or not succeeded else _usd(usd / succeeded),
        price_basis=basis, cost_reason=reason if usd is None else (None if succeeded else "no task succeeded"),
        failure_types=dict(Counter(_failure_type(d.reason) for d in graded if not d.succeeded).most_common()),
        error_reasons=dict(Counter(d.reason for d in detail if d.outcome == "error").most_common()),
        detail=detail,
        agents=agents.block(search, agent_target or {}, lambda rs, ds: cost(rs, ds, price)[0]) if search else None)


def pairs(backends: Mapping[str, BackendSummary]) -> list[TasksPair]:
    """McNemar's exact test and the paired difference between every two backends with a ``tasks`` block."""
    graded = {name: {d.task: bool(d.succeeded) for d in b.tasks.detail if d.outcome != "error"}
              for name, b in backends.items() if b.tasks}  # fmt: skip
    names = list(graded)
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            common = [t for t in graded[a] if t in graded[b]]
            only_a = sum(1 for t in common if graded[a][t] and not graded[b][t])
            only_b = sum(1 for t in common if graded[b][t] and not graded[a][t])
            both = sum(1 for t in common if graded[a][t] and graded[b][t])
            p = stats.mcnemar_exact(only_a, only_b)
            ci = stats.paired_difference_interval(both, only_a, only_b, len(common) - both - only_a - only_b)
            out.append(TasksPair(
                a=a, b=b, tasks=len(common), only_a=only_a, only_b=only_b, p_value=float(f"{p:.4g}"),
                difference=round((only_b - only_a) / len(common), _DIGITS) if common else None,
                ci95=(round(ci[0], _DIGITS), round(ci[1], _DIGITS)) if ci else None,
                verdict=verdict(a, b, only_a, only_b, p, len(common)).replace("cases", "tasks"),
                differing_tasks=[t for t in common if graded[a][t] != graded[b][t]]))
    return out


def failures(block: TasksSummary | None, parts: Sequence[str] | set[str], skipped: Mapping[str, str]) -> list[str]:
    """Why the part did not complete on a backend (a skip that starts with "failed" is reported with the others)."""
    if "tasks" not in parts or "tasks" in skipped:
        return []
    if block is None:
        return ["tasks: no tasks recorded"]
    if block.run and block.errors == block.run:
        return [f"tasks: every task failed with an error ({next(iter(block.error_reasons), 'no reason')})"]
    return []
