"""The open loop (``--rate R|peak``, or a workload's trace): requests sent on a schedule, whether or not the
ones before were answered, for ``--rate-duration`` seconds on every backend in turn, after the chat part.

* **At a rate**: ``R`` requests per second with the workload's arrival process (``arrival``, ``burstiness``;
  :func:`agent.bench.tasks.arrivals.arrival_offsets`). ``--rate peak`` sends each backend the rate one
  instance must carry at the workload's peak: an hourly rig's share of the peak over the instances its SLO
  capacity (found by the chat part just before) says it needs, a per-token service the whole peak
  (:func:`agent.bench.analysis.open_loop.per_instance_rate`). A rig without a capacity is not sent it.
* **A trace** (the workload's ``trace``): its requests at its timestamps, scaled by its ``trace_speed``
  (:func:`workload_trace`); a trace runs the open loop without ``--rate``.

What each request asks is the workload's traffic as the chat part sends it to that backend
(:func:`workload_requests`): the same plan, made to the calibration the chat part fitted on that server (the open
loop's own, :func:`calibrate_alone`, where the chat part did not run) in text of
its own (:data:`DRAW`: nothing the chat part sent, so no request finds its prompt in the server's prefix cache), each
request checked against the backend's token limits (one that does not fit is passed over). A workload of sessions
(``turns`` > 1) starts sessions on the schedule, at the rate over the turns (the rate counts every turn sent, as the
workload's peak does): each session sends its turns one after another, each with the conversation so far and the
model's real replies, the next due ``think_time_s`` after the last reply (turns past the backend's limits are not
sent). Every request's record keeps when it was due (``scheduled_s``) beside when it went (``sent_s``), and how
many were in flight. At most :data:`MAX_IN_FLIGHT` sessions are under way (AIPerf's sleep-then-gate: one due while
they are waits for a slot, and that wait is its lag; the schedule does not catch up). The summary judges the window
and its halves (:mod:`agent.bench.analysis.open_loop`).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ...kinds import PER_TOKEN, descriptor
from ..tasks.arrivals import DEFAULT_SEED, arrival_offsets, replay_offsets
from .sending import send_on_schedule, timing_record

if TYPE_CHECKING:
    from ...backends import Backend
    from ..clients.base import BackendClient
    from ..clients.reply import ChatRequest, Reply
    from ..results.run import OpenLoopLog
    from .capacity import LevelPlan
    from .chat import Load, Session
    from .part import Context

NAME = "open_loop"
PEAK = "peak"
DEFAULT_DURATION_S = 60.0
MAX_IN_FLIGHT = 256
"""The most requests (sessions) the sender holds under way to one backend (the clients' pools are sized for it)."""
FIRST_INDEX = 1_000_000
"""The workload's request the open loop starts from at a rate: past any the chat part sent (its lengths are new
draws too)."""
DRAW = NAME
"""The open loop's draw of the synthetic text (:class:`~agent.bench.tasks.traffic.text.TextMaker`): text of the
same statistics and calibration as the chat part's, none of it the same, so that a trace replayed after the chat
part sent its first requests, or a shared prefix, is cold: no prompt repeats one the server may still hold in its
prefix cache. A prompts file's requests are the user's own text and are sent as they are: the open loop reports
their cached prompt tokens."""

MAX_PASSED_OVER = 100_000
"""Requests in a row that do not fit before the open loop gives up on a backend (the chat part found some that do)."""

NextRequest = Callable[[int], "Session"]
"""The ``i``-th request (session) of the window, from 0."""


@dataclass(frozen=True)
class Trace:
    """A trace's timing as the open loop replays it: its timestamps (ms) in its order, and its speed (2 replays
    it twice as fast)."""

    timestamps_ms: Sequence[float]
    speed: float = 1.0


def workload_trace(traffic: Any) -> Trace | None:
    """The workload's trace (its file read again), or None when it has none."""
    if traffic is None or not getattr(traffic, "trace", None):
        return None
    return Trace([t.timestamp_ms for t in traffic.shape().trace], traffic.trace_speed or 1.0)


def wanted(rate: Any, traffic: Any) -> bool:
    """Whether a run has an open loop: ``--rate`` given, or a workload with a trace (``traffic`` None: no
    ``--workload`` given)."""
    return rate is not None or bool(getattr(traffic, "trace", None))


def workload_requests(ctx: Context, b: Backend, client: BackendClient) -> tuple[Load, str | None]:
    """``b``'s share of the workload, the chat part's :class:`~.chat.Load` with the calibration the chat part fitted
    on ``b`` (``load.session(index)``: that request to send, or None where it does not fit ``b``'s limits); and why
    nothing can be sent, where nothing fits."""
    from ..tasks.traffic.calibration import Calibration
    from ..tasks.traffic.plan import TrafficPlan
    from ..tasks.traffic.text import TextMaker
    from .chat import NOTHING_FITS, Load

    o = ctx.options
    shape = o.workload.shape()
    kept = ctx.info.traffic.get(b.name)
    line = kept.calibration if kept is not None else None
    calibration = Calibration(slope=line.slope, offset=line.offset, calibrated=line.calibrated, why=line.why) \
        if line else None
    load = Load(backend=b, client=client, plan=TrafficPlan(shape),
                maker=TextMaker.of(shape.seed, DRAW) if shape.synthetic else None, ignore_eos=o.ignore_eos,
                max_tokens=o.max_tokens, emit=ctx.emit, calibration=calibration, from_rig=ctx.rigs.get(b.name))
    return load, (f"not sent: {NOTHING_FITS} ({load.fit.first_reason})" if load.nothing_fits else None)


def _rate_requests(request: Callable[[int], Any]) -> NextRequest:
    """The window's requests, in order, from :data:`FIRST_INDEX` on, each one that does not fit passed over."""
    cursor = FIRST_INDEX

    def next_request(i: int) -> Session:
        nonlocal cursor
        for _ in range(MAX_PASSED_OVER):
            found = request(cursor)
            cursor += 1
            if found is not None:
                return found
        raise RuntimeError(f"{MAX_PASSED_OVER:,} requests of the workload in a row do not fit this backend's limits")

    return next_request


@dataclass(frozen=True)
class Window:
    """One backend's schedule: when each request is due (seconds from the window's start) and what it asks,
    and what ``run.json`` ``open_loop`` keeps of it before anything is sent."""

    offsets: Sequence[float]
    request: NextRequest
    log: OpenLoopLog
    load: Load
    think_time_s: float = 0.0


async def run_window(*, backend: Backend, client: BackendClient, window: Window, epoch: float,
                     emit: Callable[[dict[str, Any]], None], progress: Callable[..., None]) -> None:
    """Send ``window`` to ``backend``, one record per request (``scheduled_s`` beside ``sent_s``)."""
    log, phase = window.log, window.log.mode
    in_flight = 0
    started = time.perf_counter()

    async def send(i: int, due: float, session: Session) -> None:
        """Request ``i``: each of its turns, the first at ``due``, each later one ``think_time_s`` after the reply
        before it."""
        nonlocal in_flight
        while True:
            request, fields = window.load.request(session)
            in_flight += 1
            concurrency = in_flight
            try:
                reply = await client.send(request)
            finally:
                in_flight -= 1
            record = timing_record(reply, epoch=epoch, backend=backend.name, part="open_loop", phase=phase,
                                   concurrency=concurrency, run=i + 1, request=request)
            record.update(fields, scheduled_s=round(due - epoch, 6))
            log.sent += 1
            emit(record)
            window.load.advance(session, reply)
            if session.done:
                return
            due = time.perf_counter() + window.think_time_s
            await asyncio.sleep(window.think_time_s)

    rate = f"{log.rate_req_per_s:.3g} req/s" if log.rate_req_per_s else "the trace's timing"
    rig = window.load.from_rig
    progress(f"{backend.name} open loop: {log.planned} requests at {rate} over {log.duration_s:g} s"
             + (f", sent from {rig.where}" if rig else ""), milestone=True)
    try:
        if rig is None:
            await send_on_schedule(window.offsets, send, prepare=window.request, max_in_flight=log.max_in_flight)
        else:
            await _from_rig(backend, window, epoch, emit)
    finally:
        log.seconds = round(time.perf_counter() - started, 3)


async def _from_rig(backend: Backend, window: Window, epoch: float, emit: Callable[[dict[str, Any]], None]) -> None:
    """``window`` sent by the rig's load generator (``--load-from rig``): the same requests and offsets, one turn
    each."""
    rig, log = window.load.from_rig, window.log
    assert rig is not None
    requests = [window.load.request(window.request(i)) for i in range(len(window.offsets))]

    def record(reply: Reply, request: ChatRequest, fields: dict[str, Any], in_flight: int, due: float) -> None:
        out = timing_record(reply, epoch=epoch, backend=backend.name, part="open_loop", phase=log.mode,
                            concurrency=in_flight, run=log.sent + 1, request=request)
        out.update(fields, scheduled_s=round(due - epoch, 6))
        log.sent += 1
        emit(out)

    await rig.window(requests, list(window.offsets), log.max_in_flight, record)


def peak_rate(ctx: Context, b: Backend) -> tuple[float, str] | str:
    """The rate one instance of ``b`` must carry at the workload's peak, and how it was found; or why there is
    none (a rig whose chat part found no SLO capacity)."""
    from ..analysis.open_loop import capacity_level, per_instance_rate

    traffic = ctx.options.workload
    peak = traffic.peak_req_per_s
    if descriptor(b.kind).pricing == PER_TOKEN:
        return peak, f"the workload's peak, {peak:.4g} req/s: a per-token service carries all of it"
    search = ctx.info.slo_search.get(b.name)
    logs = {e.concurrency: e for e in (search.levels if search is not None else [])}
    level = capacity_level(ctx.recorded(b.name, "chat"), ctx.plan.target, logs)
    if level is None or not level.goodput_output_tok_per_s:
        return ("--rate peak: no SLO capacity under the target from the chat part, so the rate one instance "
                "must carry is unknown (give --rate R to send a rate anyway)")
    rate, n = per_instance_rate(peak, traffic.peak_output_tok_per_s, level.goodput_output_tok_per_s)
    return rate, (f"the rate one instance carries at the workload's peak: {peak:.4g} req/s over {n} instance"
                  f"{'' if n == 1 else 's'} (ceil({traffic.peak_output_tok_per_s:,.1f} peak output tok/s / "
                  f"{level.goodput_output_tok_per_s:,.1f} tok/s of goodput at its SLO capacity c={level.concurrency}))")


def _trace_window(ctx: Context, trace: Trace, load: Load) -> Window | str:
    """The trace's requests that fit, at their timestamps (within ``--rate-duration`` where it is given)."""
    from ..results.run import OpenLoopLog

    o = ctx.options
    offsets = replay_offsets(trace.timestamps_ms, trace.speed)
    kept = [(t, found) for i, t in enumerate(offsets)
            if (o.rate_duration_s is None or t < o.rate_duration_s) and (found := load.session(i)) is not None]
    if not kept:
        return f"no request of the trace that fits is due within --rate-duration {o.rate_duration_s:g} s" \
            if o.rate_duration_s is not None else "no request of the trace fits this backend's limits"
    duration = o.rate_duration_s or max(kept[-1][0], 1e-3)
    log = OpenLoopLog(mode="trace", rate_req_per_s=round(len(kept) / duration, 4),
                      rate_basis=f"the trace's timestamps at speed {trace.speed:g}", arrival="trace",
                      duration_s=duration, planned=len(kept), max_in_flight=MAX_IN_FLIGHT)
    return Window([t for t, _ in kept], lambda i: kept[i][1], log, load)


def window_for(ctx: Context, b: Backend, client: BackendClient) -> Window | str:
    """``b``'s schedule, or why it gets none."""
    from ..results.run import OpenLoopLog

    o = ctx.options
    load, nothing = workload_requests(ctx, b, client)
    if nothing:
        return nothing
    trace = workload_trace(o.workload)
    if trace is not None:
        return _trace_window(ctx, trace, load)
    found = peak_rate(ctx, b) if o.rate == PEAK else (float(o.rate), f"--rate {float(o.rate):g}")
    if isinstance(found, str):
        return found
    rate, basis = found
    traffic, duration = o.workload, o.rate_duration_s or DEFAULT_DURATION_S
    shape, turns = traffic.burstiness if traffic.arrival == "gamma" else None, load.shape.turns
    offsets = arrival_offsets(rate / turns, duration, traffic.arrival, shape or 1.0, DEFAULT_SEED)
    sessions = {"turns": turns, "session_rate_per_s": round(rate / turns, 4), "sessions": len(offsets)} \
        if turns > 1 else {}
    log = OpenLoopLog(mode="rate", rate_req_per_s=round(rate, 4), rate_basis=basis, arrival=traffic.arrival,
                      **({"burstiness": shape} if shape is not None else {}), seed=DEFAULT_SEED, duration_s=duration,
                      planned=len(offsets) * turns, **sessions, max_in_flight=MAX_IN_FLIGHT)
    return Window(offsets, _rate_requests(load.session), log, load, load.shape.think_time_s or 0.0)


async def calibrate_alone(ctx: Context, b: Backend, client: BackendClient) -> None:
    """Fit the synthetic text to ``b``'s count as the chat part does, where the chat part did not (``--demos
    open_loop`` alone): its two short requests (untimed, unrecorded), kept in ``run.json`` ``traffic`` as the chat
    part keeps its own, so that the lengths asked are the lengths the server sees and "Your traffic" says so."""
    if b.name in ctx.info.traffic or not ctx.options.workload.shape().synthetic:
        return
    load, nothing = workload_requests(ctx, b, client)
    ctx.info.traffic = {**ctx.info.traffic, b.name: load.log}
    if nothing is None:
        await load.calibrate(None, None)


class OpenLoop:
    """The part: every backend whose client could be made, in turn."""

    name = NAME
    records = (NAME,)
    across_backends = False

    def width(self, options: Any, plan: LevelPlan) -> int:
        return MAX_IN_FLIGHT

    async def run(self, ctx: Context) -> None:
        for b in ctx.backends:
            client = ctx.clients.get(b.name)
            if client is None:
                continue
            await calibrate_alone(ctx, b, client)
            window = window_for(ctx, b, client)
            if isinstance(window, str):
                ctx.skipped[b.name][self.name] = window
                continue
            ctx.info.open_loop = {**ctx.info.open_loop, b.name: window.log}
            await ctx.guard(b, self.name, run_window(backend=b, client=client, window=window, epoch=ctx.epoch,
                                                     emit=ctx.emit, progress=ctx.progress))


PART = OpenLoop()
