"""The choice by $ per successful task: among the backends whose tasks lane was priced and whose task success is at
or above ``--min-task-success`` (the point estimate; no floor: every one), the lowest $ per successful task (at the
agents search's load, the most agents within the per-agent target, where it ran: an hourly rig shared by more agents
costs less per task).

It is the recommendation's answer when the tasks lane ran and either no latency target was measured (no chat part)
or ``--min-task-success`` was given; otherwise the answer stays the cost at the target and this choice is one of its
reasons. Either way the headline says which it was.
"""

from __future__ import annotations

from typing import Any, Mapping

from ...results.blocks.tasks import TaskChoice, TasksSummary
from ...results.formatting import percent, usd_small
from ...results.summary import BackendSummary

BASIS = "chosen by $ per successful task on BFCL multi-turn tasks"


def usd_per_success(t: TasksSummary) -> float | None:
    """$ per successful task: at the agents search's load where it ran and was priced, else at the lane's."""
    at_load = t.agents.usd_per_success_at_load if t.agents else None
    return at_load if at_load is not None else t.usd_per_success


def _why_not(t: TasksSummary, floor: float | None) -> str | None:
    if usd_per_success(t) is None:
        return f"no $ per successful task ({t.cost_reason or 'not priced'})"
    if floor is not None and (t.success is None or t.success < floor):
        return f"task success {percent(t.success, 1)} is below the floor of {percent(floor, 1)}"
    return None


def task_choice(backends: Mapping[str, BackendSummary], floor: float | None) -> TaskChoice | None:
    """The choice, or None when no backend has a ``tasks`` block."""
    lane = {n: b.tasks for n, b in backends.items() if b.tasks}
    if not lane:
        return None
    disqualified = {n: why for n, t in lane.items() if (why := _why_not(t, floor))}
    ranked = sorted((n for n in lane if n not in disqualified), key=lambda n: (usd_per_success(lane[n]), n))
    floor_text = f", at or above the task-success floor of {percent(floor, 1)}" if floor is not None else ""
    if not ranked:
        why = "; ".join(f"{n}: {w}" for n, w in disqualified.items())
        return TaskChoice(min_task_success=floor, choice=None, runner_up=None, ranking=[], disqualified=disqualified,
                          headline=f"No backend qualifies by $ per successful task{floor_text}: {why}.")
    leader = lane[ranked[0]]
    second = (f"; runner-up {ranked[1]} at {usd_small(usd_per_success(lane[ranked[1]]))}" if len(ranked) > 1
              else "; no other backend qualifies")
    load = (f" at {leader.agents.agents_per_instance} agents at once, the most within the per-agent target"
            if leader.agents and leader.agents.usd_per_success_at_load is not None else "")
    headline = (f"{ranked[0]}: the lowest $ per successful task{floor_text}, {usd_small(usd_per_success(leader))}"
                f"{load} ({leader.succeeded}/{leader.graded} tasks of multi_turn_{leader.category} succeeded)"
                f"{second} ({BASIS}).")
    return TaskChoice(min_task_success=floor, choice=ranked[0], runner_up=ranked[1] if len(ranked) > 1 else None,
                      ranking=ranked, disqualified=disqualified, headline=headline)


def applies(choice: TaskChoice | None, target_measured: bool, floor: float | None) -> bool:
    """Whether the answer is chosen by $ per successful task: the lane ran, and no latency target was measured or
    a task-success floor was given."""
    return choice is not None and (not target_measured or floor is not None)


def answer(choice: TaskChoice, disqualified: Mapping[str, str]) -> dict[str, Any]:
    """The recommendation's keys when it is chosen by $ per successful task."""
    return {"verdict": "choice" if choice.choice else "none_qualifies", "choice": choice.choice,
            "runner_up": choice.runner_up, "leader": choice.choice, "ranking": list(choice.ranking),
            "headline": choice.headline, "chosen_by": "usd_per_successful_task", "switch_points": [],
            "disqualified": {**disqualified, **{n: f"tasks: {w}" for n, w in choice.disqualified.items()}}}
