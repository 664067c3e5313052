"""What one request asks (:class:`ChatRequest`) and what came back (:class:`Reply`), and the one rule
that says whether a reply failed (:func:`check`).

Every part sends through these: the chat timings, the capacity search, the orchestrator's asks, the
BFCL cases and the quality items. A fix to what counts as a failed reply is made here, once.

**What counts as a failed request** (``Reply.error`` set, with its reason): an HTTP error, a
timeout, a refused or dropped connection, an error event in the stream (``data: {"error": ...}``,
as vLLM and llama.cpp send one after a partial reply; a Bedrock or SageMaker stream exception),
a stream that ends with neither a finish reason nor its end marker (``[DONE]``; Bedrock's
``messageStop``), a finish reason that says the server gave up (:data:`FAILED_FINISH`), an event
or reply whose JSON does not have the chat-completion shape, a reply with neither text nor a tool
call, and ``200 OK`` with zero completion tokens. A missing usage block is not a failure: it is
recorded as missing and the token-based figures stay empty. A failed request is never graded.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Mapping

FAILED_FINISH = frozenset(
    {"abort", "error", "content_filter", "content_filtered", "guardrail_intervened", "malformed_model_output",
     "malformed_tool_use"}
)  # fmt: skip
"""Finish (stop) reasons that say the server stopped the reply for its own reason: vLLM's ``abort``
(request cancelled or the engine failed), ``error``, OpenAI's ``content_filter``, Bedrock's
``content_filtered``, ``guardrail_intervened`` and malformed-output stops."""

ERROR_MAX_CHARS = 300


@dataclass(frozen=True, slots=True)
class Tool:
    """One tool offered to the model: a name, what it does, and its arguments as a JSON Schema
    object. Each backend kind writes it in its own wire format."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One chat request, as a part asks it; each backend kind sends it its own way.

    Attributes:
        messages: OpenAI-style turns (``{"role", "content"}``), a system turn first where there is one.
        max_tokens: Output cap.
        stream: Ask for a streamed reply (timings need one; tool calls may come either way).
        tools: Tools offered; the model may call them (``tool_choice: auto``).
        ignore_eos: Ask an OpenAI-compatible server for exactly ``max_tokens`` tokens.
        temperature: Sampling temperature (the benchmark uses 0 everywhere).
    """

    messages: tuple[Mapping[str, str], ...]
    max_tokens: int
    stream: bool = True
    tools: tuple[Tool, ...] = ()
    ignore_eos: bool = False
    temperature: float = 0.0

    @classmethod
    def user(cls, prompt: str, max_tokens: int, **kwargs: Any) -> ChatRequest:
        """A one-turn request."""
        return cls(messages=({"role": "user", "content": prompt},), max_tokens=max_tokens, **kwargs)

    @property
    def system(self) -> str | None:
        """The system turn's text, where there is one."""
        return next((m["content"] for m in self.messages if m.get("role") == "system"), None)

    @property
    def turns(self) -> list[Mapping[str, str]]:
        """The turns other than the system turn."""
        return [m for m in self.messages if m.get("role") != "system"]


@dataclass(slots=True)
class Reply:
    """What one request brought back and when. Times are ``time.perf_counter()`` seconds.

    Attributes:
        t_sent: Just before the request was written.
        wall_sent: ``time.time()`` at ``t_sent``, for UTC timestamps.
        t_first: Arrival of the first chunk carrying content (None when none came).
        t_last: Arrival of the last chunk carrying content.
        t_done: End of the response (last byte read), also on error.
        chunk_times: Arrival time of every content chunk; chunks that came in one network read
            share its arrival time.
        chunk_chars: Characters of content in each chunk (parallel to ``chunk_times``).
        text: The reply text.
        calls: Tool calls made through the tool interface, ``{"name", "arguments"}``, the arguments
            exactly as received (a JSON string from OpenAI-style servers, an object from Bedrock
            and the constrained mode).
        prompt_tokens: The server's usage count (None when it sent no usage).
        completion_tokens: The server's usage count (None when it sent no usage).
        cached_prompt_tokens: Prompt tokens the server read from its prefix cache, where it says (vLLM's
            ``usage.prompt_tokens_details.cached_tokens``, Bedrock's ``cacheReadInputTokens``).
        reasoning_tokens: Completion tokens the model spent reasoning before its answer, where the server says
            (``usage.completion_tokens_details.reasoning_tokens`` of OpenAI's Chat Completions usage): part of
            ``completion_tokens``, billed as output, not in the text.
        finish_reason: As the server reported it (Bedrock: ``stopReason``).
        complete: Whether the reply came to its end: a finish reason or the end marker of a
            stream, or a whole non-streamed body.
        streamed: Whether the reply came as a stream of events.
        status: HTTP status (None for an AWS API call that raised before answering).
        request_id: The server's request id, to join with its logs.
        error: Why the request failed (None on success).
        server_timings: Server-side timings when the server sends them (llama.cpp ``timings``,
            Bedrock ``metrics``).
        reconnects: How often the request was sent again (``len(resend_reasons)``; the clock
            restarts each time).
        resend_reasons: Why each earlier attempt was abandoned.
        new_connection: Whether the answered attempt went out on a newly opened connection (its
            connect time is then inside TTFT); None where the client cannot tell (AWS SDK calls).
        wire_bytes: The bytes of the answered attempt's response the client read off the wire, its headers and
            body (chunked framing aside): what the port forward carried of it; None where the client cannot
            tell (AWS SDK calls).
    """

    t_sent: float
    wall_sent: float
    t_first: float | None = None
    t_last: float | None = None
    t_done: float | None = None
    chunk_times: list[float] = field(default_factory=list)
    chunk_chars: list[int] = field(default_factory=list)
    text: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_prompt_tokens: int | None = None
    reasoning_tokens: int | None = None
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
    wire_bytes: int | None = None

    @classmethod
    def start(cls) -> Reply:
        """A reply whose clock starts now."""
        return cls(t_sent=time.perf_counter(), wall_sent=time.time())

    @property
    def seconds(self) -> float:
        """Send to last byte."""
        return 0.0 if self.t_done is None else self.t_done - self.t_sent

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
            self.error = reason[:ERROR_MAX_CHARS]

    def fail_on(self, exc: BaseException) -> None:
        """Record an exception as the reason the request failed."""
        self.fail(f"{type(exc).__name__}: {exc}")


def check(reply: Reply) -> None:
    """Turn the silent failures into errors: a stream cut off before its end, a finish reason that
    says the server gave up, ``200 OK`` with zero tokens (the Neuron zero-gather fault,
    docs/benchmark.md), a reply with neither text nor a call. A missing usage block is not an error."""
    if reply.error:
        return
    if not reply.complete:
        reply.error = (f"cut off: the stream ended after {len(reply.chunk_times)} content chunks with no finish "
                       "reason and no end marker")  # fmt: skip
    elif reply.finish_reason in FAILED_FINISH:
        reply.error = f"finish_reason {reply.finish_reason!r}: the server stopped the reply"
    elif reply.completion_tokens == 0:
        reply.error = "zero completion tokens (200 OK)"
    elif not reply.text.strip() and not reply.calls:
        reply.error = "empty reply (no text and no tool call)"


def joined_calls(pieces: Mapping[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool calls assembled from streamed pieces, in index order."""
    return [pieces[i] for i in sorted(pieces)]


def add_call_piece(pieces: dict[int, dict[str, Any]], index: Any, name: Any, arguments: Any) -> None:
    """Fold one piece of a tool call (streamed calls arrive as a name, then argument fragments)."""
    key = index if isinstance(index, int) else len(pieces)
    call = pieces.setdefault(key, {"name": "", "arguments": ""})
    if isinstance(name, str):
        call["name"] += name
    if isinstance(arguments, str) and isinstance(call["arguments"], str):
        call["arguments"] += arguments
    elif arguments is not None and not isinstance(arguments, str):  # a server that sends an object
        call["arguments"] = arguments
