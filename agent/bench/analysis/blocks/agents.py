"""How many agents at once a backend serves: the per-agent speed target, each level's verdict, and the ``agents``
block of ``backends.<name>.tasks``, from the records only.

At a level of N agents, N agents run the lane's tasks back to back (a closed loop: each takes the next task as soon
as its last one ends). An agent's speed on a task is the task's output tokens over its seconds (tool calls and every
model call included: what the agent's user waits for). The level meets the target when the median agent speed is
at least ``agent_output_tok_s`` and the 90th percentile of the seconds per task at most ``task_s_p90`` (each only when
given). The levels are searched as the capacity search finds its level (:func:`agent.bench.parts.capacity.next_level`:
1, 2, 4 ... until one misses, then bisection); the agents per instance are the most agents of a level that met it,
and the $ per successful task at that load is that level's cost over its tasks that succeeded.
"""

from __future__ import annotations

from typing import Any, Callable, Final, Mapping, Sequence

from ...results.blocks.tasks import AgentLevel, AgentsBlock, TaskOutcome
from ...results.records import TaskRecord
from .. import stats

TARGET_KEYS: Final = ("agent_output_tok_s", "task_s_p90")
"""``--tasks-agent-target``'s keys: the least median output tok/s per agent, the most p90 seconds per task."""


def parse_target(text: str) -> dict[str, float]:
    """``agent_output_tok_s=20,task_s_p90=60`` as ``{key: value}``.

    Raises:
        ValueError: an unknown key, a value that is not a number above 0, or no key (one line saying which).
    """
    out: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        key, _, value = part.partition("=")
        key = key.strip()
        if key not in TARGET_KEYS:
            raise ValueError(f"unknown key {key!r} (choose from {', '.join(TARGET_KEYS)})")
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"{key}: {value.strip()!r} is not a number") from None
        if not number > 0 or number == float("inf"):
            raise ValueError(f"{key}: give a finite number above 0")
        out[key] = number
    if not out:
        raise ValueError(f"give at least one of {', '.join(TARGET_KEYS)}, e.g. task_s_p90=60")
    return out


def speeds(records: Sequence[Mapping[str, Any] | TaskRecord]) -> tuple[float | None, float | None]:
    """``(median output tok/s per agent, p90 seconds per task)`` of one level's tasks (a failed request left out)."""
    rows = [r if isinstance(r, Mapping) else r.model_dump() for r in records]
    ok = [r for r in rows if not r.get("error") and r.get("seconds")]
    rates = [(r.get("usage") or {}).get("output_tokens") or 0 for r in ok]
    rate = stats.percentile([t / r["seconds"] for t, r in zip(rates, ok)], 50)
    return rate, stats.percentile([r["seconds"] for r in ok], 90)


def meets(records: Sequence[Mapping[str, Any] | TaskRecord], target: Mapping[str, float]) -> bool:
    """Whether a level's tasks meet the per-agent target."""
    rate, p90 = speeds(records)
    if rate is None or p90 is None:
        return False
    return rate >= target.get("agent_output_tok_s", 0.0) and p90 <= target.get("task_s_p90", float("inf"))


def block(graded: Sequence[tuple[TaskRecord, TaskOutcome]], target: Mapping[str, float],
          cost: Callable[[Sequence[TaskRecord], Sequence[TaskOutcome]], float | None]) -> AgentsBlock | None:
    """The ``agents`` block from the search's records (``phase: agents``) with their outcomes; None when the search
    did not run. ``cost(records, outcomes)`` is what some tasks cost, in $ (None: not priced)."""
    if not graded:
        return None
    levels = []
    for n in sorted({r.concurrency for r, _ in graded}):
        mine = [(r, d) for r, d in graded if r.concurrency == n]
        records, outcomes = [r for r, _ in mine], [d for _, d in mine]
        judged = [d for d in outcomes if d.outcome != "error"]
        succeeded = sum(1 for d in judged if d.succeeded)
        rate, p90 = speeds(records)
        usd = cost(records, outcomes)
        levels.append(AgentLevel(
            agents=n, tasks=len(mine), graded=len(judged), succeeded=succeeded,
            agent_output_tok_s_p50=stats.round_or_none(rate, 2), task_s_p90=stats.round_or_none(p90, 3),
            met=meets(records, target), usd_per_success=float(f"{usd / succeeded:.4g}") if usd and succeeded else None))
    missed = [lv.agents for lv in levels if not lv.met]
    best = max((lv for lv in levels if lv.met and (not missed or lv.agents < min(missed))), key=lambda lv: lv.agents,
               default=None)
    return AgentsBlock(target=dict(target), levels=levels, agents_per_instance=best.agents if best else None,
                       usd_per_success_at_load=best.usd_per_success if best else None)
