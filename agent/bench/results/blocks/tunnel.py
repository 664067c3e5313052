"""The ``tunnel`` block: what the port forwards to an EC2 rig carried, against what one of them could
(:mod:`agent.bench.analysis.blocks.tunnel`; docs/tunnel.md)."""

from __future__ import annotations

from typing import Literal

from ..base import Frozen


class OneForward(Frozen):
    """One forward, measured through the rig's byte source before the benchmark."""

    down_bytes_per_s: float
    up_bytes_per_s: float
    events_per_s: float
    """Events of 225 bytes (about one streamed token's) a second."""
    seconds: float


class TunnelLevel(Frozen):
    """What one level (or the open loop, at its most requests in flight) carried."""

    concurrency: int
    carried_bytes_per_s: float | None
    """Its responses' bytes read off the wire a second (null: the client could not tell)."""
    bytes_per_token: float | None
    """Those bytes per output token."""
    capacity_bytes_per_s: float | None
    """The measured capacity of the forwards its streams could use: one forward's times ``min(concurrency,
    forwards)`` (a stream goes over one forward)."""
    share_of_capacity: float | None
    """``carried_bytes_per_s`` over ``capacity_bytes_per_s``."""
    bound: bool
    """Bound by the tunnel: it carried ``bound_share`` of ``capacity_bytes_per_s`` or more."""
    load_from: Literal["tunnel", "rig"]
    """Where its load came from: ``tunnel``, this machine through the forwards; ``rig``, the rig's own load
    generator on the instance (``--load-from rig``), never bound by the tunnel."""


class TunnelBlock(Frozen):
    kind: str
    """The forwards' kind: ``ssm``, or offline ``relay`` (``relay, shaped`` with ``--tunnel-limit``)."""
    forwards: int
    """Forwards the requests were spread over."""
    capacity_bytes_per_s: float | None
    """The pool's capacity: one forward's bytes a second down times ``forwards`` (null: not measured)."""
    one_forward: OneForward | None
    stream_need_bytes_per_s: float | None
    """What one stream read a second through the first forward (the sizing request)."""
    bound_share: float
    bound_levels: list[int]
    """The concurrency levels bound by the tunnel: none of them is the server's capacity."""
    levels: list[TunnelLevel]
    open_loop: TunnelLevel | None = None
    unmeasured: str | None = None
    """Why the capacity was not measured."""
    load_from: str | None = None
    """Where the levels marked ``rig`` were sent from (``--load-from rig``): the instance via SSM Run Command, or
    offline this machine in its place; null when none was."""
