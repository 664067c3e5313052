"""A paced OpenAI-compatible server on 127.0.0.1 whose latency is known in advance.

It has ``slots`` generation slots. A request waits (first come, first served) until a slot is
free, then its first token comes ``ttft_s`` later and each further token ``tpot_s`` after the
one before; the slot is freed when the reply ends. So below ``slots`` requests in flight every
request sees TTFT = ``ttft_s`` and its tokens ``tpot_s`` apart; beyond it, the extra requests
wait for a whole reply first. The sleeps are lower bounds (a loaded machine only makes them
longer), which is what lets a test know a queued request misses a limit.

With ``stream=False`` (or a client that does not ask for a stream) the whole reply comes in one
piece at the end, as the Neuron server answers.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from .loopback import LoopbackServer, chat_app


@dataclass
class Pace:
    slots: int = 4
    ttft_s: float = 0.02
    tpot_s: float = 0.05
    tokens: int = 20
    stream: bool = True

    @property
    def service_s(self) -> float:
        """How long one reply holds its slot (at least)."""
        return self.ttft_s + (self.tokens - 1) * self.tpot_s


@dataclass
class PacedServer:
    pace: Pace
    port: int = 0
    served: int = 0
    waited: list[float] = field(default_factory=list)
    _slots: asyncio.Semaphore | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        n = max(1, min(self.pace.tokens, int(body.get("max_tokens") or self.pace.tokens)))
        stream = bool(body.get("stream")) and self.pace.stream
        assert self._slots is not None
        loop = asyncio.get_running_loop()
        arrived = loop.time()
        async with self._slots:
            self.waited.append(loop.time() - arrived)
            self.served += 1
            usage = {"prompt_tokens": 12, "completion_tokens": n, "total_tokens": 12 + n}
            base = {"id": f"chatcmpl-paced-{self.served}", "model": "paced"}
            if not stream:
                await asyncio.sleep(self.pace.ttft_s + (n - 1) * self.pace.tpot_s)
                text = " ".join(f"t{i}" for i in range(n))
                return web.json_response({**base, "object": "chat.completion", "usage": usage, "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"}]})
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(request)

            async def send(obj: Any) -> None:
                await resp.write(b"data: " + json.dumps({**base, "object": "chat.completion.chunk", **obj}).encode()
                                 + b"\n\n")

            for i in range(n):
                await asyncio.sleep(self.pace.ttft_s if i == 0 else self.pace.tpot_s)
                await send({"choices": [{"index": 0, "delta": {"content": f"t{i} "}, "finish_reason": None}]})
            await send({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]})
            await send({"choices": [], "usage": usage})
            await resp.write(b"data: [DONE]\n\n")
            await resp.write_eof()
            return resp


class RunningPaced(LoopbackServer):
    """A :class:`PacedServer` in its own thread and event loop (usable from sync tests)."""

    def __init__(self, pace: Pace) -> None:
        self.server = PacedServer(pace)
        super().__init__()

    def app(self) -> web.Application:
        self.server._slots = asyncio.Semaphore(self.server.pace.slots)  # bound to the serving loop
        return chat_app(self.server.handle)
