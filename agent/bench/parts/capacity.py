"""Finding a backend's SLO capacity: the levels to measure, their repeats, and the search.

``--concurrency auto`` measures level 1, then doubles (2, 4, 8 ...) until a level misses the
target or ``--max-concurrency`` is reached, then bisects between the highest level that held
and the lowest that missed; never more than :data:`MAX_LEVELS` levels per backend
(:func:`next_level`). A capacity up to 7 is found exactly, one of 8-15 to within 2, 16-31 to
within 8, 32-63 to the bracket [32, 63]; no level is ever tried at more than twice the capacity.
``--concurrency LIST`` measures the given levels instead, each in full.

Every level runs ``--repeats`` times back to back (``c x --runs`` requests each, exactly ``c`` in
flight) through the load's ``level`` (:func:`agent.bench.parts.sending.run_level`, or with ``--load-from rig`` the
rig's own load generator, :mod:`agent.bench.parts.from_rig`). Level 1's first repeat is the chat part's
own timed requests (the chat part, :mod:`agent.bench.parts.chat`, hands them in as ``level_one``). In
the search a level stops sending once more of its requests have missed than its planned total allows
(it can no longer hold); requests in flight finish and are recorded. ``--slo-budget`` seconds per
backend bound the whole: no repeat or request starts after it. What was planned and why anything
stopped is recorded in ``run.json`` ``slo_search``, so the summary can tell a finished level from a
cut one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping, Sequence

from ..analysis.slo import DEFAULT_REPEATS_WITH_TARGET, LevelTally, Target
from ..clients.reply import ChatRequest, Reply
from .sending import Done, Sender, timing_record

if TYPE_CHECKING:
    from ..results.run import LevelLog, SearchLog

MAX_LEVELS = 7
AUTO = "auto"
RULE = (f"levels 1, 2, 4 ... doubling until one misses (or --max-concurrency), then bisection between the "
        f"highest level that held and the lowest that missed; at most {MAX_LEVELS} levels")


def next_level(verdicts: Mapping[int, bool], max_concurrency: int, max_levels: int = MAX_LEVELS) -> int | None:
    """The next level to measure given ``{level: held}`` so far, or None when the search is done.

    Done when level 1 missed, when the highest level that held is next to the lowest that missed,
    when ``max_concurrency`` held, or after ``max_levels`` levels.
    """
    if not verdicts:
        return 1
    if len(verdicts) >= max_levels:
        return None
    missed = [c for c, held in verdicts.items() if not held]
    hi = min(missed) if missed else None
    held = [c for c, ok in verdicts.items() if ok and (hi is None or c < hi)]
    if not held:
        return None
    lo = max(held)
    if hi is None:
        return None if lo >= max_concurrency else min(2 * lo, max_concurrency)
    return (lo + hi) // 2 if hi - lo > 1 else None


def stop_reason(verdicts: Mapping[int, bool], max_concurrency: int, max_levels: int = MAX_LEVELS) -> str:
    """Why :func:`next_level` returned None: ``missed_at_1``, ``bracketed``, ``max_concurrency`` or ``max_levels``."""
    missed = [c for c, held in verdicts.items() if not held]
    held = [c for c, ok in verdicts.items() if ok and (not missed or c < min(missed))]
    if not held:
        return "missed_at_1"
    if missed and min(missed) - max(held) <= 1:
        return "bracketed"
    if not missed and max(held) >= max_concurrency:
        return "max_concurrency"
    return "max_levels" if len(verdicts) >= max_levels else "bracketed"


LevelOne = Callable[[Callable[[dict[str, Any]], None]], Awaitable[None]]
"""The chat part's cold request and level 1's first repeat, each record handed to the emit given."""


@dataclass(frozen=True)
class LevelPlan:
    """How a run measures its chat levels under a target (from the command's options)."""

    target: Target
    auto: bool
    levels: tuple[int, ...]
    repeats: int
    max_concurrency: int
    budget_s: float

    @classmethod
    def of(cls, *, target: Target, concurrency: Sequence[int] | str, repeats: int | None,
           max_concurrency: int, budget_s: float) -> LevelPlan:
        """The plan for the options given (``repeats`` None: 3 with a target set or a search, else 1)."""
        auto = concurrency == AUTO
        if repeats is None:
            repeats = DEFAULT_REPEATS_WITH_TARGET if (target.given or auto) else 1
        return cls(target=target, auto=auto,
                   levels=(1,) if auto else tuple(concurrency), repeats=repeats, max_concurrency=max_concurrency,
                   budget_s=budget_s)  # fmt: skip

    @property
    def width(self) -> int:
        """The most requests a backend may have in flight."""
        return self.max_concurrency if self.auto else max(self.levels)

    @property
    def searched(self) -> bool:
        """Whether the chat part runs through :func:`run_under_target` (a search or repeats)."""
        return self.auto or self.repeats > 1

    def record(self) -> dict[str, Any]:
        """The options as ``run.json`` keeps them (the summary reads the target from there): the levels measured, or
        ``auto``."""
        return {
            "concurrency": AUTO if self.auto else list(self.levels), "slo": self.target.as_dict(),
            "slo_source": self.target.source, "repeats": self.repeats, "max_concurrency": self.max_concurrency,
            "slo_budget_s": self.budget_s,
        }  # fmt: skip


class _Search:
    """One backend's chat part under a target: its levels, their repeats, and the budget."""

    def __init__(self, *, backend: Any, load: Sender, plan: LevelPlan, runs: int, epoch: float,
                 emit: Callable[[dict[str, Any]], None], log: SearchLog, progress: Callable[..., None],
                 level_one: LevelOne) -> None:
        self.backend, self.load, self.plan = backend, load, plan
        self.send_level_one = level_one
        self.runs, self.epoch, self.emit, self.log, self.progress = runs, epoch, emit, log, progress
        self.started = time.perf_counter()
        self.deadline = self.started + plan.budget_s

    def over_budget(self) -> bool:
        return time.perf_counter() >= self.deadline

    def open_level(self, c: int) -> tuple[LevelTally, LevelLog]:
        from ..results.run import LevelLog

        tally = LevelTally(self.plan.target, planned=self.plan.repeats * c * self.runs)
        entry = LevelLog(concurrency=c, planned_requests=tally.planned, repeats_planned=self.plan.repeats,
                         repeats_run=0, stopped=None)
        self.log.order = [*self.log.order, c]
        self.log.levels = [*self.log.levels, entry]
        return tally, entry

    async def measure(self, c: int, tally: LevelTally, entry: LevelLog, first_repeat: int) -> None:
        """The level's repeats from ``first_repeat`` on; ``entry.stopped`` says why it ended early."""
        plan = self.plan
        for k in range(first_repeat, plan.repeats + 1):
            if plan.auto and tally.decided_miss:
                entry.stopped = "missed"
                return
            if self.over_budget():
                entry.stopped = "budget"
                return
            total = c * self.runs
            self.progress(f"{self.backend.name} chat concurrency {c}, repeat {k}/{plan.repeats} ({total} requests)", milestone=True)

            def each(i: int, k: int = k) -> tuple[dict[str, Any], Done]:
                def done(reply: Reply, request: ChatRequest, fields: dict[str, Any]) -> None:
                    record = {**timing_record(reply, epoch=self.epoch, backend=self.backend.name, part="chat",
                                              phase="sweep", concurrency=c, run=i, request=request),
                              **fields, "repeat": k}  # fmt: skip
                    self.emit(record)
                    tally.add(record)
                return {"phase": "sweep", "concurrency": c, "run": i, "repeat": k}, done

            def keep_going() -> bool:
                return not self.over_budget() and not (plan.auto and tally.decided_miss)

            sent = await self.load.level(c, total, each, keep_going)
            entry.repeats_run = k
            if sent < total:
                entry.stopped = "budget" if self.over_budget() else "missed"
                return

    async def level_one(self) -> tuple[LevelTally, LevelLog]:
        """Level 1: the cold request and the timed requests (its repeat 1), then its other repeats."""
        first, entry = self.open_level(1)

        def emit_timed(record: dict[str, Any]) -> None:
            self.emit(record)
            if record.get("phase") == "timed":
                first.add(record)

        await self.send_level_one(emit_timed)
        entry.repeats_run = 1
        await self.measure(1, first, entry, first_repeat=2)
        return first, entry

    async def search(self, verdicts: dict[int, bool]) -> str:
        """``--concurrency auto``: the next level until the search is done; why it ended."""
        while (c := next_level(verdicts, self.plan.max_concurrency)) is not None:
            if self.over_budget():
                return "budget"
            tally, entry = self.open_level(c)
            await self.measure(c, tally, entry, first_repeat=1)
            if entry.stopped == "budget" and not tally.decided_miss:
                return "budget"
            verdicts[c] = tally.holds
        return stop_reason(verdicts, self.plan.max_concurrency)

    async def given_levels(self) -> str:
        """``--concurrency LIST``: each level in full; why the part ended."""
        for c in self.plan.levels:
            if c <= 1:
                continue
            if self.over_budget():
                return "budget"
            tally, entry = self.open_level(c)
            await self.measure(c, tally, entry, first_repeat=1)
        return "levels_done"


async def run_under_target(
    *,
    backend: Any,
    load: Sender,
    plan: LevelPlan,
    runs: int,
    epoch: float,
    emit: Callable[[dict[str, Any]], None],
    log: SearchLog,
    level_one: LevelOne,
    progress: Callable[..., None] = lambda *_, **__: None,
) -> None:
    """The chat part of one backend with repeats and, with ``--concurrency auto``, the search, every level sending
    ``load`` (the workload's traffic); ``level_one`` sends the cold request and level 1's first repeat (the chat
    part's own timed requests).

    ``log`` is filled as the run goes (so an interrupted run keeps what happened): the mode, the
    rule, the levels in the order measured with what was planned and why each stopped.
    """
    log.mode, log.rule = (AUTO, RULE) if plan.auto else ("levels", None)
    log.max_concurrency, log.max_levels = (plan.max_concurrency, MAX_LEVELS) if plan.auto else (None, None)
    log.budget_s, log.repeats, log.order, log.levels, log.stopped, log.seconds = \
        plan.budget_s, plan.repeats, [], [], None, None
    run = _Search(backend=backend, load=load, plan=plan, runs=runs, epoch=epoch, emit=emit, log=log,
                  progress=progress, level_one=level_one)  # fmt: skip
    first, entry = await run.level_one()
    if entry.stopped == "budget" and not first.decided_miss:
        log.stopped = "budget"
    elif plan.auto:
        log.stopped = await run.search({1: first.holds})
    else:
        log.stopped = await run.given_levels()
    log.seconds = round(time.perf_counter() - run.started, 3)
