"""The OpenAI chat-completions wire format, shared by every server that speaks it (vLLM, llama.cpp, the
Neuron server, any ``*_URL``) and by the SageMaker vLLM container: the request body, and the one
reader of its replies, streamed or whole, into a :class:`~agent.bench.clients.reply.Reply`.

A streamed reply is a sequence of SSE ``data:`` events, each a chat-completion chunk; a
non-streamed one is a chat completion. Servers send odd but valid JSON (``{"choices": [null]}``,
``choices`` as an object, ``delta`` as a string) and error objects in the middle of a stream
(``data: {"error": ...}``, as vLLM and llama.cpp do after a partial reply). Nothing here raises:
such an event fails its request with a reason (``Reply.fail``), and the rest of the stream is
still read so the connection ends cleanly.
"""

from __future__ import annotations

import codecs
import json
import time
from typing import Any

from .reply import ChatRequest, Reply, add_call_piece, joined_calls


def chat_body(request: ChatRequest, model: str | None = None) -> dict[str, Any]:
    """The chat-completions body for ``request`` (``model`` left out where the server has one model)."""
    payload: dict[str, Any] = {"messages": [dict(m) for m in request.messages], "max_tokens": request.max_tokens,
                               "temperature": request.temperature, "stream": request.stream}  # fmt: skip
    if model is not None:
        payload = {"model": model, **payload}
    if request.stream:
        payload["stream_options"] = {"include_usage": True}
    if request.tools:
        payload["tools"] = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                              "parameters": dict(t.parameters)}}
                            for t in request.tools]  # fmt: skip
        payload["tool_choice"] = "auto"
    if request.ignore_eos:
        payload["ignore_eos"] = True
    return payload


def count(value: Any) -> int | None:
    """A token count as the server sent it, or None when it is not a whole number of at least 0."""
    return value if type(value) is int and value >= 0 else None


def apply_usage(reply: Reply, usage: dict[str, Any]) -> None:
    """Take the prompt and completion counts of an OpenAI ``usage`` object, the cached prompt tokens
    where the server reports them (``prompt_tokens_details.cached_tokens``, as vLLM does with
    ``--enable-prompt-tokens-details``), and the reasoning tokens within the completion tokens where it reports them
    (``completion_tokens_details.reasoning_tokens``, OpenAI's Chat Completions usage object)."""
    p, c = count(usage.get("prompt_tokens")), count(usage.get("completion_tokens"))
    reply.prompt_tokens = reply.prompt_tokens if p is None else p
    reply.completion_tokens = reply.completion_tokens if c is None else c
    details = usage.get("prompt_tokens_details")
    if isinstance(details, dict) and (cached := count(details.get("cached_tokens"))) is not None:
        reply.cached_prompt_tokens = cached
    spent = usage.get("completion_tokens_details")
    if isinstance(spent, dict) and (reasoning := count(spent.get("reasoning_tokens"))) is not None:
        reply.reasoning_tokens = reasoning


def short(value: Any) -> str:
    """``value`` as at most 200 characters of text, for an error message."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text[:200]


def error_message(obj: dict[str, Any]) -> str | None:
    """The message of an OpenAI-style error object (``{"error": ...}`` or ``{"object": "error", ...}``),
    or None when ``obj`` is not one."""
    err = obj.get("error")
    if err is not None:
        if isinstance(err, dict):
            return short(err.get("message") or err)
        return short(err)
    if obj.get("object") == "error":
        return short(obj.get("message") or obj)
    return None


def kind(value: Any) -> str:
    """A JSON value's kind, as a message names it ("a string", "an object", "null")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return {dict: "an object", list: "a list", str: "a string"}.get(type(value), f"a {type(value).__name__}")


def _meta(reply: Reply, obj: dict[str, Any]) -> str | None:
    """Take an event's or body's id, usage and server timings; a malformed usage is the problem returned."""
    if reply.request_id is None and isinstance(obj.get("id"), str):
        reply.request_id = obj["id"]
    usage = obj.get("usage")
    if usage is not None:
        if not isinstance(usage, dict):
            return f"usage is {kind(usage)}"
        apply_usage(reply, usage)
    if isinstance(obj.get("timings"), dict):
        reply.server_timings = obj["timings"]
    return None


def _tool_calls(value: Any, pieces: dict[int, dict[str, Any]]) -> str | None:
    """Fold a ``tool_calls`` list (whole, or one streamed delta); what is malformed about it, if anything."""
    if value is None:
        return None
    if not isinstance(value, list):
        return f"tool_calls is {kind(value)}"
    for i, piece in enumerate(value):
        function = piece.get("function") if isinstance(piece, dict) else None
        if not isinstance(function, dict):
            return f"tool_calls[{i}] has no function object"
        add_call_piece(pieces, piece.get("index", i), function.get("name"), function.get("arguments"))
    return None


def _choice_problem(choice: Any, pieces: dict[int, dict[str, Any]]) -> tuple[str | None, str | None]:
    """A streamed chunk's first choice: its content, or what is malformed about it."""
    if not isinstance(choice, dict):
        return None, f"choices[0] is {kind(choice)}"
    delta = choice.get("delta")
    if delta is not None and not isinstance(delta, dict):
        return None, f"delta is {kind(delta)}"
    content = delta.get("content") if delta else None
    if content is not None and not isinstance(content, str):
        return None, f"delta.content is {kind(content)}"
    finish = choice.get("finish_reason")
    if finish is not None and not isinstance(finish, str):
        return None, f"finish_reason is {kind(finish)}"
    return content, _tool_calls(delta.get("tool_calls") if delta else None, pieces)


def _is_completion(reply: Reply, obj: Any, what: str, error_prefix: str) -> bool:
    """Whether ``obj`` is a chat-completion object; if not, or if it is an error object, the reply fails."""
    if not isinstance(obj, dict):
        reply.fail(f"malformed {what}: {kind(obj)} instead of an object")
        return False
    message = error_message(obj)
    if message is not None:
        reply.fail(f"{error_prefix}: {message}")
        return False
    return True


def apply_event(reply: Reply, event: Any, now: float, parts: list[str], pieces: dict[int, dict[str, Any]]) -> None:
    """Fold one decoded chat-completion chunk into ``reply``, checking its shape; a chunk that is
    not one, or an error event, fails the request with its reason."""
    if not _is_completion(reply, event, "event", f"error event after {len(reply.chunk_times)} content chunks"):
        return
    choices = event.get("choices")
    if choices is not None and not isinstance(choices, list):
        reply.fail(f"malformed event: choices is {kind(choices)}, not a list")
        return
    if choices:
        content, problem = _choice_problem(choices[0], pieces)
        if problem:
            reply.fail(f"malformed event: {problem}")
            return
        if content:
            parts.append(content)
            reply.mark_content(now, len(content))
        if choices[0].get("finish_reason"):
            reply.finish_reason = choices[0]["finish_reason"]
    problem = _meta(reply, event)
    if problem:
        reply.fail(f"malformed event: {problem}")


def apply_message(reply: Reply, body: Any, now: float) -> None:
    """Fold a non-streamed chat completion into ``reply``, checking its shape."""
    reply.streamed = False
    if not _is_completion(reply, body, "reply", "error reply"):
        return
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        reply.fail(f"malformed reply: choices is {short(choices)[:60]}")
        return
    turn = choices[0].get("message")
    content = turn.get("content") if isinstance(turn, dict) else None
    if not isinstance(turn, dict) or (content is not None and not isinstance(content, str)):
        reply.fail(f"malformed reply: message is {short(turn)[:60]}")
        return
    pieces: dict[int, dict[str, Any]] = {}
    problem = _tool_calls(turn.get("tool_calls"), pieces) or _meta(reply, body)
    if problem:
        reply.fail(f"malformed reply: {problem}")
        return
    finish = choices[0].get("finish_reason")
    reply.finish_reason = finish if isinstance(finish, str) else None
    reply.text = content or ""
    reply.calls = joined_calls(pieces)
    if reply.text:
        reply.mark_content(now, len(reply.text))
    reply.complete = True


def apply_body(reply: Reply, raw: bytes, now: float) -> None:
    """A whole (non-streamed) body as it came: JSON that must be a chat completion."""
    try:
        decoded = json.loads(raw)
    except ValueError:
        reply.streamed = False
        reply.fail(f"malformed JSON reply: {raw[:120]!r}")
        return
    apply_message(reply, decoded, now)


_raw_decode = json.JSONDecoder().raw_decode
_MALFORMED = (KeyError, IndexError, TypeError, AttributeError)


class EventReader:
    """Reads the events of a chat-completion stream as its bytes arrive.

    Every network read is timestamped by the caller, split into lines, and each ``data:`` event
    decoded once (the C scanner directly: no encoding sniffing, no whitespace regex). A plain
    content event takes a fast path; anything else (the first event, a finish, usage, a tool-call
    piece, an error, an odd shape) goes through :func:`apply_event`, which checks it. ``bare_json``
    also reads lines that are JSON without the ``data:`` prefix (SageMaker containers may stream
    either).
    """

    __slots__ = ("reply", "parts", "pieces", "done", "bare_json", "_first", "_tail", "_decode")

    def __init__(self, reply: Reply, *, bare_json: bool = False) -> None:
        self.reply = reply
        self.parts: list[str] = []
        self.pieces: dict[int, dict[str, Any]] = {}
        self.done = False
        self.bare_json = bare_json
        self._first = True
        self._tail = ""
        self._decode = codecs.getincrementaldecoder("utf-8")("replace").decode  # a character may span two reads

    def feed(self, data: bytes, now: float) -> None:
        text = self._decode(data)
        if self._tail:
            text = self._tail + text
        lines = text.split("\n")
        self._tail = lines.pop()
        self._lines(lines, now)

    def close(self) -> None:
        """The stream ended: read a last line that had no newline, then set the reply's text, its
        calls and whether it completed (``[DONE]`` or a finish reason; anything else was cut off)."""
        rest = self._tail + self._decode(b"", True)
        self._tail = ""
        if rest.strip():
            self._lines([rest], time.perf_counter())
        self.reply.text = "".join(self.parts)
        self.reply.calls = joined_calls(self.pieces)
        self.reply.complete = self.done or self.reply.finish_reason is not None

    def _lines(self, lines: list[str], now: float) -> None:
        reply, parts = self.reply, self.parts
        for line in lines:
            if line.startswith("data:"):
                payload = line[6:] if line.startswith("data: ") else line[5:].lstrip()
            elif self.bare_json and line.lstrip().startswith("{"):
                payload = line.lstrip()
            else:
                continue
            if not payload or payload.isspace():
                continue
            if payload[0] != "{" and payload.startswith("[DONE]"):
                self.done = True
                continue
            try:
                event = _raw_decode(payload)[0]
            except ValueError:
                reply.fail(f"malformed event: {payload[:120]!r}")
                continue
            if not self._first:
                try:
                    choice = event["choices"][0]
                    content = choice["delta"]["content"]
                    plain = choice.get("finish_reason") is None and event.get("usage") is None and "error" not in event
                except _MALFORMED:
                    plain = False
                if plain and type(content) is str and "tool_calls" not in choice["delta"]:
                    if content:
                        parts.append(content)
                        reply.mark_content(now, len(content))
                    continue
            self._first = False
            apply_event(reply, event, now, parts, self.pieces)
