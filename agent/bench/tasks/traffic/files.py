"""The user's own traffic files, read into typed requests: ``prompts: FILE`` (JSONL of OpenAI chat requests)
and ``trace: FILE`` (a Mooncake trace). Every problem is one line naming the key, the line and the fix
(:class:`TrafficFileError`); nothing else is read or written.

* **prompts**: one JSON object a line, ``{"messages": [{"role": ..., "content": "..."}, ...]}`` with an optional
  ``max_tokens`` (a whole number, at least 1) and optional ``tools`` (OpenAI's ``[{"type": "function",
  "function": {"name", "description", "parameters"}}]``). Roles are ``system``, ``user`` and ``assistant``;
  the last turn is the user's. Blank lines are skipped.
* **trace**: one JSON object a line in Mooncake's format (kvcache-ai/Mooncake's ``mooncake_trace.jsonl``):
  ``timestamp`` (ms from the trace's start), ``input_length`` and ``output_length`` (tokens), optional
  ``hash_ids`` (the 512-token blocks of the prompt; requests that share a block id share that text).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, TypeVar

ROLES = ("system", "user", "assistant")
TRACE_BLOCK_TOKENS = 512
"""The tokens of one ``hash_ids`` block in a Mooncake trace."""
T = TypeVar("T")


class TrafficFileError(ValueError):
    """A traffic file that cannot be used; the message is one line (key, file, line, fix)."""


@dataclass(frozen=True, slots=True)
class FilePrompt:
    """One request of a prompts file, as it will be sent."""

    messages: tuple[Mapping[str, str], ...]
    max_tokens: int | None
    tools: tuple[Mapping[str, Any], ...] = ()

    @property
    def chars(self) -> int:
        return sum(len(m["content"]) for m in self.messages)


@dataclass(frozen=True, slots=True)
class TraceRequest:
    """One request of a Mooncake trace."""

    timestamp_ms: float
    input_length: int
    output_length: int
    hash_ids: tuple[int, ...] = ()


def _lines(key: str, path: Path, read: Callable[[str, Any], T], example: str) -> tuple[T, ...]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TrafficFileError(f"{key}: cannot read {path} ({type(exc).__name__}: {exc}); give a readable "
                               f"UTF-8 JSONL file, one {example} a line") from None
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{key}: line {number} of {path.name}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TrafficFileError(f"{where} is not JSON ({exc.msg}); each line is one {example}") from None
        out.append(read(where, data))
    if not out:
        raise TrafficFileError(f"{key}: {path} holds no request; give one {example} a line")
    return tuple(out)


def _prompt(where: str, data: Any) -> FilePrompt:
    fix = 'each line is {"messages": [{"role": "user", "content": "..."}], "max_tokens": N}'
    messages = data.get("messages") if isinstance(data, dict) else None
    if not isinstance(messages, list) or not messages:
        raise TrafficFileError(f"{where} is not a chat request (no non-empty 'messages' list); {fix}")
    turns = []
    for m in messages:
        if not (isinstance(m, dict) and m.get("role") in ROLES and isinstance(m.get("content"), str) and m["content"]):
            raise TrafficFileError(f"{where}: a message is not {{'role': one of {', '.join(ROLES)}, 'content': text}}; "
                                   f"{fix}")
        turns.append({"role": m["role"], "content": m["content"]})
    if turns[-1]["role"] != "user":
        raise TrafficFileError(f"{where}: the last message is not the user's; {fix}")
    max_tokens = data.get("max_tokens")
    if max_tokens is not None and (type(max_tokens) is not int or max_tokens < 1):
        raise TrafficFileError(f"{where}: max_tokens {max_tokens!r} is not a whole number of at least 1; {fix}")
    tools = data.get("tools") or []
    if not isinstance(tools, list) or not all(isinstance(t, dict) and isinstance(t.get("function"), dict)
                                              and t["function"].get("name") for t in tools):
        raise TrafficFileError(f"{where}: tools is not OpenAI's list of {{'type': 'function', 'function': "
                               "{'name', 'description', 'parameters'}}; leave it out or fix it")
    return FilePrompt(tuple(turns), max_tokens, tuple(tools))


def _length(where: str, data: Mapping[str, Any], name: str) -> int:
    value = data.get(name)
    if type(value) is not int or value < 1:
        raise TrafficFileError(f"{where}: {name} {value!r} is not a whole number of tokens of at least 1; a Mooncake "
                               "trace line is {\"timestamp\": MS, \"input_length\": N, \"output_length\": N, "
                               "\"hash_ids\": [...]}")
    return value


def _trace(where: str, data: Any) -> TraceRequest:
    example = '{"timestamp": MS, "input_length": N, "output_length": N, "hash_ids": [...]}'
    if not isinstance(data, dict):
        raise TrafficFileError(f"{where} is not a JSON object; a Mooncake trace line is {example}")
    stamp = data.get("timestamp")
    if isinstance(stamp, bool) or not isinstance(stamp, (int, float)) or not math.isfinite(stamp) or stamp < 0:
        raise TrafficFileError(f"{where} has no timestamp (milliseconds from the trace's start, 0 or more); a "
                               f"Mooncake trace line is {example}")
    hashes = data.get("hash_ids") or []
    if not isinstance(hashes, list) or not all(type(h) is int for h in hashes):
        raise TrafficFileError(f"{where}: hash_ids is not a list of whole numbers; leave it out or fix it")
    return TraceRequest(float(stamp), _length(where, data, "input_length"), _length(where, data, "output_length"),
                        tuple(hashes))


def read_prompts(path: Path) -> tuple[FilePrompt, ...]:
    """Every request of a prompts file.

    Raises:
        TrafficFileError: unreadable, empty, or a line that is not a chat request.
    """
    return _lines("prompts", path, _prompt, "chat request")


def read_trace(path: Path) -> tuple[TraceRequest, ...]:
    """Every request of a Mooncake trace, in the file's order.

    Raises:
        TrafficFileError: unreadable, empty, or a line without a timestamp or lengths.
    """
    return _lines("trace", path, _trace, "trace request")
