"""The ``tasks`` block (BFCL multi-turn tasks done by the agent: success, what a task takes, what it costs) and the
``tasks_pairs`` comparisons."""

from __future__ import annotations

from typing import Literal

from ..base import Frozen
from .chat import Distribution


class TaskOutcome(Frozen):
    """One task's verdict, with the ``seq`` of its record."""

    seq: int | None
    task: str
    outcome: Literal["succeeded", "failed", "error"]
    succeeded: bool | None
    reason: str | None
    turns_given: int
    tool_calls: int
    seconds: float | None
    input_tokens: int | None
    output_tokens: int | None


class AgentLevel(Frozen):
    """One level of the agents search: N agents running tasks back to back."""

    agents: int
    tasks: int
    graded: int
    succeeded: int
    agent_output_tok_s_p50: float | None
    """The median over tasks of each task's output tokens over its seconds."""
    task_s_p90: float | None
    met: bool
    usd_per_success: float | None


class AgentsBlock(Frozen):
    """How many agents at once the backend serves within the per-agent target (``--tasks-agent-target``)."""

    target: dict[str, float]
    levels: list[AgentLevel]
    agents_per_instance: int | None
    """The most agents of a level that met the target below every level that missed (null: none met it)."""
    usd_per_success_at_load: float | None
    """$ per successful task at that many agents (null: unpriced, or no level met the target)."""


class TasksSummary(Frozen):
    """One backend's tasks: how many succeeded (of those graded: a failed request is an error, never graded), with
    the 95% Wilson interval; what a task took; what it cost."""

    category: str
    seed: int
    planned: int | None
    """``--tasks-n``: the tasks the run meant to give this backend."""
    run: int
    """Tasks recorded (fewer than planned when the run was interrupted or the backend stopped)."""
    unsent: int
    graded: int
    succeeded: int
    failed: int
    errors: int
    stopped: int
    """Tasks stopped by a limit (turns, tool calls, time, output tokens, BFCL's step limit); each failed."""
    success: float | None
    interval: tuple[float, float] | None
    """The 95% Wilson interval of ``success`` (null: nothing graded)."""
    constrained: bool
    concurrency: int
    """Tasks in flight at once: what a rig's hour is shared over."""
    wall_s: float | None
    """From the first task's start to the last one's end on this backend."""
    turns: Distribution
    tool_calls: Distribution
    input_tokens: Distribution
    output_tokens: Distribution
    reasoning_chars: Distribution
    """Reasoning content per task, in characters (its tokens are counted in the output tokens)."""
    seconds: Distribution
    task_s_p50: float | None
    task_s_p90: float | None
    usd_per_task: float | None
    usd_per_success: float | None
    """$ per successful task: all the lane's cost on this backend over the tasks that succeeded."""
    price_basis: str | None
    """How the task was priced (per token, or the hour shared over the tasks served), or why not (``cost_reason``)."""
    cost_reason: str | None
    failure_types: dict[str, int]
    """BFCL's error type of each failed task (``multi_turn:instance_state_mismatch`` ...), counted."""
    error_reasons: dict[str, int]
    detail: list[TaskOutcome]
    agents: AgentsBlock | None = None
    """How many agents at once it serves (null: the search did not run)."""


class TasksPair(Frozen):
    """Two backends on the tasks both had graded: McNemar's exact test, and the difference in success (``b`` - ``a``)
    with Newcombe's 95% interval for paired proportions."""

    a: str
    b: str
    tasks: int
    only_a: int
    only_b: int
    p_value: float
    difference: float | None
    ci95: tuple[float, float] | None
    verdict: str
    differing_tasks: list[str]


class TaskChoice(Frozen):
    """The choice by $ per successful task among the backends the tasks lane priced, at or above
    ``--min-task-success``."""

    min_task_success: float | None
    choice: str | None
    runner_up: str | None
    ranking: list[str]
    """The backends that qualify, lowest $ per successful task first."""
    disqualified: dict[str, str]
    headline: str
