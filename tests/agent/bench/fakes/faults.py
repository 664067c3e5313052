"""Fault injection for the timing client's tests: a :class:`~.openai_fake.FakeOpenAI` policy.

It plays one case per chat request, in the order of its ``plan`` (cycling): a good streamed
reply, or one of the ways a real server breaks a reply.
A request that offers tools gets a tool call written as text (a model that describes the call
instead of making it). Failed replies report a usage count of :data:`POISON_TOKENS`, so a figure
computed from one of them would show.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.agent.bench.fakes.openai_fake import Answer

from tests.agent.bench.fakes.openai_fake import send

OK_WORDS = 10
"""A good reply carries this many words, one per chunk, and reports as many completion tokens."""
POISON_TOKENS = 9999
"""The usage a failed reply reports: a figure that counted it would be far off."""
TEXT_TOOL_CALL = 'count_ids(op=">=", value=10)'

CASES = {
    "ok": None,
    "error_event": "error event after 2 content chunks: CUDA out of memory",
    "cut_off": "cut off: the stream ended after 3 content chunks with no finish reason and no end marker",
    "abort": "finish_reason 'abort': the server stopped the reply",
    "finish_error": "finish_reason 'error': the server stopped the reply",
    "null_choice": "malformed event: choices[0] is null",
    "choices_object": "malformed event: choices is an object, not a list",
    "delta_string": "malformed event: delta is a string",
    "bad_json": "malformed event: '{not json'",
    "http500": "HTTP 500: ",
    "disconnect": "ClientPayloadError",
    "hang": "timeout after",
    "empty": "empty reply (no text and no tool call)",
    "zero_tokens": "zero completion tokens (200 OK)",
    "no_usage": None,
    "text_tool_call": None,
    "multi_token": None,
}
"""Every case the server plays, with the start of the error it must be recorded with (None: a success)."""


RAW_EVENTS = {"null_choice": b'{"choices": [null]}', "choices_object": b'{"choices": {"0": {"delta": {}}}}',
              "delta_string": b'{"choices": [{"delta": "w9", "finish_reason": null}]}', "bad_json": b"{not json"}
"""The malformed events, each sent after the second content chunk of a good reply."""


@dataclass
class Faults:
    """The :class:`~.openai_fake.FakeOpenAI` policy: the cases of ``plan``, one per chat request, cycling.

    Attributes:
        close_reused: Close a kept-alive connection when it is reused, unanswered (like llama.cpp).
        close_after_reply: Close the connection after each streamed reply, with keep-alive announced.
        played: The cases played so far.
        served_on: Chat requests answered so far on each connection, by its transport (the object itself, held
            here: by ``id`` a new connection could take a closed one's, whose memory Python had reused, and be
            taken for a reused connection).
    """

    plan: list[str]
    close_reused: bool = False
    close_after_reply: bool = False
    played: list[str] = field(default_factory=list)
    served_on: dict[Any, int] = field(default_factory=dict)

    async def answer(self, request: web.Request, body: dict[str, Any], n: int) -> web.StreamResponse:
        served = self.served_on.get(request.transport, 0)
        self.served_on[request.transport] = served + 1
        if self.close_reused and served:
            return await send(request, body, Answer(drop=True))
        if body.get("tools"):
            return await send(request, body, self.stream([TEXT_TOOL_CALL, " gives", " 8"], usage=3))
        case = self.plan[len(self.played) % len(self.plan)]
        self.played.append(case)
        if case == "hang":
            await asyncio.sleep(3600)  # cancelled when the client gives up (handler_cancellation)
        return await send(request, body, self.reply(case))

    def reply(self, case: str) -> Answer:
        words = [f"w{i}" if i == 0 else f" w{i}" for i in range(OK_WORDS)]
        if case == "http500":
            return Answer(status=500, body='{"error": {"message": "boom"}}')
        if case in RAW_EVENTS:
            return self.stream(words, raw_after=(2, RAW_EVENTS[case]))
        if case == "error_event":
            return self.stream(words[:2], usage=None, error={"message": "CUDA out of memory", "code": 500})
        if case == "cut_off":
            return self.stream(words[:3], finish=None, done=False, usage=None)
        if case in ("abort", "finish_error"):
            return self.stream(words[:4], finish="abort" if case == "abort" else "error")
        if case == "disconnect":
            return self.stream(words[:3], cut_connection=True)
        if case == "text_tool_call":
            return self.stream([TEXT_TOOL_CALL, " gives", " 8", " ids"], usage=4)
        if case == "multi_token":  # 200 ms apart: two reads even on a loaded machine (one read has no decode time)
            return self.stream(["".join(words[:5]), "".join(words[5:])], usage=OK_WORDS, chunk_delay_s=0.2)
        usage = {"empty": POISON_TOKENS, "zero_tokens": 0, "no_usage": None}.get(case, OK_WORDS)
        return self.stream([] if case == "empty" else words, usage=usage)

    def stream(self, chunks: list[str], usage: int | None = POISON_TOKENS, **shape: Any) -> Answer:
        """A reply 2 ms a chunk (unless ``chunk_delay_s`` says otherwise); a failed one reports
        :data:`POISON_TOKENS` unless told otherwise."""
        shape.setdefault("chunk_delay_s", 0.002)
        return Answer(chunks=chunks, id="chatcmpl-fault", model="fault", first_delay_s=0.002,
                      usage=None if usage is None else {"prompt_tokens": 7, "completion_tokens": usage,
                                                        "total_tokens": 7 + usage},
                      close_after=self.close_after_reply, **shape)  # fmt: skip
