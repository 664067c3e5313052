"""Timing clients: one timed request, timestamped on receipt, never raising.

* OpenAI-compatible servers (vLLM, llama.cpp, the Neuron server): a lean aiohttp loop over
  the SSE lines with one ``json.loads`` per event (:mod:`agent.bench.clients.events` reads them). The openai SDK is kept out of this path (it
  costs about 12 ms per 100-chunk stream; docs/benchmark.md). A server that answers a streamed
  request with plain JSON (no SSE) is read as a non-streamed reply and marked so.
* Bedrock: ``ConverseStream`` on the backend's one boto3 client, events timestamped as they
  arrive, in a worker thread of the backend's own pool.
* SageMaker: ``InvokeEndpointWithResponseStream`` with ``stream_options.include_usage``;
  payload parts are split into SSE lines the same way.

Token counts come from the server's usage, never from counting chunks.

**What counts as a failed request** (``Timing.error`` set, with its reason): an HTTP error, a
timeout, a refused or dropped connection, an error event in the stream (``data: {"error": ...}``,
as vLLM and llama.cpp send one after a partial reply; a Bedrock or SageMaker stream exception),
a stream that ends with neither a finish reason nor its end marker (``[DONE]``; Bedrock's
``messageStop``), a finish reason that says the server gave up (:data:`FAILED_FINISH`), an event
or reply whose JSON does not have the chat-completion shape, an empty completion, and ``200 OK``
with zero completion tokens. A missing usage block is not a failure: it is recorded as missing
and the token-based figures stay empty. A malformed event fails its request only; the client and
the run go on.

**Resends.** A timing request is sent again at most once, and only when it was written on a
*reused* keep-alive connection that turns out to have been closed by the server before any answer
came (nothing was measured). The resend goes on a brand-new connection with a fresh clock and is
recorded (``resend_reasons``). A refused connection, a timeout or a connection dropped after an
answer began is never resent. llama.cpp's server closes the connection after every streamed
reply while announcing keep-alive (its chunked content provider returns false once the stream
has ended, which cpp-httplib treats as a cancelled response); a client that reuses the pooled
connection before the close arrives (tens of microseconds to milliseconds) writes into a closed
socket. After the
first such resend this client opens a new connection for every request to that server
(:attr:`OpenAIStreamTimer.fresh_connections`), so no later request is written into a dead one.
"""

from __future__ import annotations

import asyncio
import json
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Iterable, Protocol

import aiohttp

from .events import EventReader, apply_message, count, short

_perf = time.perf_counter

FAILED_FINISH = frozenset(
    {"abort", "error", "content_filter", "content_filtered", "guardrail_intervened", "malformed_model_output",
     "malformed_tool_use"}
)  # fmt: skip
"""Finish (stop) reasons that say the server stopped the reply for its own reason: vLLM's ``abort``
(request cancelled or the engine failed), ``error``, OpenAI's ``content_filter``, Bedrock's
``content_filtered``, ``guardrail_intervened`` and malformed-output stops."""

IDLE_KEEPALIVE_S = 4.0
"""How long an idle pooled connection is kept: under the 5 s idle timeout of uvicorn (vLLM) and
cpp-httplib (llama.cpp), so a connection the server is about to drop for idleness is not reused."""


@dataclass(slots=True)
class Timing:
    """What one timed request measured. Times are ``time.perf_counter()`` seconds.

    Attributes:
        t_sent: Just before the request was written.
        t_first: Arrival of the first chunk carrying content (None when none came).
        t_last: Arrival of the last chunk carrying content.
        t_done: End of the response (last byte read), also on error.
        chunk_times: Arrival time of every content chunk; chunks that came in one network read
            share its arrival time.
        chunk_chars: Characters of content in each chunk (parallel to ``chunk_times``).
        text: The reply text.
        prompt_tokens: The server's usage count (None when it sent no usage).
        completion_tokens: The server's usage count (None when it sent no usage).
        finish_reason: As the server reported it.
        complete: Whether the reply came to its end: a finish reason or the end marker of a
            stream, or a whole non-streamed body.
        streamed: Whether the reply came as a stream of events.
        status: HTTP status (None for an AWS API call that raised before answering).
        request_id: The server's request id, to join with its logs.
        error: Why the request failed (None on success).
        wall_sent: ``time.time()`` at ``t_sent``, for UTC timestamps.
        reconnects: How often the request was sent again (``len(resend_reasons)``; the clock
            restarts each time).
        resend_reasons: Why each earlier attempt was abandoned.
        new_connection: Whether the answered attempt went out on a newly opened connection (its
            connect time is then inside TTFT); None where the client cannot tell (AWS SDK calls).
        server_timings: Server-side timings when the server sends them (llama.cpp ``timings``,
            Bedrock ``metrics``).
    """

    t_sent: float
    wall_sent: float
    t_first: float | None = None
    t_last: float | None = None
    t_done: float | None = None
    chunk_times: list[float] = field(default_factory=list)
    chunk_chars: list[int] = field(default_factory=list)
    text: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    complete: bool = False
    streamed: bool = True
    status: int | None = None
    request_id: str | None = None
    error: str | None = None
    server_timings: dict[str, Any] | None = None
    reconnects: int = 0
    resend_reasons: list[str] = field(default_factory=list)
    new_connection: bool | None = None

    def mark_content(self, now: float, chars: int) -> None:
        """A chunk carrying ``chars`` characters of content arrived at ``now``."""
        if self.t_first is None:
            self.t_first = now
        self.t_last = now
        self.chunk_times.append(now)
        self.chunk_chars.append(chars)

    def fail(self, reason: str) -> None:
        """Record why the request failed; the first reason stands."""
        if self.error is None:
            self.error = reason[:300]


class Timer(Protocol):
    """One backend's timing client, used for the whole run."""

    async def chat(self, prompt: str, max_tokens: int, *, stream: bool = True) -> Timing: ...

    async def close(self) -> None: ...


def _start() -> Timing:
    return Timing(t_sent=_perf(), wall_sent=time.time())


def check_reply(timing: Timing) -> None:
    """Turn the silent failures into errors: a stream cut off before its end, a finish reason that
    says the server gave up, an empty completion, ``200 OK`` with zero tokens (the Neuron
    zero-gather fault, docs/benchmark.md). A missing usage block is not an error."""
    if timing.error:
        return
    if not timing.complete:
        timing.error = (f"cut off: the stream ended after {len(timing.chunk_times)} content chunks with no finish "
                        "reason and no end marker")  # fmt: skip
    elif timing.finish_reason in FAILED_FINISH:
        timing.error = f"finish_reason {timing.finish_reason!r}: the server stopped the reply"
    elif timing.completion_tokens == 0:
        timing.error = "zero completion tokens (200 OK)"
    elif not timing.text.strip():
        timing.error = "empty completion"


class OpenAIStreamTimer:
    """Timed chat requests to an OpenAI-compatible ``.../v1`` base URL over one aiohttp session.

    Args:
        base_url: The server's OpenAI-compatible base URL, ending in ``/v1``.
        model: The ``model`` field to send.
        timeout_s: Whole-request timeout (recorded with the run).
        max_connections: Connection-pool size (at least the highest concurrency).
        ignore_eos: Ask the server to generate exactly ``max_tokens`` (vLLM and llama.cpp honour it).
        api_key: Sent as a bearer token when given.

    Attributes:
        fresh_connections: Set once a reused connection turned out to have been closed by the server
            before answering; from then on every request goes on a new connection.
        notes: What the client learned about the server's connection handling, for the evidence.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        timeout_s: float = 300.0,
        max_connections: int = 64,
        ignore_eos: bool = False,
        api_key: str | None = None,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.ignore_eos = ignore_eos
        self.timeout = aiohttp.ClientTimeout(total=timeout_s, sock_connect=min(30.0, timeout_s))
        self.headers = {"Content-Type": "application/json", "Accept": "text/event-stream, application/json"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"
        self._max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None
        self._fresh_session: aiohttp.ClientSession | None = None
        self.fresh_connections = False
        self.notes: list[str] = []

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = _ReuseAwareConnector(limit=self._max_connections, limit_per_host=self._max_connections,
                                             keepalive_timeout=IDLE_KEEPALIVE_S)  # fmt: skip
            self._session = aiohttp.ClientSession(connector=connector, timeout=self.timeout)
        return self._session

    def _new_connection_client(self) -> aiohttp.ClientSession:
        """A session that opens a new connection for every request and closes it afterwards."""
        if self._fresh_session is None or self._fresh_session.closed:
            connector = aiohttp.TCPConnector(limit=self._max_connections, limit_per_host=self._max_connections,
                                             force_close=True)  # fmt: skip
            self._fresh_session = aiohttp.ClientSession(connector=connector, timeout=self.timeout)
        return self._fresh_session

    def body(self, messages: list[dict[str, Any]], max_tokens: int, stream: bool) -> bytes:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": 0.0,
            "stream": stream,
        }
        if stream:
            payload["stream_options"] = {"include_usage": True}
        if self.ignore_eos:
            payload["ignore_eos"] = True
        return json.dumps(payload).encode()

    async def chat(self, prompt: str, max_tokens: int, *, stream: bool = True) -> Timing:
        """Send one user turn and time the reply. Never raises; failures land in ``error``."""
        return await self.chat_messages([{"role": "user", "content": prompt}], max_tokens, stream=stream)

    async def chat_messages(self, messages: list[dict[str, Any]], max_tokens: int, *, stream: bool = True) -> Timing:
        data = self.body(messages, max_tokens, stream)
        reasons: list[str] = []
        while True:
            fresh = self.fresh_connections or bool(reasons)
            timing, stale = await self._attempt(data, stream, fresh)
            if stale is None:
                break
            reasons.append(f"reused connection closed by the server before answering ({stale})")
            if not self.fresh_connections:
                self.fresh_connections = True
                self.notes.append(
                    f"the server closed a kept-alive connection without answering on it ({stale}); that request was "
                    "resent once on a new connection, and every later request to this server went on a new "
                    "connection, its connect time inside TTFT (docs/benchmark.md, Resends)")
        timing.reconnects = len(reasons)
        timing.resend_reasons = reasons
        check_reply(timing)
        return timing

    async def _attempt(self, data: bytes, stream: bool, fresh: bool) -> tuple[Timing, str | None]:
        """One try. Returns the timing and, when the request must be sent again, the error that says why."""
        conn = _Attempt(reused=False if fresh else None)
        session = self._new_connection_client() if fresh else self._client()
        parts: list[str] = []
        token = _attempt.set(conn)
        timing = _start()
        try:
            async with session.post(self.url, data=data, headers=self.headers) as resp:
                timing.status = resp.status
                timing.request_id = resp.headers.get("x-request-id")
                if resp.status >= 400:
                    body = await resp.text(errors="replace")
                    timing.fail(f"HTTP {resp.status}: {body[:300]}")
                elif stream and resp.content_type == "text/event-stream":
                    reader = EventReader(timing, parts)
                    async for chunk in resp.content.iter_any():
                        reader.feed(chunk, _perf())
                    reader.close()
                else:
                    raw_body = await resp.read()
                    now = _perf()
                    try:
                        decoded = json.loads(raw_body)
                    except ValueError:
                        timing.fail(f"malformed JSON reply: {raw_body[:120]!r}")
                    else:
                        apply_message(timing, decoded, now)
        except asyncio.TimeoutError:
            timing.fail(f"timeout after {self.timeout.total} s")
        except aiohttp.ClientConnectorError as exc:  # refused, unreachable: nothing to resend to
            timing.fail(f"{type(exc).__name__}: {exc}")
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
            if timing.status is None and conn.reused:
                return timing, f"{type(exc).__name__}: {exc}"[:200]
            timing.fail(f"{type(exc).__name__}: {exc}")
        except aiohttp.ClientError as exc:
            timing.fail(f"{type(exc).__name__}: {exc}")
        finally:
            _attempt.reset(token)
        timing.t_done = _perf()
        if not timing.text and parts:
            timing.text = "".join(parts)
        timing.new_connection = None if conn.reused is None else not conn.reused
        return timing, None

    async def close(self) -> None:
        for session in (self._session, self._fresh_session):
            if session is not None:
                await session.close()


class _Attempt:
    """Whether the current attempt got a pooled connection (None until it has one)."""

    __slots__ = ("reused",)

    def __init__(self, reused: bool | None) -> None:
        self.reused = reused


_attempt: ContextVar[_Attempt | None] = ContextVar("timing_attempt", default=None)


class _ReuseAwareConnector(aiohttp.TCPConnector):
    """A pooling connector that tells the attempt running in the current task whether the connection
    it hands out has carried a request before (aiohttp's tracing would say so too, at about 0.1 ms
    of signal dispatch per request on this path)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._seen: weakref.WeakSet[Any] = weakref.WeakSet()

    async def connect(self, req: Any, traces: Any, timeout: Any) -> Any:
        connection = await super().connect(req, traces, timeout)
        attempt = _attempt.get()
        protocol = connection.protocol
        if attempt is not None and protocol is not None:
            attempt.reused = protocol in self._seen
            self._seen.add(protocol)
        return connection


def _metadata(resp: Any, timing: Timing) -> None:
    meta = resp.get("ResponseMetadata") or {} if isinstance(resp, dict) else {}
    timing.status = meta.get("HTTPStatusCode")
    timing.request_id = meta.get("RequestId")


def _stream_error(event: Any) -> str:
    """What an event other than the expected ones says (a stream exception such as
    ``modelStreamErrorException`` or SageMaker's ``ModelStreamError``)."""
    if not isinstance(event, dict) or not event:
        return f"malformed stream event: {short(event)[:120]}"
    name, body = next(iter(event.items()))
    message = (body.get("message") or body.get("Message")) if isinstance(body, dict) else body
    return f"stream error {name}: {short(message)}"


class BedrockStreamTimer:
    """Timed ``ConverseStream`` calls on one shared ``bedrock-runtime`` client.

    The boto3 client is synchronous; each call runs in this backend's own thread pool (sized to
    the highest concurrency) and timestamps events in that thread as they arrive. A stream
    exception (botocore raises it while iterating; a fake client may yield it as an event) or a
    stream that ends without ``messageStop`` fails the request; other event types are ignored.
    """

    def __init__(self, client: Any, model_id: str, *, max_workers: int = 16) -> None:
        self.client = client
        self.model_id = model_id
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="bedrock-timer")

    def _call(self, prompt: str, max_tokens: int) -> Timing:
        timing = _start()
        parts: list[str] = []
        try:
            resp = self.client.converse_stream(
                modelId=self.model_id,
                messages=[{"role": "user", "content": [{"text": prompt}]}],
                inferenceConfig={"maxTokens": max_tokens, "temperature": 0.0},
            )
            _metadata(resp, timing)
            for event in resp["stream"]:
                self._fold(timing, event, _perf(), parts)
        except Exception as exc:  # botocore raises many types; every one is a recorded failure
            timing.fail(f"{type(exc).__name__}: {exc}")
        timing.t_done = _perf()
        timing.text = "".join(parts)
        check_reply(timing)
        return timing

    def _fold(self, timing: Timing, event: Any, now: float, parts: list[str]) -> None:
        if not isinstance(event, dict):
            timing.fail(f"malformed stream event: {short(event)[:120]}")
        elif "contentBlockDelta" in event:
            block = event["contentBlockDelta"]
            delta = block.get("delta") if isinstance(block, dict) else None
            text = delta.get("text") if isinstance(delta, dict) else None
            if not isinstance(delta, dict) or (text is not None and not isinstance(text, str)):
                timing.fail(f"malformed contentBlockDelta: {short(block)[:120]}")
            elif text:
                parts.append(text)
                timing.mark_content(now, len(text))
        elif "messageStop" in event:
            stop = event["messageStop"]
            reason = stop.get("stopReason") if isinstance(stop, dict) else None
            timing.finish_reason = reason if isinstance(reason, str) else None
            timing.complete = True
        elif "metadata" in event:
            meta = event["metadata"]
            usage = meta.get("usage") if isinstance(meta, dict) else None
            if isinstance(usage, dict):
                timing.prompt_tokens = count(usage.get("inputTokens"))
                timing.completion_tokens = count(usage.get("outputTokens"))
            metrics = meta.get("metrics") if isinstance(meta, dict) else None
            timing.server_timings = metrics if isinstance(metrics, dict) else None
        elif any(key.endswith(("Exception", "Error", "Failure")) for key in event):
            timing.fail(_stream_error(event))

    async def chat(self, prompt: str, max_tokens: int, *, stream: bool = True) -> Timing:
        return await asyncio.get_running_loop().run_in_executor(self._pool, self._call, prompt, max_tokens)

    async def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class SageMakerStreamTimer:
    """Timed ``InvokeEndpointWithResponseStream`` calls on one shared ``sagemaker-runtime`` client,
    OpenAI chat payload with ``stream_options.include_usage`` (the vLLM container's schema). The
    payload parts are read with the same :class:`EventReader` as an SSE body; a stream exception
    event (``ModelStreamError``, ``InternalStreamFailure``) fails the request."""

    def __init__(self, client: Any, endpoint_name: str, *, model: str | None = None, max_workers: int = 16) -> None:
        self.client = client
        self.endpoint_name = endpoint_name
        self.model = model
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="sagemaker-timer")

    def _call(self, prompt: str, max_tokens: int, stream: bool) -> Timing:
        payload: dict[str, Any] = {
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": max_tokens,
            "temperature": 0.0,
            "stream": stream,
        }
        if stream:
            payload["stream_options"] = {"include_usage": True}
        timing = _start()
        parts: list[str] = []
        try:
            if stream:
                resp = self.client.invoke_endpoint_with_response_stream(
                    EndpointName=self.endpoint_name, Body=json.dumps(payload), ContentType="application/json"
                )
                _metadata(resp, timing)
                reader = EventReader(timing, parts, bare_json=True)
                for data in _payload_parts(timing, resp["Body"]):
                    reader.feed(data, _perf())
                reader.close()
            else:
                resp = self.client.invoke_endpoint(
                    EndpointName=self.endpoint_name, Body=json.dumps(payload), ContentType="application/json"
                )
                _metadata(resp, timing)
                raw = resp["Body"].read()
                apply_message(timing, json.loads(raw), _perf())
        except Exception as exc:  # botocore and decoding errors alike are recorded failures
            timing.fail(f"{type(exc).__name__}: {exc}")
        timing.t_done = _perf()
        check_reply(timing)
        return timing

    async def chat(self, prompt: str, max_tokens: int, *, stream: bool = True) -> Timing:
        return await asyncio.get_running_loop().run_in_executor(self._pool, self._call, prompt, max_tokens, stream)

    async def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _payload_parts(timing: Timing, events: Iterable[Any]) -> Iterable[bytes]:
    """The bytes of each ``PayloadPart``; any other event fails the request and ends the stream."""
    for event in events:
        part = event.get("PayloadPart") if isinstance(event, dict) else None
        data = part.get("Bytes") if isinstance(part, dict) else None
        if not isinstance(data, (bytes, bytearray)):
            timing.fail(_stream_error(event))
            return
        yield bytes(data)
