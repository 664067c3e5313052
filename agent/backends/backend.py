"""The Backend record every part of the agent consumes, and the names of the backends.

A :class:`Backend` says what a backend is and how to reach it *now* (a base URL that
answers, an endpoint that is InService). Each way a backend is made has its module beside this one
(a deployed rig or endpoint, Bedrock, Bedrock's OpenAI-compatible endpoint, a custom server's URL, the
local rig); discovery, port forwards and the environment produce them; the benchmark consumes them.
Nothing here talks to the network.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Iterable, Mapping
from urllib.parse import urlsplit, urlunsplit

from rigs.catalog.price_terms import STANDARD_TIER

from ..kinds import KINDS, descriptor

MANTLE = "bedrock-mantle"
"""Bedrock's OpenAI-compatible endpoint serving the rigs' model (its catalog entry's name)."""
ORDER: tuple[str, ...] = ("bedrock", MANTLE, "g6", "g5g", "sagemaker", "inf2", "trn1")
"""Registry order of the AWS backends; ``local`` and custom backends come after them."""

LOCAL = "local"
KNOWN: tuple[str, ...] = ORDER + (LOCAL,)


@dataclass(frozen=True, slots=True)
class Backend:
    """One backend as the benchmark sees it: what it is, and how it is reached now.

    Attributes:
        name: ``bedrock``, ``g6``, ``g5g``, ``sagemaker``, ``inf2``, ``trn1``, ``local`` or custom.
        label: human-readable name for reports.
        kind: ``bedrock`` | ``openai`` | ``sagemaker`` | ``neuron``.
        model_id: the model id sent with every request (Bedrock: inference profile id).
        tool_calls: whether it can drive a Strands agent with native tool calls.
        constrained_tools: local rig only: the first agent turn is a schema-constrained
            tool choice, which every report must label as such.
        base_url: OpenAI-compatible ``.../v1`` root (``openai`` and ``neuron`` kinds).
        region: AWS region (``bedrock`` and ``sagemaker`` kinds).
        endpoint_name: SageMaker endpoint name.
        max_prompt_tokens: the server's prompt limit where one is known (Neuron: 128).
        max_total_tokens: its limit on prompt and output tokens together where one is known (Neuron: 512; vLLM's
            ``--max-model-len``; the local rig's context; a managed model's context window).
        metadata: whatever is known for the report: instance type, region, zone, AMI id,
            image, engine version, serve flags, how it is reached.
        toy_model: True for the CPU-served local rig: its figures come from a toy model.
        custom: True for a server reached through a ``*_URL`` variable: whatever answers there,
            not a rig this app deployed. It is labelled as such, with the model the server
            reports, and priced and given a bandwidth ceiling only for an instance type the user
            states (``G6_INSTANCE_TYPE``...).
        provenance: what served it: ``expected`` (what the catalog says, :func:`catalog_expectation`)
            and ``read`` (read at run time, :mod:`agent.reach.provenance`), each fact as
            ``{"value", "source"}`` or ``{"value": None, "source", "not_reported"}``; ``read_at``.
    """

    name: str
    label: str
    kind: str
    model_id: str
    tool_calls: bool
    constrained_tools: bool = False
    base_url: str | None = None
    region: str | None = None
    endpoint_name: str | None = None
    max_prompt_tokens: int | None = None
    max_total_tokens: int | None = None
    metadata: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    toy_model: bool = False
    custom: bool = False
    provenance: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        problems = []
        if self.kind not in KINDS:
            problems.append(f"kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        else:
            problems += [f"a {self.kind} backend needs {need}" for need in descriptor(self.kind).needs
                         if not getattr(self, need)]
        if self.constrained_tools and self.tool_calls:
            problems.append("constrained_tools is for backends without native tool calls")
        if problems:
            raise ValueError(f"backend {self.name!r}: " + "; ".join(problems))
        # Freeze the metadata: a shared dict mutated later would change a finished report.
        object.__setattr__(self, "metadata", MappingProxyType(dict(self.metadata)))
        object.__setattr__(self, "provenance", MappingProxyType(dict(self.provenance)))

    @property
    def needs_aws(self) -> bool:
        """Whether calls to it need AWS credentials (Bedrock and SageMaker)."""
        return descriptor(self.kind).needs_aws


class UnknownBackendError(ValueError):
    """A backend name that is not known; the message lists the known ones."""

    def __init__(self, names: Iterable[str], known: Iterable[str] = KNOWN) -> None:
        self.names = list(names)
        self.known = list(known)
        super().__init__(f"unknown backend {', '.join(map(repr, self.names))}; "
                         f"known backends: {', '.join(self.known)}")


def sort_key(name: str) -> tuple[int, str]:
    """Registry order: bedrock, bedrock-mantle, g6, g5g, sagemaker, inf2, trn1, then local and custom by name."""
    return (ORDER.index(name), "") if name in ORDER else (len(ORDER), name)


def parse_names(text: str | None, known: Iterable[str] = KNOWN) -> tuple[str, ...] | None:
    """Parse ``a,b`` (from ``--backends`` or ``BACKENDS``) into names in registry order.

    Returns None for an empty or missing value (meaning: no filter).

    Raises:
        UnknownBackendError: a name is not known (the message lists the known ones).
    """
    if text is None:
        return None
    names = [part.strip().lower() for part in text.split(",") if part.strip()]
    if not names:
        return None
    known = tuple(known)
    unknown = [name for name in names if name not in known]
    if unknown:
        raise UnknownBackendError(unknown, known)
    return tuple(sorted(dict.fromkeys(names), key=sort_key))


def normalize_base_url(url: str) -> str:
    """``http://host:8001`` and ``http://host:8001/v1/`` both become ``http://host:8001/v1``.

    A URL with another path (a proxy prefix) is kept as given, without a trailing slash.
    """
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"not an http(s) URL: {url!r}")
    path = parts.path.rstrip("/")
    if not path:
        path = "/v1"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def service_tier_args(tier: str) -> dict[str, Any]:
    """``serviceTier`` of a Converse/ConverseStream request: none for Standard (Bedrock's default), else the tier."""
    return {} if tier == STANDARD_TIER else {"serviceTier": {"type": tier}}


@dataclass(frozen=True, slots=True)
class TokenLimits:
    """What one request may hold on a backend, each limit with where it comes from (None: no limit known)."""

    max_prompt_tokens: int | None
    max_total_tokens: int | None
    source: str


def token_limits(b: Backend) -> TokenLimits:
    """``b``'s limits: the context its server reports (``GET /v1/models`` ``max_model_len``, llama.cpp's
    ``/props``) before the catalog's, the catalog's (or the local rig's) before its kind's (:mod:`agent.kinds`)."""
    kind = descriptor(b.kind)
    read = (b.provenance.get("read") or {}).get("context_tokens") or {}
    sources = []
    prompt = b.max_prompt_tokens or kind.prompt_limit
    if prompt is not None:
        sources.append(f"prompt {prompt} ({'stated for this backend' if b.max_prompt_tokens else 'its kind'})")
    total = read.get("value") if isinstance(read.get("value"), int) else None
    if total is not None:
        sources.append(f"prompt and output {total} (the server: {read.get('source')})")
    elif b.max_total_tokens or kind.total_limit:
        total = b.max_total_tokens or kind.total_limit
        sources.append(f"prompt and output {total} ({'stated for this backend' if b.max_total_tokens else 'its kind'})")
    return TokenLimits(prompt, total, "; ".join(sources) or "no limit known")
