"""The ``quality`` part: the lane's items (:mod:`agent.bench.tasks.quality`) sent to every backend
through its own chat interface, one record per item. Grading is done later, from the records
(:mod:`agent.bench.grading.quality`), so a grading change never needs a new run.

Every backend gets the same items (same ``--quality-n`` and ``--quality-seed``), at temperature 0,
with the lane's system turn and output caps, all recorded with each reply. An item whose prompt is
over a backend's own limit (``Backend.max_prompt_tokens``) is recorded as not sent, with the
reason; the lane's items are made to fit the smallest limit of any catalog backend, so this only
happens on a server stated to take less.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Sequence

from ...kinds import descriptor
from ..clients.base import BackendClient
from ..clients.reply import ChatRequest, Reply
from ..tasks.quality import lane
from ..tasks.quality.gym import QualityUnavailableError
from ..tasks.quality.items import MAX_TOKENS, SYSTEM_PROMPT, Item
from .sending import in_flight, reply_fields

if TYPE_CHECKING:
    from ...backends import Backend
    from .capacity import LevelPlan
    from .part import Context

DEFAULT_N = 600
DEFAULT_SEED = 0
DEFAULT_CONCURRENCY = 4
"""Requests in flight per backend: the local rig's four slots; a vLLM server takes many more, and
the Neuron rigs get one at a time (:func:`concurrency_for`)."""


def options_record(*, n: int, seed: int, concurrency: int) -> dict[str, Any]:
    """The part's options as recorded in ``run.json``."""
    return {
        "quality_n": n,
        "quality_seed": seed,
        "quality_concurrency": concurrency,
        "quality_lane": lane.version(),
        "quality_system_prompt": SYSTEM_PROMPT,
        "quality_max_tokens": dict(MAX_TOKENS),
        "quality_temperature": 0,
    }


def concurrency_for(backend: Backend, concurrency: int) -> int:
    """The Neuron servers generate under one global lock (docs/capacity.md, "capacity 1"): more in
    flight there only queues, and each queued request waits out the whole of the one before it."""
    limit = descriptor(backend.kind).concurrency_limit
    return concurrency if limit is None else limit


def _item_fields(b: Backend, item: Item, seed: int, version: str) -> dict[str, Any]:
    return {
        "part": "quality", "backend": b.name, "item": item.id, "suite": item.suite, "lane": version, "seed": seed,
        "messages": [dict(m) for m in item.messages], "max_tokens": item.max_tokens, "temperature": 0,
        "answer": item.answer, "grading": dict(item.grading),
    }  # fmt: skip


def item_record(b: Backend, client: BackendClient, request: ChatRequest, item: Item, seed: int, version: str,
                reply: Reply) -> dict[str, Any]:
    """One item's record: the item as sent (messages with the system turn, cap, reference, grading)
    and what came back."""
    return {**_item_fields(b, item, seed, version), **reply_fields(client, request, reply)}


def not_sent_record(b: Backend, item: Item, seed: int, version: str) -> dict[str, Any]:
    """An item over the backend's prompt limit: recorded, not sent, not graded."""
    return {**_item_fields(b, item, seed, version), "error": None,
            "not_sent": f"prompt of about {item.prompt_tokens_estimate} tokens (estimated) is over this backend's "
                        f"{b.max_prompt_tokens}-token limit"}  # fmt: skip


async def run_quality(
    *,
    backend: Backend,
    client: BackendClient,
    items: Sequence[Item],
    concurrency: int,
    seed: int,
    version: str,
    emit: Callable[[dict[str, Any]], None],
    progress: Callable[..., None] = lambda *_, **__: None,
) -> None:
    """Send every item that fits ``backend`` with ``concurrency`` in flight; one record per item,
    the unsent ones first. A backend that keeps failing is stopped by the runner's failure streak
    (``--max-consecutive-failures``), as in every part."""
    fitting = [item for item in items if item.fits(backend.max_prompt_tokens)]
    for item in items:
        if not item.fits(backend.max_prompt_tokens):
            emit(not_sent_record(backend, item, seed, version))
    done = 0

    async def send(item: Item) -> None:
        nonlocal done
        request = ChatRequest(messages=item.messages, max_tokens=item.max_tokens, stream=False, temperature=0.0)
        reply = await client.send(request)
        done += 1
        emit(item_record(backend, client, request, item, seed, version, reply))
        progress(f"{backend.name} quality {done}/{len(fitting)}")

    await in_flight(fitting, concurrency_for(backend, concurrency), send)


class Quality:
    """The part: the same items on every backend, in turn."""

    name = "quality"
    records = ("quality",)
    across_backends = False

    def width(self, options: Any, plan: LevelPlan) -> int:
        return int(options.quality_concurrency)

    async def run(self, ctx: Context) -> None:
        """The first ``--quality-n`` items of ``--quality-seed``; the lane's generators not installed, every
        backend is recorded as skipped."""
        o = ctx.options
        ctx.progress("quality: making the items", milestone=True)
        try:
            items = lane.select(o.quality_n, o.quality_seed)
        except QualityUnavailableError as exc:
            ctx.skip_all(self.name, f"failed: {exc}")
            return
        version = lane.version()
        await ctx.each_backend(self.name, lambda b, client: run_quality(
            backend=b, client=client, items=items, concurrency=o.quality_concurrency, seed=o.quality_seed,
            version=version, emit=ctx.emit, progress=ctx.progress))


PART = Quality()
