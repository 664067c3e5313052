"""End to end on the real local rig: llama.cpp's server with SmolLM2-135M, started by the command itself.

Marked ``local_rig``: skipped when the rig is not installed, failed for that in CI. Asserts
structure (calls made, arguments valid, answers present, usage recorded, a valid evidence folder),
never that a 135M model is right.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from agent.bench.command import evidence
from agent.bench.presentation import report
from agent.bench.analysis import summary

pytestmark = [pytest.mark.e2e, pytest.mark.local_rig]


@pytest.mark.timeout(900)  # a CPU-served model on a shared 2-core machine: minutes when others are busy
def test_agent_run_on_the_local_rig_writes_a_valid_evidence_folder(tmp_path):
    from agent import run

    out = tmp_path / "evidence"
    code = run.main(["--backends", "local", "--runs", "2", "--concurrency", "1,2", "--max-tokens", "32",
                     "--out", str(out)], env={})
    files = sorted(p.name for p in out.iterdir())
    for name in ("requests.jsonl", "run.json", "summary.json", "REPORT.md", "decode_tok_per_s.png", "ttft_ms.png"):
        assert name in files
    s = json.loads((out / "summary.json").read_text())
    summary.validate(s)
    local = s["backends"]["local"]
    assert local["toy_model"] and local["constrained"]
    # what served it, read from the running server beside what the local rig is started with
    provenance = {c["fact"]: c for c in local["provenance"]["facts"]}
    assert {f: provenance[f]["verdict"] for f in ("engine", "model", "context_tokens")} == \
        {"engine": "match", "model": "match", "context_tokens": "match"}
    assert provenance["engine_version"]["verdict"] == "not reported" and local["provenance"]["mismatches"] == []

    chat = local["chat"]
    assert chat["requests"] == 2 and chat["errors"] == 0 and chat["streamed"]
    assert chat["output_tokens"]["n"] == 2 and chat["usage_missing"] == 0  # usage recorded, from the server
    assert chat["ttft_ms"]["n"] == 2 and chat["decode_tok_per_s"]["p50"] > 0 and chat["cold"]["e2e_ms"] > 0
    assert [lv["concurrency"] for lv in chat["levels"]] == [1, 2] and chat["levels"][1]["requests"] == 4

    for part in ("counting", "counting_strict"):
        c = local[part]
        assert c["runs"] == 2 and c["constrained"] is True
        assert c["graded"] + c["errors"] == 2 and (c["correct_ci95"] is None) == (c["graded"] == 0)
        for run_ in c["detail"]:
            # the constrained first turn always makes exactly one call, with a valid op and an integer value
            assert run_["tool_calls"] >= 1 and run_["invalid_tool_calls"] == 0
            assert run_["filters"], run_
            assert run_["failure"] or run_["answer"].strip()  # an answer, or the reason there is none
            assert (run_["verdict"] == "failed") is bool(run_["failure"]) and run_["reading"]
            assert run_["output_tokens"]

    o = s["orchestrator"]
    assert o["ran"] and o["backend"] == "local" and o["constrained"]
    # Structure the grammar guarantees, not what a 135M model gets right: its first turn is one call
    # (free-text arguments bounded, so it ends), its text answer is bounded, and the follow-up turn
    # commits a winner the grammar limits to "local".
    assert o["asked"] == ["local"] and len(o["asks"]) == 1 and not o["failure"]
    assert o["submitted"] and o["winner_submitted"] == "local" and o["winner_verdict"] == "right"

    records = evidence.read_requests(out / "requests.jsonl")
    again = summary.summarize(records, json.loads((out / "run.json").read_text()))
    assert again.as_json() == s
    text = (out / "REPORT.md").read_text()
    assert text == report.render(summary.validate(s))
    assert "CPU-served toy model" in text and "constrained" in text
    assert code == (0 if all(b["completed"] for b in s["backends"].values()) else 1)


@pytest.mark.timeout(900)
def test_the_quality_lane_on_the_local_rig_is_graded_reported_and_recomputable(tmp_path):
    """The lane as a user runs it on the toy model: every item graded or failed, never lost; the precision
    section in REPORT.md and REPORT.html, labelled as the toy model's; the summary a function of the evidence.
    Twelve items: each of the lane's six suites twice (taken in turn). What the 135M model answers is not asserted."""
    from agent import run

    out = tmp_path / "evidence"
    code = run.main(["--backends", "local", "--demos", "quality", "--quality-n", "12", "--out", str(out)], env={})
    s = json.loads((out / "summary.json").read_text())
    q = s["backends"]["local"]["quality"]
    assert q["items"] == 12 and q["graded"] + q["failed"] + q["not_sent"] == 12 and q["not_sent"] == 0
    assert s["backends"]["local"]["weights"]["precision"] == "GGUF Q4_1"
    assert s["quality_lane"]["reference"] == "local" and s["quality_pairs"] == []
    records = evidence.read_requests(out / "requests.jsonl")
    assert len(records) == 12 and {r["part"] for r in records} == {"quality"}
    assert sorted(Counter(r["suite"] for r in records).values()) == [2] * 6
    again = summary.summarize(records, json.loads((out / "run.json").read_text()))
    assert again.as_json() == s
    text = (out / "REPORT.md").read_text()
    assert text == report.render(summary.validate(s))
    assert "## Precision: what you trade" in text and "every figure here is the toy model's" in text
    assert "Precision: what you trade" in (out / "REPORT.html").read_text()
    assert json.loads((out / "run.json").read_text())["options"]["backends"] == ["local"]
    assert code == (0 if s["backends"]["local"]["completed"] else 1)


@pytest.mark.timeout(900)
def test_a_rag_workload_on_the_local_rig_is_sent_at_its_lengths_as_the_server_counts_them(tmp_path):
    """GuideLLM's rag preset on the real llama.cpp server: the fit checked against its context before anything is
    sent, its count calibrated on its own usage, the timed request's prompt within 2% of the asked in that count,
    and "Your traffic" in both reports. The prompts are cut to 2,304 +- 256 tokens and the replies to 8: the timed
    prompt is still longer than a slot's even share of the context (8,192 tokens over 4 slots), so it is served
    only through the unified cache, while the preset's 4,096 cost two prefills of 30 to 50 s each on a CPU-served
    toy model (one server thread on 2 cores)."""
    from agent import run

    out = tmp_path / "evidence"
    code = run.main(["--backends", "local", "--demos", "chat", "--runs", "1", "--concurrency", "1", "--workload",
                     "preset=rag,prompt_input_tokens_mean=2304,prompt_input_tokens_stddev=256,output_tokens_mean=8,"
                     "output_tokens_stddev=0", "--out", str(out)], env={})
    s = json.loads((out / "summary.json").read_text())
    w, t = s["recommendation"]["workload"], s["backends"]["local"]["traffic"]
    assert (w["preset"], w["prompt_input_tokens_mean"], w["prompt_input_tokens_stddev"]) == ("rag", 2304, 256)
    assert t["source"] == "synthetic" and t["fit"]["share"] == 1.0 and t["fit"]["max_total_tokens"] == 8192
    assert t["calibration"]["calibrated"] and t["calibration"]["prompts"] == 2  # the cold request is the long point
    assert t["requests"] == 1 and t["not_sent"] == 0 and t["output_counted"]["values"] == [8]
    asked, counted = t["prompt_asked"]["values"][0], t["prompt_counted"]["values"][0]
    assert asked > 2048 and abs(counted / asked - 1) <= 0.02, (asked, counted)
    records = [r for r in evidence.read_requests(out / "requests.jsonl") if r["part"] == "chat"]
    assert [r["phase"] for r in records] == ["cold", "timed"] and all(not r["error"] for r in records)
    for name in ("REPORT.md", "REPORT.html"):
        assert "Your traffic" in (out / name).read_text()
    assert code == (0 if s["backends"]["local"]["completed"] else 1)
