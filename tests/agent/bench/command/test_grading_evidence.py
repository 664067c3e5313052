"""Crafted transcripts for every grading defect of issue 9, written as an evidence folder: the
summary, its schema, the report, and the same verdicts again when recomputed from
requests.jsonl + run.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.bench.command import evidence, runner
from agent.bench.presentation import report
from agent.bench.analysis import summary
from agent.bench.parts.orchestrator import scoreboard_table
from agent.bench.results.run import RunFile
from agent.bench.tasks.reference import SUBMIT_TOOL, tool_name

from tests.agent.bench.conftest import make_options

from tests.agent.bench.conftest import openai_backend
from tests.agent.bench.fakes.openai_fake import FakeOpenAI
from tests.agent.bench.fakes.scripted import Script
from tests.agent.bench.fakes.synthetic import run_json

REF_IDS = [0, 2, 3, 20, 21, 22, 23, 10, 11, 12, 13]
STRICT_IDS = [9, 0, 21, 10, 4, 13, 8, 23, 11, 5, 20, 12, 7, 22, 6, 3, 2, 14, 1]


def count(op, value):
    return {"name": "count_ids", "input": {"op": op, "value": value}, "status": "success"}


def counting(backend, part, run, answer, calls, error=None, texts=None):
    return {"part": part, "backend": backend, "run": run, "tools": "engine", "constrained": False,
            "ids": REF_IDS if part == "counting" else STRICT_IDS,
            "question": "How many of the ids are 10 or more? Answer with the number.", "answer": answer,
            "calls": calls, "texts": texts if texts is not None else ([answer] if answer else []), "error": error,
            "seconds": 1.0, "usage": {"output_tokens": 20}}


BACKENDS = [{"name": "bedrock", "label": "Amazon Bedrock", "kind": "bedrock", "model_id": "us.amazon.nova-micro-v1:0",
             "metadata": {}},
            {"name": "g6", "label": "vLLM on EC2 g6 (L4)", "kind": "openai", "model_id": "gemma", "metadata": {}}]
ASKS = [{"backend": "g6", "label": "vLLM on EC2 g6 (L4)", "answer": "Paris", "seconds": 0.154, "tokens_per_second": 13},
        {"backend": "bedrock", "label": "Amazon Bedrock", "answer": "Paris", "seconds": 0.51, "tokens_per_second": 3.9}]
TABLE = scoreboard_table(ASKS)

RECORDS = [
    # bedrock, reference set: the misread right answers, in the talkative forms
    counting("bedrock", "counting", 1, "8 of the 11 ids are 10 or more.", [count(">=", 10)]),
    counting("bedrock", "counting", 2, "Out of the 11 ids, 8 are 10 or more.", [count(">=", 10)]),
    counting("bedrock", "counting", 3, "There are 8 ids ≥ 10 and 3 ids < 10.", [count(">=", 10)]),
    counting("bedrock", "counting", 4, "The count is 8, not 10.", [count(">=", 10)]),
    # an unreadable answer: its own verdict, not wrong
    counting("bedrock", "counting", 5, "Either 8 or 9.", [count(">=", 10)]),
    # bedrock, strict set: right answer restating the table; a sprayed run answered from the last call
    counting("bedrock", "counting_strict", 1, "9 of the 19 ids are 10 or more.", [count(">=", 10)]),
    counting("bedrock", "counting_strict", 2, "There are 8 ids above 10.", [count(">=", 10), count(">", 10)]),
    # g6: an empty 200 reply, a timeout after the right call, a JSON text call, a described real call
    counting("g6", "counting", 1, "", [count(">=", 10)]),
    counting("g6", "counting", 2, "", [count(">=", 10)], error="timeout after 300.0 s"),
    counting("g6", "counting", 3, '{"name": "count_ids", "arguments": {"op": ">=", "value": 10}}', []),
    counting("g6", "counting", 4, 'I called count_ids(op=">=", value=10); it returned 8, so the answer is 8.',
             [count(">=", 10)]),
    # the orchestrator: right structured answer under the blurred sentence
    {"part": "orchestrator", "backend": "bedrock", "run": 1, "constrained": False, "question": "Capital?",
     "offered": [{"name": b["name"], "label": b["label"], "tool": tool_name(b["name"])} for b in BACKENDS],
     "asks": ASKS, "scoreboards": [TABLE], "reply": TABLE + "\n\nCompared with Bedrock, g6 was the fastest.",
     "calls": [{"name": "ask_g6", "input": {"prompt": "Capital?"}}, {"name": "ask_bedrock", "input": {"prompt": "x"}},
               {"name": "scoreboard", "input": {}}, {"name": SUBMIT_TOOL, "input": {"winner": "g6", "table": TABLE}}],
     "texts": [], "error": None, "seconds": 3.0, "follow_up": None},
]


def write_evidence(out: Path, records=RECORDS) -> None:
    out.mkdir()
    log = evidence.RequestLog(out / evidence.REQUESTS)
    for r in records:
        log.append(dict(r))
    log.close()
    evidence.write_run(out / evidence.RUN,
                       RunFile.model_validate(run_json(BACKENDS, options={"demos": ["counting", "orchestrator"]})))


def test_crafted_transcripts_are_graded_right_and_recompute(tmp_path):
    out = tmp_path / "evidence"
    write_evidence(out)
    s = runner.write_outputs(out).as_json()
    summary.validate(s)

    ref = s["backends"]["bedrock"]["counting"]
    assert [d["verdict"] for d in ref["detail"]] == ["correct"] * 4 + ["unreadable"]
    assert (ref["runs"], ref["graded"], ref["correct"], ref["wrong"], ref["unreadable"]) == (5, 5, 4, 0, 1)
    assert ref["correct_ci95"] == [0.3755, 0.9638]  # Wilson, 4 of 5
    assert ref["right_filter"] == 5 and ref["right_filter_ci95"] == [0.5655, 1.0]

    strict = s["backends"]["bedrock"]["counting_strict"]
    assert [d["verdict"] for d in strict["detail"]] == ["correct", "wrong"]
    sprayed = strict["detail"][1]
    assert sprayed["right_filter"] is False and sprayed["first_call_right"] is True
    assert sprayed["distinct_filters"] == 2 and sprayed["last_filter"] == "id > 10"
    assert (strict["right_filter"], strict["first_call_right"], strict["several_filters"]) == (1, 2, 1)

    g6 = s["backends"]["g6"]["counting"]
    assert [d["verdict"] for d in g6["detail"]] == ["failed", "failed", "unreadable", "correct"]
    assert (g6["runs"], g6["errors"], g6["graded"], g6["correct"]) == (4, 2, 2, 1)
    assert g6["detail"][0]["failure"] == "empty reply: the model returned no text"
    assert g6["detail"][1]["right_filter"] is None  # the timed-out run earns no right filter
    assert g6["right_filter"] == 1 and g6["correct_ci95"] == [0.0945, 0.9055]  # 1 of the 2 graded runs
    assert g6["text_tool_calls"] == 1 and g6["text_calls_describing_made_calls"] == 1
    assert g6["failure_reasons"] == {"empty reply: the model returned no text": 1, "timeout after 300.0 s": 1}

    o = s["orchestrator"]
    assert o["winner_verdict"] == "right" and not o["wrong_winner"] and o["winner_claimed"] == "g6"
    assert not o["text_disagrees"] and o["submitted_table_quote"] == "exact"

    text = (out / evidence.REPORT).read_text()
    assert "| 4/5 [38-96%] | 5/5 [57-100%] |" in text  # the scoreboard's reference-set cells
    assert "1/2 [9-91%] (2 failed)" in text
    assert "**wrong" not in text and "- Winner: right (g6)" in text

    # the same verdicts again, from the evidence alone
    again = summary.summarize(evidence.read_requests(out / evidence.REQUESTS),
                              json.loads((out / evidence.RUN).read_text()))
    assert again.as_json() == json.loads((out / evidence.SUMMARY).read_text())
    assert report.render(again) == text


def test_an_empty_reply_from_a_live_server_is_a_failed_run(tmp_path):
    script = Script(tool_call=("count_ids", {"op": ">=", "value": 10}), final="")
    with FakeOpenAI(script) as fake:
        out = tmp_path / "out"
        code = runner.run([openai_backend("g6", fake.base_url)], make_options("--runs", "1", "--demos", "counting"),
                          out, None)
    records = evidence.read_requests(out / "requests.jsonl")
    assert all(r["error"] == "empty reply: the model returned no text" for r in records)  # recorded as it happened
    c = json.loads((out / "summary.json").read_text())["backends"]["g6"]
    assert code == 1 and c["counting"]["errors"] == 1 and c["counting"]["right_filter"] == 0
    assert c["counting"]["detail"][0]["right_filter"] is None and c["counting"]["correct_ci95"] is None
    assert "counting: every run failed (empty reply: the model returned no text)" in c["failures"]


WRONG_SENTENCE = "The fastest response came from the Amazon Bedrock backend."


@pytest.mark.parametrize(
    "reply,calls,verdict,line",
    [
        ("Compared with Bedrock, g6 was the fastest.", [{"winner": "g6"}], "right", "- Winner: right (g6)"),
        (WRONG_SENTENCE, [{"winner": "bedrock"}], "wrong",
         "- Winner: **wrong: the agent submitted bedrock, the scoreboard puts g6 first**"),
        ("g6 was the fastest.", [{"winner": "the first row"}], "unclear",
         "- Winner: unclear: the submitted winner names no offered backend (not graded wrong)"),
        (WRONG_SENTENCE, [{"winner": "g6"}], "right",
         "- **The free text and the structured answer disagree**: the text names bedrock, the submitted winner is g6."),
        ("g6 and Bedrock were the fastest.", [], "not submitted",
         "- Winner named in the free text: unclear (it names more than one backend as the winner)"),
    ],
)
def test_orchestrator_answers_recompute(tmp_path, reply, calls, verdict, line):
    record = {**RECORDS[-1], "reply": TABLE + "\n\n" + reply,
              "calls": [{"name": SUBMIT_TOOL, "input": {**c, "table": TABLE}} for c in calls]}
    out = tmp_path / "evidence"
    write_evidence(out, [record])
    s = runner.write_outputs(out).as_json()
    o = s["orchestrator"]
    assert o["winner_verdict"] == verdict and o["wrong_winner"] is (verdict == "wrong")
    text = (out / evidence.REPORT).read_text()
    assert line in text
    assert ("**wrong" in text) is (verdict == "wrong")  # bold only for a readable, wrong structured answer
    again = summary.summarize(evidence.read_requests(out / evidence.REQUESTS),
                              json.loads((out / evidence.RUN).read_text()))
    assert again.as_json() == json.loads((out / evidence.SUMMARY).read_text())
