"""The traffic the chat part sends, made offline: synthetic text of the asked length, the same for the same seed and
distinct per request; the seeded plan's lengths; the fit to a backend's limits; the user's prompts and trace
files read into typed requests."""

from __future__ import annotations

import json
import statistics

import pytest

from agent.bench.tasks.traffic.calibration import Calibration, fit
from agent.bench.tasks.traffic.context import longest_request_tokens, server_context_tokens, workload_context_tokens
from agent.bench.tasks.traffic.files import TrafficFileError, read_prompts, read_trace
from agent.bench.tasks.traffic.plan import Prompts, Shape, TrafficPlan, fit_of, fitting_turns
from agent.bench.tasks.traffic.text import CLOSING, TextMaker, units_of


def test_the_text_is_the_asked_length_the_same_per_seed_and_distinct_per_request():
    maker = TextMaker.of(0)
    assert [units_of(maker.text(n, 7)) for n in (1, 5, 60, 550)] == [1, 5, 60, 550]
    assert maker.text(550, 7) == TextMaker(0).text(550, 7)  # deterministic: a fresh bank of the same seed
    assert maker.text(550, 7) != TextMaker.of(1).text(550, 7)
    texts = [maker.text(300, i) for i in range(300)]
    assert len({t.split(".")[0] for t in texts}) == 300  # no two share an opening sentence a cache could reuse
    assert texts[0].endswith(CLOSING) and not maker.text(30, 1).endswith(CLOSING)
    words = texts[0].split()
    assert max(words.count(w) for w in set(words)) < len(words) / 4  # prose-like frequencies, no long repeat


def test_the_plans_lengths_have_the_asked_mean_and_spread():
    plan = TrafficPlan(Shape(seed=0, prompt_mean=4096, prompt_stddev=2048, output_mean=1024, output_stddev=512))
    asked = [plan.request(i) for i in range(3000)]
    prompts, outputs = [p.prompt_tokens for p in asked], [p.output_tokens for p in asked]
    assert min(prompts) >= 1 and statistics.fmean(prompts) == pytest.approx(4096, rel=0.03)
    assert statistics.pstdev(prompts) == pytest.approx(2048, rel=0.08)
    assert statistics.fmean(outputs) == pytest.approx(1024, rel=0.03)
    assert TrafficPlan(plan.shape).request(17) == plan.request(17)  # request i depends on (seed, i) alone
    assert {p.prompt_tokens for p in (TrafficPlan(Shape(prompt_mean=500)).request(i) for i in range(5))} == {500}


def test_the_fit_to_a_neuron_rigs_limits():
    """500-token prompts on a graph compiled for 128 prompt tokens, 512 in all: none fits; a session's later
    turns grow by the reply and the new turn until one does not fit."""
    long = TrafficPlan(Shape(prompt_mean=500, output_mean=100))
    assert fit_of(long, 128, 512).share == 0.0
    assert fitting_turns(long.request(0), 128, 512) == (0, "a prompt of 500 tokens is over the 128-token prompt limit")
    session = TrafficPlan(Shape(prompt_mean=100, output_mean=100, turns=4)).request(0)
    assert fitting_turns(session, None, 512)[0] == 2  # turn 2: 300 + 100; turn 3: 500 + 100 > 512
    assert fit_of(TrafficPlan(Shape(prompt_mean=100, output_mean=20)), 128, 512).share == 1.0


def test_the_workloads_context_is_its_longest_turn_and_a_server_that_holds_it_takes_every_request():
    """A session of 4 turns of 100 + 100 tokens: turn 4 sends the three turns and replies before it and its own 100,
    700 tokens, and asks 100 more: 800, rounded up to 1,024 (a multiple of 256)."""
    session = Shape(prompt_mean=100, output_mean=100, turns=4)
    assert longest_request_tokens(TrafficPlan(session)) == 800 and workload_context_tokens(session) == 1024
    assert fit_of(TrafficPlan(session), None, 800).share == 1.0 and fit_of(TrafficPlan(session), None, 799).share == 0.75
    spread = Shape(seed=3, prompt_mean=4096, prompt_stddev=2048, output_mean=1024, output_stddev=512)
    tokens = workload_context_tokens(spread)
    assert tokens % 256 == 0 and fit_of(TrafficPlan(spread), None, tokens).share == 1.0  # over the fit check's sample
    assert fit_of(TrafficPlan(spread), None, longest_request_tokens(TrafficPlan(spread)) - 1).share < 1.0
    assert workload_context_tokens(Shape(reference=True)) is None  # the rigs keep the catalog's context
    assert server_context_tokens(session, ["chat", "quality"]) == 1024
    assert server_context_tokens(session, ["counting", "chat"]) == 4096  # room for the agent parts' own prompts


def test_the_calibration_line_and_the_units_it_asks():
    line = fit([(414, 775), (24, 64), (828, 1530)])
    assert line.calibrated and line.slope == pytest.approx(1.823, abs=0.01) and line.offset == pytest.approx(20, abs=2)
    assert line.units_for(line.tokens_for(300)) == 300
    assert not fit([(100, None), (24, 50)]).calibrated and fit([(10, 5), (20, 4)]).why.startswith("not calibrated")


def test_a_shared_prefix_is_one_system_turn_every_request_carries():
    plan = TrafficPlan(Shape(prompt_mean=50, output_mean=10, shared_prefix_tokens=200))
    made = Prompts(plan, TextMaker.of(0), Calibration())
    first, second = made.first(plan.request(0)), made.first(plan.request(1))
    assert first[0] == second[0] and first[0]["role"] == "system" and units_of(first[0]["content"]) == 200
    assert first[1] != second[1] and plan.request(0).prompt_tokens == 250


def test_a_prompts_file_is_sampled_by_the_seed(tmp_path):
    path = tmp_path / "mine.jsonl"
    lines = [{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": f"Question {i}?"}],
              "max_tokens": 10 + i} for i in range(5)]
    lines[2]["tools"] = [{"type": "function", "function": {"name": "look_up", "parameters": {"type": "object"}}}]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n\n")
    prompts = read_prompts(path)
    plan = TrafficPlan(Shape(seed=4, prompts=prompts))
    order = [plan.request(i).prompt for i in range(5)]
    assert sorted(p.max_tokens for p in order) == [10, 11, 12, 13, 14] and order != list(prompts)
    assert plan.request(5).prompt == order[0] and TrafficPlan(Shape(seed=4, prompts=prompts)).request(3) == plan.request(3)
    assert prompts[2].tools[0]["function"]["name"] == "look_up"


def test_a_trace_keeps_its_lengths_and_shares_its_prefix_blocks(tmp_path):
    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in (
        {"timestamp": 0, "input_length": 1100, "output_length": 30, "hash_ids": [7, 8, 9]},
        {"timestamp": 250.5, "input_length": 700, "output_length": 12, "hash_ids": [7, 11]})))
    trace = read_trace(path)
    assert [(t.timestamp_ms, t.input_length, t.hash_ids) for t in trace] == [(0.0, 1100, (7, 8, 9)),
                                                                             (250.5, 700, (7, 11))]
    plan = TrafficPlan(Shape(trace=trace))
    assert (plan.request(1).prompt_tokens, plan.request(1).output_tokens) == (700, 12)
    made = Prompts(plan, TextMaker.of(0), Calibration())
    one, two = (made.first(plan.request(i))[0]["content"] for i in (0, 1))
    block = made.maker.text(512, "block:7", closing=False)
    assert one.startswith(block) and two.startswith(block) and units_of(one) == 1100 and units_of(two) == 700


@pytest.mark.parametrize("reader,content,message", [
    (read_prompts, "", "holds no request"),
    (read_prompts, "{not json\n", "line 1 of f.jsonl is not JSON"),
    (read_prompts, '{"prompt": "hi"}\n', "line 1 of f.jsonl is not a chat request"),
    (read_prompts, '{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 0}\n', "max_tokens 0"),
    (read_prompts, '{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x"}]}\n',
     "the last message is not the user's"),
    (read_trace, '{"input_length": 10, "output_length": 5}\n', "line 1 of f.jsonl has no timestamp"),
    (read_trace, '{"timestamp": 1, "input_length": 0, "output_length": 5}\n', "input_length 0"),
])
def test_a_bad_traffic_file_is_one_line_naming_the_key_and_line(tmp_path, reader, content, message):
    path = tmp_path / "f.jsonl"
    path.write_text(content)
    with pytest.raises(TrafficFileError) as caught:
        reader(path)
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert str(caught.value).startswith(("prompts:", "trace:"))
