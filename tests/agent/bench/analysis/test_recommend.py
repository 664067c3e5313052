"""Cost at the latency target and the recommendation, on synthetic summaries with known answers.

Every expected figure is computed by hand in the comment beside it (730 h a month, 2,628,000 s).
"""

from __future__ import annotations

import pytest

from agent.bench.analysis.recommendation import choose, offers
from agent.bench.analysis.traffic import Traffic, from_mapping

from tests.agent.bench.fakes.synthetic import G5G_PRICE

from tests.agent.bench.fakes.synthetic import G6_PRICE

from tests.agent.bench.fakes.synthetic import NOVA_MICRO

from tests.agent.bench.fakes.synthetic import SM_PRICE

from tests.agent.bench.fakes.synthetic import backend

from tests.agent.bench.fakes.synthetic import bfcl

from tests.agent.bench.fakes.synthetic import level

from tests.agent.bench.fakes.synthetic import open_loop

from tests.agent.bench.fakes.synthetic import quality

from tests.agent.bench.fakes.synthetic import slo

from tests.agent.bench.fakes.synthetic import summary

MONTH_S = 730 * 3600


def hourly(price: dict) -> dict:
    return {"hourly": price}


def per_token(price: dict = NOVA_MICRO) -> dict:
    return {"per_token": price}


def run_rec(backends, prices, **kw):
    entries, run = summary(backends, prices, **kw)
    return choose.recommend(entries, run)


# --- the reference's figures ------------------------------------------------------------------------


def test_reference_figures_at_the_target():
    # g6.xlarge at $0.8048/h with 131.5 output tok/s within the target at one request:
    # 0.8048 / (131.5 x 3600) x 1e6 = $1.70 per M; 0.8048 x 730 = $587.50 a month.
    g6 = backend("g6", slo_block=slo(1, [level(1, 131.5)]))
    _, add = run_rec({"g6": g6}, {"g6": hourly(G6_PRICE)})
    assert round(add["g6"]["usd_per_million_output_at_slo"], 2) == 1.70
    assert add["g6"]["monthly_usd"].always_on_one_instance == 587.50


def test_break_even_against_nova_micro_is_1597_tok_per_s():
    # Output only (no input tokens), a flat load (peak = average) and an instance that serves more than
    # the break-even rate: 0.8048 / (0.14e-6 x 3600) = 1,596.8 tok/s = 4.196 B tokens a month.
    g6 = backend("g6", slo_block=slo(16, [level(1, 131.5), level(16, 2000.0)]))
    _, add = run_rec({"g6": g6}, {"g6": hourly(G6_PRICE)},
                     workload={"input_per_output": 0, "peak_to_average": 1})
    be = add["g6"]["break_even_vs_bedrock"]
    assert round(be.average_output_tok_per_s) == 1597
    assert be.output_tokens_per_month == pytest.approx(0.8048 * 730 / 0.14e-6, rel=1e-6)
    assert be.bedrock_measured is False and be.bedrock_meets_target is None
    # One instance covers 2,000 tok/s = 5.256 B a month; at that volume a second one makes g6 ($1,175.01)
    # dearer than Bedrock ($735.84) again, until full use ($0.1118/M) wins for good above
    # 587.504 / (0.14e-6 - 0.1118e-6) = 20.8 B: the last crossing lies between.
    assert 5.256e9 < be.always_cheaper_from_output_tokens_per_month < 20.9e9


def test_instances_and_monthly_cost_at_the_workload():
    # 1 B output tokens a month, peak 3x: 1e9 / 2,628,000 x 3 = 1,141.6 tok/s at the peak;
    # at 131.5 tok/s each: ceil(8.68) = 9 instances = 9 x 587.504 = $5,287.54 a month.
    # Interval: goodput 124.9..138.1 -> ceil(1141.6/138.1) = 9 .. ceil(1141.6/124.9) = 10 instances.
    g6 = backend("g6", slo_block=slo(1, [level(1, 131.5, ci=(124.9, 138.1))]))
    _, add = run_rec({"g6": g6}, {"g6": hourly(G6_PRICE)}, workload={"output_tokens_per_month": "1B"})
    a = add["g6"]
    assert a["instances_for_peak"] == 9 and a["instances_for_peak_ci95"] == (9, 10)
    assert a["monthly_usd"].at_workload == pytest.approx(5287.54, abs=0.01)
    assert a["monthly_usd"].at_workload_ci95 == pytest.approx([5287.54, 5875.04], abs=0.01)
    # $/M interval from the goodput interval: 0.8048/(138.1*3600)*1e6 = 1.6188 .. 0.8048/(124.9*3600)*1e6 = 1.7899
    assert a["usd_per_million_output_at_slo_ci95"] == pytest.approx([1.6188, 1.7899], abs=1e-4)


def test_bedrock_cost_at_the_workload_and_at_the_target():
    # 1 B tokens x (0.14 + 5 x 0.035) = 1e9 x $0.315/M = $315 a month. 90% of its output tokens met
    # the target: $0.315 x 100/90 = $0.35 per M output tokens that met it.
    br = backend("bedrock", kind="bedrock", input_per_output=None,
                 slo_block=slo(8, [level(1, 100.0), level(8, 720.0, output_tok_per_s=800.0, met_share=0.9)]))
    _, add = run_rec({"bedrock": br}, {"bedrock": per_token()}, workload={"output_tokens_per_month": 1e9,
                                                                            "input_per_output": 5})
    a = add["bedrock"]
    assert a["monthly_usd"].at_workload == pytest.approx(315.0)
    assert a["monthly_usd"].always_on_one_instance is None and a["instances_for_peak"] is None
    assert a["usd_per_million_output_at_slo"] == pytest.approx(0.35)


def test_per_token_cost_is_at_the_mix_measured_not_the_one_stated():
    # The requests that met the target had 2 prompt tokens per output token as the server counted them; the
    # workload states 5. 1 B x (0.14 + 2 x 0.035) = $210 a month, not the $315 of the stated mix; 90% of the output
    # met the target: $0.21 x 100/90 = $0.2333 per M output tokens that met it.
    br = backend("bedrock", kind="bedrock", slo_block=slo(
        8, [level(1, 100.0, mix=2.0), level(8, 720.0, output_tok_per_s=800.0, met_share=0.9, mix=2.0)]))
    rec, add = run_rec({"bedrock": br}, {"bedrock": per_token()},
                       workload={"output_tokens_per_month": 1e9, "input_per_output": 5})
    assert add["bedrock"]["monthly_usd"].at_workload == pytest.approx(210.0)
    assert add["bedrock"]["usd_per_million_output_at_slo"] == pytest.approx(0.2333, abs=1e-4)
    assert rec.backends["bedrock"].input_per_output_measured == 2.0 and rec.workload.input_per_output == 5.0
    assert any("priced at the mix measured, 2 input tokens per output token" in r and "not the 5 stated" in r
               for r in rec.reasons)
    assert any("2 input tokens per output token, as measured" in r for r in rec.reasons)


def test_an_hourly_rig_breaks_even_against_bedrock_at_bedrocks_measured_mix():
    # Bedrock measured at 1 prompt token per output token: $0.14 + 1 x $0.035 = $0.175/M, against $0.315/M at
    # the stated 5. g6, fully used at 2,000 tok/s on a flat load, costs $587.504 / 5.256 B = $0.1118/M.
    br = backend("bedrock", kind="bedrock", slo_block=slo(8, [level(1, 100.0, mix=1.0), level(8, 700.0, mix=1.0)]))
    g6 = backend("g6", slo_block=slo(16, [level(1, 131.5), level(16, 2000.0)]))
    _, add = run_rec({"g6": g6, "bedrock": br}, {"g6": hourly(G6_PRICE), "bedrock": per_token()},
                     workload={"peak_to_average": 1, "input_per_output": 5})
    be = add["g6"]["break_even_vs_bedrock"]
    assert be.bedrock_measured is True and be.bedrock_usd_per_m_output_effective == pytest.approx(0.175)


# --- the choice -------------------------------------------------------------------------------------


def test_cheapest_qualifying_backend_is_chosen_with_runner_up_and_switch_point():
    # Flat load, output only: Bedrock costs V x $0.14/M; g6 one instance (2,000 tok/s serves
    # 5.256 B a month) costs $587.50. They cross at 587.504 / 0.14e-6 = 4.196 B tokens a month.
    br = backend("bedrock", kind="bedrock", input_per_output=None,
                 slo_block=slo(8, [level(1, 100.0), level(8, 700.0)]))
    g6 = backend("g6", slo_block=slo(16, [level(1, 131.5), level(16, 2000.0), level(32, 2100.0, holds=False)]))
    prices = {"bedrock": per_token(), "g6": hourly(G6_PRICE)}
    wl = {"output_tokens_per_month": "1B", "input_per_output": 0, "peak_to_average": 1}
    rec, _ = run_rec({"bedrock": br, "g6": g6}, prices, workload=wl)
    assert rec.verdict == "choice" and rec.choice == "bedrock" and rec.runner_up == "g6"
    assert "$140.00 a month" in rec.headline and "runner-up g6 at $587.50" in rec.headline
    first = rec.switch_points[0]
    assert (first.below, first.above, first.kind) == ("bedrock", "g6", "crossing")
    assert first.output_tokens_per_month == pytest.approx(4.196e9, rel=1e-3)
    assert first.text.startswith("Below 4.2 B output tokens a month (1,596.8 tok/s on average) bedrock is cheaper")
    assert first.figures["g6"].instances_above == 1
    # At 10 B (3,805 tok/s) g6 needs 2 instances ($1,175.01) against Bedrock's $1,400, but at the low end
    # of its goodput interval (1,900 tok/s) 3 ($1,762.51): within the intervals, a tie.
    rec10, _ = run_rec({"bedrock": br, "g6": g6}, prices, workload={**wl, "output_tokens_per_month": "10B"})
    assert rec10.verdict == "tie" and rec10.choice is None and rec10.leader == "g6"
    # with goodput known to within 1,990..2,010 tok/s it stays at 2 instances: g6 is the answer
    tight = backend("g6", slo_block=slo(16, [level(1, 131.5), level(16, 2000.0, ci=(1990.0, 2010.0))]))
    rec10, _ = run_rec({"bedrock": br, "g6": tight}, prices, workload={**wl, "output_tokens_per_month": "10B"})
    assert rec10.choice == "g6" and rec10.runner_up == "bedrock"
    assert "$1,175.01 a month" in rec10.headline


def test_switch_points_between_two_rigs_follow_instance_steps():
    # g5g ($0.556/h, 40 tok/s) vs g6 ($0.8048/h, 131.5 tok/s), peak = average, no Bedrock.
    # One g5g serves 40 x 2,628,000 = 105.12 M a month; one g6 345.58 M.
    # Up to 105.12 M: g5g $405.88 < g6 $587.50. Above it g5g needs 2 ($811.76) > g6's one: g6.
    g5g = backend("g5g", slo_block=slo(1, [level(1, 40.0), level(2, 50.0, holds=False)]))
    g6 = backend("g6", slo_block=slo(1, [level(1, 131.5), level(2, 150.0, holds=False)]))
    rec, _ = run_rec({"g5g": g5g, "g6": g6}, {"g5g": hourly(G5G_PRICE), "g6": hourly(G6_PRICE)},
                     workload={"output_tokens_per_month": "50M", "peak_to_average": 1}, bedrock_reference=None)
    assert rec.choice == "g5g" and rec.runner_up == "g6"
    first = rec.switch_points[0]
    assert (first.below, first.above, first.kind) == ("g5g", "g6", "instance step")
    assert first.output_tokens_per_month == pytest.approx(40.0 * MONTH_S)
    assert first.figures["g5g"].instances_above == 2
    assert all(p.output_tokens_per_month <= 50e6 * choose.VOLUME_SPAN for p in rec.switch_points)


def test_bedrock_is_recommended_only_where_it_meets_the_target():
    br = backend("bedrock", kind="bedrock", slo_block=slo(None, [level(1, 0.0, holds=False, met_share=0.4)],
                                                          reason="misses the target even at concurrency 1 (12/30 "
                                                                 "requests met it; 18 over the TTFT limit of 1,000 ms)"))
    g6 = backend("g6", slo_block=slo(4, [level(1, 131.5), level(4, 480.0)]))
    rec, add = run_rec({"bedrock": br, "g6": g6}, {"bedrock": per_token(), "g6": hourly(G6_PRICE)})
    assert rec.choice == "g6" and rec.runner_up is None
    assert rec.disqualified["bedrock"].startswith("misses the target even at concurrency 1 (12/30 requests met it")
    assert add["g6"]["break_even_vs_bedrock"].bedrock_meets_target is False
    assert add["bedrock"]["monthly_usd"] is None and add["bedrock"]["cost_reason"].startswith("misses the target")
    # no level measured to the end is no capacity, not a miss
    other = backend("bedrock", kind="bedrock", slo_block=slo(None, [level(1, 0.0, holds=False)],
                                                             reason="no level was measured to the end"))
    rec2, _ = run_rec({"bedrock": other, "g6": g6}, {"bedrock": per_token(), "g6": hourly(G6_PRICE)})
    assert rec2.disqualified["bedrock"] == "no SLO capacity under the target (no level was measured to the end)"


def test_disqualifications_are_named():
    wl = {"tool_calls": "yes"}
    inf2 = backend("inf2", kind="neuron", tool_calls=False, slo_block=slo(1, [level(1, 36.4)]))
    local = backend("local", tool_calls=False, constrained=True, toy=True, slo_block=slo(1, [level(1, 80.0)]))
    weak = backend("g5g", slo_block=slo(1, [level(1, 40.0)]), bfcl_block=bfcl(200, 120, 0.53, 0.66))
    g6 = backend("g6", slo_block=slo(1, [level(1, 131.5)]), bfcl_block=bfcl(200, 170, 0.79, 0.89))
    rec, _ = run_rec({"inf2": inf2, "local": local, "g5g": weak, "g6": g6},
                     {"inf2": hourly({**G5G_PRICE, "usd_per_hour": 0.7582}), "g5g": hourly(G5G_PRICE),
                      "g6": hourly(G6_PRICE), "local": {"reason": "no instance type known"}},
                     workload=wl, min_accuracy=0.75)
    d = rec.disqualified
    assert "no tool calls, and the workload needs them" in d["inf2"]
    assert "schema-constrained" in d["local"]
    assert d["g5g"] == "tool-calling accuracy 60% [53%, 66%] on 200 BFCL cases is below the floor 75%"
    assert rec.choice == "g6" and "and the accuracy floor of 75%" in rec.headline
    assert rec.backends["g6"].accuracy.model_dump() == {"accuracy": 0.85, "ci95": (0.79, 0.89), "cases": 200,
                                                 "correct": 170, "source": "BFCL"}
    # without tool calls in the workload, inf2 ($553.49) is cheaper than g6 ($587.50) at one instance
    rec2, _ = run_rec({"inf2": inf2, "g6": g6}, {"inf2": hourly({**G5G_PRICE, "usd_per_hour": 0.7582}),
                                                  "g6": hourly(G6_PRICE)},
                      workload={"tool_calls": "no", "output_tokens_per_month": "10M"})
    assert rec2.choice == "inf2" and "inf2" not in rec2.disqualified


def test_unpriced_custom_and_toy_backends_cannot_be_chosen():
    custom = backend("g6", slo_block=slo(1, [level(1, 131.5)]))
    rec, add = run_rec({"g6": custom}, {"g6": {"reason": "no instance type known (set G6_INSTANCE_TYPE)"}})
    assert rec.verdict == "none_qualifies"
    assert rec.disqualified["g6"] == "no price: no instance type known (set G6_INSTANCE_TYPE)"
    assert add["g6"]["monthly_usd"] is None
    # it met the target: nothing qualifies, but it is not said that nothing meets the target
    assert rec.headline.startswith("No backend qualifies for this workload under the target (TTFT p99 <= 1,000 ms, "
                                   "ITL p99 <= 100 ms): g6: no price")
    assert "meets the target" not in rec.headline


def test_nothing_meets_the_target_only_when_every_backend_missed_it():
    missed = backend("g6", slo_block=slo(None, [level(1, 10.0, holds=False, met_share=0.5)]))
    rec, _ = run_rec({"g6": missed}, {"g6": hourly(G6_PRICE)})
    assert rec.headline.startswith("No backend meets the target (TTFT p99 <= 1,000 ms, ITL p99 <= 100 ms) for this "
                                   "workload: g6: misses the target even at concurrency 1")


def test_a_backend_whose_every_request_failed_is_not_said_to_miss_the_target():
    failed = slo(None, [level(1, 0.0, holds=False, met_share=0.0, errors=30)],
                 reason="every request failed (30 of 30; most often: HTTP 500: boom), so the target could not be judged")
    g6 = backend("g6", slo_block=failed.model_copy(update={"every_request_failed": True}))
    rec, add = run_rec({"g6": g6}, {"g6": hourly(G6_PRICE)})
    assert rec.disqualified["g6"].startswith("every request failed (30 of 30; most often: HTTP 500: boom)")
    assert "miss" not in rec.headline and "miss" not in rec.disqualified["g6"]
    assert rec.headline.startswith("No backend qualifies")


# --- ties and thin evidence -------------------------------------------------------------------------


def test_overlapping_intervals_are_a_tie_not_a_choice():
    # 300 M a month, peak 3x: 342.5 tok/s at the peak. g6 at 180 tok/s [150, 210] needs 2 (1.9) but up
    # to 3 (2.28) instances: $1,175.01 .. $1,762.51; sagemaker at 400 tok/s [330, 470]: 1 .. 2 instances,
    # $822.49 .. $1,644.98. The intervals overlap: a tie.
    g6 = backend("g6", slo_block=slo(2, [level(1, 131.5), level(2, 180.0, ci=(150.0, 210.0))]))
    sm = backend("sagemaker", kind="sagemaker", slo_block=slo(4, [level(1, 110.0), level(4, 400.0, ci=(330.0, 470.0))]))
    rec, add = run_rec({"g6": g6, "sagemaker": sm}, {"g6": hourly(G6_PRICE), "sagemaker": hourly(SM_PRICE)},
                       workload={"output_tokens_per_month": "300M"}, bedrock_reference=None)
    assert add["g6"]["monthly_usd"].at_workload_ci95 == pytest.approx([1175.01, 1762.51], abs=0.01)
    assert add["sagemaker"]["monthly_usd"].at_workload_ci95 == pytest.approx([822.49, 1644.98], abs=0.01)
    assert rec.verdict == "tie" and rec.choice is None and rec.leader == "sagemaker"
    assert "No single choice" in rec.headline and "sagemaker and g6" in rec.headline
    # narrow intervals: sagemaker [395, 405] stays at 1 instance, g6 [178, 182] at 2: a choice
    g6n = backend("g6", slo_block=slo(2, [level(1, 131.5), level(2, 180.0, ci=(178.0, 182.0))]))
    smn = backend("sagemaker", kind="sagemaker", slo_block=slo(4, [level(1, 110.0), level(4, 400.0, ci=(395.0, 405.0))]))
    rec2, _ = run_rec({"g6": g6n, "sagemaker": smn}, {"g6": hourly(G6_PRICE), "sagemaker": hourly(SM_PRICE)},
                      workload={"output_tokens_per_month": "300M"}, bedrock_reference=None)
    assert rec2.verdict == "choice" and rec2.choice == "sagemaker" and rec2.runner_up == "g6"


def test_few_requests_or_no_repeats_are_too_thin():
    few = backend("g6", slo_block=slo(1, [level(1, 131.5, requests=4)]))
    rec, _ = run_rec({"g6": few}, {"g6": hourly(G6_PRICE)}, bedrock_reference=None)
    assert rec.verdict == "too_thin" and rec.choice is None and rec.leader == "g6"
    assert "only 4 requests at its capacity level c=1" in rec.headline
    once = backend("g6", slo_block=slo(1, [level(1, 131.5, repeats=1, no_interval=True)]))
    rec, _ = run_rec({"g6": once}, {"g6": hourly(G6_PRICE)}, bedrock_reference=None)
    assert rec.verdict == "too_thin" and "measured once (no repeats)" in rec.headline


def test_a_backend_not_run_that_could_be_cheaper_blocks_the_choice():
    # g6 alone, 100 M a month: 1 instance, $587.50. Bedrock was not run; at its list price this
    # workload costs 1e8 x $0.315/M = $31.50, so the run cannot say g6 is the answer.
    g6 = backend("g6", slo_block=slo(1, [level(1, 131.5)]))
    not_run = {"bedrock": {"label": "Amazon Bedrock (Nova Micro)", "tool_calls": True, **per_token()},
               "trn1": {"label": "Trainium", "tool_calls": False, "hourly": {"usd_per_hour": 1.3438}},
               "g5g": {"label": "g5g", "tool_calls": True, "hourly": G5G_PRICE}}
    rec, _ = run_rec({"g6": g6}, {"g6": hourly(G6_PRICE)}, not_run=not_run, workload={"input_per_output": 5})
    assert rec.verdict == "too_thin" and rec.choice is None
    assert "bedrock was not run and could cost less here" in rec.headline and "from $31.50 a month" in rec.headline
    assert "g5g was not run" in rec.headline  # one g5g instance: $405.88 < $587.50
    assert "trn1" not in rec.headline  # no tool calls: it could not serve this workload anyway
    assert rec.not_run["trn1"].lower_bound_monthly_usd == pytest.approx(980.97, abs=0.01)


def test_no_slo_measurement_means_no_recommendation():
    g6 = backend("g6")
    rec, add = run_rec({"g6": g6}, {"g6": hourly(G6_PRICE)})
    assert rec.verdict == "not_measured" and rec.choice is None and add == {}
    assert "No backend was measured under a latency target" in rec.headline


def test_capacity_at_the_top_of_the_search_is_a_floor_whose_bound_stays_out_of_the_interval():
    # 3 B a month, peak 3x: 3,424.7 tok/s at the peak. At 480 tok/s [456, 504] an instance: ceil(7.13) = 8
    # instances, $4,700.03; from the goodput's interval ceil(6.80) = 7 .. ceil(7.51) = 8: $4,112.53 .. $4,700.03.
    # Every level held, so c=4 is a floor: one instance ($587.50) is a bound of what was not measured, apart.
    g6 = backend("g6", slo_block=slo(4, [level(1, 131.5), level(2, 250.0), level(4, 480.0)], fails_above=False))
    rec, add = run_rec({"g6": g6}, {"g6": hourly(G6_PRICE)}, workload={"output_tokens_per_month": "3B"},
                       bedrock_reference=None)
    m = add["g6"]["monthly_usd"]
    assert m.at_workload == pytest.approx(4700.03, abs=0.01)
    assert m.at_workload_ci95 == pytest.approx([4112.53, 4700.03], abs=0.01)
    assert m.low_if_capacity_higher == pytest.approx(587.50, abs=0.01)
    assert add["g6"]["instances_for_peak_ci95"] == (7, 8)
    assert rec.caveats[0] == ("g6: SLO capacity ≥ 4 (every level measured held, up to c=4): a floor, not the most "
                              "it serves; its real capacity may be higher and an hourly rig's cost lower")
    line = next(r for r in rec.reasons if r.startswith("g6: "))
    assert "[95% CI $4,112.53, $4,700.03]" in line and "SLO capacity of ≥ 4 (every level measured held" in line
    assert line.endswith("it could cost as little as $587.50 (one instance) if the real capacity is higher")


def test_one_level_measured_once_gives_no_interval_and_a_labelled_floor():
    # The default run: c=1 only, one repeat. 1 B a month: 1,141.6 tok/s at the peak, ceil(8.68) = 9 instances
    # of 131.5 tok/s, $5,287.54; no interval (one repeat), and the capacity is "≥ 1 (only c=1 measured)".
    g6 = backend("g6", slo_block=slo(1, [level(1, 131.5, repeats=1, no_interval=True)], fails_above=False))
    rec, add = run_rec({"g6": g6}, {"g6": hourly(G6_PRICE)}, workload={"output_tokens_per_month": "1B"},
                       bedrock_reference=None)
    m = add["g6"]["monthly_usd"]
    assert m.at_workload == pytest.approx(5287.54, abs=0.01) and m.at_workload_ci95 is None
    assert m.low_if_capacity_higher == pytest.approx(587.50, abs=0.01)
    assert g6[0].slo.capacity_text() == "≥ 1 (only c=1 measured)"
    assert rec.caveats[0].startswith("g6: SLO capacity ≥ 1 (only c=1 measured): a floor")
    assert not any("95% CI" in r for r in rec.reasons)


def test_a_cheaper_looking_floor_keeps_the_choice_open():
    # 300 M a month, peak 3x: 342.5 tok/s. sagemaker at 400 tok/s (a measured capacity): 1 instance, $822.49.
    # g6 held at c=1 and was measured no higher: at 131.5 tok/s it needs 3 instances ($1,762.51), but with a
    # higher capacity one instance ($587.50) could do, below sagemaker's cost: not enough evidence to choose.
    g6 = backend("g6", slo_block=slo(1, [level(1, 131.5, ci=(130.0, 133.0))], fails_above=False))
    sm = backend("sagemaker", kind="sagemaker", slo_block=slo(4, [level(1, 110.0), level(4, 400.0, ci=(395.0, 405.0))]))
    prices = {"g6": hourly(G6_PRICE), "sagemaker": hourly(SM_PRICE)}
    rec, _ = run_rec({"g6": g6, "sagemaker": sm}, prices, workload={"output_tokens_per_month": "300M"},
                     bedrock_reference=None)
    assert rec.verdict == "too_thin" and rec.leader == "sagemaker"
    assert ("g6's SLO capacity, ≥ 1 (only c=1 measured), is only a floor: with a higher one it could cost as little "
            "as $587.50 a month, below sagemaker's $822.49") in rec.headline
    # measured up to a level that missed, g6's capacity is no floor and sagemaker is the choice
    g6 = backend("g6", slo_block=slo(1, [level(1, 131.5, ci=(130.0, 133.0))]))
    rec, _ = run_rec({"g6": g6, "sagemaker": sm}, prices, workload={"output_tokens_per_month": "300M"},
                     bedrock_reference=None)
    assert rec.verdict == "choice" and rec.choice == "sagemaker"


def test_workload_prompt_heavier_than_the_benchmark_is_said():
    g6 = backend("g6", slo_block=slo(1, [level(1, 131.5)]), input_per_output=0.3)
    rec, _ = run_rec({"g6": g6}, {"g6": hourly(G6_PRICE)}, workload={"input_per_output": 10}, bedrock_reference=None)
    assert any("makes prefill heavier" in c for c in rec.caveats)
    # a caveat of the answer even where nothing qualifies (here: no price)
    rec, _ = run_rec({"g6": g6}, {}, workload={"input_per_output": 10}, bedrock_reference=None)
    assert rec.verdict == "none_qualifies" and any("makes prefill heavier" in c for c in rec.caveats)


@pytest.mark.parametrize("verdict,rate,outcome", [
    ("holds", 1.2, "confirmed"), ("holds", 0.5, "caveat"), ("not_sustaining", 1.1416, "disqualified"),
    ("misses", 0.5, "disqualified"), ("misses", 5.0, "caveat")])
def test_the_open_loop_verdict_counts_at_the_rate_one_instance_must_carry(verdict: str, rate: float, outcome: str):
    # the default workload: 114.2 output tok/s at the peak in 100-token replies = 1.1416 req/s, on one g6 (its
    # capacity serves 2,000 tok/s): a miss at that rate or below disqualifies, a hold at it or above confirms
    g6 = backend("g6", slo_block=slo(16, [level(1, 131.5), level(16, 2000.0)]), open_loop_block=open_loop(verdict, rate))
    rec, _ = run_rec({"g6": g6}, {"g6": hourly(G6_PRICE)}, bedrock_reference=None)
    held = f"held the target under poisson arrivals at {rate:.4g} req/s for 60 s"
    if outcome == "confirmed":
        assert rec.choice == "g6" and f"It {held}, at least the 1.142 req/s one instance must carry" in rec.headline
    elif outcome == "disqualified":
        assert rec.choice is None and rec.disqualified["g6"].startswith(f"{verdict} (synthetic) under poisson")
    else:
        assert rec.choice == "g6" and any(r.startswith(f"g6: {'held' if verdict == 'holds' else 'open loop'}")
                                          and "one instance must carry" in r for r in rec.reasons)


# --- the arithmetic underneath ----------------------------------------------------------------------


def test_offer_steps_and_lines():
    t = from_mapping({"peak_to_average": 2}, source="option")
    rig = offers.Offer("g6", "hourly", usd_per_hour=1.0, goodput_output_tok_per_s=100.0)
    # one instance serves 100 x 2,628,000 / 2 = 131.4 M a month
    assert rig.instance_volume(t) == pytest.approx(131.4e6)
    assert rig.instances(131.4e6, t) == 1 and rig.instances(131.5e6, t) == 2
    assert rig.monthly(1.0, t) == 730.0
    line = offers.Offer("bedrock", "per_token", usd_per_m_output_effective=2.0)
    assert line.monthly(1e6, t) == 2.0
    # the rig's full-use price is $730 / 131.4 M = $5.56/M, above the line's $2/M: the line wins everywhere
    assert offers.switch_points([rig, line], t, 1e9) == ([], False)
    cheap = offers.Offer("g6", "hourly", usd_per_hour=0.1, goodput_output_tok_per_s=100.0)
    # $73 an instance: the line ($2/M) reaches $73 at 36.5 M; from there one, then more instances
    # ($0.556/M at full use) stay below the line
    points, truncated = offers.switch_points([cheap, line], t, 1e9)
    assert not truncated
    assert [(p["below"], p["above"], p["kind"]) for p in points] == [("bedrock", "g6", "crossing")]
    assert points[0]["output_tokens_per_month"] == pytest.approx(36.5e6)
    first, always, note = offers.break_even_volume(cheap, line, t)
    assert first == always == pytest.approx(36.5e6) and note == "exact"


def test_break_even_never_when_per_token_is_cheaper_than_full_use():
    t = from_mapping({"peak_to_average": 3}, source="option")
    rig = offers.Offer("g6", "hourly", usd_per_hour=0.8048, goodput_output_tok_per_s=131.5)
    line = offers.Offer("bedrock", "per_token", usd_per_m_output_effective=0.315)
    first, always, note = offers.break_even_volume(rig, line, t)
    # full use at the peak: 587.504 / (131.5 x 2,628,000 / 3) = $5.10 per M > $0.315
    assert first is None and always is None and note.startswith("never: bedrock costs $0.315/M output, less than g6's $5.1/M")


def test_traffic_rates():
    t = Traffic(output_tokens_per_month=2.628e9, input_per_output=5.0, peak_to_average=3.0, tool_calls=True)
    assert t.average_output_tok_per_s == pytest.approx(1000.0)
    assert t.peak_output_tok_per_s == pytest.approx(3000.0)


def test_the_search_bracket_says_whether_capacity_is_a_lower_bound():
    levels = [level(1, 131.5), level(2, 250.0), level(4, 480.0)]
    # the slo part measured c=8 missing, in a level not kept here
    g6 = backend("g6", slo_block=slo(4, levels, fails_above=False, bracket=(4, 8)))
    rec, _ = run_rec({"g6": g6}, {"g6": hourly(G6_PRICE)}, bedrock_reference=None)
    assert not any("capacity may be higher" in c for c in rec.caveats) and g6[0].slo.capacity_text() == "4"
    g6 = backend("g6", slo_block=slo(4, levels, fails_above=False, bracket=(4, None)))
    rec, _ = run_rec({"g6": g6}, {"g6": hourly(G6_PRICE)}, bedrock_reference=None)
    assert any("capacity may be higher" in c for c in rec.caveats)


# --- the quality floor and the backends the user chose ------------------------------------------------


def test_the_quality_floor_disqualifies_only_below_the_upper_bound():
    # g6 the cheaper ($587.50 against g5g's one instance, 100 M a month, both within the target); its
    # quality 70.0% [66.2%, 73.5%] on 600 items: even the upper bound is below a 75% floor.
    g6 = backend("g6", slo_block=slo(1, [level(1, 131.5)]), quality_block=quality(600, 420, 0.662, 0.735))
    g5g = backend("g5g", slo_block=slo(1, [level(1, 400.0)]), quality_block=quality(600, 468, 0.746, 0.811))
    prices = {"g6": hourly(G6_PRICE), "g5g": hourly({**G5G_PRICE, "usd_per_hour": 0.9})}
    rec, _ = run_rec({"g6": g6, "g5g": g5g}, prices, min_quality=0.75, bedrock_reference=None)
    assert rec.disqualified["g6"] == ("answer quality 70.0% [66.2%, 73.5%] on 600 graded items: even its upper 95% "
                                      "bound is below the quality floor 75%")
    # g5g's 78.0% reaches below 75% only with its lower bound: it qualifies, and the straddle is thin evidence
    assert "g5g" not in rec.disqualified and rec.verdict == "too_thin"
    assert "g5g: answer quality 78.0% [74.6%, 81.1%] straddles the quality floor 75%" in rec.headline
    assert rec.min_quality == 0.75 and rec.backends["g5g"].quality.cases == 600
    # a floor of 73%: within g6's interval, so not disqualified; the cheaper g6 leads (thin: it straddles)
    rec, _ = run_rec({"g6": g6, "g5g": g5g}, prices, min_quality=0.73, bedrock_reference=None)
    assert "g6" not in rec.disqualified and rec.leader == "g6" and rec.verdict == "too_thin"
    # 66%: both wholly above it: the choice, with the floor in the headline
    rec, _ = run_rec({"g6": g6, "g5g": g5g}, prices, min_quality=0.66, bedrock_reference=None)
    assert rec.choice == "g6" and "and the quality floor of 66%" in rec.headline
    # the workload's min_quality is the same floor
    rec, _ = run_rec({"g6": g6, "g5g": g5g}, prices, workload={"min_quality": "75%"}, bedrock_reference=None)
    assert rec.min_quality == 0.75 and "g6" in rec.disqualified and rec.workload.min_quality == 0.75


def test_a_quality_floor_without_the_lane_is_thin_evidence_not_a_pass():
    g6 = backend("g6", slo_block=slo(1, [level(1, 131.5)]))
    rec, _ = run_rec({"g6": g6}, {"g6": hourly(G6_PRICE)}, min_quality=0.7, bedrock_reference=None)
    assert rec.verdict == "too_thin" and "answer quality not measured" in rec.headline


def test_a_run_limited_to_some_backends_chooses_among_them_and_names_the_cheaper_ones_left_out():
    # g6 and g5g measured; Bedrock not run, at list price $31.50 a month for 100 M: cheaper than both.
    g6 = backend("g6", slo_block=slo(1, [level(1, 131.5)]))
    g5g = backend("g5g", slo_block=slo(1, [level(1, 40.0)]))
    not_run = {"bedrock": {"label": "Amazon Bedrock (Nova Micro)", "tool_calls": True, **per_token()}}
    prices = {"g6": hourly(G6_PRICE), "g5g": hourly(G5G_PRICE)}
    # as a new user runs it, without --backends: not enough evidence, only a leader
    rec, _ = run_rec({"g6": g6, "g5g": g5g}, prices, not_run=not_run)
    assert rec.verdict == "too_thin" and rec.choice is None and rec.leader == "g6"
    assert rec.headline.startswith("Not enough evidence to choose") and "bedrock was not run and could cost less" \
        in rec.headline
    # --backends g6,g5g: the choice among them, Bedrock a caveat
    rec, _ = run_rec({"g6": g6, "g5g": g5g}, prices, not_run=not_run, chosen=["g6", "g5g"])
    assert rec.verdict == "choice" and rec.choice == "g6" and rec.runner_up == "g5g"
    assert rec.backends_chosen == ["g6", "g5g"]
    assert "the cheapest backend of those chosen with --backends (g6, g5g)" in rec.headline
    assert "Not among them, and could cost less: bedrock." in rec.headline
    assert any(r.startswith("bedrock was not among --backends and could cost less here") for r in rec.reasons)
    # a chosen backend that did not run is still missing evidence
    rec, _ = run_rec({"g6": g6}, {"g6": hourly(G6_PRICE)}, chosen=["g6", "g5g"],
                     not_run={"g5g": {"label": "g5g", "tool_calls": True, "hourly": G5G_PRICE}})
    assert rec.verdict == "too_thin" and "g5g was not run and could cost less" in rec.headline
