"""The ``quality`` part end to end through the runner, against the scripted OpenAI-compatible server
(:mod:`.fakes`) answering each item by its question: reference answers score every item, a known 5%
of wrong answers are exactly the items graded wrong and are flagged against the reference (McNemar,
the flips counted exactly), two servers answering alike show no flip and no difference, two that
serve the same weights and differ are flagged as a fault, a failed request is never graded, an item
over a backend's prompt limit is recorded as not sent; the run sends exactly the exported items; the
summary is recomputed from ``requests.jsonl``; ``python -m agent.quality grade`` regrades the folder
and writes nothing into it."""

from __future__ import annotations

import json
import socket
from fractions import Fraction
from pathlib import Path

import pytest

from agent import quality as quality_command
from agent.backends import catalog_metadata
from agent.bench.analysis import summary
from agent.bench.command.options import BenchOptions
from agent.bench.command import evidence, runner
from agent.bench.grading.quality import verdicts
from agent.bench.parts import quality, stopping
from agent.bench.tasks.quality import lane
from agent.bench.tasks.quality.items import MAX_TOKENS, SYSTEM_PROMPT
from agent.bench.presentation import report
from agent.bench.results.constants import CUT_OFF_INTERRUPTED, NOT_RUN_INTERRUPTED
from agent.run import build_parser
from rigs.catalog.model import load_catalog

from tests.agent.bench.conftest import make_options, openai_backend

from tests.agent.bench.conftest import run_demo
from tests.agent.bench.fakes.openai_fake import FakeOpenAI
from tests.agent.bench.fakes.scripted import Script


def wrong_answer(item: lane.Item) -> str:
    if item.grading["kind"] == "number":
        return str(Fraction(item.answer) + 1)
    return next(label for label in item.grading["labels"] if label != item.answer)


def answering(items, *, wrong=frozenset(), failing=frozenset()) -> Script:
    """A model that answers each item with its reference answer, but a wrong one for the ids in
    ``wrong`` and an HTTP 500 for those in ``failing``."""
    by_question = {i.question: i for i in items}

    def choose(body):
        item = by_question[body["messages"][-1]["content"]]
        if item.id in failing:
            return Script(mode="http500")
        return Script(text=wrong_answer(item) if item.id in wrong else item.answer)

    return Script(choose=choose)


@pytest.fixture(scope="module")
def items600():
    return lane.select(600, 0)


def run(tmp_path: Path, backends, *argv: str) -> tuple[int, dict, list[dict], Path]:
    return run_demo(tmp_path, backends, "quality", *argv)


def outcomes(records, backend: str) -> dict[str, str]:
    return {item: v.outcome for item, v in verdicts(records)[backend].items()}


def rig(name: str, url: str):
    """Backend ``name`` at ``url``, carrying what the catalog states it serves (as discovery gives it)."""
    spec = load_catalog().get(name)
    return openai_backend(name, url, model_id=spec.model_id,
                          metadata={**catalog_metadata(spec, "us-east-2", spec.model_id), "region": "us-east-2"})


def pair(s: dict, a: str, b: str) -> dict:
    return next(p for p in s["quality_pairs"] if (p["a"], p["b"]) == (a, b))


def recomputed(out: Path, s: dict) -> None:
    """The summary is a function of the evidence: recomputed from requests.jsonl and run.json, it is the same."""
    again = summary.summarize(evidence.read_requests(out / "requests.jsonl"), json.loads((out / "run.json").read_text()))
    assert again.as_json() == s
    assert (out / "REPORT.md").read_text() == report.render(summary.validate(s))


def test_reference_answers_score_every_item_and_the_run_sends_exactly_the_exported_items(tmp_path, items600):
    with FakeOpenAI(answering(items600)) as fake:
        code, s, records, out = run(tmp_path, [openai_backend("g6", fake.base_url)], "--quality-n", "600",
                                    "--quality-concurrency", "8")
        sent = list(fake.requests)
    assert code == 0 and s["backends"]["g6"]["completed"]
    right = sum(o == "right" for o in outcomes(records, "g6").values())
    assert len(records) == 600 and right / 600 >= 0.99 and right == 600
    block = s["backends"]["g6"]["quality"]
    assert (block["items"], block["right"], block["graded"], block["accuracy"]) == (600, 600, 600, 1.0)
    assert block["ci95_low"] >= 0.99 and sum(x["graded"] for x in block["by_suite"].values()) == 600
    recomputed(out, s)
    # what went over the wire is what export writes: messages with the system turn, cap, temperature 0
    rows = {r["id"]: r for r in (i.row(lane.version()) for i in lane.select(600, 0))}
    assert sorted(json.dumps([b["messages"], b["max_tokens"]]) for b in sent) == sorted(
        json.dumps([r["messages"], r["max_tokens"]]) for r in rows.values())
    assert all(b["temperature"] == 0 and not b.get("tools") and b["messages"][0]["role"] == "system" for b in sent)
    for r in records:
        row = rows[r["item"]]
        assert (r["messages"], r["max_tokens"], r["answer"], r["grading"], r["lane"], r["suite"]) == (
            row["messages"], row["max_tokens"], row["answer"], row["grading"], row["lane"], row["suite"])
        assert r["interface"] == "openai-chat" and r["error"] is None and r["output_tokens"] and r["seconds"] > 0
    assert {r["messages"][0]["content"] for r in records} == {SYSTEM_PROMPT}
    options = json.loads((out / "run.json").read_text())["options"]
    assert {k: options[k] for k in ("quality_n", "quality_seed", "quality_concurrency", "quality_lane")} == {
        "quality_n": 600, "quality_seed": 0, "quality_concurrency": 8, "quality_lane": lane.version()}
    assert options["quality_max_tokens"] == MAX_TOKENS and options["quality_system_prompt"] == SYSTEM_PROMPT


def test_a_known_five_percent_of_wrong_answers_are_exactly_the_items_graded_wrong(tmp_path, items600):
    items = items600[:120]
    wrong = set([i.id for i in items if i.grading["kind"] != "instructions"][::17])
    assert len(wrong) == 6  # 5% of 120
    with FakeOpenAI(answering(items)) as truth, FakeOpenAI(answering(items, wrong=wrong)) as flawed:
        code, s, records, out = run(tmp_path, [openai_backend("g6", truth.base_url),
                                               openai_backend("g5g", flawed.base_url)], "--quality-n", "120")
    assert code == 0
    g6, g5g = outcomes(records, "g6"), outcomes(records, "g5g")
    assert set(g6) == set(g5g) == {i.id for i in items}  # the same items on both: pairable
    assert {i for i, o in g5g.items() if o == "wrong"} == wrong
    assert {i for i, o in g5g.items() if o == "right"} == set(g5g) - wrong and set(g6.values()) == {"right"}
    flips = [i for i in g6 if g6[i] == "right" and g5g[i] != "right"]
    assert sorted(flips) == sorted(wrong) and not [i for i in g6 if g6[i] != "right" and g5g[i] == "right"]


def test_a_failed_request_is_never_graded(tmp_path, items600):
    items = items600[:60]
    failing = {i.id for i in items[::10]}
    with FakeOpenAI(answering(items, failing=failing)) as fake:
        code, s, records, out = run(tmp_path, [openai_backend("g6", fake.base_url)], "--quality-n", "60",
                                    "--max-consecutive-failures", "0")
    graded = outcomes(records, "g6")
    assert {i for i, o in graded.items() if o == "failed"} == failing
    assert {o for i, o in graded.items() if i not in failing} == {"right"}
    assert all(r["error"].startswith("HTTP 500") for r in records if r["item"] in failing)


def test_a_dead_backend_is_stopped_by_the_failure_streak(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code, s, records, out = run(tmp_path, [openai_backend("g6", f"http://127.0.0.1:{port}/v1")], "--quality-n", "30",
                                "--quality-concurrency", "1")
    limit = stopping.DEFAULT_MAX_CONSECUTIVE_FAILURES
    assert code == 1 and len(records) == limit and all(r["error"] for r in records)
    assert set(outcomes(records, "g6").values()) == {"failed"}
    assert s["backends"]["g6"]["stopped"]["part"] == "quality"
    assert s["backends"]["g6"]["quality"]["unsent"] == 30 - limit


def test_an_interrupt_in_the_lane_counts_what_was_sent_and_answered(tmp_path, items600, monkeypatch, capsys):
    """Ctrl-C after g6's fifth item (one in flight at a time): 5 of 40 items sent and answered, 35 not sent, the
    lane's power at the 5 graded; g5g never began; the headline, the section and the terminal say so."""
    original = evidence.RequestLog.append
    sent = {"n": 0}

    def append(self, record):
        if record.get("part") == "quality":
            sent["n"] += 1
            if sent["n"] == 6:
                raise KeyboardInterrupt
        return original(self, record)

    monkeypatch.setattr(evidence.RequestLog, "append", append)
    out = tmp_path / "out"
    with FakeOpenAI(answering(items600[:40])) as fake:
        with pytest.raises(KeyboardInterrupt):
            runner.run([openai_backend("g6", fake.base_url), openai_backend("g5g", fake.base_url)],
                       make_options("--demos", "quality", "--quality-n", "40", "--quality-concurrency", "1"), out, None)
    assert json.loads((out / "run.json").read_text())["skipped"] == {
        "g6": {"quality": CUT_OFF_INTERRUPTED}, "g5g": {"quality": NOT_RUN_INTERRUPTED}}
    s = summary.validate(json.loads((out / "summary.json").read_text()))
    q = s.backends["g6"].quality
    assert (q.planned, q.items, q.graded, q.not_sent, q.unsent) == (40, 5, 5, 0, 35)
    assert s.quality_lane.items == 40 and s.quality_lane.power_items == 5
    assert s.recommendation.headline.startswith(
        "Partial run: interrupted before it finished. Cut off: quality on g6 (5 of 40 items sent, 5 answered). "
        "Not run: quality on g5g. From what ran: ")
    text = (out / "REPORT.md").read_text()
    lane_section = text.split("## Precision: what you trade")[1].split("\n## ")[0]
    assert "- **g6: 5 of 40 items sent, 5 answered (graded), 35 not sent or cut off in flight (interrupted).**" in lane_section
    assert "| 5 (5) |" in lane_section and "| 0 / 35 (interrupted) |" in lane_section
    assert "**Power at n = 5 (the fewest items a backend had graded; 40 were planned):**" in lane_section
    assert "n = 40" not in lane_section
    assert "- g5g quality: not run (interrupted)" in text
    printed = capsys.readouterr().out
    assert f"Partial report (the run was interrupted): {out / 'REPORT.md'} and {out / 'REPORT.html'}" in printed
    assert "Cut off: quality on g6 (5 of 40 items sent, 5 answered)" in printed


def test_an_item_over_a_backends_prompt_limit_is_recorded_not_sent(tmp_path, items600):
    items = items600[:60]
    limit = 90
    over = {i.id for i in items if i.prompt_tokens_estimate > limit}
    assert 0 < len(over) < 60
    with FakeOpenAI(answering(items)) as fake:
        code, s, records, out = run(tmp_path, [openai_backend("small", fake.base_url, max_prompt_tokens=limit)],
                                    "--quality-n", "60")
        asked = {b["messages"][-1]["content"] for b in fake.requests}
    graded = outcomes(records, "small")
    assert {i for i, o in graded.items() if o == "not_sent"} == over and len(graded) == 60
    assert asked == {i.question for i in items if i.id not in over}
    unsent = next(r for r in records if r["item"] in over)
    assert unsent["not_sent"].endswith(f"over this backend's {limit}-token limit") and "text" not in unsent


def test_grade_regrades_a_folder_and_writes_nothing_into_it(tmp_path, items600, capsys):
    items = items600[:30]
    wrong = {items[0].id, items[1].id}
    with FakeOpenAI(answering(items, wrong=wrong)) as fake:
        run(tmp_path, [openai_backend("g6", fake.base_url)], "--quality-n", "30")
    out = tmp_path / "out"
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    capsys.readouterr()
    assert quality_command.main(["grade", str(out), "--json"]) == 0
    table = json.loads(capsys.readouterr().out)["g6"]
    assert (table["items"], table["right"], table["wrong"], table["failed"], table["graded"]) == (30, 28, 2, 0, 30)
    assert table["accuracy"] == round(28 / 30, 4) and table["lane"] == [lane.version()]
    assert table["by_suite"]["arithmetic"]["wrong"] == 1 and sum(t["items"] for t in table["by_suite"].values()) == 30
    assert quality_command.main(["grade", str(out)]) == 0
    text = capsys.readouterr().out
    assert "g6                28/30    93.3% [78.7%, 98.2%]" in text and "wrong 2, unreadable 0" in text
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before


def test_grade_refuses_a_folder_without_quality_records(tmp_path, capsys):
    assert quality_command.main(["grade", str(tmp_path)]) == 2
    assert "no requests.jsonl here" in capsys.readouterr().err
    (tmp_path / "requests.jsonl").write_text(json.dumps({"part": "chat", "backend": "g6"}) + "\n")
    assert quality_command.main(["grade", str(tmp_path)]) == 2
    assert "no quality records (run with --demos quality)" in capsys.readouterr().err


def test_without_reasoning_gym_the_part_fails_with_the_install_line(tmp_path, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "reasoning_gym", None)
    with FakeOpenAI(Script()) as fake:
        code, s, records, out = run(tmp_path, [openai_backend("g6", fake.base_url)], "--quality-n", "6")
    assert code == 1 and records == []
    assert s["backends"]["g6"]["skipped"]["quality"].startswith("failed: the reasoning-gym package is not installed")


def test_the_part_is_not_in_the_default_run_and_its_options_are_checked(capsys):
    parser = build_parser(runner)
    assert "quality" not in parser.parse_args([]).demos
    ns = parser.parse_args(["--demos", "quality", "--quality-n", "12", "--quality-seed", "7"])
    recorded = BenchOptions.from_namespace(ns).record(1)
    assert recorded.quality_n == 12 and recorded.quality_seed == 7
    for bad, message in ((["--quality-n", "0"], "0 is too small"), (["--quality-seed", "x"], "an integer seed"),
                         (["--quality-n", "20000"], "20000 is above 10,000 items"),
                         (["--quality-concurrency", "0"], "0 is too small")):  # fmt: skip
        with pytest.raises(SystemExit) as exc:
            parser.parse_args(bad)
        assert exc.value.code == 2 and message in capsys.readouterr().err


def test_on_bedrock_the_system_turn_goes_as_converse_system_and_nova_thinking_is_not_the_answer(items600):
    import asyncio

    import boto3
    from botocore.stub import Stubber

    from tests.agent.bench.fakes.clients import bedrock_client

    items = items600[:6]
    boto = boto3.client("bedrock-runtime", region_name="us-east-1")
    with Stubber(boto) as stub:
        for item in items:
            stub.add_response("converse", {
                "output": {"message": {"role": "assistant", "content": [
                    {"text": f"<thinking>Work it out first.</thinking>{item.answer}"}]}},
                "stopReason": "end_turn", "usage": {"inputTokens": 40, "outputTokens": 5, "totalTokens": 45},
                "metrics": {"latencyMs": 90},
            }, {"modelId": "us.amazon.nova-micro-v1:0", "system": [{"text": SYSTEM_PROMPT}],
                "messages": [{"role": "user", "content": [{"text": item.question}]}],
                "inferenceConfig": {"maxTokens": item.max_tokens, "temperature": 0.0}})  # fmt: skip
        client = bedrock_client(boto)
        records: list[dict] = []

        async def go():
            try:
                await quality.run_quality(backend=client.backend, client=client, items=items, concurrency=1, seed=0,
                                          version=lane.version(), emit=records.append)  # fmt: skip
            finally:
                await client.close()

        asyncio.run(go())
        stub.assert_no_pending_responses()
    assert [r["interface"] for r in records] == ["bedrock-converse"] * 6
    assert set(outcomes(records, "bedrock").values()) == {"right"}


def test_a_neuron_backend_answers_through_plain_chat(tmp_path, items600):
    items = items600[:12]
    with FakeOpenAI(answering(items)) as fake:
        code, s, records, out = run(tmp_path, [openai_backend("inf2", fake.base_url, kind="neuron", tool_calls=False,
                                                              max_prompt_tokens=128)], "--quality-n", "12")
    assert code == 0 and set(outcomes(records, "inf2").values()) == {"right"}
    assert {r["interface"] for r in records} == {"openai-chat"}


def test_a_known_five_percent_wrong_is_flagged_against_the_reference_with_the_flips_counted_exactly(tmp_path,
                                                                                                    items600):
    items = items600[:120]
    wrong = [i.id for i in items if i.grading["kind"] != "instructions"][::17]
    assert len(wrong) == 6  # 5% of 120
    with FakeOpenAI(answering(items)) as truth, FakeOpenAI(answering(items, wrong=set(wrong))) as flawed:
        # g5g serves fp16 (2 bytes per weight): the highest precision, so the reference
        code, s, records, out = run(tmp_path, [rig("g6", flawed.base_url), rig("g5g", truth.base_url)],
                                    "--quality-n", "120")
        _, named, _, _ = run(tmp_path / "named", [rig("g6", flawed.base_url), rig("g5g", truth.base_url)],
                             "--quality-n", "120", "--quality-reference", "g6")
    assert code == 0
    lane_block = s["quality_lane"]
    assert lane_block["reference"] == "g5g" and lane_block["reference_reason"].startswith(
        "the highest-precision backend measured: fp16, 2 bytes per weight")
    p = pair(s, "g5g", "g6")
    assert (p["both"], p["a_right_b_wrong"], p["a_wrong_b_right"]) == (120, 6, 0)
    assert p["flipped"] == [i.id for i in items if i.id in wrong]
    assert p["mcnemar_p"] == 0.03125 and p["significant"]  # 2 x (1/2)^6: exact McNemar on 6 flips, all one way
    assert p["difference"] == -0.05 and p["ci95"][0] < -0.05 < p["ci95"][1] < 0
    assert p["relation"] == "same model" and not p["same_weights"] and p["flag"] is None
    assert p["verdict"].startswith("g6 answers 5.0 points worse than g5g (95% interval")
    assert s["backends"]["g6"]["quality"]["wrong"] == 6 and s["backends"]["g6"]["weights"]["precision"].startswith("W4A16")
    reasons = s["recommendation"]["reasons"]
    assert any(r.startswith("Quality: g6 answers 5.0 points worse than g5g, the quality reference (95.0% against "
                            "100.0% on 120 paired items") for r in reasons)
    text = (out / "REPORT.md").read_text()
    assert "## Precision: what you trade" in text and "**Reference: g5g**" in text
    assert "| g6 | Gemma 4 E2B | W4A16 (emb4 repack) | 0.5 | 2.86 GiB | vLLM 0.30.0 |" in text
    assert "Power at n = 120:" in text
    assert "Precision: what you trade" in (out / "REPORT.html").read_text()
    recomputed(out, s)
    # --quality-reference names another reference: the pair is oriented to it, the figures the same
    assert named["quality_lane"] == {**lane_block, "reference": "g6", "reference_reason": "chosen with --quality-reference"}
    p = pair(named, "g6", "g5g")
    assert (p["a_right_b_wrong"], p["a_wrong_b_right"], p["difference"]) == (0, 6, 0.05)
    assert p["verdict"].startswith("g6 answers 5.0 points worse than g5g")


def test_two_identical_servers_show_no_flips_and_no_difference(tmp_path, items600):
    items = items600[:240]
    with FakeOpenAI(answering(items)) as one, FakeOpenAI(answering(items)) as two:
        code, s, records, out = run(tmp_path, [rig("g6", one.base_url), rig("sagemaker", two.base_url)],
                                    "--quality-n", "240", "--quality-concurrency", "8")
    p = pair(s, "g6", "sagemaker")
    assert (p["both"], p["a_right_b_wrong"], p["a_wrong_b_right"], p["flipped"]) == (240, 0, 0, [])
    assert p["difference"] == 0 and p["mcnemar_p"] == 1 and not p["significant"]
    assert p["same_weights"] and p["relation"] == "same weights and engine" and p["flag"] is None
    # the whole interval within 3 points: "no difference", said only when the interval is that narrow
    assert -0.03 <= p["ci95"][0] <= 0 <= p["ci95"][1] <= 0.03
    assert p["verdict"].startswith("no difference larger than 3 points")
    assert "serve the same weights with the same engine** (the catalog's statement): of 240 items both graded they " \
           "differ on 0" in (out / "REPORT.md").read_text()


def test_a_pair_on_too_few_items_is_not_enough_to_tell_never_no_difference(tmp_path, items600):
    items = items600[:24]
    with FakeOpenAI(answering(items)) as one, FakeOpenAI(answering(items, wrong={items[0].id})) as two:
        code, s, records, out = run(tmp_path, [rig("g6", one.base_url), rig("g5g", two.base_url)],
                                    "--quality-n", "24")
    p = pair(s, "g5g", "g6")
    assert not p["significant"] and p["verdict"].startswith("not enough items to tell")
    assert p["power"] < 0.1 and s["quality_lane"]["power"] == p["power"]


def test_the_same_weights_disagreeing_is_flagged_as_an_engine_or_configuration_fault(tmp_path, items600):
    items = items600[:120]
    wrong = set([i.id for i in items if i.grading["kind"] != "instructions"][::10])
    with FakeOpenAI(answering(items)) as one, FakeOpenAI(answering(items, wrong=wrong)) as two:
        code, s, records, out = run(tmp_path, [rig("g6", one.base_url), rig("sagemaker", two.base_url)],
                                    "--quality-n", "120")
    p = pair(s, "g6", "sagemaker")
    assert p["same_weights"] and p["significant"] and p["a_right_b_wrong"] == len(wrong) == 10
    assert p["flag"].startswith("g6 and sagemaker serve the same weights with the same engine, yet 10 items went right "
                                "on g6 only and 0 on sagemaker only")
    assert p["flag"].endswith("an engine or configuration fault, not a precision effect")
    assert any(r.startswith("Quality: g6 and sagemaker serve the same weights") for r in s["recommendation"]["reasons"])
    assert "**flagged: g6 and sagemaker serve the same weights" in (out / "REPORT.md").read_text()


def test_a_failed_request_is_never_a_flip_and_never_in_a_pair(tmp_path, items600):
    items = items600[:60]
    failing = {i.id for i in items[::10]}
    with FakeOpenAI(answering(items)) as one, FakeOpenAI(answering(items, failing=failing)) as two:
        code, s, records, out = run(tmp_path, [rig("g6", one.base_url), rig("g5g", two.base_url)],
                                    "--quality-n", "60", "--max-consecutive-failures", "0")
    block = s["backends"]["g5g"]["quality"]
    assert (block["failed"], block["graded"], block["right"], block["accuracy"]) == (6, 54, 54, 1.0)
    assert block["failure_reasons"] == {'HTTP 500: {"error": "boom"}': 6}
    p = pair(s, "g5g", "g6")
    assert (p["both"], p["a_right_b_wrong"], p["a_wrong_b_right"]) == (54, 0, 0)
    recomputed(out, s)


def test_the_recommendation_options_of_the_lane_are_checked(capsys):
    parser = build_parser(runner)
    ns = parser.parse_args(["--demos", "default,quality", "--quality-reference", "g5g", "--min-quality", "70%"])
    options = BenchOptions.from_namespace(ns)
    assert options.demos == ("counting", "orchestrator", "chat", "quality") and options.min_quality == 0.7
    assert options.record(1).quality_reference == "g5g" and options.record(1).min_quality == 0.7
    assert options.record(1).compare_models is False
    assert BenchOptions.from_namespace(parser.parse_args(["--compare-models"])).record(1).compare_models is True
    with pytest.raises(SystemExit):
        parser.parse_args(["--quality-reference", "g7"])
    assert "invalid choice: 'g7'" in capsys.readouterr().err
    with pytest.raises(runner.OptionError, match="--quality-reference only changes the quality part"):
        runner.check_options(parser.parse_args(["--quality-reference", "g6"]))
    both = parser.parse_args(["--demos", "quality", "--min-quality", "0.8", "--workload", "min_quality=0.7"])
    with pytest.raises(runner.OptionError, match="the same floor with two values"):
        runner.check_options(both)
    same = parser.parse_args(["--demos", "quality", "--workload", "min_quality=70%"])
    runner.check_options(same)
    assert BenchOptions.from_namespace(same).record(1).min_quality == 0.7
