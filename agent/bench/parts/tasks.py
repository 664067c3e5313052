"""The ``tasks`` part: BFCL's multi-turn tasks done by the strands agent on every backend that can drive one, one
record per task. Grading is done later, from the records (:mod:`agent.bench.grading.tasks`,
:mod:`agent.bench.analysis.blocks.tasks`).

For each task a fresh agent gets a fresh instance of the task's simulated APIs as its tools (every function the task
offers, as BFCL's documents describe it), and the user turns one after another in one conversation; every tool call
is run on those instances, and its result is what the agent reads. The record keeps, per turn, the calls of each
model step as BFCL's checker reads them, beside the transcript, the tokens and the time. As in BFCL's own runs, a
``miss_func`` task's held-back functions are offered from their turn on, no system prompt is given, and a turn ends
after at most :data:`STEPS_PER_TURN` model calls (``MAXIMUM_STEP_LIMIT`` in ``bfcl_eval/constants/default_prompts.py``).

Limits of this run (each stops a task, which then fails as BFCL's "force-terminated"): ``--tasks-max-turns`` user
turns, ``--tasks-max-tool-calls`` tool calls, ``--tasks-time-limit`` seconds. ``--tasks-concurrency`` tasks are in
flight at once on a backend: what a rig's hour is shared over when a task is priced. With ``--tasks-agent-target``
the lane is followed by the agents search (:func:`search_agents`; the rule is
:mod:`agent.bench.analysis.blocks.agents`'s).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Final, Sequence

from kit import utc

from ..tasks.bfcl_cases import PINNED_VERSION, BfclUnavailableError, installed_version
from ..tasks.bfcl_tools import parameters
from ..tasks.multi_turn import Environment, Task, call_text, sample_tasks
from .counting import transcript, usage_of
from .sending import in_flight

if TYPE_CHECKING:
    from ...backends import Backend
    from ..clients.base import BackendClient
    from .capacity import LevelPlan
    from .part import Context

NAME: Final = "tasks"
DEFAULT_CATEGORY: Final = "base"
DEFAULT_N: Final = 20
DEFAULT_SEED: Final = 0
DEFAULT_MAX_TOOL_CALLS: Final = 100
DEFAULT_TIME_LIMIT_S: Final = 600.0
DEFAULT_CONCURRENCY: Final = 4
DEFAULT_MAX_AGENTS: Final = 32
STEPS_PER_TURN: Final = 20
"""Model calls per user turn before the turn is cut (BFCL's ``MAXIMUM_STEP_LIMIT``)."""


@dataclass(frozen=True)
class Limits:
    """What stops a task: user turns given (None: every one), tool calls, seconds."""

    max_turns: int | None = None
    max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS
    time_limit_s: float = DEFAULT_TIME_LIMIT_S


def options_record(*, category: str, n: int, seed: int, limits: Limits, concurrency: int) -> dict[str, Any]:
    """The part's options as recorded in ``run.json``."""
    return {"tasks_category": category, "tasks_n": n, "tasks_seed": seed, "tasks_max_turns": limits.max_turns,
            "tasks_max_tool_calls": limits.max_tool_calls, "tasks_time_limit_s": limits.time_limit_s,
            "tasks_concurrency": concurrency, "tasks_steps_per_turn": STEPS_PER_TURN,
            "tasks_bfcl_eval": installed_version() or f"not installed (pinned {PINNED_VERSION})"}


def _tool(doc: dict[str, Any], run: _Run) -> Any:
    """One BFCL function as a strands tool that runs it on the task's APIs."""
    from strands.tools.tools import PythonAgentTool

    spec = {"name": doc["name"], "description": doc.get("description") or doc["name"],
            "inputSchema": {"json": parameters(doc)}}

    def call(tool_use: dict[str, Any], **_: Any) -> dict[str, Any]:
        return {"toolUseId": tool_use["toolUseId"], "status": "success",
                "content": [{"text": run.call(doc["name"], tool_use.get("input") or {})}]}

    return PythonAgentTool(doc["name"], spec, call)


@dataclass
class _Run:
    """One task on one backend as it goes: its APIs, its agent, the calls made and why it stopped."""

    task: Task
    limits: Limits
    env: Environment
    agent: Any = None
    tool_calls: int = 0
    stopped: str | None = None
    steps: list[list[list[str]]] = field(default_factory=list)

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        """Run one call on the task's APIs; the call that reaches the tool-call limit stops the task after its
        step (the agent gets no further model call), and a call past it in the same step is not run."""
        limit = self.limits.max_tool_calls
        if self.tool_calls >= limit:
            return "Error during execution: the tool-call limit of this task is reached"
        self.tool_calls += 1
        if self.tool_calls == limit:
            self.stopped = f"tool-call limit of {limit} reached"
            self.agent.cancel(after_current_tools=True)
        return self.env.call(name, arguments)

    def turn_steps(self, messages: Sequence[dict[str, Any]]) -> list[list[str]]:
        """The calls of each model step of one turn (its assistant messages that made calls)."""
        out = []
        for m in messages:
            calls = [b["toolUse"] for b in m.get("content", []) if m.get("role") == "assistant" and "toolUse" in b]
            if calls:
                out.append([call_text(c["name"], c.get("input") or {}) for c in calls])
        return out

    async def turns(self) -> None:
        """Give the user turns in order, each to the end of its model steps."""
        from strands.types.exceptions import MaxTokensReachedException

        for i, text in enumerate(self.task.turns):
            if self.limits.max_turns is not None and i >= self.limits.max_turns:
                self.stopped = f"turn limit of {self.limits.max_turns} reached"
                return
            for doc in self.task.added.get(i, ()):
                self.agent.tool_registry.register_tool(_tool(doc, self))
            start = len(self.agent.messages)
            try:
                result = await self.agent.invoke_async(text, limits={"turns": STEPS_PER_TURN})
            except MaxTokensReachedException as exc:
                self.steps.append(self.turn_steps(self.agent.messages[start:]))
                self.stopped = f"max_tokens in turn {i}: {exc}"[:300]
                return
            self.steps.append(self.turn_steps(self.agent.messages[start:]))
            if self.stopped:
                return
            if getattr(result, "stop_reason", None) == "limit_turns":
                self.stopped = f"more than {STEPS_PER_TURN} model calls in turn {i} (BFCL's step limit)"
                return


def _reasoning_chars(messages: Sequence[dict[str, Any]]) -> int:
    return sum(len(str(b["reasoningContent"].get("reasoningText", {}).get("text", "")))
               for m in messages for b in m.get("content", []) if "reasoningContent" in b)


async def run_task(task: Task, *, model: Any, limits: Limits) -> dict[str, Any]:
    """Run one task with a fresh agent on ``model``; the record's fields of what it did (never raises for a model
    failure: that is the record's ``error``)."""
    from strands import Agent
    from strands.tools.executors import SequentialToolExecutor

    run = _Run(task, limits, Environment(task))
    run.agent = Agent(model=model, tools=[_tool(doc, run) for doc in task.functions], callback_handler=None,
                      tool_executor=SequentialToolExecutor())
    error = None
    t0 = time.perf_counter()
    try:
        await asyncio.wait_for(run.turns(), timeout=limits.time_limit_s)
    except asyncio.TimeoutError:
        run.stopped = f"time limit of {limits.time_limit_s:g} s reached"
    except Exception as exc:  # any model or transport failure is a recorded result, not a crash
        error = f"{type(exc).__name__}: {exc}"[:300]
    seconds = time.perf_counter() - t0
    calls, texts = transcript(run.agent.messages)
    return {"turns_given": len(run.steps), "steps": run.steps, "tool_calls": run.tool_calls, "stopped": run.stopped,
            "calls": calls, "texts": texts, "error": error, "seconds": round(seconds, 4),
            "usage": usage_of(run.agent), "reasoning_chars": _reasoning_chars(run.agent.messages)}


@dataclass(frozen=True)
class _Lane:
    """One backend's share of the part: what every task of it is run with, and where its record goes."""

    backend: Backend
    constrained: bool
    model: Any
    seed: int
    limits: Limits
    epoch: float
    emit: Callable[[dict[str, Any]], None]

    async def one(self, task: Task, phase: str, concurrency: int) -> dict[str, Any]:
        """Run ``task`` and record it; the record."""
        wall, sent = time.time(), time.perf_counter()
        did = await run_task(task, model=self.model, limits=self.limits)
        record = {"part": NAME, "backend": self.backend.name, "phase": phase, "task": task.id,
                  "category": task.category, "seed": self.seed, "started": utc.iso_millis(utc.at_epoch(wall)),
                  "sent_s": round(sent - self.epoch, 6), "concurrency": concurrency, "constrained": self.constrained,
                  "turns": list(task.turns), "tools": [f["name"] for f in task.functions],
                  "added_tools": {str(i): [f["name"] for f in docs] for i, docs in task.added.items()},
                  "involved_classes": list(task.involved_classes), "initial_config": dict(task.initial_config),
                  "ground_truth": [list(t) for t in task.ground_truth], **did}
        self.emit(record)
        return record

    async def level(self, tasks: Sequence[Task], phase: str, concurrency: int,
                    progress: Callable[..., None]) -> list[dict[str, Any]]:
        """``tasks`` with ``concurrency`` in flight (each slot takes the next task as its last one ends)."""
        done: list[dict[str, Any]] = []

        async def one(task: Task) -> None:
            done.append(await self.one(task, phase, concurrency))
            progress(f"{self.backend.name} tasks ({phase}, {concurrency} at once) {len(done)}/{len(tasks)}")

        await in_flight(tasks, concurrency, one)
        return done


async def search_agents(lane: _Lane, tasks: Sequence[Task], target: dict[str, float], max_agents: int,
                        progress: Callable[..., None]) -> None:
    """How many agents at once meet ``target``: levels as the capacity search picks them, each running the tasks
    back to back (at least two per agent)."""
    from ..analysis.blocks.agents import meets
    from .capacity import next_level

    verdicts: dict[int, bool] = {}
    while (n := next_level(verdicts, max_agents)) is not None:
        level = [tasks[i % len(tasks)] for i in range(max(len(tasks), 2 * n))]
        verdicts[n] = meets(await lane.level(level, "agents", n, progress), target)


async def run_tasks(*, backend: Backend, client: BackendClient, tasks: Sequence[Task], options: Any, epoch: float,
                    emit: Callable[[dict[str, Any]], None], progress: Callable[..., None] = lambda *_, **__: None) -> None:
    """Every task on ``backend``, ``--tasks-concurrency`` at once, one record per task as it ends; then, with
    ``--tasks-agent-target``, the agents search."""
    model = client.agent_model()
    if client.constrained and hasattr(model, "set_enums"):
        model.set_enums({})
    o = options
    lane = _Lane(backend, client.constrained, model, o.tasks_seed,
                 Limits(o.tasks_max_turns, o.tasks_max_tool_calls, o.tasks_time_limit_s), epoch, emit)
    await lane.level(tasks, "lane", o.tasks_concurrency, progress)
    if o.tasks_agent_target:
        await search_agents(lane, tasks, dict(o.tasks_agent_target), o.tasks_max_agents, progress)


class Tasks:
    """The part: the same sample of tasks on every backend that can drive an agent, in turn."""

    name = NAME
    records = (NAME,)
    across_backends = False

    def width(self, options: Any, plan: LevelPlan) -> int:
        return max(int(options.tasks_concurrency), int(options.tasks_max_agents) if options.tasks_agent_target else 1)

    async def run(self, ctx: Context) -> None:
        """``--tasks-n`` tasks of ``--tasks-category`` and ``--tasks-seed``; BFCL not installed, every backend is
        recorded as skipped."""
        o = ctx.options
        try:
            tasks = sample_tasks(o.tasks_category, o.tasks_n, o.tasks_seed)
            Environment(tasks[0])
        except BfclUnavailableError as exc:
            ctx.skip_all(self.name, f"failed: {exc}")
            return
        await ctx.each_backend(self.name, lambda b, client: run_tasks(
            backend=b, client=client, tasks=tasks, options=o, epoch=ctx.epoch, emit=ctx.emit, progress=ctx.progress),
            tools=True)


PART = Tasks()
