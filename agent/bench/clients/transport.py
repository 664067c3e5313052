"""HTTP for OpenAI-compatible servers: one pooled aiohttp session per backend, every request timed on
receipt, and the one resend policy.

A lean aiohttp loop over the SSE lines with one ``json.loads`` per event; the openai SDK is kept
out of the timed path (it costs about 12 ms per 100-chunk stream; docs/timings.md). A server
that answers a streamed request with plain JSON (no SSE) is read as a non-streamed reply and
marked so. A request to Bedrock's OpenAI-compatible endpoint carries AWS's authentication (``auth``), computed
for each attempt before its clock starts (a SigV4 signature takes about 0.1 ms).

**Wire bytes and the pool.** Each reply records the bytes of its response read off the wire (headers and body),
what the port forward carried of it (``wire_bytes``). A backend reached through a pool of port forwards
(:mod:`agent.reach.tunnel`) has one URL per forward: each request goes to the one with the fewest requests in
flight, so the streams of a level are spread evenly over the pool.

**Resends.** A request is sent again at most once, and only when it was written on a *reused*
keep-alive connection that turns out to have been closed by the server before any answer came
(nothing was measured). The resend goes on a brand-new connection with a fresh clock and is
recorded (``resend_reasons``). A refused connection, a timeout or a connection dropped after an
answer began is never resent. llama.cpp's server closes the connection after every streamed
reply while announcing keep-alive (its chunked content provider returns false once the stream
has ended, which cpp-httplib treats as a cancelled response); a client that reuses the pooled
connection before the close arrives (tens of microseconds to milliseconds) writes into a closed
socket. After the first such resend every later request to that server goes on a new connection
(:attr:`HttpTransport.fresh_connections`), so no later request is written into a dead one.
"""

from __future__ import annotations

import asyncio
import json
import time
import weakref
from contextvars import ContextVar
from typing import Any, Mapping, Protocol, Sequence

import aiohttp

from .openai_wire import EventReader, apply_body
from .reply import Reply

IDLE_KEEPALIVE_S = 4.0
"""How long an idle pooled connection is kept: under the 5 s idle timeout of uvicorn (vLLM) and
cpp-httplib (llama.cpp), so a connection the server is about to drop for idleness is not reused."""

_perf = time.perf_counter


class RequestAuth(Protocol):
    """Authentication computed for each request from its method, URL, body and headers (AWS's SigV4:
    :class:`rigs.aws.MantleAuth`)."""

    def headers(self, method: str, url: str, body: bytes = b"", headers: Mapping[str, str] | None = None
                ) -> dict[str, str]: ...


class HttpTransport:
    """Timed POSTs of chat-completion bodies to one URL.

    Args:
        url: The chat-completions URL.
        timeout_s: Whole-request timeout.
        max_connections: Connection-pool size (at least the most requests in flight).
        api_key: Sent as a bearer token when given.
        auth: Computes each attempt's headers instead (a signature over the request), before its clock starts.
        more_urls: The same server's URL through the pool's other forwards (each request goes to the URL with the
            fewest requests in flight).

    Attributes:
        fresh_connections: Set once a reused connection turned out to have been closed by the server
            before answering; from then on every request goes on a new connection.
        notes: What the client learned about the server's connection handling, for the evidence.
    """

    def __init__(self, url: str, *, timeout_s: float, max_connections: int, api_key: str | None = None,
                 auth: RequestAuth | None = None, more_urls: Sequence[str] = ()) -> None:
        self.url = url
        self.in_flight = dict.fromkeys([url, *more_urls], 0)
        self.auth = auth
        self.timeout = aiohttp.ClientTimeout(total=timeout_s, sock_connect=min(30.0, timeout_s))
        self.headers = {"Content-Type": "application/json", "Accept": "text/event-stream, application/json"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"
        self._max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None
        self._fresh_session: aiohttp.ClientSession | None = None
        self.fresh_connections = False
        self.notes: list[str] = []

    def _pooled(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = _ReuseAwareConnector(limit=self._max_connections, limit_per_host=self._max_connections,
                                             keepalive_timeout=IDLE_KEEPALIVE_S)  # fmt: skip
            self._session = aiohttp.ClientSession(connector=connector, timeout=self.timeout)
        return self._session

    def _new_connection_each_time(self) -> aiohttp.ClientSession:
        if self._fresh_session is None or self._fresh_session.closed:
            connector = aiohttp.TCPConnector(limit=self._max_connections, limit_per_host=self._max_connections,
                                             force_close=True)  # fmt: skip
            self._fresh_session = aiohttp.ClientSession(connector=connector, timeout=self.timeout)
        return self._fresh_session

    async def post(self, body: dict[str, Any], *, stream: bool) -> Reply:
        """Send ``body`` and read the reply. Never raises; failures land in ``error``. The caller checks
        the reply (:func:`agent.bench.clients.reply.check`) once it has read what it needs."""
        data = json.dumps(body).encode()
        reasons: list[str] = []
        while True:
            reply, stale = await self._attempt(data, stream, fresh=self.fresh_connections or bool(reasons))
            if stale is None:
                break
            reasons.append(f"reused connection closed by the server before answering ({stale})")
            if not self.fresh_connections:
                self.fresh_connections = True
                self.notes.append(
                    f"the server closed a kept-alive connection without answering on it ({stale}); that request was "
                    "resent once on a new connection, and every later request to this server went on a new "
                    "connection, its connect time inside TTFT (docs/benchmark.md, Resends)")
        reply.reconnects = len(reasons)
        reply.resend_reasons = reasons
        return reply

    async def _attempt(self, data: bytes, stream: bool, fresh: bool) -> tuple[Reply, str | None]:
        """One try. Returns the reply and, when the request must be sent again, the error that says why."""
        conn = _Attempt(reused=False if fresh else None)
        session = self._new_connection_each_time() if fresh else self._pooled()
        url = min(self.in_flight, key=self.in_flight.__getitem__)
        headers = self.auth.headers("POST", url, data, self.headers) if self.auth else self.headers
        token = _attempt.set(conn)
        self.in_flight[url] += 1
        reply = Reply.start()
        try:
            await self._exchange(session, url, data, stream, reply, headers)
        except asyncio.TimeoutError:
            reply.fail(f"timeout after {self.timeout.total} s")
        except aiohttp.ClientConnectorError as exc:  # refused, unreachable: nothing to resend to
            reply.fail_on(exc)
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
            if reply.status is None and conn.reused:
                return reply, f"{type(exc).__name__}: {exc}"[:200]
            reply.fail_on(exc)
        except aiohttp.ClientError as exc:
            reply.fail_on(exc)
        finally:
            _attempt.reset(token)
            self.in_flight[url] -= 1
        reply.t_done = _perf()
        reply.new_connection = None if conn.reused is None else not conn.reused
        return reply, None

    async def _exchange(self, session: aiohttp.ClientSession, url: str, data: bytes, stream: bool, reply: Reply,
                        headers: Mapping[str, str]) -> None:
        async with session.post(url, data=data, headers=headers) as resp:
            reply.status = resp.status
            reply.request_id = resp.headers.get("x-request-id")
            # the status line and each header line as sent: "name: value\r\n"
            reply.wire_bytes = len(resp.reason or "") + 17 + sum(len(k) + len(v) + 4 for k, v in resp.raw_headers)
            if resp.status >= 400:
                body = await resp.read()
                reply.wire_bytes += len(body)
                reply.fail(f"HTTP {resp.status}: {body.decode(errors='replace')[:300]}")
            elif stream and resp.content_type == "text/event-stream":
                reader = EventReader(reply)
                try:
                    async for chunk in resp.content.iter_any():
                        reply.wire_bytes += len(chunk)
                        reader.feed(chunk, _perf())
                finally:
                    reader.close()
            else:
                body = await resp.read()
                reply.wire_bytes += len(body)
                apply_body(reply, body, _perf())

    async def close(self) -> None:
        for session in (self._session, self._fresh_session):
            if session is not None:
                await session.close()


class _Attempt:
    """Whether the current attempt got a pooled connection (None until it has one)."""

    __slots__ = ("reused",)

    def __init__(self, reused: bool | None) -> None:
        self.reused = reused


_attempt: ContextVar[_Attempt | None] = ContextVar("transport_attempt", default=None)


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
