"""Each backend kind's client against a local fake server and fake AWS clients: timestamps, usage,
failure modes, resends."""

from __future__ import annotations

import asyncio
import json

import pytest

from agent.bench.clients.openai_wire import EventReader
from agent.bench.clients.reply import ChatRequest, Reply

from tests.agent.bench.fakes.clients import FakeBedrock
from tests.agent.bench.fakes.clients import FakeSageMakerRuntime
from tests.agent.bench.fakes.clients import bedrock_client

from tests.agent.bench.fakes.clients import openai_client

from tests.agent.bench.fakes.clients import sagemaker_client

from tests.agent.bench.fakes.clients import send
from tests.agent.bench.fakes.faults import OK_WORDS
from tests.agent.bench.fakes.faults import Faults
from tests.agent.bench.fakes.openai_fake import FakeOpenAI
from tests.agent.bench.fakes.scripted import Script


def chat(url, timeout_s=10.0, stream=True):
    request = ChatRequest.user("Write a short paragraph about the ocean.", 100, stream=stream)
    return send(openai_client(url, timeout_s=timeout_s), request)


def hi(max_tokens):
    return ChatRequest.user("hi", max_tokens)


def test_streamed_timings_follow_the_server_delays():
    text = " ".join(f"w{i}" for i in range(11))
    with FakeOpenAI(Script(text=text, first_delay_s=0.05, chunk_delay_s=0.02)) as fake:
        t = chat(fake.base_url)
        body = fake.requests[0]
    assert t.error is None and t.streamed and t.status == 200
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0.0 and body["max_tokens"] == 100
    assert t.text == text and t.completion_tokens == 11 and t.prompt_tokens == 12
    assert len(t.chunk_times) == 11
    # Each chunk is stamped when it is read: never before the server wrote it (50 ms after the request, then 20 ms
    # more for each later chunk), and not a second after. The sleeps are lower bounds on any machine; a loaded one
    # only reads later, and may read two chunks at once, so the gap between two reads has no lower bound of its
    # own (a chunk read 8 ms late and the next on time are 12 ms apart) while the time of every read has.
    since_sent = [c - t.t_sent for c in t.chunk_times]
    assert since_sent == sorted(since_sent) and since_sent[0] == t.t_first - t.t_sent
    due = [0.05 + 0.02 * k for k in range(11)]
    assert all(d - 0.005 <= s < d + 1.0 for d, s in zip(due, since_sent)), since_sent
    assert t.t_done >= t.t_last and t.request_id == "req-fake"


def test_non_streamed_request():
    with FakeOpenAI(Script()) as fake:
        t = chat(fake.base_url, stream=False)
        assert "stream_options" not in fake.requests[0]
    assert not t.streamed and t.error is None and t.completion_tokens == 12 and t.text.startswith("The ocean")


def test_server_without_sse_is_read_as_non_streamed():
    with FakeOpenAI(Script(mode="no_sse")) as fake:
        t = chat(fake.base_url)
    assert t.streamed is False and t.error is None and t.completion_tokens == 12


@pytest.mark.parametrize(
    "mode,error",
    [("http500", "HTTP 500"), ("empty", "zero completion tokens (200 OK)"), ("zero_tokens", "zero completion tokens"),
     ("malformed", "malformed JSON reply")],
)
def test_failure_modes_are_recorded_not_raised(mode, error):
    with FakeOpenAI(Script(mode=mode)) as fake:
        t = chat(fake.base_url)
    assert t.error is not None and t.error.startswith(error)


def test_a_reused_connection_the_server_closed_is_resent_once_on_a_new_one():
    async def go(url):
        client = openai_client(url)
        try:
            return [await client.send(hi(10)) for _ in range(3)], client.notes
        finally:
            await client.close()

    with FakeOpenAI(Faults(["ok"], close_reused=True)) as fake:
        (first, second, third), notes = asyncio.run(go(fake.base_url))
        assert len(fake.requests) == 4  # the second request went out twice
    assert first.error is None and first.reconnects == 0 and first.new_connection is True
    assert second.error is None and second.reconnects == 1 and second.new_connection is True
    assert second.resend_reasons[0].startswith("reused connection closed by the server before answering")
    assert third.error is None and third.reconnects == 0 and third.new_connection is True  # no reuse any more
    assert len(notes) == 1 and "every later request to this server went on a new connection" in notes[0]


def test_a_server_that_keeps_connections_alive_gets_them_reused():
    async def go(url):
        client = openai_client(url)
        try:
            return [await client.send(hi(10)) for _ in range(3)], client.transport.fresh_connections
        finally:
            await client.close()

    with FakeOpenAI(Faults(["ok"])) as fake:
        results, fresh = asyncio.run(go(fake.base_url))
    assert [r.new_connection for r in results] == [True, False, False] and not fresh
    assert all(r.error is None and r.reconnects == 0 for r in results)


def test_a_server_that_closes_after_every_reply_costs_at_most_one_resend():
    """llama.cpp's server closes the connection right after each streamed reply while announcing
    keep-alive; whether the client sees the close before it reuses the connection is a race."""

    async def go(url):
        client = openai_client(url)
        try:
            return [await client.send(hi(10)) for _ in range(6)]
        finally:
            await client.close()

    with FakeOpenAI(Faults(["ok"], close_after_reply=True)) as fake:
        results = asyncio.run(go(fake.base_url))
    assert all(r.error is None and r.completion_tokens == OK_WORDS for r in results)
    assert sum(r.reconnects for r in results) <= 1


def test_a_new_connection_dropped_before_answering_is_a_failure_not_a_resend():
    with FakeOpenAI(Script(mode="drop_once")) as fake:
        t = chat(fake.base_url)
        assert len(fake.requests) == 1
    assert t.reconnects == 0 and t.error and "ServerDisconnected" in t.error


def test_missing_usage_is_recorded_as_missing():
    with FakeOpenAI(Script(mode="no_usage")) as fake:
        t = chat(fake.base_url)
    assert t.error is None and t.completion_tokens is None and t.text


def test_timeout_and_refused_connection():
    with FakeOpenAI(Script(first_delay_s=2.0)) as fake:
        t = chat(fake.base_url, timeout_s=0.3)
    assert t.error == "timeout after 0.3 s"
    t = chat("http://127.0.0.1:9/v1")
    assert t.error and "Connect" in t.error and t.reconnects == 0  # a refused connection is never resent


def test_one_session_for_many_requests():
    async def go(url):
        client = openai_client(url)
        await client.send(hi(5))
        first = client.transport._session
        results = await asyncio.gather(*(client.send(hi(5)) for _ in range(8)))
        assert client.transport._session is first
        await client.close()
        return results

    with FakeOpenAI(Script()) as fake:
        results = asyncio.run(go(fake.base_url))
    assert all(r.error is None for r in results)


def test_event_reader_joins_events_split_across_reads_and_stamps_each_read():
    timing = Reply(t_sent=0.0, wall_sent=0.0)
    reader = EventReader(timing)
    event = b'data: {"choices": [{"delta": {"content": "h\xc3\xa9"}, "finish_reason": null}]}\r\n\r\n'
    reader.feed(b": ping\n\n" + event[:20], 1.0)
    reader.feed(event[20:31], 2.0)  # splits the two bytes of one character
    reader.feed(event[31:] + event + b"data: [DONE]", 3.0)
    reader.close()
    assert reader.parts == ["h\u00e9", "h\u00e9"] and timing.chunk_times == [3.0, 3.0] and timing.chunk_chars == [2, 2]
    assert reader.done and timing.error is None


def test_bedrock_converse_stream():
    events = [{"messageStart": {"role": "assistant"}}]
    events += [{"contentBlockDelta": {"delta": {"text": f"w{i} "}}} for i in range(5)]
    events += [{"messageStop": {"stopReason": "max_tokens"}},
               {"metadata": {"usage": {"inputTokens": 9, "outputTokens": 100, "cacheReadInputTokens": 6},
                             "metrics": {"latencyMs": 800}}}]
    client = FakeBedrock(events)

    t = send(bedrock_client(client), hi(100))
    assert t.error is None and t.completion_tokens == 100 and t.prompt_tokens == 9 and len(t.chunk_times) == 5
    assert t.cached_prompt_tokens == 6  # read from Bedrock's prompt cache
    assert t.finish_reason == "max_tokens" and t.request_id == "rid-1" and t.server_timings == {"latencyMs": 800}
    assert client.calls[0]["inferenceConfig"] == {"maxTokens": 100, "temperature": 0.0}


def test_bedrock_error_is_recorded():
    reply = send(bedrock_client(FakeBedrock(exc=RuntimeError("ThrottlingException"))), hi(10))
    assert reply.error == "RuntimeError: ThrottlingException"


SAGEMAKER_ANSWER = json.dumps({"choices": [{"message": {"content": "Paris"}, "finish_reason": "stop"}],
                               "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7,
                                         "completion_tokens_details": None}}).encode()


def test_sagemaker_stream_with_split_payload_parts_and_vllm_usage():
    events = [{"choices": [{"delta": {"content": w}, "finish_reason": None}]} for w in ("The", " sea", " is")]
    events.append({"choices": [{"delta": {}, "finish_reason": "stop"}]})
    events.append({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8,
                                            "completion_tokens_details": None, "prompt_tokens_details": None}})
    raw = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
    parts = [raw[i : i + 37] for i in range(0, len(raw), 37)]  # events split across parts
    client = FakeSageMakerRuntime([{"PayloadPart": {"Bytes": p}} for p in parts], SAGEMAKER_ANSWER)

    def go(stream=True):
        return send(sagemaker_client(client), ChatRequest.user("hi", 100, stream=stream))

    t = go()
    assert t.error is None and t.text == "The sea is" and t.completion_tokens == 3 and len(t.chunk_times) == 3
    payload = json.loads(client.calls[0]["Body"])
    assert payload["stream_options"] == {"include_usage": True} and client.calls[0]["EndpointName"] == "ep"
    t = go(stream=False)
    assert t.error is None and not t.streamed and t.completion_tokens == 2
