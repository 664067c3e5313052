"""Every figure of one concurrency level under a latency target: requests that met it, goodput per
repeat and its mean with a 95% interval over the repeats, p50/p99 latencies, and whether it holds
(the definitions: :mod:`agent.bench.analysis.slo` and ``docs/capacity.md``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

from ...results.blocks.slo import LevelIntervals, RepeatFigures, SloLevel
from ...results.records import TimingRecord
from ...results.run import LevelLog
from .. import stats
from ..slo import RequestFigures, Target, allowed_misses, attains, missed_limits, request_figures


def repeat_of(record: TimingRecord) -> int:
    """The record's repeat (1-based); a record without one is repeat 1."""
    return int(record.repeat or 1)


def by_repeat(records: Iterable[TimingRecord]) -> dict[int, list[TimingRecord]]:
    out: dict[int, list[TimingRecord]] = {}
    for r in records:
        out.setdefault(repeat_of(r), []).append(r)
    return out


def span_s(records: Iterable[TimingRecord]) -> float:
    """First send to last byte of a set of requests, in seconds."""
    records = list(records)
    start = min(r.sent_s for r in records)
    end = max(r.sent_s + (r.done_ms or 0) / 1000.0 for r in records)
    return end - start


def wall_s(records: Iterable[TimingRecord]) -> float:
    """A level's wall time: the sum over its repeats of each repeat's first send to last byte."""
    return sum(span_s(rs) for rs in by_repeat(records).values())


def wire_figures(records: Sequence[TimingRecord]) -> tuple[float | None, float | None]:
    """``(stream bytes a second, bytes per output token)`` of a set of requests: each repeat's response bytes over
    its first send to last byte, their mean; and all their bytes over all their output tokens. None where a
    record lacks its bytes (an AWS SDK call) or there were no output tokens."""
    if not records or any(r.wire_bytes is None for r in records):
        return None, None
    rates = [sum(r.wire_bytes or 0 for r in rs) / span for rs in by_repeat(records).values()
             if (span := span_s(rs)) > 0]
    tokens = sum(r.output_tokens or 0 for r in records)
    rate = sum(rates) / len(rates) if rates else None
    per_token = sum(r.wire_bytes or 0 for r in records) / tokens if tokens else None
    return stats.round_or_none(rate, 1), stats.round_or_none(per_token, 1)


def _rate(count: float, seconds: float) -> float | None:
    return count / seconds if seconds > 0 else None


@dataclass
class _Tally:
    """What the repeats of one level add up to while their figures are computed."""

    rates: list[tuple[float | None, float | None, float | None]] = field(default_factory=list)
    missed_by: dict[str, int] = field(default_factory=dict)
    ok: list[RequestFigures] = field(default_factory=list)
    input_rates: list[float | None] = field(default_factory=list)
    met_tokens: list[tuple[int | None, int]] = field(default_factory=list)
    """``(prompt tokens, output tokens)`` of every request that met the target (prompt None: not counted)."""

    def met_mix(self) -> float | None:
        """Prompt tokens per output token of the requests that met the target (None unless all were counted)."""
        if not self.met_tokens or any(p is None for p, _ in self.met_tokens):
            return None
        output = sum(o for _, o in self.met_tokens)
        return round(sum(p or 0 for p, _ in self.met_tokens) / output, 4) if output > 0 else None


def _repeat(k: int, records: Sequence[TimingRecord], target: Target, tally: _Tally) -> RepeatFigures:
    """One repeat's counts and rates (unrounded rates go to ``tally`` for the level's means)."""
    met = met_tokens = ok_tokens = errors = 0
    prompts: list[int | None] = []
    for r in records:
        fig = request_figures(r)
        missed = missed_limits(fig, target)
        for key in missed:
            tally.missed_by[key] = tally.missed_by.get(key, 0) + 1
        if fig.ok:
            tally.ok.append(fig)
            ok_tokens += fig.output_tokens or 0
        else:
            errors += 1
        if not missed:
            met += 1
            met_tokens += fig.output_tokens or 0
            prompts.append(r.prompt_tokens)
            tally.met_tokens.append((r.prompt_tokens, fig.output_tokens or 0))
    span = span_s(records)
    rates = (_rate(met, span), _rate(met_tokens, span), _rate(ok_tokens, span))
    tally.rates.append(rates)
    tally.input_rates.append(None if None in prompts else _rate(sum(p or 0 for p in prompts), span))
    return RepeatFigures(repeat=k, requests=len(records), errors=errors, met=met, wall_s=round(span, 3),
                         goodput_req_per_s=stats.round_or_none(rates[0], 3),
                         goodput_output_tok_per_s=stats.round_or_none(rates[1], 2),
                         output_tok_per_s=stats.round_or_none(rates[2], 2))


def _mean(values: Sequence[float | None], digits: int) -> tuple[float | None, tuple[float, float] | None]:
    mi = stats.mean_interval([v for v in values if v is not None])
    if mi is None:
        return None, None
    mean, low, high = mi
    return round(mean, digits), (round(low, digits), round(high, digits))


def _p(values: Sequence[float], p: int) -> float | None:
    return stats.round_or_none(stats.percentile(values, p), 3)


def _verdict(met: int, requests: int, planned: int | None) -> str:
    """``holds`` or ``misses`` when the level ran in full; else ``misses`` once it could no longer hold,
    ``undecided`` when it was cut before that was known."""
    if planned is None or requests >= planned:
        return "holds" if attains(met, requests) else "misses"
    return "misses" if requests - met > allowed_misses(planned) else "undecided"


def level_block(concurrency: int, records: Sequence[TimingRecord], target: Target,
                log: LevelLog | None = None) -> SloLevel:
    """Every figure of one concurrency level under ``target``.

    Args:
        records: the level's chat records (timed and sweep phases, every repeat).
        log: the run's record of this level (planned requests, why it stopped), if any.
    """
    tally = _Tally()
    repeats = [_repeat(k, rs, target, tally) for k, rs in sorted(by_repeat(records).items())]
    requests = sum(p.requests for p in repeats)
    met = sum(p.met for p in repeats)
    goodput_req, goodput_req_ci = _mean([r[0] for r in tally.rates], 3)
    goodput_tok, goodput_tok_ci = _mean([r[1] for r in tally.rates], 2)
    output_tok, output_tok_ci = _mean([r[2] for r in tally.rates], 2)
    input_tok, _ = _mean(tally.input_rates, 2) if None not in tally.input_rates else (None, None)
    share_ci = stats.wilson_interval(met, requests)
    planned = log.planned_requests if log else None
    verdict = _verdict(met, requests, planned)
    ttft = [f.ttft_ms for f in tally.ok if f.ttft_ms is not None]
    itl = [f.itl_ms for f in tally.ok if f.itl_ms is not None]
    e2e = [f.e2e_ms for f in tally.ok if f.e2e_ms is not None]
    carried, per_token = wire_figures(records)
    return SloLevel(
        concurrency=concurrency, repeats=len(repeats), requests=requests, errors=sum(p.errors for p in repeats),
        met=met, met_share=round(met / requests, 4) if requests else None,
        goodput_req_per_s=goodput_req, goodput_output_tok_per_s=goodput_tok, output_tok_per_s=output_tok,
        ttft_p99_ms=_p(ttft, 99), itl_p99_ms=_p(itl, 99), e2e_p99_ms=_p(e2e, 99),
        ttft_p50_ms=_p(ttft, 50), itl_p50_ms=_p(itl, 50), e2e_p50_ms=_p(e2e, 50),
        holds=verdict == "holds", verdict=verdict, planned_requests=planned, stopped=log.stopped if log else None,
        missed_by=dict(sorted(tally.missed_by.items())),
        one_piece_replies=sum(1 for f in tally.ok if f.itl_ms is None),
        ci95=LevelIntervals(goodput_req_per_s=goodput_req_ci, goodput_output_tok_per_s=goodput_tok_ci,
                            output_tok_per_s=output_tok_ci,
                            met_share=None if share_ci is None else (round(share_ci[0], 4), round(share_ci[1], 4))),
        per_repeat=repeats, goodput_input_tok_per_s=input_tok, met_input_per_output=tally.met_mix(),
        stream_bytes_per_s=carried, bytes_per_token=per_token,
        from_rig=bool(records) and all(r.load_from == "rig" for r in records),
    )
