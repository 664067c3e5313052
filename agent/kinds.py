"""What each backend kind is (``Backend.kind``: bedrock, bedrock-mantle, openai, sagemaker, neuron), in one table.

Per kind: how it is reached (its transport and the ``Backend`` fields it cannot be reached without), how it
is priced, how its provenance is read, whether it has native tool calls, how many requests it serves at once,
its prompt and total token limits where the catalog states none, whether it can be asked for exactly ``max_tokens``
tokens, and what the orchestrator and the offline stand-in make of it.
Code asks the descriptor (``descriptor(kind).native_tool_calls``), never compares a kind's name. Each kind's
client class is ``agent/bench/clients/registry.py``'s, keyed by these descriptors; what a catalog runtime is
(its kind, engine, container port and boot script) is ``rigs/catalog/runtimes.py``'s.

Pure and standard library only, so the analysis reads it too.
"""

from __future__ import annotations

from dataclasses import dataclass

HTTP = "http"
"""An OpenAI-compatible server at the backend's own URL (``/v1/chat/completions``)."""
SIGV4 = "sigv4"
"""AWS authentication over HTTP: each request signed with SigV4 from the usual credential chain, or a Bedrock API
key (``AWS_BEARER_TOKEN_BEDROCK``) sent as a bearer token."""
SAGEMAKER_RUNTIME = "sagemaker-runtime"
"""SageMaker's ``InvokeEndpoint`` in the backend's region."""
BEDROCK_RUNTIME = "bedrock-runtime"
"""Bedrock's ``ConverseStream`` in the backend's region."""

PER_HOUR = "per-hour"
"""Priced by its instance's hourly price (when its instance type is known)."""
PER_TOKEN = "per-token"
"""Priced per input and output token (the break-even reference)."""

FROM_SERVER = "server"
"""Provenance from the server itself (``/v1/models``, ``/version``, ``/props``) and, on EC2, the boot report."""
FROM_ENDPOINT = "endpoint"
"""Provenance from SageMaker's description of the endpoint, its config and model."""
FROM_MODEL = "model"
"""Provenance from Bedrock's description of the model and the tier a probe is served in."""


@dataclass(frozen=True, slots=True)
class BackendKind:
    """One backend kind.

    Attributes:
        name: the kind, as ``Backend.kind``, ``run.json`` and ``summary.json`` write it.
        transport: :data:`HTTP`, :data:`SAGEMAKER_RUNTIME` or :data:`BEDROCK_RUNTIME`.
        needs: the ``Backend`` fields it cannot be reached without, in the order a problem is reported.
        auth: how an HTTP request proves who sends it: None (the server asks nothing, or an ``api_key`` of
            its metadata), :data:`SIGV4` (AWS's own, from the credential chain, or a Bedrock API key).
        pricing: :data:`PER_HOUR` or :data:`PER_TOKEN`.
        provenance: where what served it is read: :data:`FROM_SERVER`, :data:`FROM_ENDPOINT`, :data:`FROM_MODEL`.
        native_tool_calls: whether it drives an agent with native tool calls when its record does not say.
        concurrency_limit: the requests it serves at once, where it is limited (the Neuron servers generate
            under one global lock: more in flight only queues); None for no limit.
        prompt_limit: its prompt limit in tokens where the catalog states none (the Neuron graph is compiled
            for 128); None where none is known.
        total_limit: its limit on prompt and output tokens together where the catalog states none (the Neuron
            graph's 512); None where none is known.
        ignore_eos: whether its server can be asked for exactly ``max_tokens`` tokens (``ignore_eos``: vLLM and
            llama.cpp, SageMaker's vLLM container); elsewhere a reply may end early and is recorded as it came.
        managed: AWS serves it on hardware it does not publish (no device, no weights, no bandwidth ceiling).
        service_tiers: it is called in one of Bedrock's service tiers (``--bedrock-tier``), sent with every request
            and read back from a probe.
        preferred_orchestrator: the orchestrator runs on it when it can drive an agent.
        played_by_stand_in: an offline stand-in plays it (moto answers its runtime API); an EC2 rig's forward
            is relayed to the stand-in instead, and moto has no Bedrock runtime.
    """

    name: str
    transport: str
    needs: tuple[str, ...]
    pricing: str
    provenance: str
    native_tool_calls: bool
    auth: str | None = None
    concurrency_limit: int | None = None
    prompt_limit: int | None = None
    total_limit: int | None = None
    ignore_eos: bool = False
    managed: bool = False
    service_tiers: bool = False
    preferred_orchestrator: bool = False
    played_by_stand_in: bool = False

    @property
    def needs_aws(self) -> bool:
        """Whether calls to it need AWS credentials (an AWS API, not a URL)."""
        return self.transport != HTTP


BEDROCK = BackendKind("bedrock", transport=BEDROCK_RUNTIME, needs=("region",), pricing=PER_TOKEN,
                      provenance=FROM_MODEL, native_tool_calls=True, managed=True, service_tiers=True,
                      preferred_orchestrator=True)
BEDROCK_MANTLE = BackendKind("bedrock-mantle", transport=HTTP, needs=("base_url", "region"), pricing=PER_TOKEN,
                             provenance=FROM_SERVER, native_tool_calls=True, auth=SIGV4, managed=True)
"""Bedrock's OpenAI-compatible endpoint (``https://bedrock-mantle.<region>.api.aws`` + the model's route, ``/v1`` or
``/openai/v1``, Chat Completions): an OpenAI-compatible server whose requests carry AWS's authentication, priced per
token; what serves it is read from its ``GET <route>/models`` (docs/agent.md, "The same model on Bedrock")."""
OPENAI = BackendKind("openai", transport=HTTP, needs=("base_url",), pricing=PER_HOUR, provenance=FROM_SERVER,
                     native_tool_calls=True, ignore_eos=True)
SAGEMAKER = BackendKind("sagemaker", transport=SAGEMAKER_RUNTIME, needs=("region", "endpoint_name"),
                        pricing=PER_HOUR, provenance=FROM_ENDPOINT, native_tool_calls=True, ignore_eos=True,
                        played_by_stand_in=True)
NEURON = BackendKind("neuron", transport=HTTP, needs=("base_url",), pricing=PER_HOUR, provenance=FROM_SERVER,
                     native_tool_calls=False, concurrency_limit=1, prompt_limit=128, total_limit=512)

DESCRIPTORS: tuple[BackendKind, ...] = (BEDROCK, BEDROCK_MANTLE, OPENAI, SAGEMAKER, NEURON)
KINDS: tuple[str, ...] = tuple(k.name for k in DESCRIPTORS)
"""Every kind's name, in the order a problem lists them."""
_BY_NAME = {k.name: k for k in DESCRIPTORS}


def descriptor(kind: str) -> BackendKind:
    """The descriptor of backend kind ``kind``.

    Raises:
        ValueError: a kind that is not one of :data:`KINDS` (``Backend`` refuses such a kind).
    """
    try:
        return _BY_NAME[kind]
    except KeyError:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}") from None
