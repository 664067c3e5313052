"""Per-backend tool-call clients for the BFCL part: each sends a case through the backend's own
tool interface and returns what came back, never raising.

* OpenAI-compatible servers (vLLM, llama.cpp, any ``*_URL``): the chat-completions ``tools``
  field with ``tool_choice: auto``, over aiohttp, streamed (``--bfcl-stream``) or not; the calls
  are whatever the server's tool parser put in ``tool_calls``.
* A server whose model has no tool-call template (the local rig, ``constrained_tools``): the
  functions are listed in a system turn and the reply is held by ``response_format`` to
  ``{"calls": [...]}``, which the server's grammar enforces. Labelled **constrained** everywhere.
* Bedrock: ``Converse`` with ``toolConfig`` on the backend's one ``bedrock-runtime`` client.
* SageMaker: the same OpenAI payload as the vLLM rigs through ``InvokeEndpoint`` (or
  ``InvokeEndpointWithResponseStream`` with ``--bfcl-stream``) on the backend's one client.

A reply is a failure (``error`` set, never graded) when the request failed, the stream carried an
error event or ended without a finish reason, the finish reason is ``abort`` or ``error``, or the
reply holds neither text nor a call.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Protocol

import aiohttp

from ..tasks.bfcl_cases import Case
from ..tasks.bfcl_tools import bedrock_tool_config, constrained_prompt, constrained_schema, openai_tools
from .timing import IDLE_KEEPALIVE_S

BAD_FINISH = ("abort", "error")


@dataclass(slots=True)
class ToolReply:
    """What one case's request brought back.

    Attributes:
        calls: The calls made through the tool interface: ``{"name", "arguments"}`` with the
            arguments exactly as received (a JSON string from OpenAI-style servers, an object from
            Bedrock and the constrained mode).
        text: The reply's text (for the constrained mode, the JSON it wrote).
        finish_reason: As the server reported it (Bedrock: ``stopReason``).
        status: HTTP status, when one was seen.
        request_id: The server's request id, to join with its logs.
        error: Why the request failed (None when it did not).
        prompt_tokens: The server's usage count.
        output_tokens: The server's usage count.
        seconds: Send to last byte.
        streamed: Whether the reply came as a stream of events.
        resends: How often the request was sent again because a kept-alive connection had been
            closed before any answer.
    """

    calls: list[dict[str, Any]] = field(default_factory=list)
    text: str = ""
    finish_reason: str | None = None
    status: int | None = None
    request_id: str | None = None
    error: str | None = None
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    seconds: float = 0.0
    streamed: bool = False
    resends: int = 0

    def as_record(self) -> dict[str, Any]:
        out = asdict(self)
        out["seconds"] = round(self.seconds, 4)
        return out


class ToolClient(Protocol):
    """One backend's BFCL client, used for the whole part."""

    interface: str
    """How the calls are asked for, e.g. ``openai-tools`` (recorded with every case)."""
    constrained: bool
    streamed: bool

    async def ask(self, case: Case) -> ToolReply: ...

    async def close(self) -> None: ...


# --- OpenAI chat-completions replies, shared by the aiohttp and SageMaker clients -------------------


class _Fold:
    """Accumulates an OpenAI chat completion, whole or as chunks."""

    def __init__(self, reply: ToolReply) -> None:
        self.reply = reply
        self.parts: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}

    def message(self, body: Any) -> None:
        """A non-streamed completion."""
        if not isinstance(body, dict):
            self.reply.error = f"malformed reply: {str(body)[:120]!r}"
            return
        if body.get("error"):
            self.reply.error = f"error reply: {json.dumps(body['error'])[:200]}"
            return
        self._meta(body)
        choices = body.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
        if choice is None:
            self.reply.error = "reply without choices"
            return
        message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        self.parts.append(message.get("content") or "")
        for i, call in enumerate(message.get("tool_calls") or []):
            self._call_piece(i, call)
        self.reply.finish_reason = choice.get("finish_reason")

    def chunk(self, event: Any) -> None:
        """One streamed chunk."""
        if not isinstance(event, dict):
            self.reply.error = f"malformed event: {str(event)[:120]!r}"
            return
        if event.get("error"):
            self.reply.error = f"error event: {json.dumps(event['error'])[:200]}"
            return
        self._meta(event)
        choices = event.get("choices")
        if not isinstance(choices, list) or not choices:
            return
        choice = choices[0]
        if not isinstance(choice, dict):
            self.reply.error = f"malformed event: {json.dumps(event)[:120]}"
            return
        delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
        if isinstance(delta.get("content"), str):
            self.parts.append(delta["content"])
        for i, piece in enumerate(delta.get("tool_calls") or []):
            if isinstance(piece, dict):
                self._call_piece(piece.get("index", i), piece)
        if choice.get("finish_reason"):
            self.reply.finish_reason = choice["finish_reason"]

    def _meta(self, body: dict[str, Any]) -> None:
        if self.reply.request_id is None and isinstance(body.get("id"), str):
            self.reply.request_id = body["id"]
        usage = body.get("usage")
        if isinstance(usage, dict):
            if isinstance(usage.get("prompt_tokens"), int):
                self.reply.prompt_tokens = usage["prompt_tokens"]
            if isinstance(usage.get("completion_tokens"), int):
                self.reply.output_tokens = usage["completion_tokens"]

    def _call_piece(self, index: Any, piece: Any) -> None:
        function = piece.get("function") if isinstance(piece, dict) else None
        if not isinstance(function, dict):
            return
        key = index if isinstance(index, int) else len(self.calls)
        call = self.calls.setdefault(key, {"name": "", "arguments": ""})
        if isinstance(function.get("name"), str):
            call["name"] += function["name"]
        args = function.get("arguments")
        if isinstance(args, str):
            call["arguments"] += args
        elif args is not None:  # a server that sends the arguments as an object
            call["arguments"] = args

    def finish(self) -> None:
        self.reply.text = "".join(self.parts)
        self.reply.calls = [self.calls[i] for i in sorted(self.calls)]


def _sse_events(fold: _Fold, lines: Iterable[str]) -> bool:
    """Feed SSE lines to ``fold``; True once ``[DONE]`` was seen."""
    done = False
    for line in lines:
        line = line.strip()
        if line.startswith("data:"):
            payload = line[5:].strip()
        elif line.startswith("{"):  # a container that sends bare JSON lines
            payload = line
        else:
            continue
        if payload == "[DONE]":
            done = True
            continue
        if not payload:
            continue
        try:
            fold.chunk(json.loads(payload))
        except ValueError:
            fold.reply.error = f"malformed SSE event: {payload[:120]!r}"
    return done


def _check(reply: ToolReply, *, stream_done: bool | None = None) -> None:
    """Turn the silent failures into errors (see the module docstring)."""
    if reply.error:
        return
    if stream_done is not None and not reply.finish_reason and not stream_done:
        reply.error = "the stream ended without a finish reason"
    elif reply.finish_reason in BAD_FINISH:
        reply.error = f"finish_reason {reply.finish_reason}"
    elif not reply.calls and not reply.text.strip():
        reply.error = "empty reply (no text and no call)"


def _constrained_calls(reply: ToolReply) -> None:
    """The calls of a constrained reply (``{"calls": [...]}``); an unreadable one leaves none."""
    try:
        calls = json.loads(reply.text)["calls"]
    except (ValueError, KeyError, TypeError):
        return
    if isinstance(calls, list):
        reply.calls = [{"name": c.get("name"), "arguments": c.get("arguments")} for c in calls if isinstance(c, dict)]


def chat_payload(case: Case, *, max_tokens: int, stream: bool, constrained: bool) -> dict[str, Any]:
    """The OpenAI chat-completions body for ``case`` (no ``model``: the caller adds it where needed)."""
    payload: dict[str, Any] = {"messages": list(case.messages), "temperature": 0.0, "max_tokens": max_tokens,
                               "stream": stream}  # fmt: skip
    if stream:
        payload["stream_options"] = {"include_usage": True}
    if constrained:
        payload["messages"] = [{"role": "system", "content": constrained_prompt(case.functions)}, *case.messages]
        payload["response_format"] = {"type": "json_schema", "json_schema": {
            "name": "calls", "strict": True, "schema": constrained_schema(case.functions)}}
    else:
        payload["tools"] = openai_tools(case.functions)
        payload["tool_choice"] = "auto"
    return payload


# --- the clients ----------------------------------------------------------------------------------


class OpenAIToolClient:
    """BFCL cases to an OpenAI-compatible ``.../v1`` base URL over one aiohttp session.

    Args:
        base_url: The server's OpenAI-compatible base URL.
        model: The ``model`` field.
        max_tokens: Output cap per case.
        timeout_s: Whole-request timeout.
        stream: Ask for a streamed reply.
        constrained: Use the JSON-schema mode instead of ``tools`` (a model without tool calls).
        max_connections: Connection-pool size (at least the part's concurrency).
        api_key: Sent as a bearer token when given.
    """

    def __init__(self, base_url: str, model: str, *, max_tokens: int, timeout_s: float, stream: bool = False,
                 constrained: bool = False, max_connections: int = 16, api_key: str | None = None) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.max_tokens = max_tokens
        self.streamed = stream
        self.constrained = constrained
        self.interface = "openai-constrained" if constrained else "openai-tools"
        self.timeout = aiohttp.ClientTimeout(total=timeout_s, sock_connect=min(30.0, timeout_s))
        self.headers = {"Content-Type": "application/json", "Accept": "text/event-stream, application/json"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"
        self._max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self._max_connections, limit_per_host=self._max_connections,
                                             keepalive_timeout=IDLE_KEEPALIVE_S)
            self._session = aiohttp.ClientSession(connector=connector, timeout=self.timeout)
        return self._session

    async def ask(self, case: Case) -> ToolReply:
        payload = {"model": self.model, **chat_payload(case, max_tokens=self.max_tokens, stream=self.streamed,
                                                       constrained=self.constrained)}  # fmt: skip
        data = json.dumps(payload).encode()
        reply, stale = await self._attempt(self._client(), data, resends=0)
        if stale:
            # The connection was lost before any answer: a pooled connection the server had closed. llama.cpp's
            # server closes the connection after every streamed reply although it announces keep-alive, and
            # the close can reach the client after the next case was written to it ("Can not write request
            # body"). Nothing was answered, so the case is sent once more, on a connection of its own.
            connector = aiohttp.TCPConnector(force_close=True)
            async with aiohttp.ClientSession(connector=connector, timeout=self.timeout) as fresh:
                reply, _ = await self._attempt(fresh, data, resends=1)
        return reply

    async def _attempt(self, session: aiohttp.ClientSession, data: bytes, resends: int) -> tuple[ToolReply, bool]:
        """Send once; returns the reply and whether the connection was lost before any answer."""
        reply = ToolReply(resends=resends)
        done: bool | None = None
        stale = False
        t0 = time.perf_counter()
        try:
            done = await self._post(session, data, reply)
        except aiohttp.ClientConnectorError as exc:  # refused or unreachable: never resent
            reply.error = f"{type(exc).__name__}: {exc}"[:300]
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
            reply.error = f"{type(exc).__name__}: {exc}"[:300]
            stale = reply.status is None
        except asyncio.TimeoutError:
            reply.error = f"timeout after {self.timeout.total} s"
        except aiohttp.ClientError as exc:
            reply.error = f"{type(exc).__name__}: {exc}"[:300]
        reply.seconds = time.perf_counter() - t0
        if self.constrained and not reply.error:
            _constrained_calls(reply)
        _check(reply, stream_done=done if reply.streamed else None)
        return reply, stale

    async def _post(self, session: aiohttp.ClientSession, data: bytes, reply: ToolReply) -> bool | None:
        """Send once; returns whether a stream ended with ``[DONE]`` (None for a whole reply)."""
        fold = _Fold(reply)
        async with session.post(self.url, data=data, headers=self.headers) as resp:
            reply.status = resp.status
            reply.request_id = resp.headers.get("x-request-id")
            if resp.status >= 400:
                reply.error = f"HTTP {resp.status}: {(await resp.text())[:300]}"
                return None
            if self.streamed and resp.content_type == "text/event-stream":
                reply.streamed = True
                done, tail = False, ""
                decode = codecs.getincrementaldecoder("utf-8")("replace").decode
                async for piece in resp.content.iter_any():
                    lines = (tail + decode(piece)).split("\n")
                    tail = lines.pop()
                    done = _sse_events(fold, lines) or done
                done = _sse_events(fold, [tail]) or done
                fold.finish()
                return done
            raw = await resp.read()
            try:
                fold.message(json.loads(raw))
            except ValueError:
                reply.error = f"malformed JSON reply: {raw[:120]!r}"
            fold.finish()
            return None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


class _ThreadedClient:
    """A boto3 client's calls run in this backend's own thread pool."""

    def __init__(self, max_workers: int, prefix: str) -> None:
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix=prefix)

    async def ask(self, case: Case) -> ToolReply:
        return await asyncio.get_running_loop().run_in_executor(self._pool, self._timed, case)

    def _timed(self, case: Case) -> ToolReply:
        reply = ToolReply()
        t0 = time.perf_counter()
        try:
            self._call(case, reply)
        except Exception as exc:  # botocore raises many types; every one is a recorded failure
            reply.error = f"{type(exc).__name__}: {exc}"[:300]
        reply.seconds = time.perf_counter() - t0
        return reply

    def _call(self, case: Case, reply: ToolReply) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _metadata(reply: ToolReply, resp: dict[str, Any]) -> None:
    meta = resp.get("ResponseMetadata") or {}
    reply.status = meta.get("HTTPStatusCode")
    reply.request_id = meta.get("RequestId")


class BedrockToolClient(_ThreadedClient):
    """BFCL cases through ``Converse`` with ``toolConfig`` on one ``bedrock-runtime`` client."""

    interface = "bedrock-converse"
    constrained = False
    streamed = False

    def __init__(self, client: Any, model_id: str, *, max_tokens: int, max_workers: int = 8) -> None:
        super().__init__(max_workers, "bedrock-bfcl")
        self.client = client
        self.model_id = model_id
        self.max_tokens = max_tokens

    def _call(self, case: Case, reply: ToolReply) -> None:
        resp = self.client.converse(
            modelId=self.model_id,
            messages=[{"role": m["role"], "content": [{"text": m["content"]}]} for m in case.messages],
            toolConfig=bedrock_tool_config(case.functions),
            inferenceConfig={"maxTokens": self.max_tokens, "temperature": 0.0},
        )
        _metadata(reply, resp)
        texts = []
        for block in ((resp.get("output") or {}).get("message") or {}).get("content") or []:
            if "toolUse" in block:
                reply.calls.append({"name": block["toolUse"].get("name"), "arguments": block["toolUse"].get("input")})
            elif block.get("text"):
                texts.append(block["text"])
        reply.text = "".join(texts)
        reply.finish_reason = resp.get("stopReason")
        usage = resp.get("usage") or {}
        reply.prompt_tokens = usage.get("inputTokens")
        reply.output_tokens = usage.get("outputTokens")
        _check(reply)


class SageMakerToolClient(_ThreadedClient):
    """BFCL cases as the OpenAI payload through ``InvokeEndpoint`` (the vLLM container's chat route),
    or ``InvokeEndpointWithResponseStream`` when streamed, on one ``sagemaker-runtime`` client."""

    constrained = False

    def __init__(self, client: Any, endpoint_name: str, *, max_tokens: int, stream: bool = False,
                 max_workers: int = 8) -> None:
        super().__init__(max_workers, "sagemaker-bfcl")
        self.client = client
        self.endpoint_name = endpoint_name
        self.max_tokens = max_tokens
        self.streamed = stream
        self.interface = "sagemaker-invoke-stream" if stream else "sagemaker-invoke"

    def _call(self, case: Case, reply: ToolReply) -> None:
        body = json.dumps(chat_payload(case, max_tokens=self.max_tokens, stream=self.streamed, constrained=False))
        fold = _Fold(reply)
        if not self.streamed:
            resp = self.client.invoke_endpoint(EndpointName=self.endpoint_name, Body=body,
                                               ContentType="application/json", Accept="application/json")
            _metadata(reply, resp)
            raw = resp["Body"].read()
            try:
                fold.message(json.loads(raw))
            except ValueError:
                reply.error = f"malformed JSON reply: {raw[:120]!r}"
            fold.finish()
            _check(reply)
            return
        resp = self.client.invoke_endpoint_with_response_stream(EndpointName=self.endpoint_name, Body=body,
                                                                ContentType="application/json")
        _metadata(reply, resp)
        reply.streamed = True
        done, tail = False, ""
        decode = codecs.getincrementaldecoder("utf-8")("replace").decode
        for event in resp["Body"]:
            failure = event.get("ModelStreamError") or event.get("InternalStreamFailure")
            if failure:
                reply.error = f"stream error: {failure.get('ErrorCode', '')} {failure.get('Message', '')}".strip()[:300]
                break
            if "PayloadPart" not in event:
                continue
            lines = (tail + decode(event["PayloadPart"]["Bytes"])).split("\n")
            tail = lines.pop()
            done = _sse_events(fold, lines) or done
        done = _sse_events(fold, [tail]) or done
        fold.finish()
        _check(reply, stream_done=done)
