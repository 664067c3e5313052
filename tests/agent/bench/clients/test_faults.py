"""Broken replies: every way a server breaks a reply is a failed request with its reason, no figure is
computed from one, a run against a faulty server completes, and a dead backend is stopped early."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from agent.bench.presentation import console
from agent.bench.command import evidence, runner
from agent.bench.parts import stopping
from agent.bench.analysis import summary
from agent.bench.parts.sending import timing_record
from agent.bench.analysis.blocks.chat import request_metrics
from agent.bench.results.records import TimingRecord
from agent.bench.clients.openai_wire import EventReader
from agent.bench.clients.reply import ChatRequest, Reply

from tests.agent.bench.fakes.clients import FakeBedrock
from tests.agent.bench.fakes.clients import FakeSageMakerRuntime
from tests.agent.bench.fakes.clients import bedrock_client

from tests.agent.bench.fakes.clients import openai_client

from tests.agent.bench.fakes.clients import sagemaker_client

from tests.agent.bench.fakes.clients import send
from tests.agent.bench.conftest import make_options
from tests.agent.bench.conftest import openai_backend
from tests.agent.bench.fakes.faults import CASES
from tests.agent.bench.fakes.faults import OK_WORDS
from tests.agent.bench.fakes.faults import POISON_TOKENS
from tests.agent.bench.fakes.faults import Faults
from tests.agent.bench.fakes.openai_fake import FakeOpenAI

FAILURES = [case for case, error in CASES.items() if error is not None]
SUCCESSES = [case for case, error in CASES.items() if error is None]


OCEAN = ChatRequest.user("Write a short paragraph about the ocean.", 100)


def time_one(url: str, timeout_s: float = 10.0) -> Reply:
    return send(openai_client(url, timeout_s=timeout_s), OCEAN)


def record_of(t: Reply) -> dict:
    return timing_record(t, epoch=t.t_sent, backend="x", part="chat", phase="timed", concurrency=1, run=1,
                         request=ChatRequest.user("p", 100))  # fmt: skip


@pytest.mark.parametrize("case", FAILURES)
def test_each_broken_reply_is_a_failed_request_with_its_reason(case):
    with FakeOpenAI(Faults([case])) as fake:
        t = time_one(fake.base_url, timeout_s=2.0 if case == "hang" else 10.0)
    assert t.error is not None and CASES[case] in t.error, t.error
    assert t.reconnects == 0
    m = request_metrics(TimingRecord.model_validate(record_of(t)))
    figures = ("ttft_ms", "e2e_ms", "decode_tok_per_s", "client_tok_per_s", "output_tokens", "prompt_tokens")
    assert not m.ok and all(getattr(m, k) is None for k in figures) and m.itl_ms == []


@pytest.mark.parametrize("case", SUCCESSES)
def test_odd_but_whole_replies_succeed(case):
    with FakeOpenAI(Faults([case])) as fake:
        t = time_one(fake.base_url)
    assert t.error is None and t.complete and t.finish_reason == "stop"
    assert t.completion_tokens == {"no_usage": None, "text_tool_call": 4}.get(case, OK_WORDS)


@pytest.mark.parametrize(
    "event,reason",
    [
        ('{"choices": [null]}', "choices[0] is null"),
        ('{"choices": {"0": {}}}', "choices is an object, not a list"),
        ('{"choices": "abc"}', "choices is a string, not a list"),
        ('{"choices": [{"delta": "abc"}]}', "delta is a string"),
        ('{"choices": [{"delta": {"content": 5}}]}', "delta.content is a number"),
        ('{"choices": [{"delta": {"content": ["a"]}}]}', "delta.content is a list"),
        ('{"choices": [{"delta": {}, "finish_reason": true}]}', "finish_reason is a boolean"),
        ('{"choices": [], "usage": [1, 2]}', "usage is a list"),
        ("[1, 2]", "malformed event: a list instead of an object"),
        ('"text"', "malformed event: a string instead of an object"),
        ("{not json", "malformed event: '{not json'"),
        ('{"error": "overloaded"}', "error event after 2 content chunks: overloaded"),
        ('{"object": "error", "message": "bad request", "code": 400}', "error event after 2 content chunks: bad request"),
    ],
)
def test_odd_json_fails_the_request_and_the_reader_goes_on(event, reason):
    timing = Reply(t_sent=0.0, wall_sent=0.0)
    reader = EventReader(timing)
    good = 'data: {"choices": [{"delta": {"content": "a"}, "finish_reason": null}]}\n\n'
    stream = good + good + f"data: {event}\n\n" + good + 'data: {"choices": [{"delta": {}, "finish_reason": "stop"}]}\n\n'
    reader.feed(stream.encode(), 1.0)
    reader.close()
    assert reason in (timing.error or ""), timing.error
    assert reader.parts == ["a", "a", "a"] and timing.finish_reason == "stop"  # the rest of the stream was read


def test_a_nan_in_any_record_is_written_as_null(tmp_path):
    log = evidence.RequestLog(tmp_path / "requests.jsonl")
    log.append({**record_of(Reply(t_sent=0.0, wall_sent=0.0, error="boom")),
                "server_timings": {"predicted_per_second": math.nan}, "first_ms": math.inf})  # fmt: skip
    log.close()
    line = (tmp_path / "requests.jsonl").read_text()
    assert "NaN" not in line and "Infinity" not in line
    assert json.loads(line)["server_timings"] == {"predicted_per_second": None} and json.loads(line)["first_ms"] is None
    evidence.write_json(tmp_path / "s.json", {"a": -math.inf})
    assert json.loads((tmp_path / "s.json").read_text()) == {"a": None}


# --- Bedrock and SageMaker ------------------------------------------------------------------------


def bedrock(events) -> Reply:
    return send(bedrock_client(FakeBedrock(events), "m"), ChatRequest.user("hi", 100))


DELTAS = [{"contentBlockDelta": {"delta": {"text": f"w{i} "}}} for i in range(3)]
STOP = [{"messageStop": {"stopReason": "end_turn"}}, {"metadata": {"usage": {"inputTokens": 5, "outputTokens": 6}}}]


@pytest.mark.parametrize(
    "events,reason",
    [
        (DELTAS + [{"modelStreamErrorException": {"message": "model crashed"}}], "stream error modelStreamErrorException: model crashed"),
        (DELTAS + [RuntimeError("EventStreamError: internalServerException")], "RuntimeError: EventStreamError"),
        (DELTAS, "cut off: the stream ended after 3 content chunks"),
        (DELTAS + [{"contentBlockDelta": "x"}] + STOP, "malformed contentBlockDelta"),
        (DELTAS + [{"contentBlockDelta": {"delta": {"text": 7}}}] + STOP, "malformed contentBlockDelta"),
        (DELTAS + [None] + STOP, "malformed stream event"),
        (DELTAS + [{"messageStop": {"stopReason": "guardrail_intervened"}}], "finish_reason 'guardrail_intervened'"),
    ],
)
def test_bedrock_broken_streams_fail_with_their_reason(events, reason):
    t = bedrock(events)
    assert t.error is not None and t.error.startswith(reason), t.error


def test_bedrock_whole_stream_succeeds_and_unknown_events_are_ignored():
    t = bedrock([{"messageStart": {"role": "assistant"}}, {"someNewEvent": {}}] + DELTAS + STOP)
    assert t.error is None and t.completion_tokens == 6 and t.chunk_chars == [3, 3, 3]


def sagemaker(events, stream=True) -> Reply:
    fake = FakeSageMakerRuntime(events) if stream else FakeSageMakerRuntime(body=events)
    return send(sagemaker_client(fake), ChatRequest.user("hi", 100, stream=stream))


def part(obj) -> dict:
    return {"PayloadPart": {"Bytes": b"data: " + json.dumps(obj).encode() + b"\n\n"}}


CONTENT = [part({"choices": [{"delta": {"content": f" w{i}"}, "finish_reason": None}]}) for i in range(3)]
END = [part({"choices": [{"delta": {}, "finish_reason": "stop"}]}),
       part({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 3}}),
       {"PayloadPart": {"Bytes": b"data: [DONE]\n\n"}}]  # fmt: skip


@pytest.mark.parametrize(
    "events,reason",
    [
        (CONTENT + [{"ModelStreamError": {"Message": "OOM", "ErrorCode": "500"}}], "stream error ModelStreamError: OOM"),
        (CONTENT + [{"InternalStreamFailure": {"Message": "lost"}}], "stream error InternalStreamFailure: lost"),
        (CONTENT, "cut off: the stream ended after 3 content chunks"),
        (CONTENT + [part({"error": {"message": "engine dead"}})] + END, "error event after 3 content chunks: engine dead"),
        (CONTENT + [part({"choices": [{"delta": {}, "finish_reason": "abort"}]})], "finish_reason 'abort'"),
        (CONTENT + [part({"choices": [None]})] + END, "malformed event: choices[0] is null"),
    ],
)
def test_sagemaker_broken_streams_fail_with_their_reason(events, reason):
    t = sagemaker(events)
    assert t.error is not None and t.error.startswith(reason), t.error


def test_sagemaker_bare_json_lines_and_odd_non_streamed_replies():
    lines = [{"PayloadPart": {"Bytes": json.dumps({"choices": [{"delta": {"content": "a b"}, "finish_reason": "stop"}],
                                                    "usage": {"completion_tokens": 2}}).encode() + b"\n"}}]  # fmt: skip
    assert sagemaker(lines).error is None
    assert sagemaker(b'{"choices": [null]}', stream=False).error.startswith("malformed reply")
    assert sagemaker(b'{"choices": [{"message": "Paris"}]}', stream=False).error.startswith("malformed reply")
    assert sagemaker(b'{"error": {"message": "busy"}}', stream=False).error == "error reply: busy"


# --- whole runs -----------------------------------------------------------------------------------


def interleaved(cases: list[str]) -> list[str]:
    """A good reply first (the cold request) and between every two cases, so no failure streak forms."""
    plan = ["ok"]
    for case in cases:
        plan += [case, "ok"]
    return plan


def test_a_run_against_a_faulty_server_records_every_failure_and_computes_no_figure_from_one(tmp_path):
    cases = [c for c in CASES if c != "ok"]
    plan = interleaved(cases)
    out = tmp_path / "out"
    with FakeOpenAI(Faults(plan)) as fake:
        backend = openai_backend("g6", fake.base_url)
        code = runner.run([backend], make_options("--runs", str(len(plan) - 1), "--demos", "chat",
                                                  "--request-timeout", "2"), out, None)  # fmt: skip
        assert fake.policy.played == plan
    s = json.loads((out / "summary.json").read_text())
    summary.validate(s)
    records = [r for r in evidence.read_requests(out / "requests.jsonl") if r["part"] == "chat"]
    assert [r["phase"] for r in records] == ["cold"] + ["timed"] * (len(plan) - 1)
    played = dict(zip((r["seq"] for r in records), plan))
    for r in records:
        expected = CASES[played[r["seq"]]]
        assert (r["error"] is None) if expected is None else (expected in r["error"]), (played[r["seq"]], r["error"])
    chat = s["backends"]["g6"]["chat"]
    n_failed = len(FAILURES)
    n_ok = len(plan) - 1 - n_failed  # timed successes
    with_usage = n_ok - 1  # the no_usage reply
    assert chat["requests"] == len(plan) - 1 and chat["errors"] == n_failed
    assert sum(chat["error_reasons"].values()) == n_failed
    # no figure from a failed request: counts match the successes, and no poisoned usage shows up
    assert chat["e2e_ms"]["n"] == n_ok and chat["ttft_ms"]["n"] == n_ok
    assert chat["client_tok_per_s"]["n"] == with_usage and chat["output_tokens"]["max"] < POISON_TOKENS
    # the one reply in multi-token chunks is left out of the decode figures and counted
    assert chat["usage_missing"] == 1 and chat["decode_basis"] == {"multi_token": 1, "per_token": with_usage - 1}
    assert chat["decode_comparable"] is True and chat["decode_tok_per_s"]["n"] == with_usage - 1
    level = chat["levels"][0]
    assert level["ok"] == n_ok and level["errors"] == n_failed and level["usage_missing"] == 1
    assert level["output_tok_per_s"] is None  # one success has no usage count: the sum would be short
    assert level["requests_per_s"] == pytest.approx(n_ok / level["wall_s"], rel=1e-2)
    assert level["output_tokens"] < POISON_TOKENS
    assert s["backends"]["g6"]["cost"]["per_concurrency"][0]["usd_per_m_output"] is None
    report = (out / "REPORT.md").read_text()
    for reason in ("CUDA out of memory", "cut off", "finish_reason 'abort'", "choices[0] is null", "HTTP 500",
                   "ClientPayloadError", "timeout after 2.0 s", "empty reply", "zero completion tokens"):
        assert reason in report, reason
    assert "1 reply that came in multi-token chunks left out" in report and "successful requests only" in report
    assert code == 0  # some requests failed, none of the parts failed as a whole


def test_a_backend_whose_replies_all_come_in_multi_token_chunks_is_marked_and_kept_out_of_the_ceiling(tmp_path):
    out = tmp_path / "out"
    with FakeOpenAI(Faults(["multi_token"])) as fake:
        assert runner.run([openai_backend("g6", fake.base_url)], make_options("--runs", "3", "--demos", "chat"),
                          out, None) == 0  # fmt: skip
    s = json.loads((out / "summary.json").read_text())
    chat, ceiling = s["backends"]["g6"]["chat"], s["backends"]["g6"]["ceiling"]
    assert chat["decode_basis"] == {"multi_token": 3} and chat["decode_comparable"] is False
    assert chat["decode_tok_per_s"]["n"] == 3  # (10 - 5 tokens of the first arrival) / the gap between the two
    assert ceiling["ceiling_tok_per_s"] == 161.3 and ceiling["share"] is None and "multi-token" in ceiling["reason"]
    report = (out / "REPORT.md").read_text()
    assert "(multi-token) |" in report and "from 3 replies in multi-token chunks" in report


def test_every_request_failing_gives_no_figures_stops_early_and_says_so(tmp_path, capsys):
    out = tmp_path / "out"
    with FakeOpenAI(Faults(["http500"])) as fake:
        code = runner.run([openai_backend("g6", fake.base_url)],
                          make_options("--runs", "5", "--concurrency", "1,4", "--demos", "chat,counting,orchestrator"),
                          out, None)  # fmt: skip
        sent = len(fake.requests)
    assert code == 1 and sent == 3  # cold + 2 timed, then stopped at the default 3 in a row; nothing else sent
    s = json.loads((out / "summary.json").read_text())
    g6 = s["backends"]["g6"]
    assert g6["stopped"] == {"part": "chat", "after": 3, "reason": 'HTTP 500: {"error": {"message": "boom"}}'}
    assert [lv["requests_per_s"] for lv in g6["chat"]["levels"]] == [None]
    assert g6["chat"]["levels"][0]["output_tok_per_s"] is None and g6["chat"]["decode_tok_per_s"]["n"] == 0
    assert g6["cost"]["per_concurrency"][0]["usd_per_m_output"] is None
    assert g6["skipped"]["counting"].startswith("not run") and g6["counting"] is None
    assert s["orchestrator"]["ran"] is False and s["orchestrator"]["reason"].endswith("stopped after failures: g6")
    err = capsys.readouterr().err
    assert "g6: stopped after 3 failures in a row in chat (HTTP 500" in err
    assert console.failure_lines(summary.validate(s)) == [line for line in err.splitlines() if line.startswith("g6: chat:")]
    assert "stopped after 3 consecutive failures" in (out / "REPORT.md").read_text()


def test_a_hung_backend_is_stopped_after_its_timeouts_and_the_option_changes_the_limit(tmp_path, capsys):
    out = tmp_path / "out"
    with FakeOpenAI(Faults(["hang"])) as fake:
        code = runner.run([openai_backend("g6", fake.base_url)],
                          make_options("--runs", "5", "--demos", "chat", "--request-timeout", "0.5",
                                       "--max-consecutive-failures", "2"), out, None)  # fmt: skip
        assert len(fake.requests) == 2
    s = json.loads((out / "summary.json").read_text())
    assert code == 1 and s["backends"]["g6"]["stopped"]["after"] == 2
    assert s["run"]["options"]["max_consecutive_failures"] == 2
    assert "timeout after 0.5 s" in capsys.readouterr().err


def test_partial_failures_get_one_console_line(tmp_path, capsys):
    out = tmp_path / "out"
    with FakeOpenAI(Faults(["ok", "ok", "abort"])) as fake:
        code = runner.run([openai_backend("g6", fake.base_url)], make_options("--runs", "2", "--demos", "chat"),
                          out, None)  # fmt: skip
        assert fake.policy.played == ["ok", "ok", "abort"]
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("[")]  # not progress
    assert code == 0
    assert err == ["g6: chat: 1 of 3 requests failed, left out of every figure (most often: finish_reason 'abort': "
                   "the server stopped the reply, x1)"]


def test_a_second_run_into_the_same_folder_is_refused(tmp_path, fake_neuron_server):
    out = tmp_path / "out"
    inf2 = openai_backend("inf2", fake_neuron_server.base_url, kind="neuron", tool_calls=False, metadata={})
    assert runner.run([inf2], make_options("--runs", "1", "--demos", "chat"), out, None) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    with pytest.raises(evidence.FolderInUse, match="already holds a run's evidence"):
        runner.run([inf2], make_options("--runs", "1", "--demos", "chat"), out, None)
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


def test_an_out_path_that_is_a_file_is_refused(tmp_path, fake_neuron_server):
    target = tmp_path / "file"
    target.write_text("x")
    inf2 = openai_backend("inf2", fake_neuron_server.base_url, kind="neuron", tool_calls=False, metadata={})
    with pytest.raises(evidence.FolderInUse, match="is a file"):
        runner.run([inf2], make_options("--demos", "chat"), Path(target), None)


def test_agent_runs_count_toward_a_stop_only_when_the_backend_is_down_or_hung():
    streak = stopping.FailureStreak(2)
    model_trouble = {"part": "counting", "error": "max_tokens: the model ran out of tokens"}
    hung = {"part": "counting", "error": "timeout after 300.0 s"}
    down = {"part": "counting", "error": "APIConnectionError: Connection error."}
    assert streak.observe("g6", model_trouble) is None and streak.observe("g6", model_trouble) is None
    assert streak.observe("g6", hung) is None and streak.observe("g6", {"part": "counting", "error": None}) is None
    assert streak.observe("g6", hung) is None
    assert streak.observe("g6", down) == {"after": 2, "reason": "APIConnectionError: Connection error."}
    timed = {"part": "chat", "phase": "timed", "error": "HTTP 503: busy"}
    assert stopping.backend_failure(timed) and not stopping.backend_failure(model_trouble)


def test_resends_are_counted_per_level_and_in_the_report(tmp_path):
    out = tmp_path / "out"
    with FakeOpenAI(Faults(["ok"], close_reused=True)) as fake:
        assert runner.run([openai_backend("g6", fake.base_url)], make_options("--runs", "3", "--demos", "chat"),
                          out, None) == 0  # fmt: skip
        assert len(fake.requests) == 5  # cold, then the first timed request twice, then two more
    records = [r for r in evidence.read_requests(out / "requests.jsonl") if r["part"] == "chat"]
    assert [r["reconnects"] for r in records] == [0, 1, 0, 0]
    assert records[1]["resend_reasons"][0].startswith("reused connection closed by the server before answering")
    assert [r["new_connection"] for r in records] == [True, True, True, True]
    s = json.loads((out / "summary.json").read_text())
    chat = s["backends"]["g6"]["chat"]
    assert chat["resends"] == 1 and chat["levels"][0]["resends"] == 1 and chat["errors"] == 0
    note = next(n for n in s["run"]["connection_notes"] if "g6: the server closed a kept-alive connection" in n)
    report = (out / "REPORT.md").read_text()
    # a transport fact the figures already account for: with the run's settings, not with the answer
    assert note not in report.split("## Scoreboard")[0] and f"- Connections: {note}" in report.split("## Run settings")[1]
    assert "- g6: 1 resent; 4 requests went out on a new connection" in report
    assert "| g6 | 1 | 3 | 0 | 1 |" in report  # concurrency, requests, errors, resends
