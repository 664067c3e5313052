"""A fault-injecting OpenAI-compatible server on 127.0.0.1 for the timing client's tests.

It answers ``POST /v1/chat/completions`` and plays one case per chat request, in the order of
its ``plan`` (cycling): a good streamed reply, or one of the ways a real server breaks a reply.
A request that offers tools gets a tool call written as text (a model that describes the call
instead of making it). Failed replies report a usage count of :data:`POISON_TOKENS`, so a figure
computed from one of them would show.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from .loopback import LoopbackServer, chat_app

OK_WORDS = 10
"""A good reply carries this many words, one per chunk, and reports as many completion tokens."""
POISON_TOKENS = 9999
"""The usage a failed reply reports: a figure that counted it would be far off."""
TEXT_TOOL_CALL = 'count_ids(op=">=", value=10)'

CASES = {
    "ok": None,
    "error_event": "error event after 2 content chunks: CUDA out of memory",
    "cut_off": "cut off: the stream ended after 3 content chunks with no finish reason and no end marker",
    "abort": "finish_reason 'abort': the server stopped the reply",
    "finish_error": "finish_reason 'error': the server stopped the reply",
    "null_choice": "malformed event: choices[0] is null",
    "choices_object": "malformed event: choices is an object, not a list",
    "delta_string": "malformed event: delta is a string",
    "bad_json": "malformed event: '{not json'",
    "http500": "HTTP 500: ",
    "disconnect": "ClientPayloadError",
    "hang": "timeout after",
    "empty": "empty reply (no text and no tool call)",
    "zero_tokens": "zero completion tokens (200 OK)",
    "no_usage": None,
    "text_tool_call": None,
    "multi_token": None,
}
"""Every case the server plays, with the start of the error it must be recorded with (None: a success)."""


@dataclass
class FaultServer:
    plan: list[str] = field(default_factory=lambda: ["ok"])
    requests: list[dict[str, Any]] = field(default_factory=list)
    played: list[str] = field(default_factory=list)
    port: int = 0
    served_on: dict[int, int] = field(default_factory=dict)
    close_reused: bool = False
    close_after_reply: bool = False

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        transport = request.transport
        assert transport is not None
        served = self.served_on.get(id(transport), 0)
        self.served_on[id(transport)] = served + 1
        if self.close_reused and served:
            transport.close()  # like llama.cpp: a kept-alive connection that is gone when reused
            return web.Response()
        if body.get("tools"):
            return await self._stream(request, [TEXT_TOOL_CALL, " gives", " 8"], usage=3)
        case = self.plan[len(self.played) % len(self.plan)]
        self.played.append(case)
        words = [f"w{i}" if i == 0 else f" w{i}" for i in range(OK_WORDS)]
        if case == "http500":
            return web.Response(status=500, text='{"error": {"message": "boom"}}', content_type="application/json")
        if case == "hang":
            await asyncio.sleep(3600)  # cancelled when the client gives up (handler_cancellation)
        if case == "error_event":
            return await self._stream(request, words[:2], error={"message": "CUDA out of memory", "code": 500})
        if case == "cut_off":
            return await self._stream(request, words[:3], finish=None, done=False, usage=None)
        if case in ("abort", "finish_error"):
            return await self._stream(request, words[:4], finish="abort" if case == "abort" else "error")
        if case in ("null_choice", "choices_object", "delta_string", "bad_json"):
            bad = {"null_choice": b'{"choices": [null]}', "choices_object": b'{"choices": {"0": {"delta": {}}}}',
                   "delta_string": b'{"choices": [{"delta": "w9", "finish_reason": null}]}',
                   "bad_json": b"{not json"}[case]  # fmt: skip
            return await self._stream(request, words, raw_after=(2, bad))
        if case == "disconnect":
            return await self._stream(request, words[:3], cut_connection=True)
        if case == "empty":
            return await self._stream(request, [], usage=POISON_TOKENS)
        if case == "zero_tokens":
            return await self._stream(request, words, usage=0)
        if case == "no_usage":
            return await self._stream(request, words, usage=None)
        if case == "text_tool_call":
            return await self._stream(request, [TEXT_TOOL_CALL, " gives", " 8", " ids"], usage=4)
        if case == "multi_token":
            return await self._stream(request, ["".join(words[:5]), "".join(words[5:])], usage=OK_WORDS)
        return await self._stream(request, words, usage=OK_WORDS)

    async def _stream(self, request: web.Request, chunks: list[str], *, finish: str | None = "stop", done: bool = True,
                      usage: int | None = POISON_TOKENS, error: dict[str, Any] | None = None,
                      raw_after: tuple[int, bytes] | None = None, cut_connection: bool = False) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        base = {"id": "chatcmpl-fault", "object": "chat.completion.chunk", "model": "fault"}

        async def send(obj: Any) -> None:
            await resp.write(b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n\n")

        await send({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                         "finish_reason": None}]})
        for i, chunk in enumerate(chunks):
            await asyncio.sleep(0.002)
            await send({**base, "choices": [{"index": 0, "delta": {"content": chunk}, "finish_reason": None}]})
            if raw_after and i + 1 == raw_after[0]:
                await send(raw_after[1])
        if cut_connection:
            assert request.transport is not None
            request.transport.abort()
            return resp
        if error is not None:
            await send({"error": error})
        elif finish is not None:
            await send({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        if usage is not None and error is None:
            await send({**base, "choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": usage,
                                                          "total_tokens": 7 + usage}})
        if done:
            await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        if self.close_after_reply and request.transport is not None:
            request.transport.close()  # like llama.cpp after a streamed reply, with keep-alive announced
        return resp


class RunningFaults(LoopbackServer):
    """A FaultServer served from its own thread and event loop."""

    runner_options = {"handler_cancellation": True, "shutdown_timeout": 1.0}

    def __init__(self, plan: list[str], *, close_reused: bool = False, close_after_reply: bool = False) -> None:
        self.server = FaultServer(plan=list(plan), close_reused=close_reused, close_after_reply=close_after_reply)
        super().__init__()

    def app(self) -> web.Application:
        return chat_app(self.server.handle)
