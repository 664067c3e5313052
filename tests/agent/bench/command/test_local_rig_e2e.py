"""End to end on the real local rig: llama.cpp's server with SmolLM2-135M, started by the command itself.

Marked ``local_rig``: skipped when the rig is not installed, failed for that in CI. Asserts
structure (calls made, arguments valid, answers present, usage recorded, a valid evidence folder),
never that a 135M model is right.
"""

from __future__ import annotations

import json

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
    What the 135M model answers is not asserted."""
    from agent import run

    out = tmp_path / "evidence"
    code = run.main(["--backends", "local", "--demos", "quality", "--quality-n", "24", "--out", str(out)], env={})
    s = json.loads((out / "summary.json").read_text())
    q = s["backends"]["local"]["quality"]
    assert q["items"] == 24 and q["graded"] + q["failed"] + q["not_sent"] == 24 and q["not_sent"] == 0
    assert s["backends"]["local"]["weights"]["precision"] == "GGUF Q4_1"
    assert s["quality_lane"]["reference"] == "local" and s["quality_pairs"] == []
    records = evidence.read_requests(out / "requests.jsonl")
    assert len(records) == 24 and {r["part"] for r in records} == {"quality"}
    again = summary.summarize(records, json.loads((out / "run.json").read_text()))
    assert again.as_json() == s
    text = (out / "REPORT.md").read_text()
    assert text == report.render(summary.validate(s))
    assert "## Precision: what you trade" in text and "every figure here is the toy model's" in text
    assert "Precision: what you trade" in (out / "REPORT.html").read_text()
    assert json.loads((out / "run.json").read_text())["options"]["backends"] == ["local"]
    assert code == (0 if s["backends"]["local"]["completed"] else 1)
