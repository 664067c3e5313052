"""The chat part sends the workload's traffic: long prompts cost TTFT and capacity, every server gets the asked
lengths in its own count, a backend whose limits cannot take the workload is disqualified and never chosen, and
a session carries the model's real replies. Against the fake server that counts tokens its own way
(:mod:`tests.agent.bench.fakes.counted`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.backends import custom_backend, model_name
from agent.bench.command import evidence, runner
from agent.bench.analysis import summary
from rigs.catalog.model import load_catalog

from tests.agent.bench.conftest import make_options, openai_backend
from tests.agent.bench.fakes.counted import Counted
from tests.agent.bench.fakes.openai_fake import FakeOpenAI


def run_counted(tmp_path: Path, model: Counted, *argv: str) -> tuple[int, dict, list[dict], FakeOpenAI]:
    out = tmp_path / "out"
    with FakeOpenAI(model) as server:
        code = runner.run([openai_backend("g6", server.base_url)], make_options("--demos", "chat", *argv), out, None)
    s = json.loads((out / "summary.json").read_text())
    summary.validate(s)
    return code, s, evidence.read_requests(out / "requests.jsonl"), server


@pytest.mark.timeout(120)
def test_long_prompts_cost_ttft_at_c1_and_capacity(tmp_path):
    """One prefill at a time at 0.25 ms a token: a 2,000-token prompt waits about 0.5 s for its first token (its
    length as the server counts it is calibrated to within a few percent), the second of two in flight about 1 s
    and the third of three at least 1.5 s, over the 1,250 ms target; a 100-token prompt's 25 ms holds at every
    level, and its TTFT stays under what 1,000 tokens' prefill would cost. The sleeps are lower bounds, so a level
    that misses misses on any machine; one that holds, and the short prompt's TTFT, would need a request delayed by
    a further quarter of a second to fail (at 0.05 ms a token those margins were 75 ms and 15 ms, and a loaded
    machine took both)."""
    argv = ("--runs", "1", "--concurrency", "auto", "--max-concurrency", "3", "--repeats", "1",
            "--slo", "ttft_p99_ms=1250")
    found = {}
    for name, mean in (("short", 100), ("long", 2000)):
        model = Counted(slots=8, prefill_s_per_token=0.00025, one_prefill_at_a_time=True)
        code, s, records, _ = run_counted(tmp_path / name, model, *argv, "--workload",
                                          f"prompt_input_tokens_mean={mean},output_tokens_mean=4")
        assert code == 0
        found[name] = s["backends"]["g6"]
    short, long = found["short"], found["long"]
    assert long["chat"]["ttft_ms"]["p50"] >= 450 > 250 >= short["chat"]["ttft_ms"]["p50"]
    assert short["slo"]["capacity_concurrency"] == 3
    assert long["slo"]["capacity_concurrency"] == 2 and long["slo"]["search"]["bracket"] == [2, 3]
    assert long["traffic"]["prompt_asked"]["mean"] == 2000 and long["traffic"]["within_goal"] is True


@pytest.mark.timeout(120)
def test_a_server_counting_its_own_way_gets_the_asked_lengths(tmp_path):
    """The server counts a token per 2.7 characters and 5 per message: nothing local counts like that, and the
    calibration still lands the counted mean within 2% of the asked and the spread within 10%."""
    code, s, records, server = run_counted(tmp_path, Counted(), "--runs", "8", "--concurrency", "1,4", "--workload",
                                           "prompt_input_tokens_mean=300,prompt_input_tokens_stddev=60,"
                                           "output_tokens_mean=20,output_tokens_stddev=5,seed=3")
    assert code == 0
    t = s["backends"]["g6"]["traffic"]
    # the cold request (about 300 tokens) is long enough to be the line's long point: one short prompt more
    assert t["source"] == "synthetic" and t["calibration"]["calibrated"] and t["calibration"]["prompts"] == 2
    assert t["requests"] == 40 and abs(t["prompt_mean_error"]) <= 0.02 and abs(t["prompt_stddev_ratio"] - 1) <= 0.10
    assert t["within_goal"] is True and t["differs"] == [] and t["ignore_eos"] is True
    measured = [r for r in records if r["phase"] in ("timed", "sweep")]
    assert all(abs(r["prompt_tokens"] / r["asked_prompt_tokens"] - 1) < 0.05 for r in measured)
    # max_tokens drawn per request, exactly that many asked for (ignore_eos) and written
    assert len({r["requested_tokens"] for r in measured}) > 3
    assert all(r["output_tokens"] == r["requested_tokens"] and r["ignore_eos"] for r in measured)
    # distinct prompts: no two requests share their first sentence; the calibration asked one token once
    firsts = [body["messages"][-1]["content"].split(".")[0] for body in server.requests]
    assert len(set(firsts)) == len(firsts)
    assert server.requests[1]["max_tokens"] == 1 and sum(1 for body in server.requests if body["max_tokens"] == 1) == 1
    report = (tmp_path / "out" / "REPORT.md").read_text()
    assert "## Your traffic" in report and "![Asked against counted](traffic_tokens.png)" in report
    assert "Asked and counted agree on every backend." in report


@pytest.mark.timeout(120)
def test_a_neuron_like_server_over_its_limit_is_disqualified_and_never_chosen(tmp_path, monkeypatch):
    """INF2_URL stands for the inf2 rig and carries its compiled limits (128 prompt tokens, 512 in all): with
    prompts of 100 +- 60 tokens only some fit; it is sent only those, the others are recorded as not sent, and
    though an inf2.xlarge costs less an hour than a g6.xlarge it is disqualified, never chosen nor leader. Its
    server cannot be told to ignore its end of sequence: the replies shorter than asked are recorded, and said."""
    catalog = load_catalog()
    out = tmp_path / "out"
    with FakeOpenAI(Counted()) as g6_server, FakeOpenAI(Counted(max_context=512, chars_per_token=4.0, natural_tokens=5)) as inf2_server:
        inf2 = custom_backend(catalog.get("inf2"), "INF2", inf2_server.base_url, "gemma-4-E2B-it", "inf2.xlarge")
        assert (inf2.max_prompt_tokens, inf2.max_total_tokens) == (128, 512)
        rig = catalog.get("g6")  # g6 and inf2 serve one model (Gemma 4 E2B) by two ids, as the catalog names them
        g6 = openai_backend("g6", g6_server.base_url, model_id=rig.model_id, metadata={
            "instance_type": "g6.xlarge", "region": "us-east-2", **model_name(rig, rig.model_id)})
        code = runner.run([g6, inf2], make_options(
            "--demos", "chat", "--runs", "3", "--concurrency", "auto", "--max-concurrency", "2", "--repeats", "1",
            "--workload", "prompt_input_tokens_mean=100,prompt_input_tokens_stddev=60,output_tokens_mean=8"),
            out, None)
        sent_to_inf2 = [b for b in inf2_server.requests if b["max_tokens"] > 1]
    s = json.loads((out / "summary.json").read_text())
    records = evidence.read_requests(out / "requests.jsonl")
    assert code == 0
    t = s["backends"]["inf2"]["traffic"]
    assert 0 < t["fit"]["share"] < 1 and t["fit"]["max_prompt_tokens"] == 128 and t["not_sent"] > 0
    assert t["disqualified"].startswith("cannot take the workload:") and "128 prompt tokens" in t["disqualified"]
    not_sent = [r for r in records if r["part"] == "chat_not_sent" and r["backend"] == "inf2"]
    assert not_sent and all(r["asked_prompt_tokens"] > 128 for r in not_sent)
    assert all(r["asked_prompt_tokens"] <= 128 for r in records if r["part"] == "chat" and r["backend"] == "inf2")
    assert len(sent_to_inf2) == sum(1 for r in records if r["part"] == "chat" and r["backend"] == "inf2")
    rec = s["recommendation"]
    assert rec["choice"] != "inf2" and rec["leader"] != "inf2"
    assert rec["disqualified"]["inf2"].startswith("cannot take the workload:") and "inf2" not in rec["ranking"]
    assert s["prices"]["backends"]["inf2"]["hourly"]["usd_per_hour"] < s["prices"]["backends"]["g6"]["hourly"]["usd_per_hour"]
    assert t["ignore_eos"] is False and not any(b.get("ignore_eos") for b in sent_to_inf2)
    assert "output tokens: 5.0 on average came back of the 8.0 asked (-37.5%): this server cannot be told" in \
        " ".join(t["differs"])
    report = (out / "REPORT.md").read_text()
    assert "requests of the workload were not sent: they do not fit this backend's limits" in report


@pytest.mark.timeout(60)
def test_a_session_carries_the_real_replies_and_grows(tmp_path):
    code, s, records, server = run_counted(tmp_path, Counted(), "--runs", "3", "--workload",
                                           "prompt_input_tokens_mean=40,output_tokens_mean=6,turns=3")
    assert code == 0
    timed = [r for r in records if r["phase"] == "timed"]
    assert [r["turn"] for r in timed] == [1, 2, 3] and len({r["request_index"] for r in timed}) == 1
    assert timed[0]["prompt_tokens"] < timed[1]["prompt_tokens"] < timed[2]["prompt_tokens"]
    assert timed[1]["asked_prompt_tokens"] == timed[0]["prompt_tokens"] + timed[0]["output_tokens"] + 40
    bodies = server.requests[-3:]
    third = bodies[2]["messages"]
    assert [m["role"] for m in third] == ["user", "assistant", "user", "assistant", "user"]
    assert third[1]["content"] == timed[0]["text"] and third[3]["content"] == timed[1]["text"]
    assert timed[0]["text"] != timed[1]["text"]  # the model's real replies, not a stand-in
    assert s["recommendation"]["workload"]["turns"] == 3


def test_short_replies_of_a_server_that_can_ignore_its_end_of_sequence_name_the_option_not_the_server(tmp_path):
    """llama.cpp and vLLM can be asked for exactly max_tokens (--ignore-eos): a run that did not ask, with the
    reference's prompt, says so, never that the server cannot be told; and "Your traffic" says its lengths include the
    chat template where the peers' do not."""
    code, s, _, _ = run_counted(tmp_path, Counted(natural_tokens=5), "--runs", "2")
    said = " ".join(s["backends"]["g6"]["traffic"]["differs"])
    assert code == 0 and "output tokens: 5.0 on average came back of the 100.0 asked" in said
    assert "exactly that many were not asked for (`--ignore-eos` asks this server" in said and "cannot" not in said
    report = (tmp_path / "out" / "REPORT.md").read_text()
    assert "the chat template included (AIPerf and GuideLLM ask lengths of the user text alone" in report


def test_a_prompts_file_is_priced_at_the_servers_count_with_one_measured_mix_per_backend(tmp_path, monkeypatch):
    """A prompts file's stated lengths are estimates from its words (here 8 units a prompt); the server counts 35
    (its template and its tokenizer). The price is at the server's count: Bedrock's list price (not run) at the mix
    the server measured, and the backend's one measured mix is the same in "Your traffic", its cost block and the
    recommendation."""
    from agent.bench.analysis.recommendation.choose import FILE_COUNT
    from agent.bench.results.run import Prices, RunFile

    def priced(info: RunFile, *_: object, **__: object) -> None:
        info.prices = Prices.model_validate({
            "offline": True, "offline_reason": "test", "backends": {"g6": {"hourly": {"usd_per_hour": 0.8048}}},
            "bedrock_reference": {"model_id": "nova", "usd_per_m_input": 0.035, "usd_per_m_output": 0.14}})

    monkeypatch.setattr("agent.bench.command.run_info.add_prices", priced)
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"messages": [{"role": "user", "content": f"Name the capital of country {i}."}],
                                           "max_tokens": 10}) + "\n" for i in range(4)))
    code, s, _, _ = run_counted(tmp_path, Counted(natural_tokens=5), "--runs", "3", "--concurrency", "auto",
                                "--max-concurrency", "1", "--repeats", "1", "--workload", f"prompts={prompts}")
    b, rec = s["backends"]["g6"], s["recommendation"]
    mix = rec["backends"]["g6"]["input_per_output_measured"]
    assert code == 0 and mix == pytest.approx(b["traffic"]["prompt_counted"]["mean"] / 5, rel=0.01)
    assert b["cost"]["input_per_output"] == mix and f"so it sends {mix:.3g} input tokens per output token" in \
        " ".join(b["traffic"]["differs"])
    assert rec["workload"]["input_per_output"] == mix and rec["workload"]["derived"]["input_per_output"] == FILE_COUNT
    bedrock = next(c for c in rec["curves"] if c["name"] == "bedrock")
    assert bedrock["usd_per_m_output"] == pytest.approx(0.14 + mix * 0.035)


def test_the_open_loop_alone_is_calibrated_and_its_requests_are_your_traffic(tmp_path):
    """--demos open_loop without the chat part: the open loop fits the text to the server's count itself (asked 60,
    the server counts 60), and "Your traffic" compares asked and counted over its requests."""
    code, s, records, _ = run_counted(tmp_path, Counted(natural_tokens=8), "--demos", "open_loop", "--rate", "20",
                                      "--rate-duration", "0.5", "--workload",
                                      "prompt_input_tokens_mean=60,output_tokens_mean=8,arrival=constant")
    t = s["backends"]["g6"]["traffic"]
    sent = [r for r in records if r["part"] == "open_loop"]
    assert code == 0 and t["calibration"]["calibrated"] is True and t["requests"] == len(sent) == 10
    assert t["prompt_asked"]["mean"] == 60 and abs(t["prompt_mean_error"]) <= 0.02 and t["within_goal"] is True
