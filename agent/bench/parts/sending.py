"""How every part sends and what a reply puts in its record: the one "N requests in flight" loop (chat
levels, the capacity search, BFCL cases, quality items) and the fields of a reply, timed (the chat parts
and the orchestrator's asks) or not (BFCL and quality)."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Awaitable, Callable, Iterable, Mapping, Protocol, Sequence, TypeVar

from kit import utc

from ..clients.base import BackendClient
from ..clients.reply import ChatRequest, Reply

T = TypeVar("T")

EARLY_S = 0.001
"""The sender wakes this much before a request is due and yields to the event loop until it is: the loop's wait
(epoll) counts in whole milliseconds, rounded up, so a plain sleep wakes up to 1 ms late (0.8 ms at the median on
the 2-core development machine). The yielding costs about 6% of a core at 200 req/s."""


async def in_flight(items: Iterable[T], concurrency: int, send: Callable[[T], Awaitable[None]],
                    keep_going: Callable[[], bool] = lambda: True) -> int:
    """Send every item with exactly ``concurrency`` in flight (a closed loop): each worker sends its next
    item as soon as its last one is answered.

    ``keep_going()`` is asked before each send; once it says no, nothing more is sent and the requests
    in flight finish. Returns how many items were sent.
    """

    async def step(item: T, _: None) -> None:
        await send(item)

    return await _slots(items, concurrency, step, keep_going)


async def _slots(items: Iterable[T], concurrency: int, step: Callable[[T, Any], Awaitable[Any]],
                 keep_going: Callable[[], bool], stop: object = object()) -> int:
    """``concurrency`` workers taking the next item each: ``step(item, state)`` returns the worker's state for its
    next item (a session to go on with); a worker whose step returns ``stop`` takes no more."""
    items = iter(items)  # shared by the workers: each takes the next item
    sent = 0

    async def worker() -> None:
        nonlocal sent
        state = None
        for item in items:
            if not keep_going():
                return
            sent += 1
            state = await step(item, state)
            if state is stop:
                return

    await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    return sent


Done = Callable[[Reply, ChatRequest, dict[str, Any]], None]
"""What gets a chat request's reply, with the request as sent and its record's fields of the workload."""


class Sender(Protocol):
    """One backend's share of the workload (:class:`agent.bench.parts.chat.Load`)."""

    async def send(self, session: Any, where: Mapping[str, Any], done: Done) -> Any:
        """Send ``session``'s next turn, or the next request; the session to go on with, or None: nothing to send."""
        ...

    async def level(self, concurrency: int, total: int, each: Callable[[int], tuple[Mapping[str, Any], Done]],
                    keep_going: Callable[[], bool] = lambda: True) -> int:
        """One level of ``total`` requests with exactly ``concurrency`` in flight (:func:`run_level`, or from the
        rig); how many were sent."""
        ...


async def run_level(load: Sender, concurrency: int, total: int, each: Callable[[int], tuple[Mapping[str, Any], Done]],
                    keep_going: Callable[[], bool] = lambda: True) -> int:
    """Send ``total`` requests of ``load`` with exactly ``concurrency`` in flight: each slot sends its session's next
    turn, or the next request, as soon as its last one is answered; ``each(i)`` gives request ``i``'s place in the
    records and what gets its reply. Nothing more is sent once ``keep_going()`` says no. Returns how many were sent."""

    async def step(i: int, session: Any) -> Any:
        where, done = each(i)
        return await load.send(session, where, done)

    return await _slots(range(1, total + 1), concurrency, step, keep_going, stop=None)


def timing_record(
    reply: Reply, *, epoch: float, backend: str, part: str, phase: str, concurrency: int, run: int,
    request: ChatRequest,
) -> dict[str, Any]:
    """One timed request's record: raw times relative to its send time, so every figure can be recomputed."""
    sent = reply.t_sent

    def rel_ms(t: float | None) -> float | None:
        return None if t is None else round((t - sent) * 1000.0, 3)

    return {
        "part": part,
        "backend": backend,
        "phase": phase,
        "concurrency": concurrency,
        "run": run,
        "started": utc.iso_millis(utc.at_epoch(reply.wall_sent)),
        "sent_s": round(sent - epoch, 6),
        "prompt": request.messages[-1]["content"],
        "requested_tokens": request.max_tokens,
        "streamed": reply.streamed,
        "status": reply.status,
        "request_id": reply.request_id,
        "first_ms": rel_ms(reply.t_first),
        "last_ms": rel_ms(reply.t_last),
        "done_ms": rel_ms(reply.t_done),
        "chunk_ms": [rel_ms(t) for t in reply.chunk_times],
        "chunk_chars": reply.chunk_chars,
        "prompt_tokens": reply.prompt_tokens,
        "output_tokens": reply.completion_tokens,
        **({} if reply.cached_prompt_tokens is None else {"cached_prompt_tokens": reply.cached_prompt_tokens}),
        **({} if reply.reasoning_tokens is None else {"reasoning_tokens": reply.reasoning_tokens}),
        "finish_reason": reply.finish_reason,
        "text": reply.text,
        "error": reply.error,
        "server_timings": reply.server_timings,
        "reconnects": reply.reconnects,
        "resend_reasons": reply.resend_reasons,
        "new_connection": reply.new_connection,
        **({} if reply.wire_bytes is None else {"wire_bytes": reply.wire_bytes}),
    }


def reply_fields(client: BackendClient, request: ChatRequest, reply: Reply) -> dict[str, Any]:
    """What one reply puts in a BFCL or quality record (the fields of
    :class:`agent.bench.results.records.ReplyFields`): when it was sent and how, and what came back (text,
    finish, status, ids, error, tokens, time)."""
    return {
        "started": utc.iso_millis(utc.at_epoch(reply.wall_sent)),
        "interface": client.interface(request),
        "text": reply.text,
        "finish_reason": reply.finish_reason,
        "status": reply.status,
        "request_id": reply.request_id,
        "error": reply.error,
        "prompt_tokens": reply.prompt_tokens,
        "output_tokens": reply.completion_tokens,
        **({} if reply.reasoning_tokens is None else {"reasoning_tokens": reply.reasoning_tokens}),
        "seconds": round(reply.seconds, 4),
        "streamed": reply.streamed,
        "resends": reply.reconnects,
    }


async def send_on_schedule(offsets: Sequence[float], send: Callable[[int, float, Any], Awaitable[None]], *,
                           prepare: Callable[[int], Any] = lambda i: None, max_in_flight: int,
                           clock: Callable[[], float] = time.perf_counter) -> None:
    """``send(i, due, prepare(i))`` for every offset, each started at ``clock()``-time ``due`` (the start plus its
    offset; woken :data:`EARLY_S` before it) or, when ``max_in_flight`` are still in flight, as soon as one ends;
    returns once every send has ended. ``prepare(i)`` runs before the wait for request ``i`` (making its prompt
    is no part of its lag). A send that raises stops the schedule, and the sends in flight are cancelled."""
    slots = asyncio.Semaphore(max_in_flight)
    running: set[asyncio.Task[None]] = set()
    errors: list[Exception] = []

    async def one(i: int, due: float, made: Any) -> None:
        try:
            await send(i, due, made)
        except Exception as exc:  # noqa: BLE001 - kept, and raised once the schedule has stopped
            errors.append(exc)
        finally:
            slots.release()

    start = clock()
    try:
        for i, offset in enumerate(offsets):
            made = prepare(i)
            due = start + offset
            if (delay := due - clock() - EARLY_S) > 0:
                await asyncio.sleep(delay)
            while clock() < due:
                await asyncio.sleep(0)
            await slots.acquire()
            if errors:
                break
            task = asyncio.ensure_future(one(i, due, made))
            running.add(task)
            task.add_done_callback(running.discard)
        if running and not errors:
            await asyncio.gather(*running)
        if errors:
            raise errors[0]
    finally:
        for task in running:
            task.cancel()
