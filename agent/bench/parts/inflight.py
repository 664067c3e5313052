"""The one "N requests in flight" loop every part sends through (chat levels, the capacity search,
BFCL cases, quality items)."""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable, Iterable, TypeVar

T = TypeVar("T")


async def in_flight(items: Iterable[T], concurrency: int, send: Callable[[T], Awaitable[None]],
                    keep_going: Callable[[], bool] = lambda: True) -> int:
    """Send every item with exactly ``concurrency`` in flight (a closed loop): each worker sends its next
    item as soon as its last one is answered.

    ``keep_going()`` is asked before each send; once it says no, nothing more is sent and the requests
    in flight finish. Returns how many items were sent.
    """
    items = iter(items)  # shared by the workers: each takes the next item
    sent = 0

    async def worker() -> None:
        nonlocal sent
        for item in items:
            if not keep_going():
                return
            sent += 1
            await send(item)

    await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    return sent
