"""A scripted model: the :class:`~.openai_fake.FakeOpenAI` policy of most of the benchmark's tests.

It answers with a text (one chunk per word, delays between chunks when asked) and plays the
failure modes the harness must grade: HTTP errors, an empty completion, zero tokens, no usage
block, malformed JSON, plain JSON to a streamed request (a server without SSE), a connection
dropped unanswered. With ``tools`` in the request it can answer with a scripted tool call and,
once the tool result is back, a scripted final answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

from aiohttp import web

from tests.agent.bench.fakes.openai_fake import Answer

from tests.agent.bench.fakes.openai_fake import ToolCall

from tests.agent.bench.fakes.openai_fake import send

from tests.agent.bench.fakes.openai_fake import words


@dataclass
class Script:
    """What the fake answers.

    Attributes:
        text: The completion (chunks are its words).
        chunk_delay_s: Pause before each content chunk after the first.
        first_delay_s: Pause before the first content chunk.
        mode: ``ok``, ``drop_once`` (close the first request's connection unanswered), ``http500``, ``empty``, ``zero_tokens``, ``no_usage``, ``malformed``, ``no_sse``.
        tool_call: ``(name, arguments)`` to call when tools are offered and no tool result is back yet;
            ``arguments`` may be a dict or a raw string.
        final: The answer once a tool result is back.
        prompt_tokens: Reported prompt tokens.
        call_after_results: Call ``tool_call`` even once a tool result is back.
        finish: The finish reason of a text reply.
        reasoning_tokens: Tokens it reports spending on reasoning before each reply (in ``completion_tokens`` and
            ``completion_tokens_details.reasoning_tokens``, as a model that reasons by default is billed), not shown.
        choose: Picks the script for each request from its body, instead of this one.
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
    reasoning_tokens: int = 0
    choose: Callable[[dict[str, Any]], "Script"] | None = None

    async def answer(self, request: web.Request, body: dict[str, Any], n: int) -> web.StreamResponse:
        script = self.choose(body) if self.choose else self
        return await send(request, body, script.reply(body, n))

    def reply(self, body: dict[str, Any], n: int) -> Answer:
        if self.mode == "drop_once" and n == 1:
            return Answer(drop=True)
        if self.mode == "http500":
            return Answer(status=500, body='{"error": "boom"}')
        if self.mode == "malformed":
            return Answer(body="{not json")
        tool_back = any(m.get("role") == "tool" for m in body.get("messages") or [])
        calls, text = [], self.final if tool_back or body.get("tools") else self.text
        if body.get("tools") and self.tool_call and (self.call_after_results or not tool_back):
            name, args = self.tool_call
            calls, text = [ToolCall(f"call_{n}", name, args if isinstance(args, str) else json.dumps(args))], ""
        elif body.get("response_format"):
            text = self.text
        if self.mode in ("empty", "zero_tokens"):
            text = ""
        chunks = words(text)
        n_out = 0 if self.mode == "zero_tokens" else max(len(chunks), 1 if calls else 0) + self.reasoning_tokens
        spent = {"reasoning_tokens": self.reasoning_tokens} if self.reasoning_tokens else None
        usage = {"prompt_tokens": self.prompt_tokens, "completion_tokens": n_out,
                 "total_tokens": self.prompt_tokens + n_out,
                 "completion_tokens_details": spent, "prompt_tokens_details": None}  # fmt: skip
        return Answer(chunks=chunks, tool_calls=calls, finish="tool_calls" if calls else self.finish,
                      usage=None if self.mode == "no_usage" else usage, first_delay_s=self.first_delay_s,
                      chunk_delay_s=self.chunk_delay_s, sse=self.mode != "no_sse", headers={"x-request-id": "req-fake"})
