"""Metric formulas on known timestamps, percentiles, and the summary's per-request figures."""

from __future__ import annotations

import pytest

from agent.bench.analysis import stats
from agent.bench.analysis.blocks.chat import request_metrics, summarize_chat
from agent.bench.analysis.blocks.distribution import distribution
from agent.bench.analysis.decode import decode_rate
from agent.bench.results.records import TimingRecord


def test_nearest_rank_percentiles_are_measured_values():
    values = [131.7, 130.9, 131.5, 132.8, 130.2, 132.45, 131.0, 132.0, 131.2, 133.0]
    assert stats.percentile(values, 50) == 131.5  # rank ceil(5) = 5th of the sorted ten, not an average
    assert stats.percentile(values, 90) == 132.8
    assert stats.percentile(values, 99) == 133.0
    assert stats.percentile([5.0], 99) == 5.0
    assert stats.percentile([], 50) is None
    with pytest.raises(ValueError):
        stats.percentile([1.0], 0)


def test_distribution_shape():
    d = distribution([3.0, 1.0, None, 2.0])
    assert d.model_dump(mode="json") == {"p50": 2.0, "p90": 3.0, "p99": 3.0, "n": 3, "min": 1.0, "max": 3.0,
                                         "mean": 2.0, "values": [3.0, 1.0, 2.0]}
    assert distribution([]).n == 0 and distribution([]).p50 is None
    assert "values" not in distribution([1.0], keep_values=False).model_dump()


def test_the_mean_interval_never_reaches_below_zero():
    # two TTFTs of 10 and 200 ms: the t interval (t(1) = 12.706) would run from -1,102 ms; a time is never negative
    d = distribution([10.0, 200.0], mean_ci95=True)
    low, high = d.mean_ci95
    assert low == 0.0 and high == pytest.approx(105.0 + 12.706 * 95.0, abs=0.01)
    assert distribution([10.0], mean_ci95=True).mean_ci95 is None  # one value: no interval


def test_formulas_on_known_timestamps():
    sent, first, done = 10.0, 10.2, 11.25
    assert stats.ttft_s(sent, first) == pytest.approx(0.2)
    assert stats.e2e_s(sent, done) == pytest.approx(1.25)
    assert stats.client_tok_per_s(101, 1.25) == pytest.approx(80.8)
    assert stats.inter_token_gaps_s([1.0, 1.5, 1.75]) == [0.5, 0.25]
    assert stats.aggregate_tok_per_s([100, 100, 100, 100], 0.0, 2.0) == 200.0


@pytest.mark.parametrize(
    "tokens,chunks",
    [(None, [1.0, 2.0]), (1, [1.0, 2.0]), (0, [1.0, 2.0]), (50, [2.0]), (50, [2.0, 2.0, 2.0])],
)
def test_decode_rate_undefined_cases(tokens, chunks):
    assert decode_rate(tokens, chunks, None) == (None, None)


def test_decode_rate_one_token_per_chunk_is_the_classic_figure():
    # 101 tokens, one per chunk 10 ms apart: the last 100 over one second
    assert decode_rate(101, [200.0 + 10.0 * i for i in range(101)], None) == (pytest.approx(100.0), "per_token")
    # usage counts the end-of-sequence token that came with no content: still one token per chunk
    assert decode_rate(101, [200.0 + 10.0 * i for i in range(100)], None)[1] == "per_token"


def test_decode_rate_leaves_the_first_arrivals_tokens_out():
    # 100 tokens in two buffered payload parts of 50 events each, 5 ms apart: the old formula gave
    # (100 - 1) / 0.005 = 19,800 tok/s; now the first 50 tokens are left out and the figure is marked
    rate, basis = decode_rate(100, [300.0] * 50 + [305.0] * 50, [4] * 100)
    assert rate == pytest.approx(50 / 0.005) and basis == "multi_token"
    # Bedrock-like text deltas: 4 deltas for 40 tokens; the first delta holds a quarter of the characters
    rate, basis = decode_rate(40, [100.0, 200.0, 300.0, 400.0], [30, 30, 30, 30])
    assert rate == pytest.approx((40 - 10) / 0.3) and basis == "multi_token"
    # a relay that coalesces a few events now and then stays comparable
    chunks = [100.0, 100.0] + [110.0 + 10.0 * i for i in range(98)]
    rate, basis = decode_rate(100, chunks, [3] * 100)
    assert rate == pytest.approx(98 / ((chunks[-1] - 100.0) / 1000)) and basis == "per_token"


def record(first=200.0, chunks=None, done=1250.0, tokens=101, error=None, streamed=True, phase="timed", c=1,
           sent=0.0):
    chunks = chunks if chunks is not None else [first + 10.0 * i for i in range(101)]
    return TimingRecord(part="chat", backend="x", phase=phase, concurrency=c, run=1, sent_s=sent, requested_tokens=100,
                        streamed=streamed, first_ms=chunks[0] if chunks else None,
                        last_ms=chunks[-1] if chunks else None, done_ms=done, chunk_ms=chunks, prompt_tokens=20,
                        output_tokens=tokens, error=error, text="x")


def test_request_metrics_from_a_record():
    m = request_metrics(record())
    assert m.ttft_ms == 200.0 and m.e2e_ms == 1250.0
    assert m.decode_tok_per_s == pytest.approx(100.0) and m.decode_basis == "per_token"  # 100 tokens / 1 s
    assert m.itl_ms == pytest.approx([10.0] * 100)
    assert m.client_tok_per_s == pytest.approx(101 / 1.25)


def test_non_streamed_reply_has_no_ttft_or_decode():
    m = request_metrics(record(chunks=[900.0], done=900.0, streamed=False, tokens=94))
    assert m.ttft_ms is None and m.decode_tok_per_s is None and m.e2e_ms == 900.0
    assert m.client_tok_per_s == pytest.approx(94 / 0.9)


def test_missing_usage_keeps_timings_but_no_token_figures():
    m = request_metrics(record(tokens=None))
    assert m.ttft_ms == 200.0 and m.decode_tok_per_s is None and m.client_tok_per_s is None


def test_chat_summary_cold_apart_errors_counted_levels_aggregated():
    rs = [record(phase="cold", first=900.0, done=2000.0)]
    rs += [record(sent=2.0 + i * 1.3) for i in range(4)]
    rs.append(record(error="zero completion tokens (200 OK)", tokens=0, sent=8.0))
    rs += [record(phase="sweep", c=4, sent=10.0) for _ in range(4)]
    s = summarize_chat(rs)
    assert s.requests == 5 and s.errors == 1
    assert s.error_reasons == {"zero completion tokens (200 OK)": 1}
    assert s.ttft_ms.n == 4 and s.ttft_ms.p50 == 200.0
    assert s.cold.ttft_ms == 900.0
    assert s.decode_tok_per_s.p50 == pytest.approx(100.0)
    assert s.input_per_output == pytest.approx(20 / 101, abs=1e-4)
    level1, level4 = s.levels
    assert level1.concurrency == 1 and level1.errors == 1
    # the failed request (sent at 8.0) is left out of the level's wall time as well as its tokens
    wall = 2.0 + 3 * 1.3 + 1.25 - 2.0
    assert level1.output_tok_per_s == pytest.approx(404 / wall, abs=0.01)
    assert level1.ok == 4 and level1.requests_per_s == pytest.approx(4 / wall, abs=0.001)
    assert level4.output_tok_per_s == pytest.approx(404 / 1.25, abs=0.01)
    assert s.returned_short == 0 and s.usage_missing == 0


def test_sessions_show_ttft_per_turn_as_the_context_grows_and_the_cached_prompt():
    # two sessions of three turns: the prompt grows 100, 300, 500 tokens and TTFT with it (100, 200, 400 ms); from
    # turn 2 on the server read the earlier turns from its prefix cache
    turns = []
    for session in range(2):
        for turn, (ttft, prompt, cached) in enumerate([(100.0, 100, 0), (200.0, 300, 96), (400.0, 500, 288)], 1):
            turns.append(record(first=ttft + session, phase="timed").model_copy(
                update={"turn": turn, "prompt_tokens": prompt, "cached_prompt_tokens": cached}))
    s = summarize_chat(turns)
    assert [(t.turn, t.requests, t.prompt_tokens_mean) for t in s.sessions.turns] == [(1, 2, 100), (2, 2, 300),
                                                                                       (3, 2, 500)]
    assert [t.ttft_p50_ms for t in s.sessions.turns] == [100.0, 200.0, 400.0]  # nearest rank: the lower of two
    assert s.sessions.first_ttft_p50_ms == 100.0 and s.sessions.last_over_first == 4.0
    assert s.sessions.turns[2].cached_prompt_tokens_mean == 288
    # 2 x (0 + 96 + 288) cached of 2 x (100 + 300 + 500) prompt tokens
    assert (s.prompt_cache.requests, s.prompt_cache.cached_prompt_tokens, s.prompt_cache.cached_share) == (6, 768, 0.4267)
    assert summarize_chat([record()]).sessions is None and summarize_chat([record()]).prompt_cache is None
