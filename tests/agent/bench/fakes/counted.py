"""A model with a tokenizer of its own and a prefill that takes time: a :class:`~.openai_fake.FakeOpenAI` policy.

It counts a prompt as no local tokenizer does (:meth:`Counted.prompt_tokens`: one token per ``chars_per_token``
characters of each message, plus ``turn_tokens`` per message and ``template_tokens`` per request), reports that
count as ``usage.prompt_tokens``, and takes ``prefill_s_per_token`` per prompt token before its first token, so
a long prompt's TTFT is long. It has ``slots`` generation slots (first come, first served). It writes exactly
``max_tokens`` tokens when asked to ignore its end of sequence, else at most ``natural_tokens``; like vLLM it
refuses a request over its context (``max_context``: prompt and output together) with a 400.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.agent.bench.fakes.openai_fake import Answer, send


@dataclass
class Counted:
    slots: int = 4
    prefill_s_per_token: float = 0.0
    one_prefill_at_a_time: bool = False
    """Prefill one prompt at a time (compute-bound, as on one accelerator): a queued prompt waits for the others'."""
    tpot_s: float = 0.0
    chars_per_token: float = 2.7
    turn_tokens: int = 5
    template_tokens: int = 13
    natural_tokens: int = 1000
    max_context: int | None = None
    _free: asyncio.Semaphore = field(init=False, repr=False)
    _prefill: asyncio.Lock = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._free = asyncio.Semaphore(self.slots)
        self._prefill = asyncio.Lock()

    def prompt_tokens(self, body: dict[str, Any]) -> int:
        return self.template_tokens + sum(self.turn_tokens + math.ceil(len(str(m.get("content") or "")) /
                                                                      self.chars_per_token)
                                          for m in body.get("messages") or [])

    async def answer(self, request: web.Request, body: dict[str, Any], n: int) -> web.StreamResponse:
        prompt = self.prompt_tokens(body)
        asked = int(body.get("max_tokens") or 16)
        if self.max_context is not None and prompt + asked > self.max_context:
            return await send(request, body, Answer(status=400, body=(
                '{"object": "error", "message": "This model\'s maximum context length is %d tokens"}'
                % self.max_context)))
        tokens = asked if body.get("ignore_eos") else min(asked, self.natural_tokens)
        usage = {"prompt_tokens": prompt, "completion_tokens": tokens, "total_tokens": prompt + tokens}
        prefill = self.prefill_s_per_token * prompt
        async with self._free:
            if self.one_prefill_at_a_time:
                async with self._prefill:
                    await asyncio.sleep(prefill)
                prefill = 0.0
            return await send(request, body, Answer(
                chunks=[f"r{n}w{i} " for i in range(tokens)], finish="length", usage=usage, first_delay_s=prefill,
                chunk_delay_s=self.tpot_s, id=f"chatcmpl-counted-{n}"))
