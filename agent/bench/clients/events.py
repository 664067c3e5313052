"""Reading chat-completion events and replies into a :class:`~agent.bench.clients.timing.Timing`, checking
their shape.

A streamed reply is a sequence of SSE ``data:`` events, each a chat-completion chunk; a
non-streamed one is a chat completion. Servers send odd but valid JSON (``{"choices": [null]}``,
``choices`` as an object, ``delta`` as a string) and error objects in the middle of a stream
(``data: {"error": ...}``, as vLLM and llama.cpp do after a partial reply). Nothing here raises:
such an event fails its request with a reason (``Timing.fail``), and the rest of the stream is
still read so the connection ends cleanly.
"""

from __future__ import annotations

import codecs
import json
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .timing import Timing


def count(value: Any) -> int | None:
    """A token count as the server sent it, or None when it is not a whole number of at least 0."""
    return value if type(value) is int and value >= 0 else None


def apply_usage(timing: Timing, usage: dict[str, Any]) -> None:
    """Take the prompt and completion counts of an OpenAI ``usage`` object."""
    p, c = count(usage.get("prompt_tokens")), count(usage.get("completion_tokens"))
    timing.prompt_tokens = timing.prompt_tokens if p is None else p
    timing.completion_tokens = timing.completion_tokens if c is None else c


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


def apply_event(timing: Timing, event: Any, now: float, parts: list[str]) -> None:
    """Fold one decoded chat-completion chunk into ``timing``, checking its shape; a chunk that is
    not one, or an error event, fails the request with its reason."""
    if not isinstance(event, dict):
        timing.fail(f"malformed event: {kind(event)} instead of an object")
        return
    message = error_message(event)
    if message is not None:
        timing.fail(f"error event after {len(timing.chunk_times)} content chunks: {message}")
        return
    if timing.request_id is None and isinstance(event.get("id"), str):
        timing.request_id = event["id"]
    choices = event.get("choices")
    if choices is not None:
        if not isinstance(choices, list):
            timing.fail(f"malformed event: choices is {kind(choices)}, not a list")
            return
        if choices:
            choice = choices[0]
            if not isinstance(choice, dict):
                timing.fail(f"malformed event: choices[0] is {kind(choice)}")
                return
            delta = choice.get("delta")
            if delta is not None and not isinstance(delta, dict):
                timing.fail(f"malformed event: delta is {kind(delta)}")
                return
            content = delta.get("content") if delta else None
            if content is not None and not isinstance(content, str):
                timing.fail(f"malformed event: delta.content is {kind(content)}")
                return
            finish = choice.get("finish_reason")
            if finish is not None and not isinstance(finish, str):
                timing.fail(f"malformed event: finish_reason is {kind(finish)}")
                return
            if content:
                parts.append(content)
                timing.mark_content(now, len(content))
            if finish:
                timing.finish_reason = finish
    usage = event.get("usage")
    if usage is not None:
        if not isinstance(usage, dict):
            timing.fail(f"malformed event: usage is {kind(usage)}")
            return
        apply_usage(timing, usage)
    timings = event.get("timings")
    if isinstance(timings, dict):
        timing.server_timings = timings


def apply_message(timing: Timing, body: Any, now: float) -> None:
    """Fold a non-streamed chat completion into ``timing``, checking its shape."""
    timing.streamed = False
    if not isinstance(body, dict):
        timing.fail(f"malformed reply: {kind(body)} instead of an object")
        return
    message = error_message(body)
    if message is not None:
        timing.fail(f"error reply: {message}")
        return
    if isinstance(body.get("id"), str):
        timing.request_id = timing.request_id or body["id"]
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        timing.fail(f"malformed reply: choices is {short(choices)[:60]}")
        return
    reply = choices[0].get("message")
    content = reply.get("content") if isinstance(reply, dict) else None
    if not isinstance(reply, dict) or (content is not None and not isinstance(content, str)):
        timing.fail(f"malformed reply: message is {short(reply)[:60]}")
        return
    finish = choices[0].get("finish_reason")
    timing.finish_reason = finish if isinstance(finish, str) else None
    timing.text = content or ""
    if timing.text:
        timing.mark_content(now, len(timing.text))
    usage = body.get("usage")
    if isinstance(usage, dict):
        apply_usage(timing, usage)
    if isinstance(body.get("timings"), dict):
        timing.server_timings = body["timings"]
    timing.complete = True


_raw_decode = json.JSONDecoder().raw_decode
_MALFORMED = (KeyError, IndexError, TypeError, AttributeError)


class EventReader:
    """Reads the events of a chat-completion stream as its bytes arrive.

    Every network read is timestamped by the caller, split into lines, and each ``data:`` event
    decoded once (the C scanner directly: no encoding sniffing, no whitespace regex). A plain
    content event takes a fast path; anything else (the first event, a finish, usage, an error, an
    odd shape) goes through :func:`apply_event`, which checks it. ``bare_json`` also reads lines
    that are JSON without the ``data:`` prefix (SageMaker containers may stream either).
    """

    __slots__ = ("timing", "parts", "done", "bare_json", "_first", "_tail", "_decode")

    def __init__(self, timing: Timing, parts: list[str], *, bare_json: bool = False) -> None:
        self.timing = timing
        self.parts = parts
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
        """The stream ended: read a last line that had no newline, then set the reply's text and
        whether it completed (``[DONE]`` or a finish reason; anything else was cut off)."""
        rest = self._tail + self._decode(b"", True)
        self._tail = ""
        if rest.strip():
            self._lines([rest], time.perf_counter())
        self.timing.text = "".join(self.parts)
        self.timing.complete = self.done or self.timing.finish_reason is not None

    def _lines(self, lines: list[str], now: float) -> None:
        timing, parts = self.timing, self.parts
        for line in lines:
            if line.startswith("data:"):
                payload = line[6:] if line.startswith("data: ") else line[5:].lstrip()
            elif self.bare_json and line.lstrip().startswith("{"):
                payload = line.lstrip()
            else:
                continue
            if not payload or payload.isspace():
                continue
            if payload[0] != "{":
                if payload.startswith("[DONE]"):
                    self.done = True
                    continue
            try:
                event = _raw_decode(payload)[0]
            except ValueError:
                timing.fail(f"malformed event: {payload[:120]!r}")
                continue
            if not self._first:
                try:
                    choice = event["choices"][0]
                    content = choice["delta"]["content"]
                    plain = choice.get("finish_reason") is None and event.get("usage") is None and "error" not in event
                except _MALFORMED:
                    plain = False
                if plain and type(content) is str:
                    if content:
                        parts.append(content)
                        timing.mark_content(now, len(content))
                    continue
            self._first = False
            apply_event(timing, event, now, parts)
