"""What the port forwards carried: each level's stream bytes a second and bytes per token (from the bytes the
client read off the wire, ``wire_bytes``), which levels are bound by the tunnel, and the ``tunnel`` block of an
EC2 backend (``backends.<name>.tunnel``).

A level whose carried bytes reach :data:`agent.bench.results.constants.TUNNEL_BOUND_SHARE` of the measured capacity of
the forwards it could use (one forward's bytes a second down, measured before the benchmark through the rig's
byte source, times the forwards its streams were spread over: one per stream, at most all of them) is bound by
the tunnel: what it shows is the tunnel's limit as much as the server's, so it is neither the server's capacity
nor a miss (:func:`agent.bench.analysis.blocks.capacity.capacity_of`): with no miss above it, the capacity is a
floor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ...results.blocks.open_loop import OpenLoopBlock
from ...results.constants import TUNNEL_BOUND_SHARE as BOUND_SHARE
from ...results.blocks.slo import SloBlock, SloLevel
from ...results.blocks.tunnel import OneForward, TunnelBlock, TunnelLevel


@dataclass(frozen=True, slots=True)
class Forwards:
    """A backend's port forwards as measured: one forward's bytes a second down, and how many there were."""

    one_bytes_per_s: float
    count: int

    @classmethod
    def of(cls, metadata: Mapping[str, Any]) -> Forwards | None:
        """From the backend's ``tunnel`` metadata (None: not reached through a measured tunnel)."""
        record = metadata.get("tunnel") or {}
        one = (record.get("capacity") or {}).get("down_bytes_per_s")
        return cls(float(one), int(record.get("forwards", 1))) if one else None

    def capacity(self, in_flight: int) -> float:
        """What ``in_flight`` streams can use: one stream goes over one forward, so ``min(in_flight, count)`` of
        them (the client sends each request to the forward with the fewest in flight)."""
        return self.one_bytes_per_s * max(1, min(in_flight, self.count))

    def bound(self, carried_bytes_per_s: float | None, in_flight: int) -> bool:
        """Whether a level of ``in_flight`` streams that carried this much is bound by the tunnel."""
        return bool(carried_bytes_per_s and carried_bytes_per_s >= BOUND_SHARE * self.capacity(in_flight))


def tunnel_reason(levels: Sequence[SloLevel], forwards: Forwards | None) -> str:
    """What the capacity's reason says of the levels bound by the tunnel (empty when none is)."""
    hit = [lv for lv in levels if lv.bound_by_tunnel]
    if not hit or forwards is None:
        return ""
    first = min(hit, key=lambda lv: lv.concurrency)
    capacity = forwards.capacity(first.concurrency)
    return (f"Bound by the tunnel at level(s) {', '.join(str(lv.concurrency) for lv in hit)} (level "
            f"{first.concurrency} carried {first.stream_bytes_per_s:,.0f} B/s, "
            f"{(first.stream_bytes_per_s or 0) / capacity:.0%} of the measured {capacity:,.0f} B/s of the port "
            "forwards it could use): none of them is taken as the server's capacity or as a miss; more forwards "
            "(--forwards) would measure them")


def _level(concurrency: int, carried: float | None, per_token: float | None, forwards: Forwards | None,
           from_rig: bool) -> TunnelLevel:
    """One level's figures; a level sent from the rig crossed no forward, so it is never bound."""
    capacity = forwards.capacity(concurrency) if forwards else None
    return TunnelLevel(concurrency=concurrency, carried_bytes_per_s=carried, bytes_per_token=per_token,
                       capacity_bytes_per_s=capacity and round(capacity),
                       share_of_capacity=round(carried / capacity, 4) if carried is not None and capacity else None,
                       bound=bool(forwards and not from_rig and forwards.bound(carried, concurrency)),
                       load_from="rig" if from_rig else "tunnel")


def tunnel_block(metadata: Mapping[str, Any], slo: SloBlock | None, open_loop: OpenLoopBlock | None,
                 open_loop_from_rig: bool = False) -> TunnelBlock | None:
    """``backends.<name>.tunnel`` of a backend reached through port forwards (None for any other)."""
    record = metadata.get("tunnel")
    if not record:
        return None
    forwards, one = Forwards.of(metadata), record.get("capacity")
    levels = [_level(lv.concurrency, lv.stream_bytes_per_s, lv.bytes_per_token, forwards, lv.from_rig)
              for lv in (slo.levels if slo else [])]
    loop = None if open_loop is None else _level(open_loop.max_in_flight, open_loop.stream_bytes_per_s,
                                                 open_loop.bytes_per_token, forwards, open_loop_from_rig)
    return TunnelBlock(
        kind=record.get("kind", "ssm"), forwards=int(record.get("forwards", 1)),
        capacity_bytes_per_s=record.get("capacity_bytes_per_s"),
        one_forward=None if not one else OneForward(down_bytes_per_s=one["down_bytes_per_s"],
                                                    up_bytes_per_s=one["up_bytes_per_s"],
                                                    events_per_s=one["events_per_s"], seconds=one["seconds"]),
        stream_need_bytes_per_s=record.get("stream_need_bytes_per_s"), bound_share=BOUND_SHARE,
        bound_levels=[lv.concurrency for lv in levels if lv.bound], levels=levels, open_loop=loop,
        unmeasured=record.get("unmeasured"),
        load_from=(metadata.get("rig_load") or {}).get("where") if any(lv.from_rig for lv in (slo.levels if slo else []))
        or open_loop_from_rig else None)
