"""Amazon Bedrock: ``ConverseStream`` (streamed) or ``Converse`` (whole) on the backend's one
``bedrock-runtime`` client, tools as ``toolConfig``, and strands' ``BedrockModel`` on that same client.

A stream exception (botocore raises it while iterating; a fake client may yield it as an event) or a
stream that ends without ``messageStop`` fails the request; other event types are ignored.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from ...backends import service_tier_args
from .aws import SdkClient, response_metadata, stream_error
from .openai_wire import count, short
from .reply import ChatRequest, Reply, add_call_piece, joined_calls

if TYPE_CHECKING:
    from strands.models.model import Model

SERVICE = "bedrock-runtime"


def converse_args(request: ChatRequest, model_id: str, tier: str = "standard") -> dict[str, Any]:
    """The keyword arguments of ``Converse``/``ConverseStream`` for ``request`` in Bedrock's service ``tier``."""
    args: dict[str, Any] = {
        "modelId": model_id,
        "messages": [{"role": m["role"], "content": [{"text": m["content"]}]} for m in request.turns],
        "inferenceConfig": {"maxTokens": request.max_tokens, "temperature": request.temperature},
        **service_tier_args(tier),
    }
    if request.system is not None:
        args["system"] = [{"text": request.system}]
    if request.tools:  # Bedrock requires a non-empty description
        args["toolConfig"] = {
            "tools": [{"toolSpec": {"name": t.name, "description": t.description or t.name,
                                    "inputSchema": {"json": dict(t.parameters)}}} for t in request.tools],
            "toolChoice": {"auto": {}},
        }  # fmt: skip
    return args


class BedrockClient(SdkClient):
    """A Bedrock model (an inference profile id) in the backend's region."""

    service = SERVICE
    interfaces = ("bedrock-converse", "bedrock-converse-stream")

    def _arguments(self, request: ChatRequest) -> dict[str, Any]:
        return converse_args(request, self.backend.model_id, self.backend.metadata.get("service_tier", "standard"))

    def _stream(self, reply: Reply, args: dict[str, Any]) -> None:
        resp = self.client.converse_stream(**args)
        response_metadata(reply, resp)
        fold = _StreamFold(reply)
        for event in resp["stream"]:
            fold.event(event, time.perf_counter())
        fold.close()

    def _whole(self, reply: Reply, args: dict[str, Any]) -> None:
        resp = self.client.converse(**args)
        response_metadata(reply, resp)
        reply.streamed = False
        texts = []
        for block in ((resp.get("output") or {}).get("message") or {}).get("content") or []:
            if "toolUse" in block:
                reply.calls.append({"name": block["toolUse"].get("name"), "arguments": block["toolUse"].get("input")})
            elif block.get("text"):
                texts.append(block["text"])
        reply.text = "".join(texts)
        if reply.text:
            reply.mark_content(time.perf_counter(), len(reply.text))
        reply.finish_reason = resp.get("stopReason")
        _usage(reply, resp.get("usage"))
        reply.server_timings = resp.get("metrics") if isinstance(resp.get("metrics"), dict) else None
        reply.complete = True

    def _make_model(self) -> Model:
        from strands.models import BedrockModel

        s = self.context.settings
        tier = self.backend.metadata.get("service_tier", "standard")
        model = BedrockModel(boto_session=self.context.session(), boto_client_config=s.boto_config(),
                             model_id=self.backend.model_id, temperature=s.temperature, max_tokens=s.max_tokens,
                             **({"service_tier": tier} if tier != "standard" else {}))
        model.client = self.client  # the backend's one client, in its own region
        return model



def _usage(reply: Reply, usage: Any) -> None:
    """Converse's token counts; ``cacheReadInputTokens`` are the prompt tokens read from its prompt cache."""
    if isinstance(usage, dict):
        reply.prompt_tokens = count(usage.get("inputTokens"))
        reply.completion_tokens = count(usage.get("outputTokens"))
        reply.cached_prompt_tokens = count(usage.get("cacheReadInputTokens"))


class _StreamFold:
    """Folds ``ConverseStream`` events into a reply as they arrive."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.parts: list[str] = []
        self.pieces: dict[int, dict[str, Any]] = {}

    def event(self, event: Any, now: float) -> None:
        reply = self.reply
        if not isinstance(event, dict):
            reply.fail(f"malformed stream event: {short(event)[:120]}")
        elif "contentBlockStart" in event:
            self._start(event["contentBlockStart"])
        elif "contentBlockDelta" in event:
            self._delta(event["contentBlockDelta"], now)
        elif "messageStop" in event:
            stop = event["messageStop"]
            reason = stop.get("stopReason") if isinstance(stop, dict) else None
            reply.finish_reason = reason if isinstance(reason, str) else None
            reply.complete = True
        elif "metadata" in event:
            meta = event["metadata"] if isinstance(event["metadata"], dict) else {}
            _usage(reply, meta.get("usage"))
            reply.server_timings = meta.get("metrics") if isinstance(meta.get("metrics"), dict) else None
        elif any(key.endswith(("Exception", "Error", "Failure")) for key in event):
            reply.fail(stream_error(event))

    def _start(self, block: Any) -> None:
        start = block.get("start") if isinstance(block, dict) else None
        use = start.get("toolUse") if isinstance(start, dict) else None
        if isinstance(use, dict):
            add_call_piece(self.pieces, block.get("contentBlockIndex"), use.get("name"), None)

    def _delta(self, block: Any, now: float) -> None:
        delta = block.get("delta") if isinstance(block, dict) else None
        text = delta.get("text") if isinstance(delta, dict) else None
        if not isinstance(delta, dict) or (text is not None and not isinstance(text, str)):
            self.reply.fail(f"malformed contentBlockDelta: {short(block)[:120]}")
        elif text:
            self.parts.append(text)
            self.reply.mark_content(now, len(text))
        elif isinstance(delta.get("toolUse"), dict):
            add_call_piece(self.pieces, block.get("contentBlockIndex"), None, delta["toolUse"].get("input"))

    def close(self) -> None:
        self.reply.text = "".join(self.parts)
        calls = joined_calls(self.pieces)
        for call in calls:  # ConverseStream sends a tool's input as JSON text; Converse as an object
            try:
                call["arguments"] = json.loads(call["arguments"]) if call["arguments"] else {}
            except ValueError:
                pass
        self.reply.calls = calls
