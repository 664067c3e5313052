"""Timing clients: one timed request, timestamped on receipt, never raising.

* OpenAI-compatible servers (vLLM, llama.cpp, the Neuron server): a lean aiohttp loop over
  the SSE lines with one ``json.loads`` per event. The openai SDK is kept out of this path (it
  costs about 12 ms per 100-chunk stream; HARNESS.md). A server that answers a streamed
  request with plain JSON (no SSE) is read as a non-streamed reply and marked so.
* Bedrock: ``ConverseStream`` on the backend's one boto3 client, events timestamped as they
  arrive, in a worker thread of the backend's own pool.
* SageMaker: ``InvokeEndpointWithResponseStream`` with ``stream_options.include_usage``;
  payload parts are split into SSE lines the same way.

Token counts come from the server's usage, never from counting chunks. Timing requests are
never retried: a retry would hide in the figure; a failure is recorded with its reason.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Iterable, Protocol

import aiohttp

_perf = time.perf_counter


@dataclass(slots=True)
class Timing:
    """What one timed request measured. Times are ``time.perf_counter()`` seconds.

    Attributes:
        t_sent: Just before the request was written.
        t_first: Arrival of the first chunk carrying content (None when none came).
        t_last: Arrival of the last chunk carrying content.
        t_done: End of the response (last byte read), also on error.
        chunk_times: Arrival time of every content chunk.
        text: The reply text.
        prompt_tokens: The server's usage count (None when it sent no usage).
        completion_tokens: The server's usage count (None when it sent no usage).
        finish_reason: As the server reported it.
        streamed: Whether the reply came as a stream of events.
        status: HTTP status (None for an AWS API call that raised before answering).
        request_id: The server's request id, to join with its logs.
        error: Why the request failed (None on success).
        wall_sent: ``time.time()`` at ``t_sent``, for UTC timestamps.
        reconnects: How often the request was sent again because a pooled connection turned out to
            be closed before any answer (the clock restarts each time).
        server_timings: Server-side timings when the server sends them (llama.cpp ``timings``,
            Bedrock ``metrics``).
    """

    t_sent: float
    wall_sent: float
    t_first: float | None = None
    t_last: float | None = None
    t_done: float | None = None
    chunk_times: list[float] = field(default_factory=list)
    text: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    streamed: bool = True
    status: int | None = None
    request_id: str | None = None
    error: str | None = None
    server_timings: dict[str, Any] | None = None
    reconnects: int = 0

    def mark_content(self, now: float) -> None:
        """A chunk carrying content arrived at ``now``."""
        if self.t_first is None:
            self.t_first = now
        self.t_last = now
        self.chunk_times.append(now)


_STALE_RETRIES = 2


class Timer(Protocol):
    """One backend's timing client, used for the whole run."""

    async def chat(self, prompt: str, max_tokens: int, *, stream: bool = True) -> Timing: ...

    async def close(self) -> None: ...


def _start() -> Timing:
    return Timing(t_sent=_perf(), wall_sent=time.time())


def _apply_usage(timing: Timing, usage: Any) -> None:
    if isinstance(usage, dict):
        p, c = usage.get("prompt_tokens"), usage.get("completion_tokens")
        timing.prompt_tokens = p if isinstance(p, int) else timing.prompt_tokens
        timing.completion_tokens = c if isinstance(c, int) else timing.completion_tokens


def _apply_event(timing: Timing, event: Any, now: float, parts: list[str]) -> None:
    """Fold one decoded OpenAI chat-completion chunk into ``timing``."""
    if not isinstance(event, dict):
        return
    if timing.request_id is None and isinstance(event.get("id"), str):
        timing.request_id = event["id"]
    choices = event.get("choices")
    if choices:
        choice = choices[0]
        delta = choice.get("delta") or {}
        content = delta.get("content")
        if content:
            parts.append(content)
            timing.mark_content(now)
        if choice.get("finish_reason"):
            timing.finish_reason = choice["finish_reason"]
    if event.get("usage"):
        _apply_usage(timing, event["usage"])
    if event.get("timings"):
        timing.server_timings = event["timings"]


def _apply_message(timing: Timing, body: Any, now: float) -> None:
    """Fold a non-streamed chat completion into ``timing``."""
    timing.streamed = False
    if not isinstance(body, dict):
        timing.error = f"malformed reply: {type(body).__name__}"
        return
    if isinstance(body.get("id"), str):
        timing.request_id = timing.request_id or body["id"]
    choices = body.get("choices") or []
    if choices:
        message = choices[0].get("message") or {}
        timing.text = message.get("content") or ""
        timing.finish_reason = choices[0].get("finish_reason")
        if timing.text:
            timing.t_first = timing.t_last = now
            timing.chunk_times.append(now)
    _apply_usage(timing, body.get("usage"))
    if body.get("timings"):
        timing.server_timings = body["timings"]


def check_reply(timing: Timing) -> None:
    """Turn the signature silent failures into errors: an empty completion, a ``200 OK`` with
    zero tokens (the Neuron zero-gather fault, SYSTEM.md 12.4). A missing usage block is not an
    error: it is recorded as missing and the token-based figures stay empty."""
    if timing.error:
        return
    if timing.completion_tokens == 0:
        timing.error = "zero completion tokens (200 OK)"
    elif not timing.text.strip():
        timing.error = "empty completion"


_raw_decode = json.JSONDecoder().raw_decode


async def _read_sse(content: aiohttp.StreamReader, timing: Timing, parts: list[str]) -> None:
    """Read an SSE body: every network read is timestamped on receipt, split into lines, and each
    ``data:`` event decoded once (the C scanner directly: no encoding sniffing, no whitespace
    regex). One await per network read, not per line."""
    tail = ""
    decode = codecs.getincrementaldecoder("utf-8")("replace").decode  # a character may span two reads
    first_event = True
    async for data in content.iter_any():
        now = _perf()
        text = tail + decode(data) if tail else decode(data)
        lines = text.split("\n")
        tail = lines.pop()
        for line in lines:
            if not line.startswith("data:"):
                continue
            payload = line[6:] if line.startswith("data: ") else line[5:].lstrip()
            if not payload or payload.startswith("[DONE]"):
                continue
            try:
                event = _raw_decode(payload)[0]
                choices = event.get("choices")
            except (ValueError, AttributeError):
                timing.error = f"malformed SSE event: {payload[:120]!r}"
                continue
            if first_event or not choices or event.get("usage") or choices[0].get("finish_reason"):
                first_event = False
                _apply_event(timing, event, now, parts)
                continue
            content_ = (choices[0].get("delta") or {}).get("content")
            if content_:
                parts.append(content_)
                timing.mark_content(now)
    if tail.startswith("data:") and tail[5:].strip() not in ("", "[DONE]"):
        try:
            _apply_event(timing, _raw_decode(tail[5:].strip())[0], _perf(), parts)
        except ValueError:
            timing.error = f"malformed SSE event: {tail[:120]!r}"


class OpenAIStreamTimer:
    """Timed chat requests to an OpenAI-compatible ``.../v1`` base URL over one aiohttp session.

    Args:
        base_url: The server's OpenAI-compatible base URL, ending in ``/v1``.
        model: The ``model`` field to send.
        timeout_s: Whole-request timeout (recorded with the run).
        max_connections: Connection-pool size (at least the highest concurrency).
        ignore_eos: Ask the server to generate exactly ``max_tokens`` (vLLM and llama.cpp honour it).
        api_key: Sent as a bearer token when given.
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

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self._max_connections, limit_per_host=self._max_connections)
            self._session = aiohttp.ClientSession(connector=connector, timeout=self.timeout)
        return self._session

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
        session = self._client()
        stale = 0
        while True:
            timing = _start()
            timing.reconnects = stale
            parts: list[str] = []
            try:
                async with session.post(self.url, data=data, headers=self.headers) as resp:
                    timing.status = resp.status
                    timing.request_id = resp.headers.get("x-request-id")
                    if resp.status >= 400:
                        body = await resp.text()
                        timing.error = f"HTTP {resp.status}: {body[:300]}"
                    elif stream and resp.content_type == "text/event-stream":
                        await _read_sse(resp.content, timing, parts)
                        timing.text = "".join(parts)
                    else:
                        raw_body = await resp.read()
                        now = _perf()
                        try:
                            _apply_message(timing, json.loads(raw_body), now)
                        except ValueError:
                            timing.error = f"malformed JSON reply: {raw_body[:120]!r}"
            except asyncio.TimeoutError:
                timing.error = f"timeout after {self.timeout.total} s"
            except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
                if timing.status is None and stale < _STALE_RETRIES:
                    # A pooled keep-alive connection the server had already closed (llama-server closes
                    # one after a response longer than its 5 s keep-alive timeout without saying so):
                    # nothing was answered, so send again on a fresh connection with a fresh clock.
                    stale += 1
                    continue
                timing.error = f"{type(exc).__name__}: {exc}"[:300]
            except aiohttp.ClientError as exc:
                timing.error = f"{type(exc).__name__}: {exc}"[:300]
            break
        timing.t_done = _perf()
        if timing.text == "" and parts:
            timing.text = "".join(parts)
        check_reply(timing)
        return timing

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


def split_sse_lines(chunks: Iterable[bytes]) -> Iterable[tuple[bytes, float]]:
    """Yield ``(line, arrival time)`` for each complete line in a stream of byte chunks."""
    buffer = b""
    for chunk in chunks:
        now = _perf()
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield line.rstrip(b"\r"), now
    if buffer.strip():
        yield buffer, _perf()


class BedrockStreamTimer:
    """Timed ``ConverseStream`` calls on one shared ``bedrock-runtime`` client.

    The boto3 client is synchronous; each call runs in this backend's own thread pool (sized to
    the highest concurrency) and timestamps events in that thread as they arrive.
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
            timing.status = resp.get("ResponseMetadata", {}).get("HTTPStatusCode")
            timing.request_id = resp.get("ResponseMetadata", {}).get("RequestId")
            for event in resp["stream"]:
                now = _perf()
                if "contentBlockDelta" in event:
                    text = event["contentBlockDelta"].get("delta", {}).get("text")
                    if text:
                        parts.append(text)
                        timing.mark_content(now)
                elif "messageStop" in event:
                    timing.finish_reason = event["messageStop"].get("stopReason")
                elif "metadata" in event:
                    usage = event["metadata"].get("usage") or {}
                    if isinstance(usage.get("inputTokens"), int):
                        timing.prompt_tokens = usage["inputTokens"]
                    if isinstance(usage.get("outputTokens"), int):
                        timing.completion_tokens = usage["outputTokens"]
                    timing.server_timings = event["metadata"].get("metrics")
        except Exception as exc:  # botocore raises many types; every one is a recorded failure
            timing.error = f"{type(exc).__name__}: {exc}"[:300]
        timing.t_done = _perf()
        timing.text = "".join(parts)
        check_reply(timing)
        return timing

    async def chat(self, prompt: str, max_tokens: int, *, stream: bool = True) -> Timing:
        return await asyncio.get_running_loop().run_in_executor(self._pool, self._call, prompt, max_tokens)

    async def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class SageMakerStreamTimer:
    """Timed ``InvokeEndpointWithResponseStream`` calls on one shared ``sagemaker-runtime`` client,
    OpenAI chat payload with ``stream_options.include_usage`` (the vLLM container's schema)."""

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
                timing.status = resp.get("ResponseMetadata", {}).get("HTTPStatusCode")
                timing.request_id = resp.get("ResponseMetadata", {}).get("RequestId")
                chunks = (e["PayloadPart"]["Bytes"] for e in resp["Body"] if "PayloadPart" in e)
                for line, now in split_sse_lines(chunks):
                    line = line.strip()
                    if line.startswith(b"data:"):
                        line = line[5:].strip()
                    if not line or line == b"[DONE]" or line.startswith(b":"):
                        continue
                    try:
                        event = json.loads(line)
                    except ValueError:
                        timing.error = f"malformed stream event: {line[:120]!r}"
                        continue
                    _apply_event(timing, event, now, parts)
                timing.text = "".join(parts)
            else:
                resp = self.client.invoke_endpoint(
                    EndpointName=self.endpoint_name, Body=json.dumps(payload), ContentType="application/json"
                )
                timing.status = resp.get("ResponseMetadata", {}).get("HTTPStatusCode")
                timing.request_id = resp.get("ResponseMetadata", {}).get("RequestId")
                raw = resp["Body"].read()
                _apply_message(timing, json.loads(raw), _perf())
        except Exception as exc:  # botocore and decoding errors alike are recorded failures
            timing.error = f"{type(exc).__name__}: {exc}"[:300]
        timing.t_done = _perf()
        check_reply(timing)
        return timing

    async def chat(self, prompt: str, max_tokens: int, *, stream: bool = True) -> Timing:
        return await asyncio.get_running_loop().run_in_executor(self._pool, self._call, prompt, max_tokens, stream)

    async def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
