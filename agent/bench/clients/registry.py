"""The one place a backend kind's descriptor (:mod:`agent.kinds`) is mapped to its client (timed chat, tool
calls, the strands model)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...kinds import BEDROCK, BEDROCK_MANTLE, NEURON, OPENAI, SAGEMAKER, BackendKind, descriptor
from .base import BackendClient, ClientContext
from .bedrock import BedrockClient
from .openai_http import BedrockMantleClient, NeuronClient, OpenAIClient
from .sagemaker import SageMakerClient

if TYPE_CHECKING:
    from ...backends import Backend

CLIENTS: dict[BackendKind, type[BackendClient]] = {
    OPENAI: OpenAIClient,
    NEURON: NeuronClient,
    BEDROCK: BedrockClient,
    BEDROCK_MANTLE: BedrockMantleClient,
    SAGEMAKER: SageMakerClient,
}
"""Backend kind -> its client class (``agent.kinds.DESCRIPTORS`` lists the kinds)."""


def make_client(backend: Backend, context: ClientContext) -> BackendClient:
    """The client of ``backend``'s kind.

    Raises:
        ValueError: A kind with no descriptor (a bug: ``Backend`` validates its kind).
    """
    return CLIENTS[descriptor(backend.kind)](backend, context)
