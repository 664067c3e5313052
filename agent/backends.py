"""The Backend record every part of the agent consumes, and the environment-variable registry.

A :class:`Backend` says what a backend is and how to reach it *now* (a base URL that
answers, an endpoint that is InService). Discovery, port forwards and the local rig
produce them; the benchmark consumes them. Nothing here talks to the network.

The reference's environment variables work unchanged (``BEDROCK_MODEL``, ``G6_URL``,
``SM_ENDPOINT``, ``BACKENDS=a,b`` ...); model defaults come from the rig catalog. Bedrock's
OpenAI-compatible endpoint (``bedrock-mantle``) takes the OpenAI SDK's Bedrock-provider variables
(``AWS_BEDROCK_BASE_URL``, ``AWS_BEARER_TOKEN_BEDROCK``) and ``BEDROCK_MANTLE_MODEL``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping
from urllib.parse import urlsplit, urlunsplit

from rigs import aws
from rigs.catalog import model as catalog_model  # the catalog's classes load on first use, not to print --help
from rigs.catalog.model import weights_for
from rigs.catalog.pricing import STANDARD_TIER, base_model_id
from rigs.catalog.runtimes import RUNTIMES, VLLM, runtime

from .bench.results.constants import MODEL_NAME_METADATA, WEIGHTS_METADATA_PREFIX
from .kinds import KINDS, descriptor

if TYPE_CHECKING:
    from rigs.catalog.model import BedrockBackend, Catalog, Ec2Rig, SageMakerRig
    from rigs.catalog.served import ModelCard

MANTLE = "bedrock-mantle"
"""Bedrock's OpenAI-compatible endpoint serving the rigs' model (its catalog entry's name)."""
ORDER: tuple[str, ...] = ("bedrock", MANTLE, "g6", "g5g", "sagemaker", "inf2", "trn1")
"""Registry order of the AWS backends; ``local`` and custom backends come after them."""

LOCAL = "local"
KNOWN: tuple[str, ...] = ORDER + (LOCAL,)

DEFAULT_SAGEMAKER_REGION = "us-east-2"
"""The reference's ``SM_REGION`` default, used when the catalog lists no region."""

_URL_VARS = {"g6": "G6", "g5g": "G5G", "inf2": "INF2", "trn1": "TRN1"}


def is_instance_type(name: str) -> bool:
    """Whether ``name`` is an EC2 instance type or a SageMaker endpoint instance type, as the installed
    botocore's service models list them (read offline, from the models botocore ships)."""
    import botocore.session

    session = botocore.session.get_session()
    shape = ("sagemaker", "ProductionVariantInstanceType") if name.startswith("ml.") else ("ec2", "InstanceType")
    return name in (session.get_service_model(shape[0]).shape_for(shape[1]).enum or ())


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


def kind_for(rig: Ec2Rig | SageMakerRig | BedrockBackend) -> str:
    """The client kind of a catalog rig, its runtime's (vLLM rigs are ``openai``, Neuron rigs ``neuron``)."""
    return runtime(rig.runtime).backend_kind


def catalog_metadata(rig: Ec2Rig | SageMakerRig | BedrockBackend, region: str | None = None,
                     model_id: str | None = None) -> dict[str, str]:
    """What the catalog pins for a rig, for the report (the image and flags it was deployed with), and
    with ``model_id`` what it states that model's weights are (``weights_*``: only when the catalog
    lists that model for the rig or in its models section, never for an override it says nothing about).

    ``region`` fills a regional registry (the SageMaker image's ``{region}``) and picks that
    region's digest; without it a regional image is shown with ``<region>``.
    """
    meta = {"runtime": rig.runtime}
    weights = weights_for(rig, model_id, catalog_model.load_catalog()) if model_id else None
    if weights is not None:
        meta.update(weights.metadata(WEIGHTS_METADATA_PREFIX))
    if isinstance(rig, (catalog_model.Ec2Rig, catalog_model.SageMakerRig)):
        meta["instance_type"] = rig.instance_type
        reference = rig.image.reference(region).replace("{region}", "<region>")
        meta["image"] = reference
        if "@" in reference:
            meta["image_digest"] = reference.rpartition("@")[2]
    if isinstance(rig, catalog_model.Ec2Rig):
        meta["serve_flags"] = " ".join(rig.serve_flags)
    return meta


def model_name(rig: Ec2Rig | SageMakerRig | BedrockBackend, model_id: str) -> dict[str, str]:
    """``{"model_name": ...}``: the catalog's name of ``model_id`` served on ``rig`` (its own, a variant's, the models
    section's), for a custom server whose weights are not stated; empty where the catalog does not know the id."""
    weights = weights_for(rig, model_id, catalog_model.load_catalog())
    return {MODEL_NAME_METADATA: weights.model} if weights is not None else {}


def _engine(rig: Ec2Rig | SageMakerRig) -> str | None:
    """The engine ``rig``'s runtime serves with, as provenance names it (:mod:`rigs.catalog.runtimes`)."""
    found = RUNTIMES.get(rig.runtime)
    return found.engine if found else None


_TAG_VERSION = re.compile(r"(?:^|[:v-])v?(\d+\.\d+\.\d+(?:rc\d+)?)")


def service_tier_args(tier: str) -> dict[str, Any]:
    """``serviceTier`` of a Converse/ConverseStream request: none for Standard (Bedrock's default), else the tier."""
    return {} if tier == STANDARD_TIER else {"serviceTier": {"type": tier}}


def fact(value: str | int | None, source: str) -> dict[str, Any]:
    """One provenance fact as :attr:`Backend.provenance` holds it (a value of None: nothing to expect, and why)."""
    return {"value": value, "source": source}


def _context_facts(rig: Ec2Rig | SageMakerRig) -> dict[str, Any]:
    """The context length vLLM is told to serve (``--max-model-len``, or the SageMaker container's variable)."""
    if isinstance(rig, catalog_model.SageMakerRig):
        value, source = rig.container_env.get("SM_VLLM_MAX_MODEL_LEN"), "container_env SM_VLLM_MAX_MODEL_LEN"
    else:
        flags = list(rig.serve_flags)
        value = flags[flags.index("--max-model-len") + 1] if "--max-model-len" in flags[:-1] else None
        source = "serve flag --max-model-len"
    return {"context_tokens": fact(int(value), source)} if value and value.isdigit() else {}


def catalog_limits(rig: Ec2Rig | SageMakerRig | BedrockBackend,
                   deployed_context: int | None = None) -> dict[str, int | None]:
    """The token limits the catalog states for ``rig``: a Neuron build's compiled prompt and total tokens, vLLM's
    ``--max-model-len`` (the stack's ``ContextTokens`` output where given: ``deployed_context``, which
    ``-c max_model_len.<rig>`` and ``-c model.<rig>`` may have changed; else its serve flag, or the SageMaker
    container's variable), a managed model's context."""
    if isinstance(rig, catalog_model.BedrockBackend):
        return {"max_prompt_tokens": None, "max_total_tokens": rig.context_tokens}
    context = deployed_context or _context_facts(rig).get("context_tokens", {}).get("value")
    total = getattr(rig, "max_total_tokens", None) or context
    return {"max_prompt_tokens": getattr(rig, "max_prompt_tokens", None), "max_total_tokens": total}


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


def _image_facts(rig: Ec2Rig | SageMakerRig, region: str | None, deployed_digest: str | None) -> dict[str, Any]:
    """The engine version the image's tag names (vLLM images) and the digest it is pinned to."""
    out = {}
    if _engine(rig) == VLLM.engine:
        found = _TAG_VERSION.search(rig.image.tag)
        if found:
            out["engine_version"] = fact(found.group(1), f"catalog image tag {rig.image.tag}")
    digest = rig.image.digest_for(region)
    if digest:
        out["image_digest"] = fact(digest, f"catalog pin of {rig.image.repository_in(region)}:{rig.image.tag}")
    elif deployed_digest:
        out["image_digest"] = fact(deployed_digest, f"the stack's {region} ImageDigest output (the tag's digest "
                                                     "there at deploy time)")
    return out


def _variant_facts(rig: Ec2Rig | SageMakerRig, model_id: str, region: str | None,
                   deployed_digest: str | None) -> dict[str, Any]:
    """What depends on the variant deployed (image, context): expected only where every variant serving
    ``model_id`` agrees, since the stack's outputs name the model, not the variant."""
    builds = [r for r in (rig, *(rig.with_variant(v) for v in rig.variants)) if r.model_id == model_id] or [rig]
    out: dict[str, Any] = {}
    readers: dict[str, Callable[[Ec2Rig | SageMakerRig], dict[str, Any]]] = {
        "image": lambda r: _image_facts(r, region, deployed_digest), "context length": _context_facts}
    for what, read in readers.items():
        each = [read(r) for r in builds]
        if all(e == each[0] for e in each):
            out.update(each[0])
        else:
            why = f"the catalog's variants of {rig.name} differ in {what} and the stack does not say which one is deployed"
            out.update({name: fact(None, why) for e in each for name in e})
    return out


def catalog_expectation(rig: Ec2Rig | SageMakerRig | BedrockBackend, model_id: str, region: str | None = None,
                        deployed_digest: str | None = None, tier: str = STANDARD_TIER,
                        instance_type: str | None = None, context_tokens: int | None = None) -> dict[str, Any]:
    """What the catalog says serves ``rig`` deployed with ``model_id`` in ``region``: the engine and its version
    (a vLLM image's tag), the model every request names, the context length of its serve flags (the stack's
    ``ContextTokens`` output where given: ``context_tokens``), its instance type (the stack's ``instance_type`` output
    where given: ``-c model.<rig>`` may have moved it) and image digest (the catalog's pin, else the digest the stack
    read at deploy time: ``deployed_digest``), and for a vLLM rig the KV cache ``python -m rigs fit`` predicts at that
    context; Bedrock's model and service ``tier`` (where its kind is called in one)."""
    if isinstance(rig, catalog_model.BedrockBackend):
        out = {"model": fact(base_model_id(model_id), f"the model id every request names ({model_id})")}
        if descriptor(kind_for(rig)).service_tiers:
            out["service_tier"] = fact(tier, "--bedrock-tier" if tier != STANDARD_TIER else
                                       "no --bedrock-tier: Bedrock's Standard tier")
        else:
            out["region"] = fact(region, "the region its requests are signed for")
        return out
    out: dict[str, Any] = {}
    if engine := _engine(rig):
        out["engine"] = fact(engine, f"catalog runtime {rig.runtime}")
    out["model"] = fact(model_id, "the model id every request names")
    out.update(_variant_facts(rig, model_id, region, deployed_digest))
    if context_tokens is not None:
        out["context_tokens"] = fact(context_tokens, "the stack's ContextTokens output (the context it was served at)")
    out["instance_type"] = (fact(instance_type, "the stack's InstanceType output (the size the model was fitted "
                                 "to)") if instance_type else fact(rig.instance_type, "catalog instance_type"))
    out.update(_predicted_cache(rig, model_id, instance_type or rig.instance_type, out.get("context_tokens")))
    return out


def _predicted_cache(rig: Ec2Rig | SageMakerRig, model_id: str, instance_type: str,
                     context: dict[str, Any] | None) -> dict[str, Any]:
    """What ``python -m rigs fit`` predicts vLLM logs at start-up ("GPU KV cache size", "Maximum concurrency"), for a
    vLLM rig whose model the catalog's models section lists; nothing for any other."""
    if _engine(rig) != VLLM.engine or runtime(rig.runtime).compiled_kv_cache or not context \
            or not isinstance(context.get("value"), int):
        return {}
    from rigs.sizing.fit import MEMORY_FRACTION, OVERHEAD_BYTES, GIB, Candidate, fit_one

    catalog = catalog_model.load_catalog()
    card, family = catalog.models.get(model_id), catalog.family_of(instance_type)
    if card is None or family is None:
        return {}
    accelerators = family[1].sizes[instance_type.removeprefix("ml.")]
    tokens = context["value"]
    result = fit_one(card.architecture, Candidate(instance_type, accelerators, family[1].memory_bytes,
                                                  family[1].accelerator), context=tokens)
    source = (f"python -m rigs fit's prediction: {instance_type}, tensor parallel {result.tensor_parallel}, "
              f"{tokens:,} tokens, {MEMORY_FRACTION:.0%} of memory less {OVERHEAD_BYTES / GIB:g} GiB per accelerator")
    return {"kv_cache_tokens": fact(result.kv_tokens, source),
            "max_concurrency": fact(f"{result.kv_tokens / tokens:.2f}", source)}


def bedrock_card(catalog: Catalog, model: str) -> ModelCard | None:
    """The models section's entry for ``model`` (a ``weights.model``: ``Gemma 4 E2B``) that names what Bedrock serves
    it as (its ``bedrock_id``, else its ``bedrock_note``), or None where the section says nothing of Bedrock."""
    cards = [card for card in catalog.models.values() if card.name == model]
    return next((c for c in cards if c.bedrock_id), None) or next((c for c in cards if c.bedrock_note), None)


def bedrock_id(catalog: Catalog, model: str) -> str | None:
    """The id Bedrock's OpenAI-compatible endpoint serves ``model`` under, as the catalog's models section names it;
    None where Bedrock does not serve it."""
    card = bedrock_card(catalog, model)
    return card.bedrock_id if card is not None else None


@dataclass(frozen=True, slots=True)
class MantleSettings:
    """How Bedrock's OpenAI-compatible endpoint is reached, as the environment says.

    Attributes:
        model_id: ``BEDROCK_MANTLE_MODEL``, else the catalog entry's (the rigs' model).
        model_given: ``BEDROCK_MANTLE_MODEL`` named it (the plan then does not follow the model the rigs serve).
        region: ``--region``, else the region of an ``AWS_BEDROCK_BASE_URL`` naming a regional endpoint, else
            ``BEDROCK_REGION``, else the catalog's first.
        base_url: ``AWS_BEDROCK_BASE_URL`` (``.../v1``), else the region's endpoint.
        base_url_given: ``AWS_BEDROCK_BASE_URL`` named it: then no other AWS endpoint is called for it.
        auth_mode: :data:`rigs.aws.BEARER` with ``AWS_BEARER_TOKEN_BEDROCK``, else :data:`rigs.aws.SIGNED`.
    """

    model_id: str
    model_given: bool
    region: str
    base_url: str
    base_url_given: bool
    auth_mode: str

    @classmethod
    def from_env(cls, get: Callable[[str], str | None], catalog: Catalog, region: str | None) -> MantleSettings:
        """Raises ValueError: ``AWS_BEDROCK_BASE_URL`` is not an http(s) URL."""
        rig = catalog.get(MANTLE)
        given = get(aws.MANTLE_BASE_URL_VAR)
        base_url = normalize_base_url(given) if given else None
        region = region or (base_url and aws.mantle_region(base_url)) or get("BEDROCK_REGION") or rig.regions[0]
        model = get("BEDROCK_MANTLE_MODEL")
        return cls(model_id=model or rig.model_id, model_given=model is not None, region=region,
                   base_url=base_url or aws.mantle_url(region), base_url_given=base_url is not None,
                   auth_mode=aws.BEARER if get(aws.MANTLE_TOKEN_VAR) else aws.SIGNED)

    def describe_auth(self) -> str:
        if self.auth_mode == aws.BEARER:
            return f"a Bedrock API key ({aws.MANTLE_TOKEN_VAR}) as a bearer token"
        return f"SigV4 ({aws.MANTLE_SERVICE}, {self.region}) from the AWS credential chain"


@dataclass(frozen=True, slots=True)
class EnvConfig:
    """The backends the environment configures, and the names it restricts the run to."""

    backends: tuple[Backend, ...]
    """Backends fully given by variables: URLs for EC2 rigs and ``SM_ENDPOINT``. Bedrock is
    not here: it is always on, and needs AWS credentials, so the caller decides."""
    bedrock_model: str
    bedrock_region: str
    mantle: MantleSettings
    only: tuple[str, ...] | None
    """``BACKENDS=a,b`` parsed, or None."""


def from_env(env: Mapping[str, str], catalog: Catalog, region: str | None = None) -> EnvConfig:
    """Read the reference's environment variables.

    Args:
        env: the environment (``os.environ``).
        catalog: the rig catalog: model ids, labels and flags default from it.
        region: ``--region`` from the command line; it beats ``BEDROCK_REGION`` and
            ``SM_REGION``, which beat the catalog.

    Raises:
        UnknownBackendError: ``BACKENDS`` names an unknown backend.
        ValueError: a ``*_URL`` is not an http(s) URL.
    """

    def get(key: str) -> str | None:
        value = env.get(key, "").strip()
        return value or None

    bedrock = catalog.get("bedrock")
    bedrock_model = get("BEDROCK_MODEL") or bedrock.model_id
    bedrock_region = region or get("BEDROCK_REGION") or bedrock.regions[0]
    mantle = MantleSettings.from_env(get, catalog, region)

    backends: list[Backend] = []
    for name, prefix in _URL_VARS.items():
        url = get(f"{prefix}_URL")
        if url is None:
            continue
        rig = _typed(catalog, name, catalog_model.Ec2Rig)
        backends.append(custom_backend(rig, prefix, normalize_base_url(url), get(f"{prefix}_MODEL"),
                                       get(f"{prefix}_INSTANCE_TYPE")))
    endpoint = get("SM_ENDPOINT")
    if endpoint is not None:
        rig = _typed(catalog, "sagemaker", catalog_model.SageMakerRig)
        sm_region = region or get("SM_REGION") or (rig.regions[0] if rig.regions else DEFAULT_SAGEMAKER_REGION)
        backends.append(Backend(
            name="sagemaker", label=rig.label, kind=kind_for(rig),
            model_id=get("SM_MODEL") or rig.model_id, tool_calls=rig.tool_calls,
            region=sm_region, endpoint_name=endpoint, **catalog_limits(rig),
            metadata={**catalog_metadata(rig, sm_region, get("SM_MODEL") or rig.model_id), "region": sm_region,
                      "reached_via": f"SM_ENDPOINT={endpoint} in {sm_region}"},
            provenance={"expected": catalog_expectation(rig, get("SM_MODEL") or rig.model_id, sm_region)},
        ))
    backends.sort(key=lambda b: sort_key(b.name))
    return EnvConfig(backends=tuple(backends), bedrock_model=bedrock_model,
                     bedrock_region=bedrock_region, mantle=mantle, only=parse_names(get("BACKENDS")))


def custom_backend(rig: Ec2Rig, prefix: str, base_url: str, model: str | None, instance_type: str | None) -> Backend:
    """The backend behind ``<prefix>_URL``: a custom server, not the catalog's rig.

    It is driven like the rig the variable names (the same client kind, tool-call ability and
    prompt limit: ``INF2_URL`` expects the Neuron server's API), but nothing else of the rig is
    assumed: no image, flags or instance type. The model id sent is ``<prefix>_MODEL``, else the
    one the server reports (asked by :func:`agent.reach.custom_server.identify` before the run; until
    then the catalog's model id stands in).

    Raises:
        ValueError: ``<prefix>_INSTANCE_TYPE`` is not an instance type name.
    """
    variable = f"{prefix}_URL"
    metadata = {
        "server": f"custom server at {variable} (not a rig deployed by this app)",
        "reached_via": f"{variable}={base_url}",
        "url_variable": variable,
        "model_source": f"{prefix}_MODEL" if model else "the server's /v1/models",
        **model_name(rig, model or rig.model_id),
    }
    label = f"custom server at {variable}"
    if instance_type is not None:
        if not is_instance_type(instance_type):
            raise ValueError(f"{prefix}_INSTANCE_TYPE={instance_type!r} is not an EC2 or SageMaker instance type "
                             f"(e.g. {rig.instance_type}); the list is botocore's")
        metadata["instance_type"] = instance_type
        metadata["instance_type_source"] = f"stated by {prefix}_INSTANCE_TYPE"
        label += f" on {instance_type} (stated)"
    else:
        metadata["unpriced"] = (f"custom server at {variable}: no instance type stated (set "
                                f"{prefix}_INSTANCE_TYPE, e.g. {prefix}_INSTANCE_TYPE={rig.instance_type}, to price "
                                "it and give it a bandwidth ceiling)")
    expected = {"model": fact(model, f"{prefix}_MODEL")} if model else {}
    if instance_type is not None:
        expected["instance_type"] = fact(instance_type, f"{prefix}_INSTANCE_TYPE (stated, not read)")
    return Backend(name=rig.name, label=label, kind=kind_for(rig), model_id=model or rig.model_id,
                   tool_calls=rig.tool_calls, base_url=base_url, **catalog_limits(rig),
                   metadata=metadata, custom=True, provenance={"expected": expected})


def _typed(catalog: Catalog, name: str, kind: type) -> Any:
    rig = catalog.get(name)
    if not isinstance(rig, kind):
        raise ValueError(f"catalog rig {name!r} is a {rig.kind} rig, not {kind.__name__}")
    return rig


def bedrock_backend(catalog: Catalog, model_id: str, region: str, tier: str = STANDARD_TIER) -> Backend:
    """The Bedrock backend (always on when AWS credentials are present), called in service ``tier``."""
    rig = catalog.get("bedrock")
    return Backend(
        name="bedrock", label=rig.label, kind=kind_for(rig), model_id=model_id,
        tool_calls=rig.tool_calls, region=region, **(catalog_limits(rig) if model_id == rig.model_id else {}),
        metadata={**catalog_metadata(rig, region, model_id), "region": region, "service_tier": tier,
                  "reached_via": f"Bedrock runtime API in {region} (ConverseStream)"},
        provenance={"expected": catalog_expectation(rig, model_id, region, tier=tier)},
    )


def mantle_backend(catalog: Catalog, settings: MantleSettings, model: str | None = None) -> Backend:
    """Bedrock's OpenAI-compatible endpoint serving ``model`` (a ``weights.model``; None: the settings' model id).

    What it serves is the catalog entry's statement for its own model, and for another the same model family at a
    precision Bedrock does not publish (so the quality lane pairs it with the rigs as the same model)."""
    rig = catalog.get(MANTLE)
    model_id = (bedrock_id(catalog, model) if model else None) or settings.model_id
    meta = catalog_metadata(rig, settings.region, model_id)
    if model and model_id != rig.model_id:
        meta.update({f"{WEIGHTS_METADATA_PREFIX}model": model, f"{WEIGHTS_METADATA_PREFIX}precision": "not published",
                     f"{WEIGHTS_METADATA_PREFIX}engine": rig.weights.engine})
    meta.update({"region": settings.region, "service_tier": STANDARD_TIER, "auth_mode": settings.auth_mode,
                 "reached_via": f"Bedrock's OpenAI-compatible endpoint {settings.base_url} (Chat Completions), "
                                f"{settings.describe_auth()}"})
    if settings.base_url_given:
        meta["endpoint_variable"] = aws.MANTLE_BASE_URL_VAR
        meta["note"] = (f"{MANTLE}: {aws.MANTLE_BASE_URL_VAR}={settings.base_url} replaces Bedrock's endpoint; no "
                        "other AWS endpoint is called for it, so its price is the dated offline file's "
                        "(rigs/prices.yaml)")
    return Backend(name=MANTLE, label=rig.label, kind=kind_for(rig), model_id=model_id, tool_calls=rig.tool_calls,
                   base_url=settings.base_url, region=settings.region, metadata=meta,
                   provenance={"expected": catalog_expectation(rig, model_id, settings.region)})
