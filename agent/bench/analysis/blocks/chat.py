"""The ``chat`` block of one backend: per-request figures of the timed requests at concurrency 1, the
cold request apart, and the aggregate output rate of every concurrency level. A failed request
(``error`` set) gives no figure; it is counted."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from ...results.blocks.chat import ChatLevel, ChatSummary, ColdRequest, PromptCache, ReasoningTokens, Sessions, \
    TurnFigures
from ...results.records import TimingRecord
from .. import stats
from ..decode import MULTI_TOKEN, PER_TOKEN, decode_rate
from .capacity import chat_levels
from .distribution import distribution
from .levels import wall_s


@dataclass(frozen=True, slots=True)
class RequestMetrics:
    """Per-request figures from one chat record (times in ms relative to its send)."""

    ok: bool
    ttft_ms: float | None
    e2e_ms: float | None
    itl_ms: list[float]
    decode_tok_per_s: float | None
    decode_basis: str | None
    client_tok_per_s: float | None
    output_tokens: int | None
    prompt_tokens: int | None


def request_metrics(r: TimingRecord) -> RequestMetrics:
    """A failed request (``error`` set) yields no figure at all."""
    ok = not r.error
    out_tokens = r.output_tokens if ok else None
    first, done = r.first_ms, r.done_ms
    chunks = [c for c in r.chunk_ms if c is not None]
    streamed = ok and r.streamed and len(chunks) > 1
    decode, basis = decode_rate(out_tokens, chunks, r.chunk_chars) if streamed else (None, None)
    return RequestMetrics(
        ok=ok,
        ttft_ms=first if streamed else None,
        e2e_ms=done if ok else None,
        itl_ms=[b - a for a, b in zip(chunks, chunks[1:])] if streamed else [],
        decode_tok_per_s=decode,
        decode_basis=basis,
        client_tok_per_s=stats.client_tok_per_s(out_tokens, done / 1000.0 if done else None) if ok else None,
        output_tokens=out_tokens,
        prompt_tokens=r.prompt_tokens if ok else None,
    )


def summarize_level(concurrency: int, rs: Sequence[TimingRecord]) -> ChatLevel:
    """One concurrency level: counts of every request, figures from the successful ones only.

    The wall time runs, in each repeat, from the first successful request's send to the last one's
    last byte, summed over the level's repeats; requests/s counts successful requests; the aggregate
    output rate is None when any successful request lacks a usage count (its tokens would be
    missing from the sum)."""
    ok = [r for r in rs if not r.error]
    tokens = [r.output_tokens for r in ok]
    usage_missing = sum(1 for t in tokens if t is None)
    wall = rate = per_s = None
    if ok:
        span = wall_s(ok)
        if span > 0:
            wall = span
            per_s = len(ok) / wall
            if not usage_missing:
                rate = stats.aggregate_tok_per_s([t for t in tokens if t is not None], 0.0, wall)
    return ChatLevel(
        concurrency=concurrency, requests=len(rs), ok=len(ok), errors=len(rs) - len(ok),
        resends=sum(int(r.reconnects or 0) for r in rs), usage_missing=usage_missing,
        wall_s=stats.round_or_none(wall, 3), output_tokens=sum(t for t in tokens if t is not None),
        output_tok_per_s=stats.round_or_none(rate, 2), requests_per_s=stats.round_or_none(per_s, 3))


def _cold(records: Sequence[TimingRecord]) -> ColdRequest | None:
    cold = [r for r in records if r.phase == "cold"]
    if not cold:
        return None
    c = request_metrics(cold[0])
    return ColdRequest(ttft_ms=c.ttft_ms, e2e_ms=c.e2e_ms, output_tokens=c.output_tokens, error=cold[0].error)


def _input_per_output(ok: Sequence[RequestMetrics]) -> float | None:
    """Prompt tokens per output token of the timed requests (None unless every one has both counts)."""
    returned = [x.output_tokens for x in ok if x.output_tokens is not None]
    prompt = [x.prompt_tokens for x in ok if x.prompt_tokens is not None]
    if returned and prompt and len(prompt) == len(returned) and sum(returned) > 0:
        return round(sum(prompt) / sum(returned), 4)
    return None


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 1) if values else None


def sessions(records: Sequence[TimingRecord]) -> Sessions | None:
    """TTFT, prompt and cached tokens per turn of the records that are turns of sessions (timed and sweep)."""
    by_turn: dict[int, list[TimingRecord]] = {}
    for r in records:
        if r.turn is not None and r.phase in ("timed", "sweep"):
            by_turn.setdefault(r.turn, []).append(r)
    if not by_turn:
        return None
    turns = []
    for turn, rs in sorted(by_turn.items()):
        ok = [r for r in rs if not r.error]
        ttft = [x.ttft_ms for x in map(request_metrics, ok) if x.ttft_ms is not None]
        cached = [r.cached_prompt_tokens for r in ok if r.cached_prompt_tokens is not None]
        turns.append(TurnFigures(
            turn=turn, requests=len(rs), ok=len(ok), ttft_p50_ms=stats.round_or_none(stats.percentile(ttft, 50), 3),
            ttft_p99_ms=stats.round_or_none(stats.percentile(ttft, 99), 3),
            prompt_tokens_mean=_mean([r.prompt_tokens for r in ok if r.prompt_tokens is not None]),
            cached_prompt_tokens_mean=_mean(cached)))
    first, last = turns[0].ttft_p50_ms, turns[-1].ttft_p50_ms
    ratio = round(last / first, 3) if first and last is not None and len(turns) > 1 else None
    return Sessions(turns=turns, first_ttft_p50_ms=first, last_ttft_p50_ms=last, last_over_first=ratio)


def prompt_cache(records: Sequence[TimingRecord]) -> PromptCache | None:
    """The cached share of the prompt tokens of the successful requests whose server reported it."""
    reported = [r for r in records if not r.error and r.cached_prompt_tokens is not None and r.prompt_tokens]
    if not reported:
        return None
    cached = sum(int(r.cached_prompt_tokens or 0) for r in reported)
    prompt = sum(int(r.prompt_tokens or 0) for r in reported)
    return PromptCache(requests=len(reported), cached_prompt_tokens=cached, prompt_tokens=prompt,
                       cached_share=round(cached / prompt, 4) if prompt else None)


def reasoning(records: Sequence[TimingRecord]) -> ReasoningTokens | None:
    """The reasoning share of the output tokens of the successful requests whose server reported it."""
    reported = [r for r in records if not r.error and r.reasoning_tokens is not None and r.output_tokens]
    if not reported:
        return None
    spent = sum(int(r.reasoning_tokens or 0) for r in reported)
    output = sum(int(r.output_tokens or 0) for r in reported)
    return ReasoningTokens(requests=len(reported), output_tokens=output, reasoning_tokens=spent,
                           answer_tokens=output - spent, reasoning_share=round(spent / output, 4) if output else None)


def summarize_chat(records: Sequence[TimingRecord]) -> ChatSummary | None:
    """Chat figures of one backend: steady-state (concurrency 1) distributions, the cold request,
    and the aggregate rate per concurrency level."""
    if not records:
        return None
    timed = [r for r in records if r.phase == "timed"]
    m = [request_metrics(r) for r in timed]
    ok = [x for x in m if x.ok]
    by_level = chat_levels(records)
    requested = sorted({r.requested_tokens for r in timed if r.requested_tokens is not None})
    returned = [x.output_tokens for x in ok if x.output_tokens is not None]
    bases = Counter(x.decode_basis for x in ok if x.decode_basis)
    # per-token figures where there are any (a reply buffered now and then is left out, and counted);
    # only a backend whose every reply came in multi-token chunks gets a multi-token distribution
    decode_from = PER_TOKEN if bases[PER_TOKEN] else MULTI_TOKEN
    return ChatSummary(
        requests=len(timed), errors=sum(1 for x in m if not x.ok),
        error_reasons=dict(Counter(str(r.error) for r in records if r.error).most_common()),
        resends=sum(int(r.reconnects or 0) for r in records),
        new_connections=sum(1 for r in records if r.new_connection is True),
        streamed=any(r.streamed and len(r.chunk_ms) > 1 for r in timed),
        ttft_ms=distribution([x.ttft_ms for x in ok], mean_ci95=True),
        itl_ms=distribution([g for x in ok for g in x.itl_ms], keep_values=False),
        e2e_ms=distribution([x.e2e_ms for x in ok], mean_ci95=True),
        decode_tok_per_s=distribution([x.decode_tok_per_s for x in ok if x.decode_basis == decode_from], digits=2,
                                      mean_ci95=True),
        decode_basis=dict(sorted(bases.items())), decode_comparable=bool(bases[PER_TOKEN]),
        client_tok_per_s=distribution([x.client_tok_per_s for x in ok], digits=2),
        output_tokens=distribution(returned, digits=0),
        requested_tokens=requested[0] if len(requested) == 1 else requested,
        returned_short=sum(1 for n in returned if requested and n < max(requested)),
        usage_missing=sum(1 for x in ok if x.output_tokens is None), input_per_output=_input_per_output(ok),
        cold=_cold(records), levels=[summarize_level(c, by_level[c]) for c in sorted(by_level)],
        sessions=sessions(records), prompt_cache=prompt_cache(records), reasoning=reasoning(records))
