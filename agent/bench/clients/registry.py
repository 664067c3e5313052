"""The one place a backend kind is mapped to its client (timed chat, tool calls, the strands model)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import BackendClient, ClientContext
from .bedrock import BedrockClient
from .openai_http import NeuronClient, OpenAIClient
from .sagemaker import SageMakerClient

if TYPE_CHECKING:
    from ...backends import Backend

CLIENTS: dict[str, type[BackendClient]] = {
    "openai": OpenAIClient,
    "neuron": NeuronClient,
    "bedrock": BedrockClient,
    "sagemaker": SageMakerClient,
}
"""Backend kind -> its client class (``agent.backends.KINDS`` lists the kinds)."""


def make_client(backend: Backend, context: ClientContext) -> BackendClient:
    """The client of ``backend``'s kind.

    Raises:
        ValueError: A kind with no client (a bug: ``Backend`` validates its kind).
    """
    cls = CLIENTS.get(backend.kind)
    if cls is None:
        raise ValueError(f"unknown backend kind {backend.kind!r}")
    return cls(backend, context)
