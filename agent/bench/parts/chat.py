"""The chat part: the workload's traffic on every backend (``--workload``; by default the reference's prompt and
100 tokens), one untimed warm-up that is also kept as the backend's *cold* request, ``--runs`` timed requests one
at a time, then an optional concurrency sweep; with a latency target, repeats or ``--concurrency auto``, the levels
are measured under the target (:mod:`agent.bench.parts.capacity`). Every request becomes one record; figures are
computed later from the records (:mod:`agent.bench.analysis.summary`).

What is sent is one backend's :class:`Load`: the workload's requests in the seed's order
(:mod:`agent.bench.tasks.traffic.plan`), each checked against the backend's token limits before anything is sent
(one that does not fit is recorded as not sent, ``part: chat_not_sent``, and the share that fits is kept in
``run.json`` ``traffic``), its synthetic text made to the server's own count: the cold request, then two short
requests of one output token each, calibrate it (:mod:`agent.bench.tasks.traffic.calibration`). A session
(``turns``) sends each turn with the conversation so far, the model's real replies included; a slot of a level
goes on with its session's next turn, and starts the next session when one ends.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping, Sequence

from ...backends import token_limits
from ...kinds import descriptor
from ..clients.base import BackendClient
from ..clients.reply import ChatRequest, Reply, Tool
from ..tasks.traffic.calibration import Calibration, exchange_units, fit
from ..tasks.traffic.plan import Planned, Prompts, TrafficPlan, fit_of, fitting_turns, given_messages, tools_of
from ..tasks.traffic.text import TextMaker, units_of
from .capacity import LevelPlan, run_under_target
from .sending import Done, run_level, timing_record

if TYPE_CHECKING:
    from ...backends import Backend
    from .from_rig import FromRig
    from .part import Context

NOTHING_FITS = "no request of the workload fits this backend's limits"


@dataclass
class Session:
    """A request of the workload being sent, turn by turn (one turn for a request that is not a session)."""

    planned: Planned
    fitting: int
    """Its turns, from the first, that fit the backend's limits."""
    why: str | None
    """Why the turn after them does not."""
    messages: list[Mapping[str, str]] = field(default_factory=list)
    turn: int = 1
    """The next turn to send."""
    asked: int | None = None
    """The prompt tokens the next turn asks."""

    @property
    def done(self) -> bool:
        return self.turn > self.fitting


class Load:
    """One backend's share of the workload: the plan's requests in order, fitted to its limits, made for its count."""

    def __init__(self, *, backend: Backend, client: BackendClient, plan: TrafficPlan, maker: TextMaker | None,
                 ignore_eos: bool, max_tokens: int, emit: Callable[[dict[str, Any]], None],
                 calibration: Calibration | None = None, from_rig: FromRig | None = None) -> None:
        from ..results.blocks.traffic import TrafficFit
        from ..results.run import TrafficLog

        self.backend, self.client, self.plan, self.maker, self.emit = backend, client, plan, maker, emit
        self.from_rig = from_rig
        """``--load-from rig``: the levels beyond the chat part's own timed requests are sent by the rig."""
        self.shape = plan.shape
        self.max_tokens = max_tokens
        self.exact = ignore_eos if self.shape.reference or self.shape.prompts else \
            descriptor(backend.kind).ignore_eos
        self.limits = token_limits(backend)
        self.fit = fit_of(plan, self.limits.max_prompt_tokens, self.limits.max_total_tokens)
        self.prompts = Prompts(plan, maker, calibration or Calibration()) if maker else None
        self.next_index = 0
        self.log = TrafficLog(fit=TrafficFit(max_prompt_tokens=self.limits.max_prompt_tokens,
                                      max_total_tokens=self.limits.max_total_tokens, limits_source=self.limits.source,
                                      requests=self.fit.requests, fitting=self.fit.fitting,
                                      share=round(self.fit.share, 4), reason=self.fit.first_reason),
                              ignore_eos=self.exact)
        """What ``run.json`` ``traffic`` keeps of this backend's share (the calibration added when it is fitted)."""

    @property
    def nothing_fits(self) -> bool:
        return self.fit.fitting == 0

    def _not_sent(self, p: Planned, turn: int, asked: int | None, why: str, where: Mapping[str, Any]) -> None:
        out = p.output_tokens if turn == 1 else p.later[turn - 2][1]
        self.emit({"part": "chat_not_sent", "backend": self.backend.name, **where, "request_index": p.index,
                   "turn": turn if p.turns > 1 else None, "asked_prompt_tokens": asked, "requested_tokens": out,
                   "not_sent": why})  # fmt: skip

    def _next_session(self, where: Mapping[str, Any]) -> Session | None:
        """The next request that fits (each one before it that does not is recorded as not sent)."""
        for _ in range(self.plan.sample_size):
            p = self.plan.request(self.next_index)
            self.next_index += 1
            n, why = fitting_turns(p, self.limits.max_prompt_tokens, self.limits.max_total_tokens)
            if n:
                first = self.prompts.first(p) if self.prompts else given_messages(p)
                return Session(p, n, why, list(first), asked=p.prompt_tokens)
            self._not_sent(p, 1, p.prompt_tokens, why or NOTHING_FITS, where)
        return None

    def session(self, index: int) -> Session | None:
        """Request ``index`` as a session to send turn by turn (:meth:`request`, :meth:`advance`); None when its first
        turn does not fit the backend's limits. The open loop sends these, each started on its schedule."""
        p = self.plan.request(index)
        n, why = fitting_turns(p, self.limits.max_prompt_tokens, self.limits.max_total_tokens)
        if not n:
            return None
        first = self.prompts.first(p) if self.prompts else given_messages(p)
        return Session(p, n, why, list(first), asked=p.prompt_tokens)

    def draw(self, where: Mapping[str, Any]) -> tuple[ChatRequest, dict[str, Any]] | None:
        """The first turn of the next request that fits, to be sent elsewhere (:meth:`FromRig.level`); None when
        nothing of the workload fits."""
        session = self._next_session(where)
        return None if session is None else self.request(session)

    async def level(self, concurrency: int, total: int, each: Callable[[int], tuple[Mapping[str, Any], Done]],
                    keep_going: Callable[[], bool] = lambda: True) -> int:
        """One level: ``total`` requests with ``concurrency`` in flight, from here (:func:`run_level`) or, with
        ``from_rig``, from the rig (sent whole: ``keep_going`` is not asked). Returns how many were sent."""
        if self.from_rig is not None:
            return await self.from_rig.level(self, concurrency, total, each)
        return await run_level(self, concurrency, total, each, keep_going)

    def request(self, s: Session) -> tuple[ChatRequest, dict[str, Any]]:
        p = s.planned
        out = p.output_tokens if s.turn == 1 else p.later[s.turn - 2][1]
        if self.shape.reference:
            return ChatRequest(messages=tuple(s.messages), max_tokens=self.max_tokens, ignore_eos=self.exact), {}
        tools = tuple(Tool(t["function"]["name"], t["function"].get("description", ""),
                           t["function"].get("parameters") or {"type": "object", "properties": {}})
                      for t in tools_of(p))
        fields = {"request_index": p.index, "turn": s.turn if p.turns > 1 else None, "asked_prompt_tokens": s.asked,
                  "ignore_eos": self.exact}
        return ChatRequest(messages=tuple(s.messages), max_tokens=out, ignore_eos=self.exact, tools=tools), fields

    async def send(self, session: Session | None, where: Mapping[str, Any], done: Done) -> Session | None:
        """Send one request: ``session``'s next turn, or the first turn of the next request that fits. Returns the
        session to go on with (finished after its last turn), or None when nothing of the workload fits."""
        if session is not None and session.done and session.why and session.turn <= session.planned.turns:
            for k in range(session.turn, session.planned.turns + 1):
                self._not_sent(session.planned, k, None, session.why, where)
        if session is None or session.done:
            session = self._next_session(where)
            if session is None:
                return None
        elif self.shape.think_time_s:
            await asyncio.sleep(self.shape.think_time_s)
        request, fields = self.request(session)
        reply = await self.client.send(request)
        done(reply, request, fields)
        self.advance(session, reply)
        return session

    def advance(self, s: Session, reply: Reply) -> None:
        """The conversation goes on with the model's real reply and the next user turn; a failed turn ends it
        (``s.done`` once nothing more of it is to be sent)."""
        p = s.planned
        if reply.error or s.turn >= p.turns:
            s.turn, s.why = p.turns + 1, None
            return
        user, _ = p.later[s.turn - 1]
        out = p.output_tokens if s.turn == 1 else p.later[s.turn - 2][1]
        prompts = self.prompts
        assert prompts is not None
        s.turn += 1
        s.messages += [{"role": "assistant", "content": reply.text}, {"role": "user", "content": prompts.turn(p, s.turn)}]
        s.asked = (reply.prompt_tokens or s.asked or 0) + (reply.completion_tokens or out) + user

    async def calibrate(self, cold: Reply | None, cold_request: ChatRequest | None) -> None:
        """The short exchange that fits this server's count of the text (after the cold request, its first point)."""
        if self.prompts is None or self.maker is None:
            return
        prefix = [m for m in (cold_request.messages if cold_request else ()) if m.get("role") == "system"]
        prefix_units = sum(units_of(m["content"]) for m in prefix)
        cold_units = prefix_units + (units_of(cold_request.messages[-1]["content"]) if cold_request else 0)
        limit = self.limits.max_prompt_tokens or (self.limits.max_total_tokens and self.limits.max_total_tokens - 1)
        room = None if limit is None else max(1, int(0.7 * limit) - prefix_units)
        short, long_units = exchange_units(max(1, cold_units - prefix_units), room)
        points = [{"role": "cold", "units": cold_units, "prompt_tokens": cold.prompt_tokens if cold else None,
                   "error": cold.error if cold else "not sent"}]
        long_cold = bool(cold and not cold.error and cold.prompt_tokens) and cold_units - prefix_units >= long_units
        for role, units in (("short", short),) + ((("long", long_units),) if not long_cold else ()):
            text = self.maker.text(units, f"calibration:{role}")
            reply = await self.client.send(ChatRequest(messages=(*prefix, {"role": "user", "content": text}),
                                                       max_tokens=1, stream=False))
            points.append({"role": role, "units": prefix_units + units_of(text), "prompt_tokens": reply.prompt_tokens,
                           "error": reply.error})
        line = fit([(pt["units"], pt["prompt_tokens"]) for pt in points])
        self.prompts = Prompts(self.plan, self.maker, line)
        from ..results.run import CalibrationLog, CalibrationPoint

        self.log.calibration = CalibrationLog(slope=line.slope, offset=line.offset, calibrated=line.calibrated,
                                              why=line.why, points=[CalibrationPoint(**pt) for pt in points])
        if self.prompts.system:
            self.log.shared_prefix = self.prompts.system


async def run_chat(
    *,
    backend: Any,
    load: Load,
    runs: int,
    concurrency: Sequence[int],
    epoch: float,
    emit: Callable[[dict[str, Any]], None],
    progress: Callable[..., None] = lambda *_, **__: None,
) -> None:
    """Cold request (with the calibration after it), ``runs`` timed requests at concurrency 1, then each other
    level of the sweep.

    At a level ``c`` > 1, ``c x runs`` requests are sent with exactly ``c`` in flight (a closed loop);
    the level's aggregate output rate is its output tokens over its wall time.
    """

    def record(phase: str, c: int, i: int) -> Done:
        def done(reply: Reply, request: ChatRequest, fields: dict[str, Any]) -> None:
            emit({**timing_record(reply, epoch=epoch, backend=backend.name, part="chat", phase=phase, concurrency=c,
                                  run=i, request=request), **fields})
        return done

    progress(f"{backend.name} chat cold request")
    cold: list[tuple[Reply, ChatRequest]] = []

    def cold_done(reply: Reply, request: ChatRequest, fields: dict[str, Any]) -> None:
        cold.append((reply, request))
        record("cold", 1, 0)(reply, request, fields)

    await load.send(None, {"phase": "cold", "concurrency": 1, "run": 0}, cold_done)
    await load.calibrate(*(cold[0] if cold else (None, None)))
    session = None
    for i in range(1, runs + 1):
        progress(f"{backend.name} chat run {i}/{runs}")
        session = await load.send(session, {"phase": "timed", "concurrency": 1, "run": i}, record("timed", 1, i))
    for c in concurrency:
        if c <= 1:
            continue
        total = c * runs
        progress(f"{backend.name} chat concurrency {c} ({total} requests)", milestone=True)
        await load.level(c, total, lambda i, c=c: ({"phase": "sweep", "concurrency": c, "run": i},
                                                   record("sweep", c, i)))


class Chat:
    """The part: every backend whose client could be made, in turn."""

    name = "chat"
    records = ("chat", "chat_not_sent")
    across_backends = False

    def width(self, options: Any, plan: LevelPlan) -> int:
        return plan.width

    async def run(self, ctx: Context) -> None:
        """The plain levels, or (:attr:`LevelPlan.searched`) the levels under the target, each backend's search
        recorded in ``run.json`` ``slo_search`` as it goes; what each backend was sent of the workload in
        ``run.json`` ``traffic``."""
        from ..results.run import SearchLog

        o, plan = ctx.options, ctx.plan
        shape = o.workload.shape()
        traffic = TrafficPlan(shape)
        maker = TextMaker.of(shape.seed) if shape.synthetic else None
        for b in ctx.backends:
            client = ctx.clients.get(b.name)
            if client is None:
                continue
            load = Load(backend=b, client=client, plan=traffic, maker=maker, ignore_eos=o.ignore_eos,
                        max_tokens=o.max_tokens, emit=ctx.emit, from_rig=ctx.rigs.get(b.name))
            ctx.info.traffic = {**ctx.info.traffic, b.name: load.log}
            if load.nothing_fits:
                ctx.skipped[b.name][self.name] = f"not sent: {NOTHING_FITS} ({load.fit.first_reason})"
                continue
            if not plan.searched:
                await ctx.guard(b, self.name, self._plain(ctx, b, load, plan.levels, ctx.emit))
                continue
            log = SearchLog()
            ctx.info.slo_search = {**ctx.info.slo_search, b.name: log}
            await ctx.guard(b, self.name, run_under_target(
                backend=b, load=load, plan=plan, runs=o.runs, epoch=ctx.epoch, emit=ctx.emit,
                log=log, progress=ctx.progress, level_one=partial(self._plain, ctx, b, load, (1,))))

    @staticmethod
    def _plain(ctx: Context, b: Any, load: Load, levels: Sequence[int],
               emit: Callable[[dict[str, Any]], None]) -> Awaitable[None]:
        return run_chat(backend=b, load=load, runs=ctx.options.runs, concurrency=levels, epoch=ctx.epoch, emit=emit,
                        progress=ctx.progress)


PART = Chat()
