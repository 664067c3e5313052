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

import argparse
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping, Sequence

from ..clients.base import BackendClient
from ..clients.reply import ChatRequest, Reply
from ..command.argtypes import positive_int
from ..command.evidence import utc_iso
from ..tasks.quality import lane
from ..tasks.quality.gym import QualityUnavailableError
from ..tasks.quality.items import MAX_TOKENS, SYSTEM_PROMPT, Item
from .inflight import in_flight

if TYPE_CHECKING:
    from ...backends import Backend
    from ..clients.pool import ClientPool

DEFAULT_N = 600
DEFAULT_SEED = 0
DEFAULT_CONCURRENCY = 4
"""Requests in flight per backend: the local rig's four slots; a vLLM server takes many more, and
the Neuron rigs get one at a time (:func:`concurrency_for`)."""


def items_option(text: str) -> int:
    n = positive_int(text)
    if n > lane.MAX_N:
        raise argparse.ArgumentTypeError(f"{n} is above {lane.MAX_N:,} items")
    return n


def seed_option(text: str) -> int:
    try:
        seed = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= seed <= lane.MAX_SEED:
        raise argparse.ArgumentTypeError(f"{seed} is out of range: give a seed from 0 to {lane.MAX_SEED}")
    return seed


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The part's options."""
    g = parser.add_argument_group("quality (answer quality: the same seeded items on every backend)")
    g.add_argument("--quality-n", type=items_option, default=DEFAULT_N, metavar="N",
                   help=f"items per backend; the first N of the seed, taken in turn from six suites (default: "
                        f"{DEFAULT_N})")
    g.add_argument("--quality-seed", type=seed_option, default=DEFAULT_SEED, metavar="S",
                   help=f"seed of the items; every backend and every run with this seed gets the same ones "
                        f"(default: {DEFAULT_SEED})")
    g.add_argument("--quality-concurrency", type=positive_int, default=DEFAULT_CONCURRENCY, metavar="N",
                   help=f"requests in flight per backend (the Neuron rigs get 1) (default: {DEFAULT_CONCURRENCY})")


def options(namespace: argparse.Namespace) -> dict[str, Any]:
    """The part's options as recorded in ``run.json``."""
    return {
        "quality_n": getattr(namespace, "quality_n", DEFAULT_N),
        "quality_seed": getattr(namespace, "quality_seed", DEFAULT_SEED),
        "quality_concurrency": getattr(namespace, "quality_concurrency", DEFAULT_CONCURRENCY),
        "quality_lane": lane.version(),
        "quality_system_prompt": SYSTEM_PROMPT,
        "quality_max_tokens": dict(MAX_TOKENS),
        "quality_temperature": 0,
    }


def concurrency_for(backend: Backend, concurrency: int) -> int:
    """The Neuron servers generate under one global lock (docs/benchmark.md, "capacity 1"): more in
    flight there only queues, and each queued request waits out the whole of the one before it."""
    return 1 if backend.kind == "neuron" else concurrency


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
    return {
        **_item_fields(b, item, seed, version),
        "started": utc_iso(reply.wall_sent),
        "interface": client.interface(request),
        "text": reply.text,
        "finish_reason": reply.finish_reason,
        "status": reply.status,
        "request_id": reply.request_id,
        "error": reply.error,
        "prompt_tokens": reply.prompt_tokens,
        "output_tokens": reply.completion_tokens,
        "seconds": round(reply.seconds, 4),
        "streamed": reply.streamed,
        "resends": reply.reconnects,
    }


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


async def run_part(
    *,
    backends: Sequence[Backend],
    pool: ClientPool,
    namespace: argparse.Namespace,
    skipped: Mapping[str, dict[str, str]],
    emit: Callable[[dict[str, Any]], None],
    progress: Callable[..., None],
    guard: Callable[[Backend, str, Awaitable[None]], Awaitable[None]],
) -> None:
    """The part on every backend in turn; a backend that takes no part is recorded in ``skipped``."""
    recorded = options(namespace)
    try:
        items = lane.select(recorded["quality_n"], recorded["quality_seed"])
    except QualityUnavailableError as exc:
        for b in backends:
            skipped[b.name]["quality"] = f"failed: {exc}"
        return
    for b in backends:
        try:
            client = pool.client(b)
        except Exception as exc:  # e.g. no credentials for a boto3 client
            skipped[b.name]["quality"] = f"failed: {type(exc).__name__}: {exc}"[:300]
            continue
        await guard(b, "quality", run_quality(backend=b, client=client, items=items,
                                              concurrency=recorded["quality_concurrency"],
                                              seed=recorded["quality_seed"], version=recorded["quality_lane"],
                                              emit=emit, progress=progress))  # fmt: skip
