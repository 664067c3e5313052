"""Tool requests through each backend kind's client (the BFCL part's cases): OpenAI-compatible
servers (streamed and not, and the constrained mode), Bedrock Converse and ConverseStream,
SageMaker InvokeEndpoint, and every broken reply recorded as a failure with its reason, exactly as
the same broken reply is in a chat request."""

from __future__ import annotations

import asyncio
import io
import json
import socket

import boto3
import pytest
from aiohttp import web
from botocore.response import StreamingBody
from botocore.stub import Stubber

from agent.bench.clients.bedrock import converse_args
from agent.bench.clients.openai_wire import chat_body
from agent.bench.clients.reply import ChatRequest
from agent.bench.grading.bfcl_grading import decode_calls
from agent.bench.parts.bfcl import tools_of
from agent.bench.tasks.bfcl_cases import load_cases

from tests.agent.bench.fakes.bfcl_answers import BfclAnswers

from tests.agent.bench.fakes.bfcl_answers import truth_calls
from tests.agent.bench.fakes.openai_fake import FakeOpenAI
from tests.agent.bench.fakes.clients import FakeSageMakerRuntime
from tests.agent.bench.fakes.clients import bedrock_client
from tests.agent.bench.fakes.clients import openai_client
from tests.agent.bench.fakes.clients import sagemaker_client
from tests.agent.bench.fakes.clients import send

PARALLEL = next(c for c in load_cases()["parallel_multiple"] if c.id == "parallel_multiple_0")
SIMPLE = next(c for c in load_cases()["simple"] if c.id == "simple_python_1")


def tool_request(case, max_tokens=64, stream=False):
    return ChatRequest(messages=tuple(case.messages), max_tokens=max_tokens, stream=stream, tools=tools_of(case.functions))


def ask(client, case, max_tokens=64, stream=False):
    return send(client, tool_request(case, max_tokens, stream))


@pytest.mark.parametrize("stream", [False, True])
def test_openai_tools_bring_back_the_calls_the_server_made(stream):
    with FakeOpenAI(BfclAnswers("truth")) as server:
        reply = ask(openai_client(server.base_url, timeout_s=30), PARALLEL, stream=stream)
    sent = server.requests[0]
    assert sent["tool_choice"] == "auto" and sent["model"] == "fake" and sent["stream"] is stream
    assert [t["function"]["name"] for t in sent["tools"]] == ["math_toolkit_sum_of_multiples",
                                                             "math_toolkit_product_of_primes"]
    assert "response_format" not in sent
    assert reply.error is None and reply.streamed is stream and reply.finish_reason == "tool_calls"
    assert decode_calls(reply.calls) == [{n: a} for n, a in truth_calls(PARALLEL)]
    assert all(isinstance(c["arguments"], str) for c in reply.calls)  # kept exactly as received
    assert reply.prompt_tokens and reply.completion_tokens and reply.request_id


@pytest.mark.parametrize("stream", [False, True])
def test_the_constrained_mode_sends_a_schema_instead_of_tools(stream):
    with FakeOpenAI(BfclAnswers("truth")) as server:
        reply = ask(openai_client(server.base_url, timeout_s=30, tool_calls=False, constrained=True), SIMPLE,
                    stream=stream)
    sent = server.requests[0]
    assert "tools" not in sent and sent["response_format"]["type"] == "json_schema"
    assert sent["messages"][0]["role"] == "system" and "math_factorial" in sent["messages"][0]["content"]
    assert reply.error is None and json.loads(reply.text)["calls"]
    assert decode_calls(reply.calls) == [{"math_factorial": {"number": 5}}]


# --- broken replies -------------------------------------------------------------------------------

CHUNK = {"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "Hi"},
                                                                       "finish_reason": None}]}


def sse(*events) -> bytes:
    return b"".join(b"data: " + (e if isinstance(e, bytes) else json.dumps(e).encode()) + b"\n\n" for e in events)


def finish(reason):
    return {"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}


def whole(finish_reason, **message):
    return json.dumps({"choices": [{"message": {"content": "", **message}, "finish_reason": finish_reason}]}).encode()


FACTORIAL = [{"id": "x", "type": "function", "function": {"name": "math_factorial", "arguments": '{"number": 5}'}}]
FAULTS = {
    "http_500": (500, "application/json", b'{"error": "boom"}', "HTTP 500"),
    "error_event": (200, "text/event-stream", sse(CHUNK, {"error": {"message": "engine died"}}), "error event"),
    "cut_off": (200, "text/event-stream", sse(CHUNK), "cut off: the stream ended"),
    "abort": (200, "text/event-stream", sse(CHUNK, finish("abort"), b"[DONE]"), "finish_reason 'abort'"),
    "content_filter": (200, "application/json", whole("content_filter", tool_calls=FACTORIAL),
                       "finish_reason 'content_filter'"),
    "malformed_event": (200, "text/event-stream", sse(CHUNK, b"{oops", finish("stop"), b"[DONE]"), "malformed event"),
    "empty_stream": (200, "text/event-stream", sse(finish("stop"), b"[DONE]"), "empty reply"),
    "malformed_json": (200, "application/json", b"{not json", "malformed JSON"),
    "empty_json": (200, "application/json", whole("stop"), "empty reply"),
    "choices_null": (200, "application/json", b'{"choices": [null]}', "malformed reply: choices"),
}


class Faulty:
    def __init__(self, status, content_type, body, drop_first=False):
        self.status, self.content_type, self.body, self.drop_first = status, content_type, body, drop_first
        self.seen = 0

    async def handle(self, request):
        await request.read()
        self.seen += 1
        if self.drop_first and self.seen == 1:
            request.transport.close()  # a kept-alive connection closed under the client, unanswered
            return web.Response()
        return web.Response(status=self.status, body=self.body, content_type=self.content_type)


async def serve_and_ask(handler, stream, request=None):
    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    client = openai_client(f"http://127.0.0.1:{port}/v1")
    try:
        return await client.send(request or tool_request(SIMPLE, 8, stream))
    finally:
        await client.close()
        await runner.cleanup()


@pytest.mark.parametrize("fault", list(FAULTS))
def test_every_broken_reply_is_a_failure_with_its_reason_in_every_part(fault):
    """One rule for every part: the same broken reply fails a tool request (BFCL) and a chat request
    alike, with the same reason (a content-filtered reply is a failed request in both)."""
    status, content_type, body, reason = FAULTS[fault]
    stream = content_type == "text/event-stream"
    tools = asyncio.run(serve_and_ask(Faulty(status, content_type, body), stream))
    chat = asyncio.run(serve_and_ask(Faulty(status, content_type, body), stream, ChatRequest.user("hi", 8, stream=stream)))
    assert tools.error and reason in tools.error, tools.error
    assert chat.error == tools.error


def test_arguments_sent_as_an_object_are_kept():
    body = json.dumps({"choices": [{"message": {"content": None, "tool_calls": [
        {"id": "x", "type": "function", "function": {"name": "math_factorial", "arguments": {"number": 5}}}]},
        "finish_reason": "tool_calls"}]}).encode()
    reply = asyncio.run(serve_and_ask(Faulty(200, "application/json", body), stream=False))
    assert reply.error is None and decode_calls(reply.calls) == [{"math_factorial": {"number": 5}}]


def test_a_new_connection_dropped_before_any_answer_is_a_failure_not_a_resend():
    """The one resend rule: only a request written on a reused connection the server had closed is
    sent again; a brand-new connection dropped unanswered is a failed request, in every part."""
    body = json.dumps({"choices": [{"message": {"content": "No function fits."}, "finish_reason": "stop"}]}).encode()
    reply = asyncio.run(serve_and_ask(Faulty(200, "application/json", body, drop_first=True), stream=False))
    assert reply.error and "ServerDisconnected" in reply.error and reply.reconnects == 0


def test_a_refused_connection_fails_at_once_and_is_not_resent():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    reply = ask(openai_client(f"http://127.0.0.1:{port}/v1"), SIMPLE, 8)
    assert reply.error and "Connect" in reply.error and reply.reconnects == 0 and reply.status is None


# --- Bedrock --------------------------------------------------------------------------------------


def bedrock():
    return boto3.client("bedrock-runtime", region_name="us-east-1")


def test_bedrock_converse_sends_tool_config_and_reads_tool_use_blocks():
    client = bedrock()
    with Stubber(client) as stub:
        stub.add_response("converse", {
            "output": {"message": {"role": "assistant", "content": [
                {"text": "Let me compute both."},
                {"toolUse": {"toolUseId": "t1", "name": "math_toolkit_sum_of_multiples",
                             "input": {"lower_limit": 1, "upper_limit": 1000, "multiples": [3, 5]}}},
                {"toolUse": {"toolUseId": "t2", "name": "math_toolkit_product_of_primes", "input": {"count": 5}}},
            ]}},
            "stopReason": "tool_use",
            "usage": {"inputTokens": 310, "outputTokens": 41, "totalTokens": 351},
            "metrics": {"latencyMs": 420},
        }, converse_args(tool_request(PARALLEL, 256), "us.amazon.nova-micro-v1:0"))
        reply = ask(bedrock_client(client), PARALLEL, 256)
        stub.assert_no_pending_responses()
    assert reply.error is None and reply.finish_reason == "tool_use"
    assert (reply.prompt_tokens, reply.completion_tokens, reply.text) == (310, 41, "Let me compute both.")
    assert decode_calls(reply.calls) == [{n: a} for n, a in truth_calls(PARALLEL)]
    config = converse_args(tool_request(PARALLEL), "m")["toolConfig"]
    assert config["toolChoice"] == {"auto": {}} and config["tools"][0]["toolSpec"]["name"] == "math_toolkit_sum_of_multiples"


def test_bedrock_converse_stream_assembles_tool_use_from_its_pieces():
    class Streaming:
        def converse_stream(self, **kwargs):
            events = [{"messageStart": {"role": "assistant"}},
                      {"contentBlockStart": {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t",
                                                                                          "name": "math_factorial"}}}},
                      {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"numb'}}}},
                      {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": 'er": 5}'}}}},
                      {"contentBlockStop": {"contentBlockIndex": 0}}, {"messageStop": {"stopReason": "tool_use"}},
                      {"metadata": {"usage": {"inputTokens": 40, "outputTokens": 9}}}]
            return {"ResponseMetadata": {"HTTPStatusCode": 200}, "stream": iter(events)}

    reply = ask(bedrock_client(Streaming()), SIMPLE, stream=True)
    assert reply.error is None and reply.streamed and reply.calls == [{"name": "math_factorial", "arguments": {"number": 5}}]


def test_a_bedrock_error_is_a_failure_with_its_code():
    client = bedrock()
    with Stubber(client) as stub:
        stub.add_client_error("converse", "ThrottlingException", "Too many requests", http_status_code=429)
        reply = ask(bedrock_client(client), SIMPLE, 256)
    assert "ThrottlingException" in reply.error


# --- SageMaker ------------------------------------------------------------------------------------


def sagemaker():
    return boto3.client("sagemaker-runtime", region_name="us-east-2")


def completion(calls):
    message = {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
        for i, (n, a) in enumerate(calls)]}
    return {"id": "chatcmpl-sm", "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 300, "completion_tokens": 40, "completion_tokens_details": None}}


def test_sagemaker_sends_the_openai_payload_through_invoke_endpoint():
    client = sagemaker()
    raw = json.dumps(completion(truth_calls(PARALLEL))).encode()
    body = json.dumps(chat_body(tool_request(PARALLEL, 128)))
    with Stubber(client) as stub:
        stub.add_response("invoke_endpoint", {"Body": StreamingBody(io.BytesIO(raw), len(raw)),
                                              "ContentType": "application/json"},
                          {"EndpointName": "ep", "Body": body, "ContentType": "application/json",
                           "Accept": "application/json"})  # fmt: skip
        sm = sagemaker_client(client)
        reply = ask(sm, PARALLEL, 128)
        stub.assert_no_pending_responses()
    sent = json.loads(body)
    assert sent["tool_choice"] == "auto" and "model" not in sent and sent["tools"][0]["type"] == "function"
    assert reply.error is None and sm.interface(tool_request(PARALLEL)) == "sagemaker-invoke" and not reply.streamed
    assert decode_calls(reply.calls) == [{n: a} for n, a in truth_calls(PARALLEL)]
    assert (reply.prompt_tokens, reply.completion_tokens, reply.finish_reason) == (300, 40, "tool_calls")


def test_sagemaker_streamed_replies_are_read_across_payload_parts():
    args = json.dumps({"number": 5})
    events = sse({"id": "s", "choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "c0", "type": "function", "function": {"name": "math_factorial", "arguments": ""}}]}}]},
        {"id": "s", "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": args}}]}}]},
        finish("tool_calls"), {"id": "s", "choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 9}},
        b"[DONE]")
    parts = [{"PayloadPart": {"Bytes": events[i:i + 37]}} for i in range(0, len(events), 37)]  # lines split mid-way
    fake = FakeSageMakerRuntime(parts)
    reply = ask(sagemaker_client(fake), SIMPLE, 128, stream=True)
    assert json.loads(fake.calls[0]["Body"])["stream_options"] == {"include_usage": True}
    assert reply.error is None and reply.streamed and reply.request_id == "sm-1"
    assert decode_calls(reply.calls) == [{"math_factorial": {"number": 5}}] and reply.completion_tokens == 9


def test_a_sagemaker_stream_error_is_a_failure():
    fake = FakeSageMakerRuntime([{"PayloadPart": {"Bytes": sse(CHUNK)}},
                                   {"ModelStreamError": {"Message": "CUDA error", "ErrorCode": "500"}}])
    reply = ask(sagemaker_client(fake), SIMPLE, 128, stream=True)
    assert "CUDA error" in reply.error


class ClosesAfterStreams:
    """Like llama.cpp's server: announces keep-alive, then closes the connection after every streamed reply."""

    def __init__(self):
        self.seen = 0

    async def handle(self, request):
        await request.read()
        self.seen += 1
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(sse(CHUNK, finish("stop"), b"[DONE]"))
        await resp.write_eof()
        request.transport.close()
        return resp


def test_a_server_that_closes_after_every_streamed_reply_loses_no_case():
    async def go():
        app = web.Application()
        server = ClosesAfterStreams()
        app.router.add_post("/v1/chat/completions", server.handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        client = openai_client(f"http://127.0.0.1:{port}/v1")
        try:
            return [await client.send(tool_request(SIMPLE, 8, stream=True)) for _ in range(10)], server.seen
        finally:
            await client.close()
            await runner.cleanup()

    replies, seen = asyncio.run(go())
    assert [r.error for r in replies] == [None] * 10 and all(r.text == "Hi" for r in replies)
    # each case answered once; a case written to a connection the server had closed never reached it, and
    # was sent once more (how many of the ten depends on when the close reaches the client)
    assert seen == 10 and {r.reconnects for r in replies} <= {0, 1}
