"""Run the chat benchmark on one backend: the reference prompt, one untimed warm-up that is
also kept as the backend's *cold* request, ``--runs N`` timed requests one at a time, then an
optional concurrency sweep. Every request becomes one record; figures are computed later
from the records (:mod:`agent.bench.analysis.summary`)."""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Sequence

from ..command.evidence import utc_iso
from ..clients.timing import Timer, Timing
from ..tasks.workload import CHAT_PROMPT


def timing_record(
    timing: Timing, *, epoch: float, backend: str, part: str, phase: str, concurrency: int, run: int,
    requested_tokens: int, prompt: str,
) -> dict[str, Any]:
    """One request's record: raw times relative to its send time, so every figure can be recomputed."""
    sent = timing.t_sent

    def rel_ms(t: float | None) -> float | None:
        return None if t is None else round((t - sent) * 1000.0, 3)

    return {
        "part": part,
        "backend": backend,
        "phase": phase,
        "concurrency": concurrency,
        "run": run,
        "started": utc_iso(timing.wall_sent),
        "sent_s": round(sent - epoch, 6),
        "prompt": prompt,
        "requested_tokens": requested_tokens,
        "streamed": timing.streamed,
        "status": timing.status,
        "request_id": timing.request_id,
        "first_ms": rel_ms(timing.t_first),
        "last_ms": rel_ms(timing.t_last),
        "done_ms": rel_ms(timing.t_done),
        "chunk_ms": [rel_ms(t) for t in timing.chunk_times],
        "chunk_chars": timing.chunk_chars,
        "prompt_tokens": timing.prompt_tokens,
        "output_tokens": timing.completion_tokens,
        "finish_reason": timing.finish_reason,
        "text": timing.text,
        "error": timing.error,
        "server_timings": timing.server_timings,
        "reconnects": timing.reconnects,
        "resend_reasons": timing.resend_reasons,
        "new_connection": timing.new_connection,
    }


async def run_chat(
    *,
    backend: Any,
    timer: Timer,
    runs: int,
    max_tokens: int,
    concurrency: Sequence[int],
    epoch: float,
    emit: Callable[[dict[str, Any]], None],
    progress: Callable[[str], None] = lambda _: None,
    prompt: str = CHAT_PROMPT,
) -> None:
    """Cold request, ``runs`` timed requests at concurrency 1, then each other level of the sweep.

    At a level ``c`` > 1, ``c x runs`` requests are sent with exactly ``c`` in flight (a closed loop);
    the level's aggregate output rate is its output tokens over its wall time.
    """

    def record(t: Timing, phase: str, c: int, i: int) -> None:
        emit(timing_record(t, epoch=epoch, backend=backend.name, part="chat", phase=phase, concurrency=c, run=i,
                           requested_tokens=max_tokens, prompt=prompt))  # fmt: skip

    progress(f"{backend.name} chat cold request")
    record(await timer.chat(prompt, max_tokens), "cold", 1, 0)
    for i in range(1, runs + 1):
        progress(f"{backend.name} chat run {i}/{runs}")
        record(await timer.chat(prompt, max_tokens), "timed", 1, i)
    for c in concurrency:
        if c <= 1:
            continue
        total = c * runs
        progress(f"{backend.name} chat concurrency {c} ({total} requests)")
        await run_level(timer, prompt, max_tokens, c, total, lambda t, i, c=c: record(t, "sweep", c, i))


async def run_level(
    timer: Timer, prompt: str, max_tokens: int, concurrency: int, total: int,
    done: Callable[[Timing, int], None], keep_going: Callable[[], bool] = lambda: True,
) -> int:
    """Send ``total`` requests with exactly ``concurrency`` in flight (a closed loop): each worker sends
    its next request as soon as its last one is answered, and hands every answer to ``done(timing, i)``.

    ``keep_going()`` is asked before each send; once it says no, nothing more is sent and the requests
    in flight finish. Returns how many requests were sent.
    """
    indices = iter(range(1, total + 1))
    sent = 0

    async def worker() -> None:
        nonlocal sent
        for i in indices:  # shared by the workers: each takes the next index
            if not keep_going():
                return
            sent += 1
            done(await timer.chat(prompt, max_tokens), i)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return sent
