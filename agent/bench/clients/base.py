"""What every backend kind's client gives (:class:`BackendClient`), and the settings they share.

One client per backend for the whole run. It sends a :class:`~agent.bench.clients.reply.ChatRequest`
its kind's way and returns a checked :class:`~agent.bench.clients.reply.Reply` (timed chat, tool
calls and quality items alike), and makes the backend's one strands model for the agent parts.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .reply import ChatRequest, Reply

if TYPE_CHECKING:
    from botocore.config import Config as BotocoreConfig
    from strands.models.model import Model

    from ...backends import Backend


NO_TOOLS = "no tool calls"


class NoAgentModelError(ValueError):
    """The backend cannot drive a strands agent (Neuron: no tool calls, 128-token prompts)."""


@dataclass(frozen=True, slots=True)
class ModelSettings:
    """Generation, timeout and retry settings for every agent model of a run.

    Attributes:
        temperature: Sampling temperature (the reference uses 0).
        max_tokens: Output cap per model call (the reference's agents use 512).
        timeout_s: Read timeout of one model call.
        connect_timeout_s: Connection timeout.
        retries: Retries of a failed agent model call (openai SDK ``max_retries``; boto3
            ``standard`` mode ``total_max_attempts = retries + 1``). Timed requests are never
            retried; this applies to the agents only.
        max_connections: Connection pool size per backend (at least the highest concurrency).
    """

    temperature: float = 0.0
    max_tokens: int = 512
    timeout_s: float = 120.0
    connect_timeout_s: float = 10.0
    retries: int = 2
    max_connections: int = 64

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def boto_config(self) -> BotocoreConfig:
        from botocore.config import Config

        return Config(
            read_timeout=self.timeout_s,
            connect_timeout=self.connect_timeout_s,
            retries={"total_max_attempts": self.retries + 1, "mode": "standard"},
            max_pool_connections=self.max_connections,
            user_agent_extra="aws-inference-bench",
        )


class ClientContext(Protocol):
    """What a client needs from the run: its settings, and one boto3 client per AWS backend."""

    settings: ModelSettings
    request_timeout_s: float
    """Whole-request timeout of a timed request (recorded with the run)."""
    width: int
    """The most requests a part may have in flight to one backend."""

    def session(self) -> Any: ...

    def boto_client(self, backend: Backend, service: str) -> Any: ...


class BackendClient(ABC):
    """One backend's client for the whole run.

    Attributes:
        backend: The backend it reaches.
        no_tools: Why it takes no tool requests (None: it does).
        constrained: Whether its tool use is held by a JSON schema instead of the model's own tool
            calls (every report labels it **constrained**).
        notes: What it learned about the server during the run, for the evidence.
    """

    no_tools: str | None = None
    constrained = False

    def __init__(self, backend: Backend, context: ClientContext) -> None:
        self.backend = backend
        self.context = context
        self.notes: list[str] = []
        self._model: Model | None = None
        if self.no_tools is None and not (backend.tool_calls or backend.constrained_tools):
            self.no_tools = NO_TOOLS

    @abstractmethod
    async def send(self, request: ChatRequest) -> Reply:
        """Send ``request`` and return the checked reply. Never raises; a failure is ``Reply.error``."""

    @abstractmethod
    def interface(self, request: ChatRequest) -> str:
        """How ``request`` goes out, as the records name it (``openai-tools``, ``bedrock-converse`` ...)."""

    def agent_model(self) -> Model:
        """The backend's one strands model, made on first use.

        Raises:
            NoAgentModelError: The backend cannot drive an agent.
        """
        if self._model is None:
            self._model = self._make_model()
        return self._model

    @property
    def can_drive_agent(self) -> bool:
        """Whether :meth:`agent_model` gives an agent model."""
        return self.no_tools is None

    @abstractmethod
    def _make_model(self) -> Model: ...

    async def close(self) -> None:
        """Release the client's connections and threads."""
