"""The SLO capacity end to end against a paced server whose answer is known in advance.

The paced server has 4 slots; a reply holds its slot for at least 0.97 s (first token after
20 ms, then 19 tokens 50 ms apart). At 4 requests in flight or fewer nobody waits: TTFT is
about 20 ms. Beyond 4, the extra requests wait for a whole reply first, so their TTFT is at
least 0.99 s. With a 600 ms TTFT limit the capacity is therefore 4, decided by queueing: a
loaded machine would have to delay a request by more than half a second to flip a level that
holds, and cannot make a queued request faster than its sleeps. Every figure checked here is
also recomputed from ``requests.jsonl`` by hand, independently of ``agent.bench.analysis.slo``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from agent.bench.command import evidence, runner
from agent.bench.presentation import report
from agent.bench.analysis import summary

from tests.agent.bench.conftest import make_options

from tests.agent.bench.conftest import openai_backend
from tests.agent.bench.fakes.openai_fake import FakeOpenAI
from tests.agent.bench.fakes.paced import Pace

TARGET = "ttft_p99_ms=600,itl_p99_ms=250"
TTFT_LIMIT_MS, ITL_LIMIT_MS = 600.0, 250.0


def run_paced(tmp_path: Path, pace: Pace, *argv: str, **backend: object) -> tuple[int, dict, list[dict], Path]:
    out = tmp_path / "out"
    with FakeOpenAI(pace) as server:
        b = openai_backend(str(backend.pop("name", "g6")), server.base_url, **backend)
        code = runner.run([b], make_options("--demos", "chat", "--runs", "1", "--max-tokens", str(pace.tokens),
                                            *argv), out, None)
    return code, json.loads((out / "summary.json").read_text()), evidence.read_requests(out / "requests.jsonl"), out


def recompute(records: list[dict], c: int) -> dict:
    """A level's figures from the raw records, by the documented rule, without agent.bench.analysis.slo."""
    level = [r for r in records if r["phase"] in ("timed", "sweep") and r["concurrency"] == c]
    by_repeat = defaultdict(list)
    for r in level:
        by_repeat[r.get("repeat", 1)].append(r)
    goodput, met_total = [], 0
    for rs in by_repeat.values():
        span = max(r["sent_s"] + r["done_ms"] / 1000 for r in rs) - min(r["sent_s"] for r in rs)
        met = [r for r in rs if not r["error"] and r["first_ms"] <= TTFT_LIMIT_MS
               and (r["chunk_ms"][-1] - r["chunk_ms"][0]) / (len(r["chunk_ms"]) - 1) <= ITL_LIMIT_MS]
        met_total += len(met)
        goodput.append((len(met) / span, sum(r["output_tokens"] for r in met) / span))
    n = len(goodput)
    return {"requests": len(level), "repeats": n, "met": met_total,
            "goodput_req_per_s": sum(g for g, _ in goodput) / n, "goodput_output_tok_per_s": sum(t for _, t in goodput) / n}


@pytest.mark.timeout(240)
@pytest.mark.real_plots  # the plot's size is read
def test_auto_search_finds_the_capacity_set_by_the_slots(tmp_path):
    pace = Pace(slots=4, ttft_s=0.02, tpot_s=0.05, tokens=20)
    code, s, records, out = run_paced(tmp_path, pace, "--concurrency", "auto", "--slo", TARGET, "--repeats", "2")
    assert code == 0
    summary.validate(s)
    slo = s["backends"]["g6"]["slo"]
    assert slo["target"] == {"ttft_p99_ms": 600.0, "itl_p99_ms": 250.0, "e2e_p99_ms": None}
    assert slo["target_source"] == "option"
    assert slo["capacity_concurrency"] == 4
    assert slo["search"]["order"] == [1, 2, 4, 8, 6, 5] and slo["search"]["stopped"] == "bracketed"
    assert slo["search"]["bracket"] == [4, 5] and slo["search"]["exact"] is True
    assert slo["capacity_reason"].startswith("held at 4 (8/8 requests met it); missed at 5 (4/5 requests met it")
    levels = {lv["concurrency"]: lv for lv in slo["levels"]}
    for c in (1, 2, 4):  # held: every repeat ran, every request in time
        lv = levels[c]
        assert (lv["repeats"], lv["requests"], lv["errors"], lv["met"], lv["holds"]) == (2, 2 * c, 0, 2 * c, True)
        # c replies of 20 tokens each take at least 0.97 s: goodput is at most c / 0.97 req/s
        assert 0.5 * c / pace.service_s <= lv["goodput_req_per_s"] <= c / pace.service_s
        assert lv["goodput_output_tok_per_s"] == pytest.approx(20 * lv["goodput_req_per_s"], rel=2e-3)
        assert lv["ttft_p99_ms"] < TTFT_LIMIT_MS and lv["ci95"]["goodput_req_per_s"][0] <= lv["goodput_req_per_s"]
    for c in (5, 6, 8):  # missed: the c - 4 queued requests of the first repeat are late, the repeat 2 is not run
        lv = levels[c]
        assert (lv["repeats"], lv["requests"], lv["met"], lv["holds"], lv["stopped"]) == (1, c, 4, False, "missed")
        assert lv["met_share"] == round(4 / c, 4) and lv["missed_by"] == {"ttft_p99_ms": c - 4}
        assert lv["ttft_p99_ms"] >= 1000 * pace.service_s
    for c, lv in levels.items():  # every figure, recomputed from requests.jsonl by hand
        again = recompute(records, c)
        assert {k: lv[k] for k in again} == pytest.approx(again, rel=1e-3, abs=1e-3), c
    assert all(r.get("repeat", 1) in (1, 2) for r in records if r["phase"] in ("timed", "sweep"))

    # the evidence recomputes, the report and the plot show it
    again = summary.summarize(records, json.loads((out / "run.json").read_text()))
    assert again.as_json() == s
    text = (out / "REPORT.md").read_text()
    assert text == report.render(summary.validate(s))
    assert "## Capacity under a latency target (goodput)" in text
    assert "| g6 | 4 | auto: 1 -> 2 -> 4 -> 8 -> 6 -> 5 |" in text
    assert "![Latency p99 against concurrency, with the target](slo_latency_ms.png)" in text
    assert (out / "slo_latency_ms.png").stat().st_size > 10_000


@pytest.mark.timeout(120)
def test_a_one_at_a_time_server_has_capacity_1_and_the_report_says_why(tmp_path):
    # one slot, replies in one piece after 0.6 s: alone a request is in time (TTFT = the whole reply, 0.6 s
    # < 1 s); the second of two in flight waits for the first, so its TTFT is at least 1.2 s
    pace = Pace(slots=1, ttft_s=0.05, tpot_s=0.05, tokens=12, stream=False)
    code, s, records, _ = run_paced(tmp_path, pace, "--concurrency", "auto", "--slo", "ttft_p99_ms=1000",
                                    "--repeats", "2", name="inf2", kind="neuron", tool_calls=False,
                                    model_id="gemma-4-E2B-it", metadata={"instance_type": "inf2.xlarge"})
    assert code == 0
    slo = s["backends"]["inf2"]["slo"]
    assert slo["capacity_concurrency"] == 1 and slo["search"]["order"] == [1, 2]
    assert "one request at a time" in slo["capacity_reason"] and "fixed shape" in slo["capacity_reason"]
    two = slo["levels"][1]
    assert (two["requests"], two["met"], two["one_piece_replies"]) == (2, 1, 2)
    assert "came in one piece" in slo["capacity_reason"]
    assert all(not r["streamed"] for r in records if r["phase"] != "cold")


@pytest.mark.timeout(120)
def test_given_levels_run_in_full_with_their_repeats(tmp_path):
    # two slots, replies of at least 0.37 s: of 4 in flight, 2 wait for a whole reply (TTFT >= 0.38 s)
    pace = Pace(slots=2, ttft_s=0.01, tpot_s=0.04, tokens=10)
    code, s, records, _ = run_paced(tmp_path, pace, "--concurrency", "1,4", "--slo", "ttft_p99_ms=300",
                                    "--repeats", "2")
    assert code == 0
    slo = s["backends"]["g6"]["slo"]
    assert slo["search"]["mode"] == "levels" and slo["search"]["order"] == [1, 4]
    four = slo["levels"][1]
    assert (four["repeats"], four["requests"], four["holds"]) == (2, 8, False)  # missed, yet every repeat ran
    assert four["met"] <= 4 and four["missed_by"]["ttft_p99_ms"] >= 4 and slo["capacity_concurrency"] == 1
    chat = s["backends"]["g6"]["chat"]
    assert [lv["requests"] for lv in chat["levels"]] == [2, 8]
    # the chat table's rate is over the repeats' own wall times, not the gap between them
    per_repeat = sum(p["wall_s"] for p in four["per_repeat"])
    assert chat["levels"][1]["wall_s"] == pytest.approx(per_repeat, abs=2e-3)


@pytest.mark.timeout(120)
def test_the_time_budget_stops_the_search_and_says_so(tmp_path):
    pace = Pace(slots=4, ttft_s=0.01, tpot_s=0.01, tokens=5)
    code, s, records, out = run_paced(tmp_path, pace, "--concurrency", "auto", "--slo-budget", "0.001")
    slo = s["backends"]["g6"]["slo"]
    assert slo["target_source"] == "default" and "Nielsen" in slo["target_basis"]
    assert slo["search"]["stopped"] == "budget" and slo["search"]["order"] == [1]
    assert slo["levels"][0]["verdict"] == "undecided" and slo["levels"][0]["requests"] == 1
    assert slo["capacity_concurrency"] is None and "time budget" in slo["capacity_reason"]
    assert json.loads((out / "run.json").read_text())["slo_search"]["g6"]["levels"][0]["stopped"] == "budget"
    assert code == 0


@pytest.mark.timeout(120)
def test_a_level_stops_sending_once_it_can_no_longer_hold(tmp_path):
    # one slot, replies of at least 0.42 s: at 2 in flight the second request waits (TTFT >= 0.44 s > 0.3 s).
    # Level 2 plans 2 x 4 x 2 = 16 requests and allows no miss: the third request is sent before the first
    # miss is known (at 0.84 s), nothing after it.
    pace = Pace(slots=1, ttft_s=0.02, tpot_s=0.1, tokens=5)
    code, s, records, out = run_paced(tmp_path, pace, "--runs", "4", "--concurrency", "auto", "--slo",
                                      "ttft_p99_ms=300", "--repeats", "2")
    slo = s["backends"]["g6"]["slo"]
    assert slo["capacity_concurrency"] == 1 and slo["search"]["order"] == [1, 2]
    one, two = slo["levels"]
    assert (one["requests"], one["met"], one["holds"]) == (8, 8, True)
    assert (two["requests"], two["repeats"], two["planned_requests"], two["stopped"]) == (3, 1, 16, "missed")
    assert two["verdict"] == "misses" and two["met"] == 1
    logged = json.loads((out / "run.json").read_text())["slo_search"]["g6"]["levels"][1]
    assert logged == {"concurrency": 2, "planned_requests": 16, "repeats_planned": 2, "repeats_run": 1,
                      "stopped": "missed"}
    assert code == 0
