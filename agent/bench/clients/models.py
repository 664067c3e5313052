"""One strands model object per backend, each on one client made once for the whole run.

* Bedrock: strands ``BedrockModel`` on the backend's one ``bedrock-runtime`` client.
* vLLM rigs and any OpenAI-compatible URL: strands ``OpenAIModel`` with **one shared**
  ``AsyncOpenAI`` passed as ``client=``. ``client_args=`` would build (and SSL-initialise) a new
  ``AsyncOpenAI`` on every request (strands ``OpenAIModel._get_client``): 29 ms each on the
  2-core development machine, 2026-11-30, openai 2.54.0, nearly all of it in
  ``ssl.create_default_context`` (``python -m timeit -s "from openai import AsyncOpenAI"
  "AsyncOpenAI(base_url='http://127.0.0.1:9/v1', api_key='x')"``, best of 3).
* SageMaker: strands ``SageMakerAIModel`` on the backend's one ``sagemaker-runtime`` client,
  streaming with ``stream_options.include_usage`` (strands sends none by itself), made tolerant
  of vLLM's extra usage fields (:func:`tolerate_vllm_usage`).
* Neuron: no agent model. The server ignores tools and has a 128-token prompt bucket; it takes
  part through plain HTTP only (the chat benchmark, and as a tool of the orchestrator).
  :func:`agent_model` raises :class:`NoAgentModelError`.
* The local rig (``constrained_tools``): :class:`ConstrainedToolModel`, whose first turn asks
  llama-server for a JSON-schema-constrained choice among the tools. Reports label it
  **constrained**: it is never the model's own tool use.

Timeouts and retries are explicit (:class:`ModelSettings`) and recorded with the run.
The AWS clients here are also the ones the timing path uses (:meth:`ModelPool.boto_client`),
so a backend has one client for the whole run.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncGenerator
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from botocore.config import Config as BotocoreConfig
from strands.models import BedrockModel
from strands.models.model import Model
from strands.models.openai import OpenAIModel
from strands.types.content import Messages
from strands.types.streaming import StreamEvent
from strands.types.tools import ToolChoice, ToolSpec

if TYPE_CHECKING:
    import boto3

    from ...backends import Backend

logger = logging.getLogger(__name__)

CONSTRAINED_LABEL = "constrained"
"""How every report marks a backend whose tool choice was schema-constrained."""


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
            ``standard`` mode ``total_max_attempts = retries + 1``). Timing requests are never
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
        return BotocoreConfig(
            read_timeout=self.timeout_s,
            connect_timeout=self.connect_timeout_s,
            retries={"total_max_attempts": self.retries + 1, "mode": "standard"},
            max_pool_connections=self.max_connections,
            user_agent_extra="aws-inference-bench",
        )


# --- SageMaker: vLLM's extra usage fields -------------------------------------------------


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


# --- the local rig: a constrained first turn ---------------------------------------------


CONSTRAINED_TEXT_MAX_CHARS = 300
"""Longest free-text argument a constrained tool call may hold. Without a bound, SmolLM2 kept
writing inside the orchestrator's ``prompt`` string until the 512-token limit and never made
the call; the server's grammar enforces ``maxLength``."""
CONSTRAINED_ANSWER_MAX_CHARS = 800
"""Longest text answer of a turn held to :data:`ANSWER_SCHEMA`. Unbounded, SmolLM2 wrote on about the
orchestrator's table until the 512-token limit (a failed run every time); bounded, it ends."""
ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "maxLength": CONSTRAINED_ANSWER_MAX_CHARS}},
    "required": ["answer"],
    "additionalProperties": False,
}


def _tool_choice_schema(tool_specs: Sequence[ToolSpec], enums: Mapping[str, Mapping[str, Sequence[Any]]]) -> dict:
    """A JSON schema whose instances are exactly one call of one of ``tool_specs``.

    ``enums`` narrows arguments to allowed values (``{"count_ids": {"op": [">=", ...]}}``), so the
    server's grammar enforces them (a plain string let SmolLM2 write ``"op": "id"``); every other
    string argument is bounded by :data:`CONSTRAINED_TEXT_MAX_CHARS`.
    """
    options = []
    for spec in tool_specs:
        args = json.loads(json.dumps(spec["inputSchema"]["json"]))  # deep copy
        args.setdefault("type", "object")
        args.setdefault("properties", {})
        args["additionalProperties"] = False
        for prop, allowed in enums.get(spec["name"], {}).items():
            if prop in args["properties"]:
                args["properties"][prop] = {**args["properties"][prop], "enum": list(allowed)}
                args["properties"][prop].pop("type", None)
        for prop in args["properties"].values():
            if prop.get("type") == "string" and "enum" not in prop:
                prop.setdefault("maxLength", CONSTRAINED_TEXT_MAX_CHARS)
        options.append(
            {
                "type": "object",
                "properties": {"tool": {"const": spec["name"]}, "arguments": args},
                "required": ["tool", "arguments"],
                "additionalProperties": False,
            }
        )
    return options[0] if len(options) == 1 else {"oneOf": options}


def _has_tool_results(messages: Messages) -> bool:
    return any("toolResult" in block for message in messages for block in message.get("content", []))


def _as_plain_text(messages: Messages) -> Messages:
    """The conversation with tool calls and tool results written as text (the chat template of
    a model without tool support has no place for them)."""
    out: list[Any] = []
    for message in messages:
        blocks = []
        for block in message.get("content", []):
            if "toolUse" in block:
                use = block["toolUse"]
                blocks.append({"text": f"I called the tool {use['name']} with {json.dumps(use.get('input'))}."})
            elif "toolResult" in block:
                result = block["toolResult"]
                parts = []
                for item in result.get("content", []):
                    if "json" in item:
                        parts.append(json.dumps(item["json"]))
                    elif "text" in item:
                        parts.append(item["text"])
                blocks.append({"text": f"The tool returned: {' '.join(parts)}"})
            elif "text" in block:
                blocks.append({"text": block["text"]})
        if blocks:
            out.append({"role": message["role"], "content": blocks})
    return out


class ConstrainedToolModel(OpenAIModel):
    """``OpenAIModel`` for a server whose model cannot call tools by itself (the local rig).

    On the first turn of an agent run (tools offered, no tool result yet) it asks the server for
    a reply constrained by a JSON schema to ``{"tool": <name>, "arguments": {...}}`` over the
    offered tools, and returns that as a ``toolUse``. Later turns carry the call and its result
    as plain text and offer no tools, so the model writes the final answer (held to a bounded
    length by :data:`ANSWER_SCHEMA` where a part asks for it: the orchestrator's). Every report
    labels such a backend **constrained**; the grader still judges the call it picked and the
    answer it wrote.

    Args:
        client: The backend's one shared ``AsyncOpenAI``.
        model_id: The served model's name.
        params: Request parameters (``max_tokens``, ``temperature``).
        enums: Allowed values per tool argument, enforced by the schema.
    """

    constrained = True

    def __init__(
        self,
        *,
        client: Any,
        model_id: str,
        params: dict[str, Any] | None = None,
        enums: Mapping[str, Mapping[str, Sequence[Any]]] | None = None,
    ) -> None:
        super().__init__(client=client, model_id=model_id, params=params or {})
        self._shared_client = client
        self.enums: dict[str, Mapping[str, Sequence[Any]]] = dict(enums or {})
        self.bounded_answer = False

    def set_enums(self, enums: Mapping[str, Mapping[str, Sequence[Any]]], *, bounded_answer: bool = False) -> None:
        """Set the allowed argument values for the tools of the next agent run, and whether its text
        answer is held to :data:`ANSWER_SCHEMA`."""
        self.enums = dict(enums)
        self.bounded_answer = bounded_answer

    def _choice_prompt(self, tool_specs: Sequence[ToolSpec], system_prompt: str | None) -> str:
        lines = [system_prompt or "", "", "Choose exactly one tool to call and its arguments. The tools:"]
        for spec in tool_specs:
            props = spec["inputSchema"]["json"].get("properties", {})
            args = ", ".join(f"{k}: {v.get('description', v.get('type', ''))}" for k, v in props.items())
            lines.append(f"- {spec['name']}({args}): {spec['description']}")
        lines.append('Reply with JSON: {"tool": <tool name>, "arguments": {...}}.')
        return "\n".join(lines).strip()

    async def stream(  # type: ignore[override]
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        *,
        tool_choice: ToolChoice | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[StreamEvent, None]:
        if not tool_specs or _has_tool_results(messages):
            answer = self._answer(messages, system_prompt) if self.bounded_answer else super().stream(
                _as_plain_text(messages), None, system_prompt, **kwargs)
            async for event in answer:
                yield event
            return
        response = await self._constrained(
            self.format_request_messages(_as_plain_text(messages), self._choice_prompt(tool_specs, system_prompt)),
            "tool_call", _tool_choice_schema(tool_specs, self.enums))
        yield {"messageStart": {"role": "assistant"}}
        _, content = _first_choice(response)
        try:
            call = json.loads(content)
            name, args = call["tool"], call["arguments"]
            if name not in {s["name"] for s in tool_specs}:
                raise KeyError(name)
        except (ValueError, KeyError, TypeError):
            # The grammar should make this impossible; if not, it is graded as plain text.
            for event in _text_block(content, "end_turn"):
                yield event
        else:
            tool_use_id = f"constrained-{uuid.uuid4().hex[:12]}"
            yield {"contentBlockStart": {"start": {"toolUse": {"name": name, "toolUseId": tool_use_id}}}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(args)}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
        if response.usage is not None:
            yield self.format_chunk({"chunk_type": "metadata", "data": response.usage})

    async def _constrained(self, messages: list[dict[str, Any]], name: str, schema: dict[str, Any]) -> Any:
        """One non-streamed request whose reply the server's grammar holds to ``schema``."""
        params = dict(self.config.get("params") or {})
        return await self._shared_client.chat.completions.create(
            model=self.config["model_id"],
            messages=messages,
            response_format={"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}},
            stream=False,
            **{k: v for k, v in params.items() if k not in ("stream", "stream_options")},
        )

    async def _answer(self, messages: Messages, system_prompt: str | None) -> AsyncGenerator[StreamEvent, None]:
        """A text answer, held to :data:`ANSWER_SCHEMA`; a reply cut at the token limit stays a failure."""
        response = await self._constrained(self.format_request_messages(_as_plain_text(messages), system_prompt),
                                           "answer", ANSWER_SCHEMA)
        choice, content = _first_choice(response)
        try:
            text = str(json.loads(content)["answer"])
        except (ValueError, KeyError, TypeError):
            text = content  # the grammar should make this impossible; then the raw reply is the answer
        stop = "max_tokens" if choice is not None and choice.finish_reason == "length" else "end_turn"
        yield {"messageStart": {"role": "assistant"}}
        for event in _text_block(text, stop):
            yield event
        if response.usage is not None:
            yield self.format_chunk({"chunk_type": "metadata", "data": response.usage})


def _first_choice(response: Any) -> tuple[Any, str]:
    """A non-streamed chat completion's first choice (or None) and its text ("" when it has none)."""
    choice = response.choices[0] if response.choices else None
    return choice, (choice.message.content if choice and choice.message else None) or ""


def _text_block(text: str, stop: str) -> list[StreamEvent]:
    """The stream events of one text content block and the message's stop."""
    return [{"contentBlockStart": {"start": {}}}, {"contentBlockDelta": {"delta": {"text": text}}},
            {"contentBlockStop": {}}, {"messageStop": {"stopReason": stop}}]


# --- one model per backend -----------------------------------------------------------------


def _region(backend: Backend) -> str | None:
    return backend.region or backend.metadata.get("region")


class ModelPool:
    """One model object and one client per backend, for the whole run.

    Create it inside the event loop that runs the agents (``AsyncOpenAI`` clients belong to
    one loop) and close it with :meth:`aclose` (or ``async with``).

    Args:
        backends: The run's backends.
        session: The boto3 session for Bedrock and SageMaker (None: a default session is made
            once, when the first AWS backend needs it).
        settings: Generation, timeout and retry settings.
    """

    def __init__(
        self,
        backends: Sequence[Backend],
        session: boto3.Session | None = None,
        settings: ModelSettings | None = None,
    ) -> None:
        self.backends = {b.name: b for b in backends}
        self.settings = settings or ModelSettings()
        self._session = session
        self._boto: dict[str, Any] = {}
        self._openai: dict[str, Any] = {}
        self._models: dict[str, Model] = {}

    async def __aenter__(self) -> ModelPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def session(self) -> boto3.Session:
        if self._session is None:
            import boto3

            self._session = boto3.Session()
        return self._session

    def boto_client(self, backend: Backend) -> Any:
        """The backend's one ``bedrock-runtime`` or ``sagemaker-runtime`` client."""
        if backend.name not in self._boto:
            service = {"bedrock": "bedrock-runtime", "sagemaker": "sagemaker-runtime"}.get(backend.kind)
            if service is None:
                raise ValueError(f"backend {backend.name!r} ({backend.kind}) is not reached through boto3")
            self._boto[backend.name] = self.session().client(
                service, region_name=_region(backend), config=self.settings.boto_config()
            )
        return self._boto[backend.name]

    def openai_client(self, backend: Backend) -> Any:
        """The backend's one ``AsyncOpenAI`` (agents only; timing uses a lean aiohttp loop)."""
        if backend.name not in self._openai:
            import httpx
            import openai

            if not backend.base_url:
                raise ValueError(f"backend {backend.name!r} has no base_url")
            limits = httpx.Limits(
                max_connections=self.settings.max_connections,
                max_keepalive_connections=self.settings.max_connections,
            )
            self._openai[backend.name] = openai.AsyncOpenAI(
                base_url=backend.base_url,
                api_key=backend.metadata.get("api_key", "unused"),
                timeout=httpx.Timeout(self.settings.timeout_s, connect=self.settings.connect_timeout_s),
                max_retries=self.settings.retries,
                http_client=openai.DefaultAsyncHttpxClient(limits=limits),
            )
        return self._openai[backend.name]

    def model(self, backend: Backend | str) -> Model:
        """The backend's one strands model.

        Raises:
            NoAgentModelError: Neuron backends (and any backend without tool calls that is
                not in constrained mode) cannot drive an agent.
        """
        b = self.backends[backend] if isinstance(backend, str) else backend
        if b.name not in self._models:
            self._models[b.name] = self._build(b)
        return self._models[b.name]

    def _build(self, b: Backend) -> Model:
        s = self.settings
        if b.kind == "neuron":
            raise NoAgentModelError(
                f"{b.label} ({b.name}) cannot drive a strands agent: the Neuron server ignores tools and "
                f"takes prompts of at most {b.max_prompt_tokens or 128} tokens; it is reached over plain HTTP "
                "(chat benchmark, orchestrator tool) only"
            )
        if b.kind == "bedrock":
            model = BedrockModel(
                boto_session=self.session(),
                boto_client_config=s.boto_config(),
                model_id=b.model_id,
                temperature=s.temperature,
                max_tokens=s.max_tokens,
            )
            model.client = self.boto_client(b)  # the backend's one client, in its own region
            return model
        if b.kind == "sagemaker":
            from strands.models.sagemaker import SageMakerAIModel

            tolerate_vllm_usage()
            model = SageMakerAIModel(
                endpoint_config={"endpoint_name": str(b.endpoint_name), "region_name": str(_region(b))},
                payload_config={
                    "max_tokens": s.max_tokens,
                    "temperature": s.temperature,
                    "stream": True,
                    "additional_args": {"stream_options": {"include_usage": True}},
                },
                boto_session=self.session(),
                boto_client_config=s.boto_config(),
            )
            model.client = self.boto_client(b)
            return model
        if b.kind == "openai":
            params = {"temperature": s.temperature, "max_tokens": s.max_tokens}
            if b.constrained_tools:
                return ConstrainedToolModel(client=self.openai_client(b), model_id=b.model_id, params=params)
            if not b.tool_calls:
                raise NoAgentModelError(f"{b.label} ({b.name}) has no tool calls and no constrained mode")
            return OpenAIModel(client=self.openai_client(b), model_id=b.model_id, params=params)
        raise NoAgentModelError(f"unknown backend kind {b.kind!r}")

    def can_drive_agent(self, backend: Backend) -> bool:
        """Whether :meth:`model` gives an agent model for ``backend``."""
        return backend.kind != "neuron" and (backend.tool_calls or backend.constrained_tools)

    async def aclose(self) -> None:
        for client in self._openai.values():
            await client.close()
        self._openai.clear()
        for client in self._boto.values():
            try:
                client.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass
        self._boto.clear()
        self._models.clear()


def is_constrained(model: Model | None) -> bool:
    """Whether a model's tool use is schema-constrained (label it so in every report)."""
    return bool(getattr(model, "constrained", False))
