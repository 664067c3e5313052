"""``--workload``: the user's traffic from KEY=VALUE or a YAML file, its defaults, its rates, and one clear
line for every bad input."""

from __future__ import annotations

import pytest

from agent.bench.analysis.traffic import DEFAULTS, Traffic, WorkloadError, parse_spec
from agent.bench.results.formatting import volume as describe_volume

from tests.agent.bench.conftest import make_options


def test_defaults_are_stated_and_marked():
    """With no length given the run sends the reference's prompt and 100 tokens, and prices what that sends."""
    t = Traffic.from_dict(None)
    assert (t.output_tokens_per_month, t.input_per_output, t.peak_to_average, t.tool_calls) == (1e8, 0.2, 3.0, True)
    assert (t.preset, t.prompt_input_tokens_mean, t.output_tokens_mean) == ("reference", 20.0, 100.0)
    assert {*DEFAULTS, "preset"} <= set(t.defaulted) and t.source == "defaults"
    assert t.derived["input_per_output"].startswith("the lengths sent") and t.shape().reference


@pytest.mark.parametrize("text,expected", [
    ("output_tokens_per_month=2B", 2e9), ("output_tokens_per_month=500M", 5e8), ("output_tokens_per_month=250k", 2.5e5),
    ("output_tokens_per_month=2e9", 2e9), ("output_tokens_per_month=2_000_000", 2e6),
    ("output-tokens-per-month=1.9b", 1.9e9),
])
def test_volumes_in_the_forms_people_write(text, expected):
    assert parse_spec(text).output_tokens_per_month == pytest.approx(expected)


def test_a_spec_sets_only_what_it_names():
    t = parse_spec("input_per_output=3:1,peak_to_average=2,tool_calls=no")
    assert (t.input_per_output, t.peak_to_average, t.tool_calls) == (3.0, 2.0, False)
    assert "output_tokens_per_month" in t.defaulted and t.source == "option"
    assert not {"input_per_output", "peak_to_average", "tool_calls"} & {*t.defaulted, *t.derived}
    # the lengths sent follow from it: 3 x the default 100 output tokens
    assert (t.prompt_input_tokens_mean, t.output_tokens_mean, t.preset) == (300.0, 100.0, None)


def test_hand_computed_rates():
    # 2.628 B a month over 730 h x 3600 s = 1,000 tok/s; the busiest hour at 2.5x: 2,500 tok/s
    t = parse_spec("output_tokens_per_month=2.628B,peak_to_average=2.5")
    assert t.average_output_tok_per_s == pytest.approx(1000.0)
    assert t.peak_output_tok_per_s == pytest.approx(2500.0)
    assert t.with_volume(5.256e9).average_output_tok_per_s == pytest.approx(2000.0)


def test_a_yaml_file(tmp_path):
    path = tmp_path / "traffic.yaml"
    path.write_text("output_tokens_per_month: 1.5B\ninput_per_output: 8\npeak_to_average: 4\ntool_calls: false\n")
    t = parse_spec(str(path))
    assert (t.output_tokens_per_month, t.input_per_output, t.peak_to_average, t.tool_calls) == (1.5e9, 8.0, 4.0, False)
    path.write_text("output_tokens_per_month: 2,000,000\n")
    assert parse_spec(str(path)).output_tokens_per_month == 2e6
    assert t.source == "file traffic.yaml" and not (set(DEFAULTS) - {"arrival", "burstiness"}) & set(t.defaulted)  # the open loop's keys are not in it


def test_recorded_and_read_back_the_same():
    t = parse_spec("output_tokens_per_month=7M,tool_calls=no")
    again = Traffic.from_dict(t.record().model_dump())
    assert again == t


@pytest.mark.parametrize("text,message", [
    ("output_tokens_per_month=lots", "output_tokens_per_month: 'lots' is not a number"),
    ("output_tokens_per_month=0", "output_tokens_per_month must be more than 0"),
    ("peak_to_average=0.5", "peak_to_average must be at least 1"),
    ("input_per_output=-1", "input_per_output must be 0 or more"),
    ("tool_calls=maybe", "tool_calls: 'maybe' is not yes or no"),
    ("users=5", "unknown key 'users'; the keys are output_tokens_per_month, input_per_output"),
    ("output_tokens_per_month", "no file 'output_tokens_per_month'; give KEY=VALUE"),
    ("output_tokens_per_month=", "'output_tokens_per_month=' is not KEY=VALUE"),
    ("input_per_output=1:0", "divides by zero"),
    ("output_tokens_per_month=nan", "is not a number"),
    ("output_tokens_per_month=inf", "is not a number"),
])
def test_bad_input_is_one_line_that_names_it(text, message):
    with pytest.raises(WorkloadError) as caught:
        parse_spec(text)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_every_problem_together():
    with pytest.raises(WorkloadError) as caught:
        parse_spec("peak_to_average=x,tool_calls=perhaps")
    assert "peak_to_average: 'x'" in str(caught.value) and "tool_calls: 'perhaps'" in str(caught.value)


@pytest.mark.parametrize("content,message", [
    ("- a\n- b\n", "expected a mapping"),
    ("output_tokens_per_month: [1\n", "not readable YAML"),
    ("peak_to_average: 0\n", "peak_to_average must be at least 1"),
])
def test_bad_yaml_files(tmp_path, content, message):
    path = tmp_path / "w.yaml"
    path.write_text(content)
    with pytest.raises(WorkloadError, match=message):
        parse_spec(str(path))


def test_the_option_exits_2_with_the_problem(capsys):
    with pytest.raises(SystemExit) as done:
        make_options("--workload", "peak_to_average=0")
    assert done.value.code == 2
    assert "argument --workload: peak_to_average must be at least 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        make_options("--min-accuracy", "120%")
    assert "'120%' is not between 0 and 1" in capsys.readouterr().err
    assert make_options("--min-accuracy", "85%").min_accuracy == pytest.approx(0.85)


@pytest.mark.parametrize("tokens,text", [(1.9e9, "1.9 B"), (4.196e9, "4.2 B"), (1e8, "100 M"), (12_345, "12.3 k"),
                                         (999, "999"), (2.5e12, "2.5 T")])
def test_volumes_in_words(tokens, text):
    assert describe_volume(tokens) == text


# --- what a request is: lengths, presets, files, sessions ------------------------------------------------------


def test_the_lengths_given_send_and_price_the_same_traffic():
    """SageMaker AI's and AIPerf's keys: input_per_output follows from them; given alone it makes them."""
    t = parse_spec("prompt_input_tokens_mean=1000,output_tokens_mean=200")
    assert (t.input_per_output, t.preset, t.prompt_input_tokens_stddev) == (5.0, None, 0.0)
    assert t.derived["input_per_output"].startswith("the lengths sent") and "prompt_input_tokens_stddev" in t.defaulted
    shape = t.shape()
    assert (shape.prompt_mean, shape.output_mean, shape.reference, shape.synthetic) == (1000.0, 200.0, False, True)
    assert parse_spec("input_per_output=5,prompt_input_tokens_mean=1040,output_tokens_mean=200").input_per_output == 5
    # a session's turn k carries the prefix, k user turns and k - 1 replies: (100 + 300 x 2 + 100 x 1) / 100 = 8
    assert parse_spec("prompt_input_tokens_mean=300,output_tokens_mean=100,turns=3,shared_prefix_tokens=100"
                      ).input_per_output == 8.0
    assert parse_spec("input_per_output=8,turns=3,shared_prefix_tokens=100").prompt_input_tokens_mean == 300.0


def test_a_preset_gives_its_lengths_and_a_key_beside_it_wins():
    chat = parse_spec("preset=chat")
    assert (chat.prompt_input_tokens_mean, chat.prompt_input_tokens_stddev, chat.output_tokens_mean) == (512, 128, 256)
    assert chat.derived["output_tokens_mean"] == "preset chat" and chat.input_per_output == 2.0
    mine = parse_spec("preset=chat,output_tokens_mean=128")
    assert mine.output_tokens_mean == 128 and "output_tokens_mean" not in mine.derived and mine.input_per_output == 4
    agentic = parse_spec("preset=agentic")
    assert (agentic.turns, agentic.shared_prefix_tokens) == (38, 8359)


def test_a_prompts_file_gives_the_requests(tmp_path):
    (tmp_path / "mine.jsonl").write_text('{"messages": [{"role": "user", "content": "Hello there, how are you?"}], '
                                         '"max_tokens": 50}\n')
    (tmp_path / "w.yaml").write_text("prompts: mine.jsonl\nseed: 2\n")
    t = parse_spec(str(tmp_path / "w.yaml"))  # relative to the YAML's folder
    assert t.prompts == str(tmp_path / "mine.jsonl") and t.output_tokens_mean == 50 and t.preset is None
    assert t.derived["prompt_input_tokens_mean"] == "the prompts file" and t.shape().prompts[0].max_tokens == 50
    again = Traffic.from_dict(t.record().model_dump())  # read back from run.json without the file
    (tmp_path / "mine.jsonl").unlink()
    assert Traffic.from_dict(t.record().model_dump()) == again == t


def _bad_files(tmp_path):
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "notchat.jsonl").write_text('{"text": "hello"}\n')
    (tmp_path / "notrace.jsonl").write_text('{"input_length": 10, "output_length": 2}\n')
    (tmp_path / "trace.jsonl").write_text('{"timestamp": 0, "input_length": 10, "output_length": 2}\n')
    (tmp_path / "chat.jsonl").write_text('{"messages": [{"role": "user", "content": "hi"}]}\n')


@pytest.mark.parametrize("spec,message", [
    ("prompt_input_tokens_mean=0", "prompt_input_tokens_mean must be more than 0 tokens"),
    ("output_tokens_mean=-5", "output_tokens_mean must be more than 0 tokens"),
    ("prompt_input_tokens_stddev=-1,prompt_input_tokens_mean=10", "prompt_input_tokens_stddev must be 0 or more"),
    ("prompt_input_tokens_stddev=50", "prompt_input_tokens_stddev without prompt_input_tokens_mean: give the mean"),
    ("output_tokens_stddev=5", "output_tokens_stddev without output_tokens_mean"),
    ("preset=huge", "preset: 'huge' is not one of reference, chat, rag, summarization, code, agentic"),
    ("turns=0", "turns must be at least 1"),
    ("turns=2.5", "turns: '2.5' is not a whole number"),
    ("shared_prefix_tokens=-3", "shared_prefix_tokens must be 0 or more tokens"),
    ("think_time_s=2", "think_time_s is the pause between a session's turns: give turns=N"),
    ("think_time_s=-1,turns=2", "think_time_s must be 0 or more seconds"),
    ("trace_speed=2", "trace_speed scales a trace's timing: give trace=FILE too"),
    ("seed=-1", "seed must be 0 or more"),
    ("input_per_output=5,prompt_input_tokens_mean=2000,output_tokens_mean=100",
     "input_per_output=5 disagrees with the lengths, which send 20 input tokens per output token"),
    ("prompts={d}/nothing.jsonl", "prompts: cannot read"),
    ("prompts={d}/empty.jsonl", "prompts: {d}/empty.jsonl holds no request"),
    ("prompts={d}/notchat.jsonl", "prompts: line 1 of notchat.jsonl is not a chat request"),
    ("trace={d}/notrace.jsonl", "trace: line 1 of notrace.jsonl has no timestamp"),
    ("trace={d}/trace.jsonl,prompt_input_tokens_mean=10", "trace: the file gives the requests; leave out "
     "prompt_input_tokens_mean"),
    ("prompts={d}/chat.jsonl,trace={d}/trace.jsonl", "prompts: the file gives the requests; leave out trace"),
    ("prompts={d}/chat.jsonl,preset=chat", "prompts: the file gives the requests; leave out preset"),
])
def test_every_bad_value_is_one_line_naming_the_key_and_the_fix(tmp_path, spec, message):
    _bad_files(tmp_path)
    with pytest.raises(WorkloadError) as caught:
        parse_spec(spec.format(d=tmp_path))
    text = str(caught.value)
    assert message.format(d=tmp_path) in text and "\n" not in text and text.startswith("--workload")


def test_a_bad_workload_exits_2_before_anything_is_written(tmp_path, capsys):
    with pytest.raises(SystemExit) as done:
        make_options("--workload", "prompt_input_tokens_mean=0", "--out", str(tmp_path / "out"))
    assert done.value.code == 2 and not (tmp_path / "out").exists()
    assert "argument --workload: prompt_input_tokens_mean must be more than 0 tokens" in capsys.readouterr().err


def test_max_tokens_is_the_output_mean_where_the_workload_states_none():
    from agent.bench.command import runner
    from agent.bench.command.options import BenchOptions, OptionError

    options = BenchOptions.from_namespace(make_options("--max-tokens", "50"))
    assert (options.max_tokens, options.workload.preset, options.workload.input_per_output) == (50, "reference", 0.4)
    assert options.workload.derived["output_tokens_mean"] == "--max-tokens" and "preset" in options.workload.defaulted
    assert BenchOptions.from_namespace(make_options("--workload", "input_per_output=5", "--max-tokens", "40")
                                       ).workload.prompt_input_tokens_mean == 200
    with pytest.raises(OptionError, match="--max-tokens 50 and the workload's output_tokens_mean 100 both say"):
        runner.check_options(make_options("--workload", "output_tokens_mean=100", "--max-tokens", "50"))
