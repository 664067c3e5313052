"""What the port forwards carried: each level's stream bytes a second and bytes per token (from the bytes the
client read off the wire, ``wire_bytes``), which levels are bound by the tunnel, and the ``tunnel`` block of an
EC2 backend (``backends.<name>.tunnel``).

A level whose carried bytes reach :data:`agent.bench.results.constants.TUNNEL_BOUND_SHARE` of the pool's measured capacity (one
forward's bytes a second down times the forwards, measured before the benchmark through the rig's byte
source) is bound by the tunnel: what it shows is the tunnel's limit as much as the server's, so it is never
taken as the server's capacity, which is then a floor (:func:`agent.bench.analysis.blocks.capacity.capacity_of`).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ...results.blocks.open_loop import OpenLoopBlock
from ...results.constants import TUNNEL_BOUND_SHARE as BOUND_SHARE
from ...results.blocks.slo import SloBlock, SloLevel
from ...results.blocks.tunnel import OneForward, TunnelBlock, TunnelLevel


def pool_capacity(metadata: Mapping[str, Any]) -> float | None:
    """The pool's measured capacity in bytes a second, from the backend's ``tunnel`` metadata (None: not reached
    through a measured tunnel)."""
    value = (metadata.get("tunnel") or {}).get("capacity_bytes_per_s")
    return float(value) if value else None


def bound(carried_bytes_per_s: float | None, capacity_bytes_per_s: float | None) -> bool:
    """Whether a level that carried this much is bound by a pool of this capacity."""
    return bool(carried_bytes_per_s and capacity_bytes_per_s
                and carried_bytes_per_s >= BOUND_SHARE * capacity_bytes_per_s)


def tunnel_reason(levels: Sequence[SloLevel], capacity_bytes_per_s: float | None) -> str:
    """What the capacity's reason says of the levels bound by the tunnel (empty when none is)."""
    hit = [lv for lv in levels if lv.bound_by_tunnel]
    if not hit or not capacity_bytes_per_s:
        return ""
    first = min(hit, key=lambda lv: lv.concurrency)
    below = any(not lv.bound_by_tunnel and lv.concurrency < first.concurrency for lv in levels)
    return (f"Bound by the tunnel from level {first.concurrency}: it carried {first.stream_bytes_per_s:,.0f} B/s, "
            f"{(first.stream_bytes_per_s or 0) / capacity_bytes_per_s:.0%} of the port forwards' measured "
            f"{capacity_bytes_per_s:,.0f} B/s (level(s) {', '.join(str(lv.concurrency) for lv in hit)}), so no "
            "level from there on is the server's capacity" + (": the capacity is a floor" if below else
                                                             ": more forwards (--forwards) would measure it"))


def _share(carried: float | None, capacity: float | None) -> float | None:
    return round(carried / capacity, 4) if carried is not None and capacity else None


def tunnel_block(metadata: Mapping[str, Any], slo: SloBlock | None, open_loop: OpenLoopBlock | None
                 ) -> TunnelBlock | None:
    """``backends.<name>.tunnel`` of a backend reached through port forwards (None for any other)."""
    record = metadata.get("tunnel")
    if not record:
        return None
    capacity = pool_capacity(metadata)
    one = record.get("capacity")
    levels = [TunnelLevel(concurrency=lv.concurrency, carried_bytes_per_s=lv.stream_bytes_per_s,
                          bytes_per_token=lv.bytes_per_token, share_of_capacity=_share(lv.stream_bytes_per_s, capacity),
                          bound=lv.bound_by_tunnel, load_from=record.get("load_from", "tunnel"))
              for lv in (slo.levels if slo else [])]
    loop = None if open_loop is None else TunnelLevel(
        concurrency=open_loop.max_in_flight, carried_bytes_per_s=open_loop.stream_bytes_per_s,
        bytes_per_token=open_loop.bytes_per_token, share_of_capacity=_share(open_loop.stream_bytes_per_s, capacity),
        bound=bound(open_loop.stream_bytes_per_s, capacity), load_from=record.get("load_from", "tunnel"))
    return TunnelBlock(
        kind=record.get("kind", "ssm"), forwards=int(record.get("forwards", 1)), capacity_bytes_per_s=capacity,
        one_forward=None if not one else OneForward(down_bytes_per_s=one["down_bytes_per_s"],
                                                    up_bytes_per_s=one["up_bytes_per_s"],
                                                    events_per_s=one["events_per_s"], seconds=one["seconds"]),
        stream_need_bytes_per_s=record.get("stream_need_bytes_per_s"), bound_share=BOUND_SHARE,
        bound_levels=[lv.concurrency for lv in levels if lv.bound], levels=levels, open_loop=loop,
        unmeasured=record.get("unmeasured"))
