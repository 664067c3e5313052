"""The ``open_loop`` block: one backend under requests sent on a schedule (at ``--rate`` with the workload's
arrivals, or at a trace's timestamps) rather than as soon as the last one is answered; how closely the
sender kept its schedule, the p99s over the window, and its two halves compared."""

from __future__ import annotations

from typing import Literal

from ..base import Frozen
from .chat import PromptCache


class OpenLoopHalf(Frozen):
    """One half of the window (by when its requests were due): how many met the target, and its p99s."""

    requests: int
    met: int
    attains: bool
    """At least 99% of its requests met the target."""
    ttft_p99_ms: float | None
    itl_p99_ms: float | None
    e2e_p99_ms: float | None


class OpenLoopBlock(Frozen):
    mode: Literal["rate", "trace"]
    rate_req_per_s: float | None
    """The rate asked (a trace: its own mean rate)."""
    rate_basis: str
    """Where the rate came from: ``--rate R``, or the rate one instance must carry at the workload's peak."""
    arrival: str
    """``constant``, ``poisson``, ``gamma`` (with ``burstiness``), or ``trace``."""
    burstiness: float | None
    duration_s: float
    planned: int
    turns: int | None = None
    """A workload of sessions: the turns of each (sessions start on the schedule; each turn follows its reply)."""
    session_rate_per_s: float | None = None
    """The sessions' arrival rate asked: ``rate_req_per_s`` over ``turns``."""
    sessions: int | None = None
    """Sessions started."""
    sent: int
    errors: int
    met: int
    met_share: float | None
    goodput_req_per_s: float | None
    goodput_output_tok_per_s: float | None
    """Requests (and their output tokens) that met the target, per second of the window."""
    realized_rate_req_per_s: float | None
    """(sent - 1) / (last send - first send), from the actual send times."""
    inter_arrival_cv: float | None
    """The gaps' CV between the actual sends of the arrivals (sessions: their first turns): constant 0, Poisson 1,
    gamma 1 / sqrt(burstiness)."""
    asked_cv: float | None
    lag_p50_ms: float | None
    lag_p99_ms: float | None
    """Actual send minus scheduled send."""
    lag_max_ms: float | None
    max_in_flight: int
    ttft_p99_ms: float | None
    itl_p99_ms: float | None
    e2e_p99_ms: float | None
    ttft_p50_ms: float | None
    first_half: OpenLoopHalf
    second_half: OpenLoopHalf
    verdict: Literal["holds", "not_sustaining", "misses", "undecided"]
    """``holds``: both halves met the target; ``not_sustaining``: the first half did and the second did not;
    ``misses``: the first half did not; ``undecided``: no request succeeded in a half."""
    reason: str
    behind: str | None = None
    """Why the sender's lag matters, when it fell behind its schedule."""
    prompt_cache: PromptCache | None = None
    """The prompt tokens the server read from its prefix cache (``usage.prompt_tokens_details.cached_tokens``) over
    the window's successful requests, where it says: none of a synthetic prompt or trace, whose text the open loop
    makes afresh; a prompts file's own repeats may be."""
    stream_bytes_per_s: float | None = None
    """The stream bytes a second it carried: its responses' bytes read off the wire over the first send to the
    last byte (null where the client cannot tell)."""
    bytes_per_token: float | None = None
    """Those bytes per output token."""
