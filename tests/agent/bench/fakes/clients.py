"""Clients of each backend kind for tests: the real client classes, reached through a context that
hands them the test's fake or stubbed boto3 clients (the way strands takes an injected client), and
the fake boto3 clients of Bedrock's and SageMaker's runtimes."""

from __future__ import annotations

import asyncio
import io
from typing import Any, Iterator, Sequence

from agent.backends import Backend
from agent.bench.clients.base import BackendClient, ModelSettings
from agent.bench.clients.bedrock import BedrockClient
from agent.bench.clients.openai_http import OpenAIClient
from agent.bench.clients.reply import ChatRequest, Reply
from agent.bench.clients.sagemaker import SageMakerClient


class Context:
    """A :class:`~agent.bench.clients.base.ClientContext` whose boto3 client is the one given."""

    def __init__(self, boto: Any = None, *, timeout_s: float = 10.0, width: int = 8) -> None:
        self.settings = ModelSettings()
        self.request_timeout_s = timeout_s
        self.width = width
        self._boto = boto

    def session(self) -> Any:
        raise AssertionError("the test's client is injected; no session is needed")

    def boto_client(self, backend: Backend, service: str) -> Any:
        return self._boto


class FakeBedrock:
    """boto3's bedrock-runtime client, ``converse_stream`` only: ``events`` one by one (an exception among them is
    raised there, in the middle of the stream), or ``exc`` raised by the call itself; every call's arguments kept."""

    def __init__(self, events: Sequence[Any] = (), *, exc: Exception | None = None) -> None:
        self.events, self.exc = list(events), exc
        self.calls: list[dict[str, Any]] = []

    def converse_stream(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        if self.exc:
            raise self.exc

        def stream() -> Iterator[Any]:
            for event in self.events:
                if isinstance(event, Exception):
                    raise event
                yield event

        return {"ResponseMetadata": {"HTTPStatusCode": 200, "RequestId": "rid-1"}, "stream": stream()}


class FakeSageMakerRuntime:
    """boto3's sagemaker-runtime client: ``events`` (``PayloadPart`` dicts, or SageMaker's error events) are the
    body of ``invoke_endpoint_with_response_stream``, ``body`` that of ``invoke_endpoint``; every call's
    arguments kept."""

    def __init__(self, events: Sequence[Any] = (), body: bytes = b"") -> None:
        self.events, self.body = list(events), body
        self.calls: list[dict[str, Any]] = []

    def invoke_endpoint_with_response_stream(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        return {"ResponseMetadata": {"HTTPStatusCode": 200, "RequestId": "sm-1"}, "Body": iter(self.events)}

    def invoke_endpoint(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        return {"ResponseMetadata": {"HTTPStatusCode": 200, "RequestId": "sm-1"}, "Body": io.BytesIO(self.body)}


def openai_client(url: str, *, timeout_s: float = 10.0, tool_calls: bool = True, constrained: bool = False,
                  width: int = 8, api_key: str | None = None) -> OpenAIClient:
    backend = Backend(name="fake", label="Fake", kind="openai", model_id="fake", tool_calls=tool_calls,
                      constrained_tools=constrained, base_url=url,
                      metadata={"api_key": api_key} if api_key else {})
    return OpenAIClient(backend, Context(timeout_s=timeout_s, width=width))


def bedrock_client(fake: Any, model_id: str = "us.amazon.nova-micro-v1:0") -> BedrockClient:
    backend = Backend(name="bedrock", label="Bedrock", kind="bedrock", model_id=model_id, tool_calls=True,
                      region="us-east-1")
    return BedrockClient(backend, Context(fake))


def sagemaker_client(fake: Any, endpoint: str = "ep") -> SageMakerClient:
    backend = Backend(name="sagemaker", label="SageMaker", kind="sagemaker", model_id="m", tool_calls=True,
                      region="us-east-2", endpoint_name=endpoint)
    return SageMakerClient(backend, Context(fake))


def send(client: BackendClient, request: ChatRequest) -> Reply:
    """One request on a fresh event loop; the client is closed afterwards."""

    async def go() -> Reply:
        try:
            return await client.send(request)
        finally:
            await client.close()

    return asyncio.run(go())
