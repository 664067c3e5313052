"""Amazon SageMaker (AWS's vLLM container): ``InvokeEndpointWithResponseStream`` (streamed) or
``InvokeEndpoint`` (whole) on the backend's one ``sagemaker-runtime`` client, with the container's
OpenAI chat payload (``stream_options.include_usage``), and strands' ``SageMakerAIModel`` on that same
client, made tolerant of vLLM's extra usage fields (:func:`tolerate_vllm_usage`).

The payload parts of a stream are read by the one OpenAI event reader
(:class:`~agent.bench.clients.openai_wire.EventReader`, bare JSON lines allowed); a stream exception
event (``ModelStreamError``, ``InternalStreamFailure``) fails the request and ends the stream.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any, Iterable

from .aws import SdkClient, response_metadata, stream_error
from .openai_wire import EventReader, apply_body, chat_body
from .reply import ChatRequest, Reply

if TYPE_CHECKING:
    from strands.models.model import Model

SERVICE = "sagemaker-runtime"


class SageMakerClient(SdkClient):
    """A SageMaker real-time endpoint serving the vLLM container."""

    service = SERVICE
    interfaces = ("sagemaker-invoke", "sagemaker-invoke-stream")

    def _arguments(self, request: ChatRequest) -> str:
        return json.dumps(chat_body(request))

    def _stream(self, reply: Reply, body: str) -> None:
        resp = self.client.invoke_endpoint_with_response_stream(
            EndpointName=str(self.backend.endpoint_name), Body=body, ContentType="application/json")
        response_metadata(reply, resp)
        reader = EventReader(reply, bare_json=True)
        try:
            for data in payload_parts(reply, resp["Body"]):
                reader.feed(data, time.perf_counter())
        finally:
            reader.close()

    def _whole(self, reply: Reply, body: str) -> None:
        resp = self.client.invoke_endpoint(EndpointName=str(self.backend.endpoint_name), Body=body,
                                           ContentType="application/json", Accept="application/json")
        response_metadata(reply, resp)
        apply_body(reply, resp["Body"].read(), time.perf_counter())

    def _make_model(self) -> Model:
        from strands.models.sagemaker import SageMakerAIModel

        tolerate_vllm_usage()
        s = self.context.settings
        model = SageMakerAIModel(
            endpoint_config={"endpoint_name": str(self.backend.endpoint_name),
                             "region_name": str(self.client.meta.region_name)},
            payload_config={"max_tokens": s.max_tokens, "temperature": s.temperature, "stream": True,
                            "additional_args": {"stream_options": {"include_usage": True}}},
            boto_session=self.context.session(),
            boto_client_config=s.boto_config(),
        )  # fmt: skip
        model.client = self.client
        return model



def payload_parts(reply: Reply, events: Iterable[Any]) -> Iterable[bytes]:
    """The bytes of each ``PayloadPart``; any other event fails the request and ends the stream."""
    for event in events:
        part = event.get("PayloadPart") if isinstance(event, dict) else None
        data = part.get("Bytes") if isinstance(part, dict) else None
        if not isinstance(data, (bytes, bytearray)):
            reply.fail(stream_error(event))
            return
        yield bytes(data)


def sagemaker_usage_needs_patch() -> bool:
    """Whether the installed strands still builds SageMaker usage with ``UsageMetadata(**usage)``
    that rejects vLLM's extra fields (``completion_tokens_details``). True for strands 1.62.0."""
    from strands.models import sagemaker as sm

    original = getattr(sm.UsageMetadata, "_original", sm.UsageMetadata)
    try:
        original(total_tokens=2, completion_tokens=1, prompt_tokens=1, completion_tokens_details=None)
    except TypeError:
        return True
    return False


def tolerate_vllm_usage() -> bool:
    """Make strands' SageMaker provider accept usage blocks with fields it does not declare.

    strands 1.62.0 (like 1.55 in the reference) builds ``UsageMetadata(**usage)``; vLLM 0.30 also
    sends ``completion_tokens_details`` (and may send more), so every SageMaker call raises
    ``TypeError`` before the answer is read. This replaces the module's ``UsageMetadata`` with a
    factory that drops undeclared keys and builds the original; token counts are unchanged.
    Idempotent, and a no-op (returns False) once strands accepts the fields by itself.

    Returns:
        Whether the patch is in place.
    """
    from strands.models import sagemaker as sm

    if getattr(sm.UsageMetadata, "_tolerant", False):
        return True
    if not sagemaker_usage_needs_patch():
        return False
    original = sm.UsageMetadata
    declared = set(original.__dataclass_fields__)

    def tolerant(**usage: Any) -> Any:
        return original(**{k: v for k, v in usage.items() if k in declared})

    tolerant._tolerant = True  # type: ignore[attr-defined]
    tolerant._original = original  # type: ignore[attr-defined]
    sm.UsageMetadata = tolerant  # type: ignore[misc,assignment]
    return True
