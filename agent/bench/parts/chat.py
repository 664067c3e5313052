"""Run the chat benchmark on one backend: the reference prompt, one untimed warm-up that is
also kept as the backend's *cold* request, ``--runs N`` timed requests one at a time, then an
optional concurrency sweep. Every request becomes one record; figures are computed later
from the records (:mod:`agent.bench.analysis.summary`)."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from rigs import utc

from ..clients.base import BackendClient
from ..clients.reply import ChatRequest, Reply
from .inflight import in_flight


def timing_record(
    reply: Reply, *, epoch: float, backend: str, part: str, phase: str, concurrency: int, run: int,
    request: ChatRequest,
) -> dict[str, Any]:
    """One request's record: raw times relative to its send time, so every figure can be recomputed."""
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
        "finish_reason": reply.finish_reason,
        "text": reply.text,
        "error": reply.error,
        "server_timings": reply.server_timings,
        "reconnects": reply.reconnects,
        "resend_reasons": reply.resend_reasons,
        "new_connection": reply.new_connection,
    }


async def run_chat(
    *,
    backend: Any,
    client: BackendClient,
    request: ChatRequest,
    runs: int,
    concurrency: Sequence[int],
    epoch: float,
    emit: Callable[[dict[str, Any]], None],
    progress: Callable[..., None] = lambda *_, **__: None,
) -> None:
    """Cold request, ``runs`` timed requests at concurrency 1, then each other level of the sweep.

    At a level ``c`` > 1, ``c x runs`` requests are sent with exactly ``c`` in flight (a closed loop);
    the level's aggregate output rate is its output tokens over its wall time.
    """

    def record(reply: Reply, phase: str, c: int, i: int) -> None:
        emit(timing_record(reply, epoch=epoch, backend=backend.name, part="chat", phase=phase, concurrency=c, run=i,
                           request=request))  # fmt: skip

    progress(f"{backend.name} chat cold request")
    record(await client.send(request), "cold", 1, 0)
    for i in range(1, runs + 1):
        progress(f"{backend.name} chat run {i}/{runs}")
        record(await client.send(request), "timed", 1, i)
    for c in concurrency:
        if c <= 1:
            continue
        total = c * runs
        progress(f"{backend.name} chat concurrency {c} ({total} requests)", milestone=True)
        await run_level(client, request, c, total, lambda reply, i, c=c: record(reply, "sweep", c, i))


async def run_level(
    client: BackendClient, request: ChatRequest, concurrency: int, total: int,
    done: Callable[[Reply, int], None], keep_going: Callable[[], bool] = lambda: True,
) -> int:
    """Send ``request`` ``total`` times with exactly ``concurrency`` in flight, handing every answer to
    ``done(reply, i)``; nothing more is sent once ``keep_going()`` says no. Returns how many were sent."""

    async def send(i: int) -> None:
        done(await client.send(request), i)

    return await in_flight(range(1, total + 1), concurrency, send, keep_going)
