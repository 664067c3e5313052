"""A scriptable OpenAI-compatible server on 127.0.0.1 for the benchmark's tests.

It answers ``POST /v1/chat/completions`` streamed (SSE, one content chunk per word, then a usage
chunk) or not, with delays between chunks when asked, and plays the failure modes the harness must
grade: HTTP errors, an empty completion, zero tokens, no usage block, malformed JSON, plain JSON to
a streamed request (a server without SSE). With ``tools`` in the request it can answer with a
scripted tool call and, once the tool result is back, a scripted final answer. ``GET`` requests are
answered from ``pages`` (path -> JSON; any other path is a 404), e.g. vLLM's ``/version`` and
``/v1/models`` (:func:`vllm_pages`).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any, Callable

from aiohttp import web

from .loopback import LoopbackServer, chat_app


@dataclass
class Script:
    """What the fake answers.

    Attributes:
        text: The completion (chunks are its words).
        chunk_delay_s: Pause before each content chunk after the first.
        first_delay_s: Pause before the first content chunk.
        mode: ``ok``, ``drop_once`` (close the first connection unanswered), ``http500``, ``empty``, ``zero_tokens``, ``no_usage``, ``malformed``, ``no_sse``.
        tool_call: ``(name, arguments)`` to call when tools are offered and no tool result is back yet;
            ``arguments`` may be a dict or a raw string.
        final: The answer once a tool result is back.
        prompt_tokens: Reported prompt tokens.
    """

    text: str = "The ocean is vast and deep and blue and full of life."
    chunk_delay_s: float = 0.0
    first_delay_s: float = 0.0
    mode: str = "ok"
    tool_call: tuple[str, Any] | None = None
    final: str = "There are 8 ids that are 10 or more."
    prompt_tokens: int = 12
    call_after_results: bool = False
    finish: str = "stop"
    choose: Callable[[dict[str, Any]], "Script"] | None = None


def vllm_pages(model: str, version: str = "0.30.0", max_model_len: int = 8192) -> dict[str, Any]:
    """``GET /version`` and ``GET /v1/models`` as vLLM's OpenAI-compatible server answers them."""
    return {
        "/version": {"version": version},
        "/v1/models": {"object": "list", "data": [{
            "id": model, "object": "model", "created": 1764547200, "owned_by": "vllm", "root": model, "parent": None,
            "max_model_len": max_model_len,
            "permission": [{"id": "modelperm-1", "object": "model_permission", "created": 1764547200,
                            "allow_create_engine": False, "allow_sampling": True, "allow_logprobs": True,
                            "allow_search_indices": False, "allow_view": True, "allow_fine_tuning": False,
                            "organization": "*", "group": None, "is_blocking": False}]}]},
    }


@dataclass
class FakeServer:
    script: Script = field(default_factory=Script)
    requests: list[dict[str, Any]] = field(default_factory=list)
    port: int = 0
    pages: dict[str, Any] = field(default_factory=dict)
    gets: list[str] = field(default_factory=list)

    async def get(self, request: web.Request) -> web.Response:
        self.gets.append(request.path)
        if request.path not in self.pages:
            return web.json_response({"error": {"message": "Not Found", "code": 404}}, status=404)
        return web.json_response(self.pages[request.path])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        script = self.script.choose(body) if self.script.choose else self.script
        stream = bool(body.get("stream"))
        if script.mode == "drop_once" and not getattr(self, "_dropped", False):
            self._dropped = True  # close the connection without answering, like a stale keep-alive
            assert request.transport is not None
            request.transport.close()
            return web.Response()
        if script.mode == "http500":
            return web.Response(status=500, text='{"error": "boom"}', content_type="application/json")
        if script.mode == "malformed":
            return web.Response(status=200, text="{not json", content_type="application/json")
        messages = body.get("messages") or []
        tool_back = any(m.get("role") == "tool" for m in messages)
        if body.get("tools") and script.tool_call and (script.call_after_results or not tool_back):
            name, args = script.tool_call
            arguments = args if isinstance(args, str) else json.dumps(args)
            call = {"index": 0, "id": f"call_{len(self.requests)}", "type": "function", "function": {"name": name, "arguments": arguments}}
            return await self._reply(request, stream, "", [call], script, finish="tool_calls")
        text = script.final if tool_back or body.get("tools") else script.text
        if body.get("response_format"):
            text = script.text
        if script.mode in ("empty", "zero_tokens"):
            text = ""
        return await self._reply(request, stream, text, None, script, finish=script.finish)

    async def _reply(self, request: web.Request, stream: bool, text: str, tool_calls: Any, script: Script,
                     finish: str) -> web.StreamResponse:
        words = text.split(" ") if text else []
        chunks = [w if i == 0 else " " + w for i, w in enumerate(words)]
        n_out = 0 if script.mode == "zero_tokens" else max(len(chunks), 1 if tool_calls else 0)
        usage = {"prompt_tokens": script.prompt_tokens, "completion_tokens": n_out,
                 "total_tokens": script.prompt_tokens + n_out,
                 "completion_tokens_details": None, "prompt_tokens_details": None}
        if not stream or script.mode == "no_sse":
            message: dict[str, Any] = {"role": "assistant", "content": text or None}
            if tool_calls:
                message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in tool_calls]
            payload: dict[str, Any] = {"id": "chatcmpl-fake", "object": "chat.completion", "model": "fake",
                                       "choices": [{"index": 0, "message": message, "finish_reason": finish}]}
            if script.mode != "no_usage":
                payload["usage"] = usage
            return web.json_response(payload)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "x-request-id": "req-fake"})
        await resp.prepare(request)

        async def send(obj: Any) -> None:
            await resp.write(b"data: " + json.dumps(obj).encode() + b"\n\n")

        base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": "fake"}
        await send({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                         "finish_reason": None}]})
        if tool_calls:
            await send({**base, "choices": [{"index": 0, "delta": {"tool_calls": tool_calls}, "finish_reason": None}]})
        for i, chunk in enumerate(chunks):
            delay = script.first_delay_s if i == 0 else script.chunk_delay_s
            if delay:
                await asyncio.sleep(delay)
            await send({**base, "choices": [{"index": 0, "delta": {"content": chunk}, "finish_reason": None}]})
        await send({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        if script.mode != "no_usage":
            await send({**base, "choices": [], "usage": usage})
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp


class RunningFake(LoopbackServer):
    """A FakeServer served from its own thread and event loop (usable from sync and async tests)."""

    def __init__(self, script: Script | None = None, pages: dict[str, Any] | None = None) -> None:
        self.server = FakeServer(script or Script(), pages=dict(pages or {}))
        super().__init__()

    def app(self) -> web.Application:
        return chat_app(self.server.handle, self.server.get)
