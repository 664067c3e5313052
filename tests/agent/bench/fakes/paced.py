"""A paced model whose latency is known in advance: a :class:`~.openai_fake.FakeOpenAI` policy.

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
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.agent.bench.fakes.openai_fake import Answer

from tests.agent.bench.fakes.openai_fake import send


@dataclass
class Pace:
    """The pace; one instance serves one server (its slots are bound to that server's event loop)."""

    slots: int = 4
    ttft_s: float = 0.02
    tpot_s: float = 0.05
    tokens: int = 20
    stream: bool = True
    _free: asyncio.Semaphore = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._free = asyncio.Semaphore(self.slots)

    @property
    def service_s(self) -> float:
        """How long one reply holds its slot (at least)."""
        return self.ttft_s + (self.tokens - 1) * self.tpot_s

    async def answer(self, request: web.Request, body: dict[str, Any], n: int) -> web.StreamResponse:
        tokens = max(1, min(self.tokens, int(body.get("max_tokens") or self.tokens)))
        usage = {"prompt_tokens": 12, "completion_tokens": tokens, "total_tokens": 12 + tokens}
        async with self._free:
            return await send(request, body, Answer(
                chunks=[f"t{i} " for i in range(tokens)], finish="length", usage=usage, first_delay_s=self.ttft_s,
                chunk_delay_s=self.tpot_s, sse=self.stream, id=f"chatcmpl-paced-{n}", model="paced"))


@dataclass
class SlowsAfter:
    """A server that answers its first ``fast`` chat requests at once and every later one only after
    ``slow_s`` (its first token then), as a server that keeps up for a while and then falls behind; it
    reports ``prompt_tokens`` prompt tokens per request, of which ``cached`` from its prefix cache."""

    fast: int
    slow_s: float
    tokens: int = 8
    prompt_tokens: int = 40
    cached: int | None = None

    async def answer(self, request: web.Request, body: dict[str, Any], n: int) -> web.StreamResponse:
        usage: dict[str, Any] = {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.tokens,
                                 "total_tokens": self.prompt_tokens + self.tokens}
        if self.cached is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": self.cached}
        return await send(request, body, Answer(
            chunks=[f"t{i} " for i in range(self.tokens)], finish="length", usage=usage,
            first_delay_s=0.0 if n <= self.fast else self.slow_s, id=f"chatcmpl-slows-{n}", model="slows"))


@dataclass
class PrefixCached:
    """A server with a prefix cache of blocks of ``block`` words, as vLLM's and llama.cpp's: a prompt's cached
    tokens are the whole blocks its words share, from the start, with a prompt it was sent before (a word is a
    token here); it answers ``tokens`` tokens at once."""

    block: int = 8
    tokens: int = 4
    seen: list[list[str]] = field(default_factory=list)

    def cached(self, words: list[str]) -> int:
        common = max((next((i for i, (a, b) in enumerate(zip(words, old)) if a != b), min(len(words), len(old)))
                      for old in self.seen), default=0)
        return common // self.block * self.block

    async def answer(self, request: web.Request, body: dict[str, Any], n: int) -> web.StreamResponse:
        words = " ".join(str(m.get("content") or "") for m in body.get("messages", [])).split()
        usage = {"prompt_tokens": len(words), "completion_tokens": self.tokens,
                 "total_tokens": len(words) + self.tokens,
                 "prompt_tokens_details": {"cached_tokens": self.cached(words)}}
        self.seen.append(words)
        return await send(request, body, Answer(chunks=[f"t{i} " for i in range(self.tokens)], finish="length",
                                                usage=usage, id=f"chatcmpl-cached-{n}", model="cached"))
