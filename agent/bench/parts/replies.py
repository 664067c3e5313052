"""What one reply puts in a BFCL or quality record (the fields of
:class:`agent.bench.results.records.ReplyFields`); the chat parts keep their timings instead
(:func:`agent.bench.parts.chat.timing_record`)."""

from __future__ import annotations

from typing import Any

from rigs import utc

from ..clients.base import BackendClient
from ..clients.reply import ChatRequest, Reply


def reply_fields(client: BackendClient, request: ChatRequest, reply: Reply) -> dict[str, Any]:
    """When it was sent and how, and what came back: text, finish, status, ids, error, tokens, time."""
    return {
        "started": utc.iso_millis(utc.at_epoch(reply.wall_sent)),
        "interface": client.interface(request),
        "text": reply.text,
        "finish_reason": reply.finish_reason,
        "status": reply.status,
        "request_id": reply.request_id,
        "error": reply.error,
        "prompt_tokens": reply.prompt_tokens,
        "output_tokens": reply.completion_tokens,
        "seconds": round(reply.seconds, 4),
        "streamed": reply.streamed,
        "resends": reply.reconnects,
    }
