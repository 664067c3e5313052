"""The chat part: the reference prompt on every backend, one untimed warm-up that is also kept as the
backend's *cold* request, ``--runs N`` timed requests one at a time, then an optional concurrency sweep;
with a latency target, repeats or ``--concurrency auto``, the levels are measured under the target
(:mod:`agent.bench.parts.capacity`). Every request becomes one record; figures are computed later
from the records (:mod:`agent.bench.analysis.summary`)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Sequence

from ..clients.base import BackendClient
from ..clients.reply import ChatRequest, Reply
from ..tasks.workload import CHAT_PROMPT
from .capacity import Plan, run_under_target
from .sending import run_level, timing_record

if TYPE_CHECKING:
    from .part import Context


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


class Chat:
    """The part: every backend whose client could be made, in turn."""

    name = "chat"
    records = ("chat",)
    across_backends = False

    def width(self, options: Any, plan: Plan) -> int:
        return plan.width

    async def run(self, ctx: Context) -> None:
        """The plain levels, or (:attr:`Plan.searched`) the levels under the target, each backend's search
        recorded in ``run.json`` ``slo_search`` as it goes."""
        o, plan = ctx.options, ctx.plan
        request = ChatRequest.user(CHAT_PROMPT, o.max_tokens, ignore_eos=o.ignore_eos)
        for b in ctx.backends:
            client = ctx.clients.get(b.name)
            if client is None:
                continue
            if not plan.searched:
                await ctx.guard(b, self.name, self._plain(ctx, b, client, request, plan.levels, ctx.emit))
                continue
            log = ctx.info.setdefault("slo_search", {}).setdefault(b.name, {})
            await ctx.guard(b, self.name, run_under_target(
                backend=b, client=client, request=request, plan=plan, runs=o.runs, epoch=ctx.epoch, emit=ctx.emit,
                log=log, progress=ctx.progress, level_one=partial(self._plain, ctx, b, client, request, (1,))))

    @staticmethod
    def _plain(ctx: Context, b: Any, client: BackendClient, request: ChatRequest, levels: Sequence[int],
               emit: Callable[[dict[str, Any]], None]) -> Awaitable[None]:
        return run_chat(backend=b, client=client, request=request, runs=ctx.options.runs, concurrency=levels,
                        epoch=ctx.epoch, emit=emit, progress=ctx.progress)

PART = Chat()
