"""The section "Open loop: requests at a rate": each backend under requests sent on a schedule, how closely the
sender kept it, the p99s over the window and its two halves."""

from __future__ import annotations

from ...results.blocks.open_loop import OpenLoopBlock, OpenLoopHalf
from ...results.formatting import cell, number, percent
from ...results.summary import Summary
from ..labels import backend_label
from ..markdown import table

VERDICTS = {"holds": "holds", "not_sustaining": "**not sustaining**", "misses": "**misses**",
            "undecided": "undecided"}
RULE = ("Requests go out on a schedule, whether or not the ones before were answered, so a server that falls behind "
        "builds a queue instead of slowing the sender. Each half of the window (by when its requests were due) "
        "holds when at least 99% of its requests met the target; a backend whose second half misses while its first "
        "held is **not sustaining**. Lag is each request's actual send minus its scheduled send.")


def _half(h: OpenLoopHalf) -> str:
    return f"{h.met}/{h.requests} met, TTFT p99 {number(h.ttft_p99_ms, 0)} ms" + ("" if h.attains else " (misses)")


def _arrivals(o: OpenLoopBlock) -> str:
    if o.mode == "trace":
        return "trace timestamps"
    return o.arrival + (f" (burstiness {o.burstiness:g})" if o.burstiness is not None else "")


def _asked(o: OpenLoopBlock) -> str:
    sessions = (f" ({o.sessions} sessions of {o.turns} turns at {cell(o.session_rate_per_s, 3)}/s)"
                if o.turns else "")
    return f"{cell(o.rate_req_per_s, 3)} for {o.duration_s:g} s{sessions}"


def _row(summary: Summary, name: str, o: OpenLoopBlock) -> list[str]:
    return [backend_label(summary, name), VERDICTS[o.verdict], _asked(o),
            _arrivals(o), f"{o.sent}/{o.planned}", o.errors, percent(o.met_share, 1),
            cell(o.realized_rate_req_per_s, 2), f"{cell(o.inter_arrival_cv, 2)} ({cell(o.asked_cv, 2)})",
            f"{number(o.lag_p50_ms, 2)} / {number(o.lag_p99_ms, 2)}", o.max_in_flight, number(o.ttft_p99_ms, 0),
            number(o.itl_p99_ms, 1), number(o.e2e_p99_ms, 0), _half(o.first_half), _half(o.second_half)]


def _cache(o: OpenLoopBlock) -> str:
    """The prompt tokens the server answered from its prefix cache, where it says."""
    c = o.prompt_cache
    if c is None:
        return "; the server does not say how many prompt tokens it read from its prefix cache"
    return (f"; {c.cached_prompt_tokens:,} of {c.prompt_tokens:,} prompt tokens read from the server's prefix cache "
            f"({percent(c.cached_share, 1)}, {c.requests} requests)")


def section(summary: Summary) -> list[str]:
    blocks = {n: b.open_loop for n, b in summary.backends.items() if b.open_loop}
    skipped = {n: b.skipped["open_loop"] for n, b in summary.backends.items() if "open_loop" in b.skipped}
    if not blocks and not skipped:
        return []
    out = ["## Open loop: requests at a rate", "", RULE, ""]
    header = ["backend", "verdict", "req/s asked", "arrivals", "sent / planned", "errors", "met", "req/s realized",
              "gaps' CV (asked)", "lag p50 / p99 ms", "most in flight", "TTFT p99 ms", "ITL p99 ms", "e2e p99 ms",
              "first half", "second half"]
    if blocks:
        out += table(header, [_row(summary, n, o) for n, o in blocks.items()]) + [""]
    out += [f"- {backend_label(summary, n)}: {o.reason}; rate: {o.rate_basis}; goodput "
            f"{number(o.goodput_output_tok_per_s, 1)} output tok/s within the target over the window"
            + _cache(o) + (f". **Note**: {o.behind}" if o.behind else "") for n, o in blocks.items()]
    out += [f"- {backend_label(summary, n)}: not run: {why}" for n, why in skipped.items()]
    return out + [""]
