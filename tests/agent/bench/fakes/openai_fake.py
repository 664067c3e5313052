"""The one fake OpenAI-compatible server of the tests, on 127.0.0.1: it owns the wire format.

:class:`FakeOpenAI` answers ``POST /v1/chat/completions`` through a *policy*, which only decides
what to answer, as an :class:`Answer`, and sends it with :func:`send`: streamed (SSE chunks as vLLM
writes them, then a usage chunk and ``[DONE]``) when the request asks for a stream, a whole chat
completion otherwise. The policies: :class:`.scripted.Script` (a scripted model: text, tool calls,
failure modes), :class:`.faults.Faults` (one broken reply per request, in a planned order),
:class:`.paced.Pace` (generation slots with a known latency), :class:`.bfcl_answers.BfclAnswers`
(BFCL cases answered right or wrong). ``GET`` requests are answered from ``pages`` (path -> JSON, or an
HTTP status to refuse it with; any other path is a 404), e.g. vLLM's ``/version`` and ``/v1/models`` (:func:`vllm_pages`). Every request
is kept as it came (``received``: method, path and query, headers, body), for a test that checks how it was
signed (:mod:`.sigv4`).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, Sequence

from aiohttp import web

from tests.agent.bench.fakes.loopback import LoopbackServer


class ToolCall(NamedTuple):
    id: str
    name: str
    arguments: str
    """JSON text, sent as it is (a test may send a malformed one)."""

    def wire(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass(frozen=True)
class Answer:
    """One reply as the wire carries it.

    Attributes:
        chunks: The content, one streamed chunk each (joined in a whole reply).
        tool_calls: Calls made, streamed in one chunk before the content.
        split_tool_calls: Stream each call as vLLM does instead: its name, then its arguments in two pieces.
        finish: The finish reason; None: a stream without a finish chunk.
        usage: The usage object (a streamed one in its own chunk after the finish); None: left out.
        error: An error event sent instead of the finish chunk.
        raw_after: ``(n, bytes)``: the bytes sent as one event's data after content chunk ``n``.
        cut_connection: Abort the connection after the content chunks.
        done: End the stream with ``data: [DONE]``.
        first_delay_s: Pause before the first content chunk.
        chunk_delay_s: Pause before each later content chunk (a whole reply comes after all the pauses).
        sse: False: a whole reply even to a streamed request (a server without SSE).
        id: The reply's ``id`` (a client takes it as the request id where no header gives one).
        model: The reply's ``model``.
        headers: More response headers (``x-request-id``).
        status: The HTTP status of a ``body``.
        body: Sent as it is, as JSON (with ``status``), instead of a chat completion.
        drop: Close the connection without answering.
        close_after: Close the connection after a streamed reply (with keep-alive announced).
    """

    chunks: Sequence[str] = ()
    tool_calls: Sequence[ToolCall] = ()
    split_tool_calls: bool = False
    finish: str | None = "stop"
    usage: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    raw_after: tuple[int, bytes] | None = None
    cut_connection: bool = False
    done: bool = True
    first_delay_s: float = 0.0
    chunk_delay_s: float = 0.0
    sse: bool = True
    id: str = "chatcmpl-fake"
    model: str | None = "fake"
    headers: dict[str, str] = field(default_factory=dict)
    status: int = 200
    body: str | None = None
    drop: bool = False
    close_after: bool = False

    def delays(self) -> list[float]:
        """The pause before each content chunk."""
        return [self.first_delay_s if i == 0 else self.chunk_delay_s for i in range(len(self.chunks))]

    def completion(self) -> dict[str, Any]:
        """The whole reply, as a chat completion."""
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.chunks) or None}
        if self.tool_calls:
            message["tool_calls"] = [call.wire() for call in self.tool_calls]
        payload: dict[str, Any] = {"id": self.id, "object": "chat.completion", "model": self.model,
                                   "choices": [{"index": 0, "message": message, "finish_reason": self.finish}]}
        if self.usage is not None:
            payload["usage"] = self.usage
        return payload

    def tool_deltas(self) -> list[dict[str, Any]]:
        """The streamed deltas that carry the tool calls."""
        if not self.split_tool_calls:
            whole = [{"index": i, **call.wire()} for i, call in enumerate(self.tool_calls)]
            return [{"tool_calls": whole}] if whole else []
        pieces = []
        for i, call in enumerate(self.tool_calls):
            half = len(call.arguments) // 2
            pieces += [{"index": i, **call._replace(arguments="").wire()},
                       {"index": i, "function": {"arguments": call.arguments[:half]}},
                       {"index": i, "function": {"arguments": call.arguments[half:]}}]
        return [{"tool_calls": [piece]} for piece in pieces]


def words(text: str) -> list[str]:
    """``text`` in one chunk per word (a space starts every chunk after the first)."""
    return [w if i == 0 else " " + w for i, w in enumerate(text.split(" "))] if text else []


async def send(request: web.Request, body: dict[str, Any], answer: Answer) -> web.StreamResponse:
    """Write ``answer`` to ``request`` (whose JSON is ``body``): streamed if it asked for a stream."""
    if answer.drop:
        assert request.transport is not None
        request.transport.close()  # like a stale keep-alive connection
        return web.Response()
    if answer.body is not None:
        return web.Response(status=answer.status, text=answer.body, content_type="application/json")
    if not (body.get("stream") and answer.sse):
        await asyncio.sleep(sum(answer.delays()))
        return web.json_response(answer.completion(), headers=answer.headers)
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", **answer.headers})
    await resp.prepare(request)
    head = {"id": answer.id, "object": "chat.completion.chunk", "model": answer.model}
    pending = bytearray()  # what is written at the next pause, or at the end: one write without pauses

    def event(data: Any) -> None:
        pending.extend(b"data: " + (data if isinstance(data, bytes) else json.dumps(data).encode()) + b"\n\n")

    def chunk(delta: dict[str, Any], finish: str | None = None) -> None:
        event({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    async def flush() -> None:
        if pending:
            await resp.write(bytes(pending))
            pending.clear()

    for delta in [{"role": "assistant", "content": ""}, *answer.tool_deltas()]:
        chunk(delta)
    for i, (content, delay) in enumerate(zip(answer.chunks, answer.delays())):
        if delay:
            await flush()
            await asyncio.sleep(delay)
        chunk({"content": content})
        if answer.raw_after and i + 1 == answer.raw_after[0]:
            event(answer.raw_after[1])
    if answer.cut_connection:
        await flush()
        assert request.transport is not None
        request.transport.abort()
        return resp
    if answer.error is not None:
        event({"error": answer.error})
    elif answer.finish is not None:
        chunk({}, answer.finish)
    if answer.usage is not None:
        event({**head, "choices": [], "usage": answer.usage})
    if answer.done:
        pending.extend(b"data: [DONE]\n\n")
    await flush()
    await resp.write_eof()
    if answer.close_after and request.transport is not None:
        request.transport.close()  # like llama.cpp after a streamed reply, with keep-alive announced
    return resp


class Received(NamedTuple):
    """One request as the server read it."""

    method: str
    path_qs: str
    headers: dict[str, str]
    body: bytes


class Policy(Protocol):
    """What the server answers: ``answer`` decides, and writes its decision with :func:`send`."""

    async def answer(self, request: web.Request, body: dict[str, Any], n: int) -> web.StreamResponse:
        """Answer ``request`` (its JSON ``body``), the server's ``n``-th chat request (from 1)."""


class FakeOpenAI(LoopbackServer):
    """The server, answering with ``policy``, used as ``with FakeOpenAI(policy) as server: ... server.base_url``
    (its ``endpoint`` and chat under ``route``, ``/v1`` unless given).

    ``requests`` logs every chat request's JSON body, ``gets`` every ``GET`` path. A handler is
    cancelled when its client goes away (a request that hangs until the client times out).
    """

    runner_options = {"handler_cancellation": True, "shutdown_timeout": 1.0}

    def __init__(self, policy: Policy, pages: dict[str, Any] | None = None, route: str = "/v1") -> None:
        super().__init__()
        self.policy = policy
        self.route = route
        self.pages = dict(pages or {})
        self.requests: list[dict[str, Any]] = []
        self.gets: list[str] = []
        self.received: list[Received] = []

    async def _keep(self, request: web.Request) -> bytes:
        body = await request.read()
        self.received.append(Received(request.method, request.path_qs, dict(request.headers), body))
        return body

    @property
    def endpoint(self) -> str:
        """Scheme, host and port, without a route."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return self.endpoint + self.route

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = json.loads(await self._keep(request))
        self.requests.append(body)
        return await self.policy.answer(request, body, len(self.requests))

    async def get(self, request: web.Request) -> web.Response:
        await self._keep(request)
        self.gets.append(request.path)
        page = self.pages.get(request.path, 404)
        if isinstance(page, int):  # a status: the server refuses the page
            return web.json_response({"error": {"message": f"HTTP {page}", "code": page}}, status=page)
        return web.json_response(page)

    def app(self) -> web.Application:
        app = web.Application()
        self.add_routes(app)
        return app

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post(f"{self.route}/chat/completions", self.chat)
        app.router.add_get("/{path:.*}", self.get)


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
