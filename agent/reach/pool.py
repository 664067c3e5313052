"""A pool of port forwards to one EC2 rig, sized from what one forward carries (:mod:`.tunnel`).

:func:`spread` runs after the rig's first forward answers: it opens a forward of the same kind to the rig's
byte source, measures it and closes it, measures what one stream needs through the first forward, then opens
the pool's other forwards to the serving port. Each is a forward like the first (supervised, restarted on the
same local port, in the run's :class:`~.forwarding.ForwardSet`, so closing the run closes them all). What it
found goes into the backend's metadata: ``tunnel`` (recorded in ``run.json``, read by the summary) and
``pool_base_urls`` (the client spreads its requests over them).
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from .forwarding import ForwardError, ForwardSet, ProcessPortForward, RelayPortForward, preferred_port
from .relay import Shaping
from .tunnel import BOUND_SHARE, MEASURE_S, Capacity, TunnelError, measure, pool_size, stream_need

logger = logging.getLogger(__name__)

AUTO = "auto"
HOLD_TIMEOUT_S = 60.0
"""How long the measuring forward may take to listen (an SSM session starts in seconds)."""

Make = Callable[[str, int], ProcessPortForward]
"""A new forward of the backend's kind: ``(name, remote port)`` (the serving port or the byte source's)."""


def relays(*, host: str, source_port: int, shaping: Shaping | None, log_dir: Path | None,
           taken: set[int]) -> Make:
    """Relays in place of SSM forwards (the offline stand-in): to ``host`` for the serving port, to this machine
    for the byte source at ``source_port`` (:class:`~.tunnel.LocalByteSource`), each shaped when given."""
    def make(name: str, remote_port: int) -> ProcessPortForward:
        port = preferred_port(None, taken)
        taken.add(port)
        return RelayPortForward(name, target_port=remote_port, local_port=port, log_dir=log_dir, shaping=shaping,
                                target_host="127.0.0.1" if remote_port == source_port else host)
    return make


def _measure(name: str, make: Make, source_port: int, kind: str, seconds: float) -> Capacity:
    """One forward's capacity through a forward of its kind to the byte source (``<name>-tunnel``), closed after."""
    probe = make(f"{name}-tunnel", source_port)
    try:
        probe.start()
        probe.hold(HOLD_TIMEOUT_S)
        return measure(probe.local_port, kind, seconds)
    finally:
        probe.close()


def spread(*, forwards: ForwardSet, first: ProcessPortForward, make: Make, serving_port: int, source_port: int,
           kind: str, model: str, width: int, wanted: int | str, ready_timeout_s: float,
           seconds: float = MEASURE_S) -> dict[str, Any]:
    """Measure the tunnel and open the pool; the backend's metadata to add (``tunnel``, ``pool_base_urls``).

    ``wanted``: :data:`AUTO` (sized from the capacity and the need of ``width`` streams) or a number of forwards.
    A byte source that does not answer leaves the tunnel unmeasured (the reason recorded) and the pool at
    ``wanted`` (1 with auto); a pool forward that does not open is left out (recorded).
    """
    record: dict[str, Any] = {"kind": kind, "bound_share": BOUND_SHARE}
    try:
        capacity: Capacity | None = _measure(first.name, make, source_port, kind, seconds)
    except (TunnelError, ForwardError) as exc:
        capacity = None
        record["unmeasured"] = f"{exc} (a rig booted before its byte source was added serves none)"
        logger.warning("backend=<%s> | tunnel not measured: %s", first.name, exc)
    # one stream's need sizes a pool: not needed when the number is given, or one stream is the most in flight
    need = None if capacity is None or wanted != AUTO or width <= 1 else stream_need(first.base_url, model)
    count = wanted if isinstance(wanted, int) else (
        1 if capacity is None else pool_size(capacity.down_bytes_per_s, need, width))
    extra = [forwards.add(make(f"{first.name}-{k}", serving_port)) for k in range(2, count + 1)]
    for forward in extra:
        forward.start()  # from the main thread (see processes.spawn)
    opened = [first]
    if extra:
        with ThreadPoolExecutor(max_workers=len(extra), thread_name_prefix="pool-open") as pool:
            futures = [(f, pool.submit(f.open, model, ready_timeout_s)) for f in extra]
            for forward, future in futures:
                try:
                    future.result()
                    opened.append(forward)
                except ForwardError as exc:
                    record.setdefault("not_opened", []).append(str(exc))
                    forward.close()
    record.update(forwards=len(opened), stream_need_bytes_per_s=None if need is None else round(need, 1),
                  capacity=None if capacity is None else capacity.record(),
                  capacity_bytes_per_s=None if capacity is None else round(capacity.down_bytes_per_s * len(opened)))
    return {"tunnel": record, "pool_base_urls": [f.base_url for f in opened[1:]]}


def describe_tunnel(record: dict[str, Any]) -> str:
    """The tunnel's figures in one line, for the console."""
    capacity = record.get("capacity")
    if capacity is None:
        return f"tunnel not measured ({record.get('unmeasured', 'no figure')}); {record['forwards']} forward(s)"
    return (f"one forward ({record['kind']}) carried {capacity['down_bytes_per_s']:,.0f} B/s down, "
            f"{capacity['up_bytes_per_s']:,.0f} B/s up, {capacity['events_per_s']:,.0f} events/s; "
            f"{record['forwards']} forward(s), {record['capacity_bytes_per_s']:,.0f} B/s together")
