"""The latency target: parsing, when a request meets it, level aggregates with their intervals,
the SLO capacity and its reason, ties between backends, and the search's level count."""

from __future__ import annotations

import math

import pytest

from agent import run
from agent.bench.command import runner
from agent.bench.analysis import stats
from agent.bench.parts.capacity import MAX_LEVELS, next_level, stop_reason
from agent.bench.analysis.blocks.capacity import NEURON_REASON, capacity_of, capacity_reason, slo_pairs
from agent.bench.analysis.blocks.levels import level_block as level_of
from agent.bench.analysis.slo import Target, allowed_misses, attains, missed_limits, parse_target, request_figures
from agent.bench.results.blocks.slo import SloSearch
from agent.bench.results.records import TimingRecord
from agent.bench.results.run import LevelLog

from tests.agent.bench.fakes.synthetic import backend

from tests.agent.bench.fakes.synthetic import level

from tests.agent.bench.fakes.synthetic import slo

DEFAULT = Target.default()


def rec(first=200.0, gap=50.0, chunks=20, done=None, error=None, sent=0.0, repeat=None, tokens=None, c=1):
    """A chat record: ``chunks`` content chunks from ``first`` ms, ``gap`` ms apart."""
    times = [first + gap * i for i in range(chunks)]
    r = {"part": "chat", "backend": "x", "phase": "sweep", "concurrency": c, "run": 1, "sent_s": sent,
         "first_ms": times[0] if times else None, "last_ms": times[-1] if times else None,
         "done_ms": done if done is not None else (times[-1] + 5 if times else 10.0), "chunk_ms": times,
         "output_tokens": chunks if tokens is None else tokens, "error": error, "streamed": chunks > 1}
    if repeat is not None:
        r["repeat"] = repeat
    return r


# --- the target ------------------------------------------------------------------------------


def test_parse_target_sets_only_the_limits_given():
    t = parse_target("ttft_p99_ms=1000, itl_p99_ms=100")
    assert t.limits() == {"ttft_p99_ms": 1000.0, "itl_p99_ms": 100.0} and t.e2e_p99_ms is None
    assert t.source == "option"
    assert parse_target("e2e_p99_ms=2500.5").limits() == {"e2e_p99_ms": 2500.5}
    assert t.describe() == "TTFT <= 1,000 ms and ITL <= 100 ms for 99% of requests"
    assert DEFAULT.limits() == {"ttft_p99_ms": 1000.0, "itl_p99_ms": 100.0} and DEFAULT.source == "default"


@pytest.mark.parametrize("text,says", [
    ("", "at least one limit"),
    ("ttft_p99_ms", "not KEY=MS"),
    ("ttft_ms=5", "unknown limit 'ttft_ms'"),
    ("ttft_p99_ms=abc", "not a number"),
    ("ttft_p99_ms=0", "positive, finite"),
    ("itl_p99_ms=-3", "positive, finite"),
    ("e2e_p99_ms=nan", "positive, finite"),
    ("e2e_p99_ms=inf", "positive, finite"),
    ("ttft_p99_ms=1,ttft_p99_ms=2", "given twice"),
])
def test_bad_targets_name_the_problem(text, says):
    with pytest.raises(ValueError, match=says) as err:
        parse_target(text)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("argv,says", [
    (["--slo", "ttft=5"], "argument --slo: unknown limit 'ttft'"),
    (["--slo", "ttft_p99_ms=-1"], "argument --slo: ttft_p99_ms=-1: a limit must be a positive"),
    (["--repeats", "0"], "argument --repeats: 0 is too small: give at least 1"),
    (["--max-concurrency", "x"], "argument --max-concurrency: 'x' is not a whole number"),
    (["--slo-budget", "nan"], "argument --slo-budget: nan is not a usable number of seconds"),
    (["--concurrency", "automatic"], "argument --concurrency: concurrency levels are integers, e.g. 1,4,16, or auto"),
])
def test_bad_options_exit_2_with_a_line_that_says_why(argv, says, capsys):
    with pytest.raises(SystemExit) as done:
        run.build_parser(runner).parse_args(argv)
    assert done.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("python -m agent.run: error: ") and says in lines[0]


def test_options_give_the_plan():
    from agent.bench.command.options import BenchOptions
    from agent.bench.parts.capacity import LevelPlan

    def plan(argv):
        o = BenchOptions.from_namespace(run.build_parser(runner).parse_args(argv))
        return LevelPlan.of(target=o.target, concurrency=o.concurrency, repeats=o.repeats,
                       max_concurrency=o.max_concurrency, budget_s=o.slo_budget_s)

    plain = plan([])
    assert (plain.auto, plain.levels, plain.repeats, plain.target.source) == (False, (1,), 1, "default")
    auto = plan(["--concurrency", "auto", "--max-concurrency", "16"])
    assert (auto.auto, auto.levels, auto.repeats, auto.width) == (True, (1,), 3, 16)
    assert auto.record()["concurrency"] == "auto" and auto.record()["slo_source"] == "default"
    given = plan(["--slo", "e2e_p99_ms=900", "--concurrency", "1,4", "--repeats", "5"])
    assert (given.levels, given.repeats, given.target.limits()) == ((1, 4), 5, {"e2e_p99_ms": 900.0})
    assert plan(["--slo", "ttft_p99_ms=500"]).repeats == 3  # a target set: 3 repeats


# --- one request -----------------------------------------------------------------------------


def test_a_request_meets_the_target_when_every_limit_holds():
    assert missed_limits(request_figures(rec(first=200.0, gap=50.0)), DEFAULT) == []
    assert missed_limits(request_figures(rec(first=1000.0)), DEFAULT) == []  # the limit itself is within it
    assert missed_limits(request_figures(rec(first=1000.5)), DEFAULT) == ["ttft_p99_ms"]
    assert missed_limits(request_figures(rec(gap=100.5)), DEFAULT) == ["itl_p99_ms"]
    both = rec(first=1500.0, gap=150.0)
    assert missed_limits(request_figures(both), DEFAULT) == ["ttft_p99_ms", "itl_p99_ms"]


def test_itl_is_the_mean_gap_between_chunks_of_the_request():
    # gaps 10, 10, 10, 370: one stall, mean 100 -> meets a 100 ms limit; one more ms -> it misses
    r = rec(chunks=0)
    r.update(first_ms=100.0, last_ms=500.0, done_ms=505.0, chunk_ms=[100.0, 110.0, 120.0, 130.0, 500.0])
    assert request_figures(r).itl_ms == 100.0 and missed_limits(request_figures(r), DEFAULT) == []
    r["chunk_ms"][-1] = r["last_ms"] = 504.0
    assert missed_limits(request_figures(r), DEFAULT) == ["itl_p99_ms"]


def test_a_failed_request_never_meets_the_target():
    failed = rec(error="HTTP 500: boom")
    assert missed_limits(request_figures(failed), DEFAULT) == ["error"]
    assert missed_limits(request_figures(failed), Target(e2e_p99_ms=1e9)) == ["error"]


def test_a_reply_in_one_piece_is_judged_as_its_reader_sees_it():
    whole = rec(first=3000.0, chunks=1, done=3000.0, tokens=94)
    fig = request_figures(whole)
    assert fig.ttft_ms == 3000.0 and fig.itl_ms is None  # the first token arrives with the last
    assert missed_limits(fig, DEFAULT) == ["ttft_p99_ms"]
    assert missed_limits(fig, Target(ttft_p99_ms=3500.0, itl_p99_ms=10.0)) == []  # no gap after the first token
    assert missed_limits(fig, Target(e2e_p99_ms=2999.0)) == ["e2e_p99_ms"]


def test_attainment_is_99_percent_in_whole_requests():
    assert attains(99, 100) and not attains(98, 100)
    assert attains(5, 5) and not attains(98, 99)  # below 100 requests: every one
    assert attains(198, 200) and not attains(197, 200)
    assert not attains(0, 0)
    assert [allowed_misses(n) for n in (1, 15, 99, 100, 199, 200, 960)] == [0, 0, 0, 1, 1, 2, 9]


def level_block(concurrency, records, target, log=None):
    return level_of(concurrency, [TimingRecord.model_validate(r) for r in records], target,
                    None if log is None else LevelLog(concurrency=concurrency, **log))


# --- one level -------------------------------------------------------------------------------


def test_level_figures_and_their_intervals_on_known_requests():
    # repeat 1: 4 requests over 1.0 s, one of them late (TTFT 2 s); repeat 2: 4 requests over 2.0 s, all in time
    r1 = [rec(sent=0.0, done=1000.0, tokens=10) for _ in range(3)] + [rec(first=2000.0, chunks=1, done=1000.0,
                                                                           tokens=10)]
    r2 = [rec(sent=10.0, done=2000.0, tokens=10, repeat=2) for _ in range(4)]
    lv = level_block(4, r1 + r2, DEFAULT)
    assert (lv.repeats, lv.requests, lv.errors, lv.met) == (2, 8, 0, 7)
    assert lv.met_share == 0.875 and lv.holds is False and lv.verdict == "misses"
    assert [p.goodput_req_per_s for p in lv.per_repeat] == [3.0, 2.0]
    assert lv.goodput_req_per_s == 2.5 and lv.goodput_output_tok_per_s == 25.0
    half = 12.706 * math.sqrt(0.5 / 2)  # t(1 df) x s/sqrt(n), s^2 = ((3-2.5)^2 + (2-2.5)^2) / 1
    assert lv.ci95.goodput_req_per_s == (round(2.5 - half, 3), round(2.5 + half, 3))
    assert lv.output_tok_per_s == 30.0  # (40/1 + 40/2) / 2: every successful token, met or not
    low, high = stats.wilson_interval(7, 8)
    assert lv.ci95.met_share == (round(low, 4), round(high, 4))
    assert lv.ttft_p99_ms == 2000.0 and lv.missed_by == {"ttft_p99_ms": 1}


def test_the_mix_priced_is_that_of_the_requests_that_met_the_target_as_the_server_counted():
    # two met the target, 30 and 60 prompt tokens for 20 output tokens each: 90 / 40 = 2.25 prompt tokens per
    # output token and 90 prompt tokens in 1 s; the late one's 1,000-token prompt is left out
    met = [{**rec(sent=0.0, done=1000.0, tokens=20), "prompt_tokens": p} for p in (30, 60)]
    late = {**rec(first=2000.0, chunks=1, done=1000.0, tokens=20), "prompt_tokens": 1000}
    lv = level_block(2, met + [late], DEFAULT)
    assert lv.met == 2 and lv.met_input_per_output == 2.25 and lv.goodput_input_tok_per_s == 90.0
    assert level_block(2, [rec(sent=0.0, done=1000.0, tokens=20)], DEFAULT).met_input_per_output is None  # no usage


def test_failed_requests_count_against_the_level_and_carry_no_figure():
    ok = [rec(sent=0.0, done=1000.0, tokens=10) for _ in range(99)]
    lv = level_block(8, ok + [rec(sent=0.0, done=1000.0, error="cut off")], DEFAULT)
    assert lv.requests == 100 and lv.errors == 1 and lv.met == 99 and lv.holds
    lv = level_block(8, ok + [rec(done=1000.0, error="cut off"), rec(done=400.0, error="timeout")], DEFAULT)
    assert lv.errors == 2 and lv.met == 99 and not lv.holds
    assert lv.goodput_output_tok_per_s == 990.0  # 99 x 10 tokens over 1 s: nothing from the failures


def test_a_level_cut_short_is_undecided_unless_it_already_missed():
    three = [rec(sent=0.0, done=1000.0) for _ in range(3)]
    cut = level_block(2, three, DEFAULT, {"planned_requests": 6, "stopped": "budget"})
    assert cut.verdict == "undecided" and cut.holds is False
    missed = level_block(2, three[:2] + [rec(error="boom")], DEFAULT, {"planned_requests": 6, "stopped": "missed"})
    assert missed.verdict == "misses"


# --- capacity --------------------------------------------------------------------------------


def lv(c, verdict, met=10, requests=10, **kw):
    base = level(c, 100.0, requests=requests, holds=verdict == "holds", met_share=met / requests)
    return base.model_copy(update={"verdict": verdict, "met": met, "missed_by": {}, "stopped": None,
                                   "ttft_p99_ms": None, "itl_p99_ms": None, "e2e_p99_ms": None, **kw})


def search_log(stopped: str) -> SloSearch:
    return SloSearch(mode="auto", rule="", order=[], levels_measured=0, max_concurrency=64, max_levels=7,
                     budget_s=None, seconds=None, stopped=stopped, bracket=(None, None), exact=False)


AUTO = search_log("bracketed")


def test_capacity_is_the_highest_level_below_the_first_miss():
    levels = [lv(1, "holds"), lv(2, "holds"), lv(4, "holds"), lv(8, "misses", met=5, missed_by={"ttft_p99_ms": 5},
                                                                  ttft_p99_ms=2400.0)]
    assert capacity_of(levels) == (4, 8)
    why = capacity_reason(levels, 4, 8, DEFAULT, "openai", AUTO)
    assert why.startswith("held at 4 (10/10 requests met it); missed at 8 (5/10 requests met it; 5 over the TTFT "
                          "limit of 1,000 ms, p99 2,400 ms)")
    assert "between 4 and 7" in why


def test_a_level_that_holds_after_a_miss_does_not_raise_the_capacity():
    levels = [lv(1, "holds"), lv(2, "misses", met=9), lv(4, "holds")]
    assert capacity_of(levels) == (1, 2)
    assert "Level(s) 4 held after 2 missed" in capacity_reason(levels, 1, 2, DEFAULT, "openai", AUTO)


def test_missing_at_1_means_no_capacity_and_undecided_levels_are_no_bound():
    levels = [lv(1, "misses", met=0, missed_by={"error": 10})]
    assert capacity_of(levels) == (None, 1)
    assert capacity_reason(levels, None, 1, DEFAULT, "openai", AUTO) == (
        "misses the target even at concurrency 1 (0/10 requests met it; 10 failed)")
    assert capacity_of([lv(1, "holds"), lv(2, "undecided"), lv(4, "misses")]) == (1, 4)
    assert capacity_of([lv(1, "holds"), lv(2, "undecided")]) == (1, None)


def test_every_level_holding_says_the_capacity_may_be_higher():
    levels = [lv(c, "holds") for c in (1, 2, 4, 8, 16, 32, 64)]
    why = capacity_reason(levels, 64, None, DEFAULT, "openai", search_log("max_concurrency"))
    assert why.endswith("every level measured held, up to --max-concurrency, so the real capacity may be higher")


def test_the_neuron_capacity_of_1_says_why():
    levels = [lv(1, "holds"), lv(2, "misses", met=5)]
    why = capacity_reason(levels, 1, 2, DEFAULT, "neuron", AUTO)
    assert why.startswith("held at 1") and NEURON_REASON in why and "one request at a time" in why
    assert NEURON_REASON not in capacity_reason(levels, 1, 2, DEFAULT, "openai", AUTO)


# --- ties --------------------------------------------------------------------------------------


def block(capacity, value=None, ci=None, repeats=3):
    levels = [] if capacity is None else [level(capacity, value, ci=ci, repeats=repeats)]
    entry, _ = backend("x", slo_block=slo(capacity, levels, fails_above=False))
    return entry


def test_backends_whose_intervals_overlap_are_a_tie_not_ranked():
    backends = {"g6": block(16, 900.0, [850.0, 950.0]), "sagemaker": block(8, 820.0, [800.0, 840.0]),
                "inf2": block(1, 35.0, [34.0, 36.0]), "local": block(None)}
    pairs = {(p.a, p.b): p for p in slo_pairs(backends)}
    assert len(pairs) == 6
    assert pairs[("g6", "sagemaker")].verdict == "a" and pairs[("g6", "sagemaker")].better == "g6"
    assert pairs[("sagemaker", "inf2")].better == "sagemaker"
    assert pairs[("inf2", "local")].better == "inf2" and "only inf2 meets" in pairs[("inf2", "local")].reason
    backends["sagemaker"] = block(8, 825.0, [800.0, 850.0])  # touches g6's interval: a tie
    tie = slo_pairs(backends)[0]
    assert (tie.verdict, tie.better, tie.reason) == ("tie", None, "the 95% intervals overlap")
    backends["sagemaker"] = block(8, 100.0, [100.0, 100.0], repeats=1)  # far lower but measured once
    assert slo_pairs(backends)[0].verdict == "thin"
    assert slo_pairs({"a": block(None), "b": block(None)})[0].verdict == "neither"


# --- the search ----------------------------------------------------------------------------------


def search(capacity: int, max_concurrency: int = 64) -> tuple[list[int], dict[int, bool]]:
    """Run the search against a backend that holds exactly up to ``capacity`` (0: never)."""
    verdicts: dict[int, bool] = {}
    order = []
    while (c := next_level(verdicts, max_concurrency)) is not None:
        order.append(c)
        verdicts[c] = c <= capacity
    return order, verdicts


def test_the_search_finds_any_capacity_up_to_64_within_7_levels():
    for k in range(0, 65):
        order, verdicts = search(k)
        assert len(order) <= MAX_LEVELS, (k, order)
        assert len(set(order)) == len(order)
        held = max((c for c, ok in verdicts.items() if ok), default=None)
        missed = min((c for c, ok in verdicts.items() if not ok), default=None)
        assert (held or 0) <= k and (missed is None or k < missed), (k, order)  # the bracket holds the capacity
        if k <= 7:
            assert held == (k or None) and missed == k + 1, (k, order)  # found exactly
        if k >= 1:
            assert max(order) <= 2 * k  # never more than twice the capacity
    assert search(4)[0] == [1, 2, 4, 8, 6, 5]
    assert search(0)[0] == [1] and search(1)[0] == [1, 2]
    assert search(64)[0] == [1, 2, 4, 8, 16, 32, 64]
    assert search(10)[0] == [1, 2, 4, 8, 16, 12, 10]  # stopped by the 7-level limit: capacity in [10, 11]


def test_the_search_stops_at_max_concurrency_and_says_why():
    order, verdicts = search(100, max_concurrency=48)
    assert order == [1, 2, 4, 8, 16, 32, 48] and stop_reason(verdicts, 48) == "max_concurrency"
    assert stop_reason(search(0)[1], 64) == "missed_at_1"
    assert stop_reason(search(4)[1], 64) == "bracketed"
    assert stop_reason(search(10)[1], 64) == "max_levels"
