"""OpenAI-compatible servers (vLLM on g6 and g5g, llama.cpp on the local rig, any ``*_URL``) and the
Neuron server: chat and tool requests over :class:`~agent.bench.clients.transport.HttpTransport`,
and the strands model.

* Strands: ``OpenAIModel`` with **one shared** ``AsyncOpenAI`` passed as ``client=``.
  ``client_args=`` would build (and SSL-initialise) a new ``AsyncOpenAI`` on every request (strands
  ``OpenAIModel._get_client``): 29 ms each on the 2-core development machine, 2026-11-30, openai
  2.54.0, nearly all of it in ``ssl.create_default_context`` (``python -m timeit -s "from openai
  import AsyncOpenAI" "AsyncOpenAI(base_url='http://127.0.0.1:9/v1', api_key='x')"``, best of 3).
* A server whose model has no tool-call template (the local rig, ``constrained_tools``): tool
  requests list the tools in a system turn and hold the reply to ``{"calls": [...]}`` with
  ``response_format`` (:mod:`agent.bench.clients.constrained`); its agent model is
  :class:`~agent.bench.clients.constrained.ConstrainedToolModel`. Labelled **constrained** everywhere.
* Neuron: plain chat only. The server ignores tools and has a 128-token prompt bucket; it takes part
  in the chat benchmark, the quality lane and as a tool of the orchestrator, never as an agent.
* Bedrock's OpenAI-compatible endpoint (``bedrock-mantle``): this client, every request carrying AWS's
  authentication (:class:`rigs.aws.MantleAuth`: SigV4 from the credential chain, or the Bedrock API key as a
  bearer token), the timed ones through the transport, the agent's through an httpx hook of its ``AsyncOpenAI``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from urllib.parse import urlsplit

from rigs import aws

from ...kinds import NEURON
from .base import BackendClient, ClientContext, NoAgentModelError
from .openai_wire import chat_body
from .reply import ChatRequest, Reply, check
from .transport import HttpTransport

if TYPE_CHECKING:
    from strands.models.model import Model

    from ...backends import Backend


class OpenAIClient(BackendClient):
    """An OpenAI-compatible ``.../v1`` server."""

    def __init__(self, backend: Backend, context: ClientContext) -> None:
        super().__init__(backend, context)
        self.constrained = backend.constrained_tools
        self.auth = self._auth()
        self.transport = HttpTransport(str(backend.base_url).rstrip("/") + "/chat/completions",
                                       timeout_s=context.request_timeout_s, max_connections=max(8, context.width),
                                       api_key=backend.metadata.get("api_key"), auth=self.auth,
                                       more_urls=[str(url).rstrip("/") + "/chat/completions"
                                                  for url in backend.metadata.get("pool_base_urls", ())])  # fmt: skip
        self.notes = self.transport.notes
        self._openai: Any = None

    def _auth(self) -> aws.MantleAuth | None:
        """How each request says who sends it (None: the server asks nothing, or takes the ``api_key``)."""
        return None

    def interface(self, request: ChatRequest) -> str:
        if not request.tools:
            return "openai-chat"
        return "openai-constrained" if self.constrained else "openai-tools"

    async def send(self, request: ChatRequest) -> Reply:
        held = self.constrained and bool(request.tools)
        if held:  # strands comes with the constrained module: imported where the local rig needs it
            from . import constrained
        model = self.backend.model_id
        body = constrained.chat_body(request, model) if held else chat_body(request, model)
        reply = await self.transport.post(body, stream=request.stream)
        if held and not reply.error:
            constrained.read_calls(reply)
        check(reply)
        return reply

    def openai_client(self) -> Any:
        """The backend's one ``AsyncOpenAI`` (agents only; timed requests use the lean transport)."""
        if self._openai is None:
            import httpx
            import openai

            s = self.context.settings
            limits = httpx.Limits(max_connections=s.max_connections, max_keepalive_connections=s.max_connections)
            hooks = {"request": [self._authenticate]} if self.auth is not None else {}
            self._openai = openai.AsyncOpenAI(
                base_url=self.backend.base_url, api_key=self.backend.metadata.get("api_key", "unused"),
                timeout=httpx.Timeout(s.timeout_s, connect=s.connect_timeout_s), max_retries=s.retries,
                http_client=openai.DefaultAsyncHttpxClient(limits=limits, event_hooks=hooks))  # fmt: skip
        return self._openai

    async def _authenticate(self, request: Any) -> None:
        """The httpx request hook of the agent's client: the request's headers with AWS's authentication."""
        assert self.auth is not None
        signed = self.auth.headers(request.method, str(request.url), request.content, dict(request.headers))
        request.headers.clear()
        request.headers.update(signed)

    def _make_model(self) -> Model:
        if self.no_tools:
            raise NoAgentModelError(f"{self.backend.label} ({self.backend.name}): {self.no_tools}")
        s = self.context.settings
        params = {"temperature": s.temperature, "max_tokens": s.max_tokens}
        if self.constrained:
            from . import constrained

            return constrained.ConstrainedToolModel(client=self.openai_client(), model_id=self.backend.model_id,
                                                    params=params)  # fmt: skip
        from strands.models.openai import OpenAIModel

        return OpenAIModel(client=self.openai_client(), model_id=self.backend.model_id, params=params)

    async def close(self) -> None:
        await self.transport.close()
        if self._openai is not None:
            await self._openai.close()


class NeuronClient(OpenAIClient):
    """The hand-ported Neuron server: OpenAI-compatible chat, no tools."""

    no_tools = "no tool calls (the Neuron server ignores tools); it takes part through plain chat only"

    def _make_model(self) -> Model:
        raise NoAgentModelError(
            f"{self.backend.label} ({self.backend.name}) cannot drive a strands agent: the Neuron server ignores tools "
            f"and takes prompts of at most {self.backend.max_prompt_tokens or NEURON.prompt_limit} tokens; it is reached over plain "
            "HTTP (chat benchmark, orchestrator tool) only")


class BedrockMantleClient(OpenAIClient):
    """Bedrock's OpenAI-compatible endpoint (``https://bedrock-mantle.<region>.api.aws`` + the model's route): an
    OpenAI-compatible server whose every request carries AWS's authentication, in the mode the backend was planned
    with. A request refused because the model is not served under its route fails with one line naming the route
    tried and the other one."""

    def _auth(self) -> aws.MantleAuth:
        mode = self.backend.metadata.get("auth_mode", aws.SIGNED)
        return aws.MantleAuth.of(mode, str(self.backend.region), self.context.session)

    async def send(self, request: ChatRequest) -> Reply:
        reply = await super().send(request)
        if reply.error and aws.route_refused(reply.error):
            route = self.backend.metadata.get("route") or urlsplit(str(self.backend.base_url)).path
            reply.error = aws.wrong_route(self.backend.model_id, self.transport.url, route)
        return reply

    def interface(self, request: ChatRequest) -> str:
        return "bedrock-mantle-tools" if request.tools else "bedrock-mantle-chat"
