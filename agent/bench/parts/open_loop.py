"""The open loop (``--rate R|peak``, or a workload's trace): requests sent on a schedule, whether or not the
ones before were answered, for ``--rate-duration`` seconds on every backend in turn, after the chat part.

* **At a rate**: ``R`` requests per second with the workload's arrival process (``arrival``, ``burstiness``;
  :func:`agent.bench.tasks.arrivals.arrival_offsets`). ``--rate peak`` sends each backend the rate one
  instance must carry at the workload's peak: an hourly rig's share of the peak over the instances its SLO
  capacity (found by the chat part just before) says it needs, a per-token service the whole peak
  (:func:`agent.bench.analysis.open_loop.per_instance_rate`). A rig without a capacity is not sent it.
* **A trace**: its requests at its timestamps, scaled by its speed (:func:`workload_trace`).

Every request's record keeps when it was due (``scheduled_s``) beside when it went (``sent_s``), and how many
were in flight. At most :data:`MAX_IN_FLIGHT` are in flight (AIPerf's sleep-then-gate: a request due while
they are waits for a slot, and that wait is its lag; the schedule does not catch up). What each request asks
comes from one seam, :func:`workload_requests` (today the chat part's prompt); the summary judges the window
and its halves (:mod:`agent.bench.analysis.open_loop`).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Sequence

from ...kinds import PER_TOKEN, descriptor
from ..clients.reply import ChatRequest
from ..tasks.arrivals import DEFAULT_SEED, arrival_offsets, replay_offsets
from ..tasks.workload import CHAT_PROMPT
from .sending import timing_record

if TYPE_CHECKING:
    from ...backends import Backend
    from ..clients.base import BackendClient
    from .capacity import Plan
    from .part import Context

NAME = "open_loop"
PEAK = "peak"
DEFAULT_DURATION_S = 60.0
MAX_IN_FLIGHT = 256
"""The most requests the sender holds in flight to one backend (the clients' pools are sized for it)."""
EARLY_S = 0.001
"""The sender wakes this much before a request is due and yields to the event loop until it is: the loop's wait
(epoll) counts in whole milliseconds, rounded up, so a plain sleep wakes up to 1 ms late (0.8 ms at the median on
the 2-core development machine). The yielding costs about 6% of a core at 200 req/s."""

NextRequest = Callable[[int], ChatRequest]
"""The seam: the ``i``-th request of the window (from 0)."""


@dataclass(frozen=True)
class Trace:
    """A trace as the open loop replays it: ``(timestamp_ms, request)`` in the trace's order, and its speed
    (2 replays it twice as fast)."""

    requests: Sequence[tuple[float, ChatRequest]]
    speed: float = 1.0


def workload_requests(options: Any) -> NextRequest:
    """What the open loop's requests ask: today every one is the chat part's prompt and reply length."""
    request = ChatRequest.user(CHAT_PROMPT, options.max_tokens, ignore_eos=options.ignore_eos)
    return lambda i: request


def workload_trace(traffic: Any) -> Trace | None:
    """The workload's trace, to replay at its own timing (``traffic`` None: no ``--workload`` given; returns None
    when the workload has no trace, and today none has)."""
    return None


def wanted(rate: Any, traffic: Any) -> bool:
    """Whether a run has an open loop: ``--rate`` given, or a workload with a trace."""
    return rate is not None or workload_trace(traffic) is not None


@dataclass(frozen=True)
class Window:
    """One backend's schedule: when each request is due (seconds from the window's start) and what it asks,
    and what ``run.json`` ``open_loop`` keeps of it before anything is sent."""

    offsets: Sequence[float]
    request: NextRequest
    log: dict[str, Any]


async def send_on_schedule(offsets: Sequence[float], send: Callable[[int, float], Awaitable[None]], *,
                           max_in_flight: int = MAX_IN_FLIGHT, clock: Callable[[], float] = time.perf_counter) -> None:
    """``send(i, due)`` for every offset, each started at ``clock()``-time ``due`` (the start plus its offset; woken
    :data:`EARLY_S` before it) or, when ``max_in_flight`` are still in flight, as soon as one ends; returns once
    every send has ended.
    A send that raises stops the schedule, and the sends in flight are cancelled."""
    slots = asyncio.Semaphore(max_in_flight)
    running: set[asyncio.Task[None]] = set()
    errors: list[Exception] = []

    async def one(i: int, due: float) -> None:
        try:
            await send(i, due)
        except Exception as exc:  # noqa: BLE001 - kept, and raised once the schedule has stopped
            errors.append(exc)
        finally:
            slots.release()

    start = clock()
    try:
        for i, offset in enumerate(offsets):
            due = start + offset
            if (delay := due - clock() - EARLY_S) > 0:
                await asyncio.sleep(delay)
            while clock() < due:
                await asyncio.sleep(0)
            await slots.acquire()
            if errors:
                break
            task = asyncio.ensure_future(one(i, due))
            running.add(task)
            task.add_done_callback(running.discard)
        if running and not errors:
            await asyncio.gather(*running)
        if errors:
            raise errors[0]
    finally:
        for task in running:
            task.cancel()


async def run_window(*, backend: Backend, client: BackendClient, window: Window, epoch: float,
                     emit: Callable[[dict[str, Any]], None], progress: Callable[..., None]) -> None:
    """Send ``window`` to ``backend``, one record per request (``scheduled_s`` beside ``sent_s``)."""
    log, phase = window.log, window.log["mode"]
    in_flight = 0
    started = time.perf_counter()

    async def send(i: int, due: float) -> None:
        nonlocal in_flight
        request = window.request(i)
        in_flight += 1
        concurrency = in_flight
        try:
            reply = await client.send(request)
        finally:
            in_flight -= 1
        record = timing_record(reply, epoch=epoch, backend=backend.name, part="open_loop", phase=phase,
                               concurrency=concurrency, run=i + 1, request=request)
        record["scheduled_s"] = round(due - epoch, 6)
        log["sent"] = log.get("sent", 0) + 1
        emit(record)

    rate = f"{log['rate_req_per_s']:.3g} req/s" if log.get("rate_req_per_s") else "the trace's timing"
    progress(f"{backend.name} open loop: {log['planned']} requests at {rate} over {log['duration_s']:g} s",
             milestone=True)
    try:
        await send_on_schedule(window.offsets, send, max_in_flight=log["max_in_flight"])
    finally:
        log["seconds"] = round(time.perf_counter() - started, 3)


def peak_rate(ctx: Context, b: Backend) -> tuple[float, str] | str:
    """The rate one instance of ``b`` must carry at the workload's peak, and how it was found; or why there is
    none (a rig whose chat part found no SLO capacity)."""
    from ..analysis.open_loop import capacity_level, per_instance_rate
    from ..results.run import LevelLog

    traffic = ctx.options.workload
    peak = traffic.peak_req_per_s
    if descriptor(b.kind).pricing == PER_TOKEN:
        return peak, f"the workload's peak, {peak:.4g} req/s: a per-token service carries all of it"
    search = ctx.info.get("slo_search", {}).get(b.name, {})
    logs = {int(e["concurrency"]): LevelLog(**e) for e in search.get("levels", [])}
    level = capacity_level(ctx.recorded(b.name, "chat"), ctx.plan.target, logs)
    if level is None or not level.goodput_output_tok_per_s:
        return (f"--rate peak: no SLO capacity under the target from the chat part, so the rate one instance "
                "must carry is unknown (give --rate R to send a rate anyway)")
    rate, n = per_instance_rate(peak, traffic.peak_output_tok_per_s, level.goodput_output_tok_per_s)
    return rate, (f"the rate one instance carries at the workload's peak: {peak:.4g} req/s over {n} instance"
                  f"{'' if n == 1 else 's'} (ceil({traffic.peak_output_tok_per_s:,.1f} peak output tok/s / "
                  f"{level.goodput_output_tok_per_s:,.1f} tok/s of goodput at its SLO capacity c={level.concurrency}))")


def window_for(ctx: Context, b: Backend) -> Window | str:
    """``b``'s schedule, or why it gets none."""
    o = ctx.options
    trace = workload_trace(o.workload)
    if trace is not None:
        offsets = replay_offsets([t for t, _ in trace.requests], trace.speed)
        if o.rate_duration_s is not None:
            offsets = [t for t in offsets if t < o.rate_duration_s]
        if not offsets:
            return f"no request of the trace is due within --rate-duration {o.rate_duration_s:g} s"
        duration = o.rate_duration_s or max(offsets[-1], 1e-3)
        log = {"mode": "trace", "rate_req_per_s": round(len(offsets) / duration, 4),
               "rate_basis": f"the trace's timestamps at speed {trace.speed:g}", "arrival": "trace"}
        log.update(duration_s=duration, planned=len(offsets), max_in_flight=MAX_IN_FLIGHT)
        return Window(offsets, lambda i: trace.requests[i][1], log)
    found = peak_rate(ctx, b) if o.rate == PEAK else (float(o.rate), f"--rate {float(o.rate):g}")
    if isinstance(found, str):
        return found
    rate, basis = found
    traffic, duration = o.workload, o.rate_duration_s or DEFAULT_DURATION_S
    shape = traffic.burstiness if traffic.arrival == "gamma" else None
    offsets = arrival_offsets(rate, duration, traffic.arrival, shape or 1.0, DEFAULT_SEED)
    log = {"mode": "rate", "rate_req_per_s": round(rate, 4), "rate_basis": basis, "arrival": traffic.arrival,
           **({"burstiness": shape} if shape is not None else {}), "seed": DEFAULT_SEED, "duration_s": duration,
           "planned": len(offsets), "max_in_flight": MAX_IN_FLIGHT}
    return Window(offsets, workload_requests(o), log)


class OpenLoop:
    """The part: every backend whose client could be made, in turn."""

    name = NAME
    records = (NAME,)

    def width(self, options: Any, plan: Plan) -> int:
        return MAX_IN_FLIGHT

    async def run(self, ctx: Context) -> None:
        for b in ctx.backends:
            client = ctx.clients.get(b.name)
            if client is None:
                continue
            window = window_for(ctx, b)
            if isinstance(window, str):
                ctx.skipped[b.name][self.name] = window
                continue
            ctx.info.setdefault("open_loop", {})[b.name] = window.log
            await ctx.guard(b, self.name, run_window(backend=b, client=client, window=window, epoch=ctx.epoch,
                                                     emit=ctx.emit, progress=ctx.progress))


PART = OpenLoop()
