"""What a rig serves: its weights as published (:class:`Weights`), its server image as the catalog writes it
(``image``, ``image_digest``, ``image_digests``) and as the code uses it (:class:`ContainerImage`), and its named
variants, one model per runtime: what a variant may replace depends on the runtime (a Neuron server's model is
built into its image; the SageMaker image is AWS's, pinned per region); and the models section (:class:`ModelCard`,
each with its :class:`Architecture`), the models ``-c model.<rig>=ID`` and ``python -m rigs fit`` know by name."""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal, Mapping, Union

from pydantic import Field, StrictBool, StrictFloat, StrictInt, StrictStr, ValidationInfo, field_validator, \
    model_validator

from rigs.aws import MANTLE_ROUTES
from rigs.catalog.checks import Frozen, Quoted, Strings, between, checked, located
from rigs.contract import REGIONS

REGION_PLACEHOLDER = "{region}"
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


class ContainerImage(Frozen):
    """A container image pinned by tag, and by digest where it is known.

    A registry that is one for the world (Docker Hub) has one digest per tag: ``digest``.
    A regional registry (a ``{region}`` placeholder in the repository, such as AWS's
    SageMaker DLC registry) is a separate registry per region, and a digest read in one
    region is not guaranteed in another, so its pins are per region and optional:
    ``digests`` (region -> digest, written by ``python -m rigs pins refresh``). Where a
    region has no pin, the stack reads the digest its tag points to there at deploy time
    (``stacks/parts/images/pin.py``) and runs the image by that digest.
    """

    repository: str
    tag: str
    digest: str | None = None
    digests: Mapping[str, str] = {}

    @property
    def regional(self) -> bool:
        """Whether the repository names a per-region registry (a ``{region}`` placeholder)."""
        return REGION_PLACEHOLDER in self.repository

    def digest_for(self, region: str | None) -> str | None:
        """The pinned digest of this tag in ``region``; None where nothing is pinned there."""
        if not self.regional:
            return self.digest
        return self.digests.get(region) if region else None

    def repository_in(self, region: str | None) -> str:
        """The repository with a ``{region}`` placeholder filled (unchanged when ``region`` is None)."""
        return self.repository.replace(REGION_PLACEHOLDER, region) if region else self.repository

    def reference(self, region: str | None = None) -> str:
        """The image as the catalog names it in ``region``: ``repo:tag@sha256:…`` where a digest is pinned there
        (what is shown, and where the tag is read from; a rig pulls :meth:`pull_reference`).

        A regional image without a pin in ``region`` (or without a region) gives
        ``repo:tag`` only; :meth:`digest_for` says whether there is a pin.
        """
        ref = f"{self.repository_in(region)}:{self.tag}"
        digest = self.digest_for(region)
        return f"{ref}@{digest}" if digest else ref

    def pull_reference(self, region: str | None = None) -> str:
        """What a rig pulls and runs in ``region``: ``repo@sha256:…`` where a digest is pinned there, else ``repo:tag``.

        Never ``repo:tag@sha256:…``: Docker accepts it today and ignores the tag, and an open change to the Docker
        CLI (docker/cli#7181) refuses it; the digest alone names the image.
        """
        digest = self.digest_for(region)
        return f"{self.repository_in(region)}@{digest}" if digest else f"{self.repository_in(region)}:{self.tag}"


def _image_text(text: str) -> str | None:
    if "@" in text:
        return "put the digest in image_digest, not in image"
    if ":" not in text.rsplit("/", 1)[-1]:
        return f"{text!r} has no tag; pin a version tag (never :latest)"
    if text.rsplit(":", 1)[1] == "latest":
        return f"{text!r} uses :latest; pin a version tag"
    return None


def _in_regions(region: str) -> str | None:
    return None if region in REGIONS else f"outside the four regions {', '.join(REGIONS)}"


ImageText = checked(StrictStr, _image_text)
Digest = checked(StrictStr, lambda d: None if _DIGEST.match(d) else f"must look like sha256:<64 hex digits>, got {d!r}",
                 pattern=_DIGEST.pattern)
RegionName = checked(StrictStr, _in_regions, enum=list(REGIONS))


class ImageFields(Frozen):
    """The ``image`` (``repository:tag``) and ``image_digest`` keys, checked the same way wherever they are."""

    regional_images: ClassVar[bool] = False
    """Whether the image may live in a regional registry (a ``{region}`` placeholder)."""

    @field_validator("image_reference", check_fields=False)
    @classmethod
    def _placeholder(cls, text: str | None) -> str | None:
        if text and REGION_PLACEHOLDER in text and not cls.regional_images:
            raise ValueError("a {region} placeholder is only allowed for SageMaker images")
        return text

    @field_validator("image_digest", check_fields=False)
    @classmethod
    def _one_digest(cls, digest: str | None, info: ValidationInfo) -> str | None:
        if digest and REGION_PLACEHOLDER in (info.data.get("image_reference") or ""):
            raise ValueError("a regional registry is pinned per region: use image_digests "
                             "(region: digest; `python -m rigs pins refresh` writes them)")
        return digest


class PinnedImage(ImageFields):
    """A rig's own image: ``image``, one ``image_digest`` or, in a regional registry, ``image_digests``."""

    image_reference: ImageText = Field(alias="image")
    image_digest: Digest | None = None
    image_digests: Mapping[RegionName, Digest] = {}
    """Per-region pins of an image in a regional registry (``python -m rigs pins refresh`` writes them)."""

    @field_validator("image_digests")
    @classmethod
    def _pins(cls, pins: Mapping[str, str], info: ValidationInfo) -> Mapping[str, str]:
        if REGION_PLACEHOLDER not in (info.data.get("image_reference") or REGION_PLACEHOLDER):
            raise ValueError("only an image with a {region} placeholder is pinned per region; use image_digest")
        regions: Any = info.data.get("regions") or ()
        stray = sorted(set(pins) - set(regions))
        if stray and "regions" in info.data:
            raise ValueError(f"pins for {', '.join(stray)}, which the rig does not run in "
                             f"(its regions: {', '.join(regions)})")
        return pins

    @property
    def image(self) -> ContainerImage:
        """The image as the stacks and the agent use it."""
        repository, tag = self.image_reference.rsplit(":", 1)
        return ContainerImage(repository=repository, tag=tag, digest=self.image_digest,
                              digests=dict(self.image_digests))


# --- weights and variants ---------------------------------------------------------


_MODEL_SOURCE = re.compile(r"^https://[a-z0-9.-]+\.[a-z]{2,}/\S+$")

Text = checked(StrictStr, lambda v: None if v.strip() else "must not be empty", minLength=1)
ModelId = Text
ReadyMinutes = between(StrictInt, 5, 120, "must be 5 to 120 minutes")
RootFreeGib = between(StrictInt, 1, 1024, "must be 1 to 1024 GiB")


def source_page(what: str) -> Any:
    """An ``https://`` address of ``what``'s public page."""
    return checked(StrictStr, lambda u: None if _MODEL_SOURCE.match(u) else f"must be an https:// address of {what}",
                   pattern=_MODEL_SOURCE.pattern)


class Weights(Frozen):
    """What a rig serves, as published: the model, the precision of its weights and what they take.

    Stated, not measured: the quality lane's report shows these beside the measured answers, and two
    rigs with the same model id, precision and engine serve the same weights with the same engine
    (their answers should agree; ``agent/bench/analysis/blocks/quality_pairs.py``).

    Attributes:
        model: The model family (``Gemma 4 E2B``, ``Amazon Nova Micro``): a difference between two
            families is a model difference, not a precision one.
        precision: How the weights are stored and computed (``W4A16``, ``fp16``, ``bf16``).
        bytes_per_weight: Bytes per weight of the quantized layers (W4A16: 0.5; group scales not
            counted); None where not published.
        memory_gib: The weights' memory on the device, GiB, from a published log or report; None
            where not published.
        memory_basis: Where ``memory_gib`` comes from, in a few words.
        engine: The serving engine and its version.
        source: The public page of the checkpoint (or of the model, for a managed service).
    """

    model: Text
    precision: Text
    bytes_per_weight: between(StrictFloat, 0, 4, "must be above 0 and at most 4", above=True) | None = None
    memory_gib: between(StrictFloat, 0, 1024, "must be above 0 and at most 1024", above=True) | None = None
    memory_basis: Text | None = Field(None, validate_default=True)
    engine: Text
    source: source_page("the checkpoint's (or model's) public page")

    @field_validator("memory_basis")
    @classmethod
    def _basis(cls, basis: str | None, info: ValidationInfo) -> str | None:
        if basis is None and info.data.get("memory_gib") is not None:
            raise ValueError("say where memory_gib comes from (a published log or report)")
        return basis

    def metadata(self, prefix: str) -> dict[str, str]:
        """The fields as metadata strings, each key ``prefix`` + the field's name; absent ones left out."""
        return {prefix + k: f"{v:g}" if isinstance(v, float) else str(v)
                for k, v in self.model_dump(exclude_none=True).items()}


class Variant(Frozen):
    """A named alternative build of a rig: each field given replaces the rig's (``container_env`` is
    merged into the rig's), the others stay. Selected per deploy with ``-c <rig>_variant=<name>``.

    ``model_source`` names the public page of a variant's checkpoint: a variant that changes the
    model must say where that model is published. The variant named ``big`` is the bigger model
    ``python -m rigs rehearse --big`` moves a rig to.
    """

    @model_validator(mode="after")
    def _consistent(self) -> "Variant":
        given = self.model_fields_set
        found: list[tuple[tuple[str, ...], str]] = []
        if not given - {"model_source", "image_digest", "weights"}:
            allowed = sorted(f.alias or name for name, f in type(self).model_fields.items())
            found.append(((), f"a variant must change something (it may set: {', '.join(allowed)})"))
        if "model_id" in given and "model_source" not in given:
            found.append((("model_source",), "a variant that changes the model must name the public page of its "
                                             "checkpoint (https://...)"))
        if "model_source" in given and "model_id" not in given:
            found.append((("model_source",), "only a variant that sets model_id names a model source"))
        if "model_id" in given and "weights" not in given:
            found.append((("weights",), "a variant that changes the model must say what it serves (weights: model, "
                                        "precision, bytes_per_weight, engine, source)"))
        if "image_digest" in given and "image_reference" not in given:
            found.append((("image_digest",), "pins the variant's image: give image too"))
        located(type(self).__name__, found)
        return self

    def overrides(self, rig: Any) -> dict[str, Any]:
        """The fields this variant replaces on ``rig`` (a new image drops the rig's digest unless it gives one)."""
        changed = {name: getattr(self, name) for name in self.model_fields_set - {"model_source"}}
        if "image_reference" in changed:
            changed["image_digest"] = getattr(self, "image_digest")
        if "container_env" in changed:
            changed["container_env"] = {**rig.container_env, **changed["container_env"]}
        return changed


class _VariantImage(Variant, ImageFields):
    image_reference: ImageText | None = Field(None, alias="image")
    image_digest: Digest | None = None


class VllmVariant(_VariantImage):
    """A variant of a vLLM rig on EC2: another model, image, flags, wait or disk."""

    model_id: ModelId | None = None
    model_source: source_page("the checkpoint's public page") | None = None
    serve_flags: Strings | None = None
    ready_timeout_minutes: ReadyMinutes | None = None
    root_free_gib: RootFreeGib | None = None
    weights: Weights | None = None


class NeuronVariant(_VariantImage):
    """A variant of a Neuron rig: another image (the model is built into it), devices and token limits."""

    neuron_devices: Strings | None = None
    max_prompt_tokens: StrictInt | None = None
    max_total_tokens: StrictInt | None = None
    ready_timeout_minutes: ReadyMinutes | None = None


class SageMakerVariant(Variant):
    """A variant of the SageMaker endpoint: another model and container settings in AWS's image."""

    model_id: ModelId | None = None
    model_source: source_page("the checkpoint's public page") | None = None
    container_env: Mapping[str, Quoted] | None = None
    ready_timeout_minutes: ReadyMinutes | None = None
    weights: Weights | None = None


# --- the models section ----------------------------------------------------------------


Count = between(StrictInt, 1, 1_000_000, "must be a whole number from 1", above=False)
_CLASS = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
LayerKind = Literal["full", "sliding"]
DTYPE_BYTES: dict[str, int] = {"bfloat16": 2, "float16": 2, "float32": 4}
"""Bytes per value of the dtypes a config.json names (``torch_dtype``, ``dtype``) and ``rigs fit --dtype`` takes."""


class Attention(Frozen):
    """The KV geometry of one kind of attention layer, where it differs from the model's own."""

    kv_heads: Count
    head_dim: Count


class Architecture(Frozen):
    """A model's shape as its ``config.json`` publishes it: what ``python -m rigs fit`` sizes it by.

    Attributes:
        layers: ``num_hidden_layers``.
        attention_heads: ``num_attention_heads``.
        kv_heads: ``num_key_value_heads`` (grouped-query attention; equal to the heads when absent).
        head_dim: ``head_dim`` (``hidden_size / num_attention_heads`` where the config gives none).
        layer_pattern: the kinds of attention layer in order, repeated over the layers (``layer_types``:
            Gemma 4 E2B four sliding then one full, gpt-oss sliding then full; one ``full`` for a model of
            full attention in every layer).
        sliding_window: tokens a sliding-window layer attends to (``sliding_window``).
        full_attention: the full-attention layers' own KV geometry where it differs (Gemma 4's 512-wide
            ``global_head_dim`` and ``num_global_key_value_heads``).
        kv_shared_layers: ``num_kv_shared_layers``: the last layers read the KV of an earlier layer of their
            kind and hold none of their own.
        max_context: ``max_position_embeddings``.
        dtype: the weights' dtype (``torch_dtype`` or ``dtype``); the KV cache's too, as vLLM's ``auto``.
        quantization: how the weights are quantized (``quantization_config``), None for none.
        parameters: the parameter count, as published; None where only ``weight_bytes`` is.
        weight_bytes: the bytes the weights take where that is published (a quantized checkpoint's size, or
            what an engine logged loading it); otherwise ``parameters`` x the dtype's bytes.
        weight_basis: where ``parameters`` or ``weight_bytes`` come from.
        weight_bytes_loaded: ``weight_bytes`` is what vLLM logged loading the model ("Model loading took"), its
            buffers (the rotary-embedding table) included, so the fit adds none; false: the checkpoint's size.
        experts, experts_per_token: a mixture of experts' ``num_local_experts`` and ``experts_per_token``
            (every expert's weights are resident; the KV cache does not depend on them).
        model_class: the class its ``config.json`` names first in ``architectures`` (``LlamaForCausalLM``): what
            an engine loads it as, and what decides whether AWS's vLLM Neuron image serves it (:class:`NeuronVllm`);
            None where it is not known.
        vocab, hidden, intermediate: ``vocab_size``, ``hidden_size`` and ``intermediate_size`` (a mixture of
            experts: one expert's, ``moe_intermediate_size`` where given): what vLLM's profile pass holds depends
            on them (``rigs/sizing/engine.py``); where absent it is sized from the attention's width.
    """

    layers: Count
    attention_heads: Count
    kv_heads: Count
    head_dim: Count
    layer_pattern: tuple[LayerKind, ...] = ("full",)
    sliding_window: Count | None = None
    full_attention: Attention | None = None
    kv_shared_layers: between(StrictInt, 0, 1_000_000, "must be 0 or more") = 0
    max_context: between(StrictInt, 1, 100_000_000, "must be a whole number from 1")
    dtype: Literal["bfloat16", "float16", "float32"]
    quantization: Text | None = None
    parameters: between(Union[StrictInt, StrictFloat], 0, 1e13, "must be a parameter count", above=True) | None = None
    weight_bytes: between(StrictInt, 0, 10**13, "must be a size in bytes", above=True) | None = None
    weight_basis: Text
    weight_bytes_loaded: bool = False
    experts: Count | None = None
    experts_per_token: Count | None = None
    model_class: checked(StrictStr, lambda c: None if _CLASS.match(c) else "must be a class name as config.json's "
                         "architectures gives it (LlamaForCausalLM)", pattern=_CLASS.pattern) | None = None
    vocab: Count | None = None
    hidden: Count | None = None
    intermediate: Count | None = None

    @model_validator(mode="after")
    def _consistent(self) -> "Architecture":
        found: list[tuple[tuple[str, ...], str]] = []
        kv = [self.kv_heads] + ([self.full_attention.kv_heads] if self.full_attention else [])
        if any(self.attention_heads % k for k in kv):
            found.append((("kv_heads",), f"{'/'.join(map(str, kv))} KV heads do not divide {self.attention_heads} "
                                         "attention heads"))
        if "sliding" in self.layer_pattern and self.sliding_window is None:
            found.append((("sliding_window",), "a pattern with sliding layers needs their window (tokens)"))
        if self.kv_shared_layers >= self.layers:
            found.append((("kv_shared_layers",), f"must be fewer than the {self.layers} layers"))
        if self.parameters is None and self.weight_bytes is None:
            found.append((("parameters",), "give the parameter count or weight_bytes (with weight_basis)"))
        if not self.layer_pattern:
            found.append((("layer_pattern",), "name at least one kind of layer (full or sliding)"))
        located("Architecture", found)
        return self

    def weights_bytes(self, dtype: str | None = None) -> int:
        """The weights' bytes in ``dtype`` (the model's own when None; a quantized model's stay as published)."""
        own, chosen = DTYPE_BYTES[self.dtype], DTYPE_BYTES[dtype or self.dtype]
        if self.weight_bytes is not None:
            return self.weight_bytes if self.quantization else round(self.weight_bytes * chosen / own)
        return round(float(self.parameters or 0) * chosen)

    def layer_kinds(self) -> tuple[str, ...]:
        """Every layer's kind, in order (the pattern repeated)."""
        return tuple(self.layer_pattern[i % len(self.layer_pattern)] for i in range(self.layers))

    def geometry(self, kind: str) -> Attention:
        """The KV heads and head size of a layer of ``kind``."""
        if kind == "full" and self.full_attention is not None:
            return self.full_attention
        return Attention(kv_heads=self.kv_heads, head_dim=self.head_dim)


MantleRoute = Literal[MANTLE_ROUTES]  # type: ignore[valid-type]
Reasoning = Literal["none", "by-default", "on-request"]


class BedrockEndpoint(Frozen):
    """What Bedrock's OpenAI-compatible endpoint offers for one model, as its public source states it: facts the
    benchmark acts on (the route it calls, the features it does not ask for) instead of branching on names.

    Attributes:
        route: the path prefix the model is served under (:data:`rigs.aws.MANTLE_ROUTES`); a request under the
            other one is refused with "model `<id>` isn't supported on this route".
        parallel_tool_calls: whether it makes several tool calls in one reply; False: "not offered", and the BFCL
            categories that need it are left out of its accuracy and said so, not counted as its failures; None
            where the source does not say (then they are asked and graded as anywhere).
        reasoning: ``by-default``: it reasons before it answers and the source documents no request field that
            turns that off (billed as output tokens, not shown in the answer: its reasoning tokens are counted and
            priced beside the answer tokens); ``on-request``: only when a request asks (the benchmark never does,
            as it never asks the rigs); ``none``: never.
        source: the public page these facts are read on (the model card's "Programmatic access").
    """

    route: MantleRoute
    parallel_tool_calls: StrictBool | None = None
    reasoning: Reasoning
    source: source_page("the model card these facts are read on")

    def not_offered(self) -> dict[str, str]:
        """The features it does not offer, each with where that is stated."""
        return {"parallel_tool_calls": self.source} if self.parallel_tool_calls is False else {}


class ModelCard(Frozen):
    """One model the rigs can serve: what it is, where it is published, and how vLLM serves it.

    Attributes:
        name: the model family as :class:`Weights` names it (``Qwen3 8B``); two checkpoints of one name are
            the same model (a repack or another precision).
        source: the model's public page.
        config_source: the ``config.json`` the architecture is read from.
        checked: how the architecture's figures were checked (the mirrors or reports they were read in);
            any figure that could not be sourced is named here.
        licence: its licence.
        gated: whether the Hugging Face Hub asks for a token (``-c hf_token_parameter=NAME``).
        tool_call_parser: vLLM's ``--tool-call-parser`` for its tool calls; None where it has none.
        reasoning_parser: vLLM's ``--reasoning-parser`` for a model that thinks before it answers unasked, so its
            thinking is returned (and counted) as reasoning, not as the answer; None for one that does not.
        bedrock_id: the id Bedrock's OpenAI-compatible endpoint serves it under; None where Bedrock does not.
        bedrock_note: what is known of Bedrock serving it otherwise (another id, another version).
        bedrock_endpoint: what Bedrock's OpenAI-compatible endpoint offers for it (:class:`BedrockEndpoint`); given
            with every ``bedrock_id``.
        architecture: its shape (:class:`Architecture`).
    """

    name: Text
    source: source_page("the model's public page")
    config_source: source_page("the model's config.json")
    checked: Text
    licence: Text
    gated: StrictBool
    tool_call_parser: Text | None
    reasoning_parser: Text | None = None
    bedrock_id: Text | None = None
    bedrock_note: Text | None = None
    bedrock_endpoint: BedrockEndpoint | None = None
    architecture: Architecture

    @model_validator(mode="after")
    def _bedrock_facts(self) -> "ModelCard":
        if self.bedrock_id and self.bedrock_endpoint is None:
            located("ModelCard", [(("bedrock_endpoint",), "a model Bedrock serves (bedrock_id) says what its "
                                  "OpenAI-compatible endpoint offers: route (/v1 or /openai/v1), "
                                  "parallel_tool_calls, reasoning and the source they are read on")])
        if self.bedrock_endpoint is not None and not self.bedrock_id:
            located("ModelCard", [(("bedrock_endpoint",), "only a model with a bedrock_id has endpoint facts")])
        return self

    def weights(self, engine: str) -> Weights:
        """What a rig serving it with ``engine`` serves, as the report shows it (its bytes as sized, not measured)."""
        return weights_of(self.name, self.architecture, engine, self.source)


def weights_of(model: str, arch: Architecture, engine: str, source: str) -> Weights:
    """The :class:`Weights` of a model known by its architecture: its precision and the bytes ``rigs fit`` sizes."""
    return Weights(model=model, precision=arch.quantization or arch.dtype,
                   memory_gib=round(arch.weights_bytes() / 1024 ** 3, 2), memory_basis=arch.weight_basis,
                   engine=engine, source=source)


# --- AWS's vLLM image for Inferentia2 and Trainium1 ---------------------------------------------


class CompileAllowance(Frozen):
    """How long the Neuron compiler is allowed for models up to a size (an allowance, not a measurement)."""

    parameters_up_to: between(Union[StrictInt, StrictFloat], 0, 1e13, "must be a parameter count", above=True)
    minutes: between(StrictInt, 1, 600, "must be 1 to 600 minutes")


class NeuronVllm(PinnedImage):
    """AWS's vLLM image for Inferentia2 and Trainium1 (``neuron_vllm`` in the catalog): vLLM's OpenAI-compatible
    server over NxD Inference, which compiles a model for its shapes when the server starts. A Neuron rig asked
    for another model (``-c model.<rig>=ID``) serves it with this image where NxD Inference serves its
    architecture (:attr:`model_classes`); its own hand-ported image stays the default.

    Attributes:
        source: the image's public page.
        engine: what serves, as the report names it.
        model_classes: the ``config.json`` classes it serves (NxD Inference's model types that vLLM's Neuron
            plugin loads).
        model_classes_source: where :attr:`model_classes` are read.
        port: the port its server listens on, in the container and on the instance's loopback.
        max_model_len: the context it is compiled for (``--max-model-len``; the model's own where that is
            smaller).
        max_num_seqs: the sequences it is compiled to serve at once (``--max-num-seqs``, its batch size).
        compile_minutes: the compile's allowance by model size, smallest first; the ready timeout adds it.
        compile_source: where the compile times the allowances rest on are published.
    """

    source: source_page("the image's public page")
    engine: Text
    model_classes: Strings
    model_classes_source: source_page("the list of architectures it serves")
    port: between(StrictInt, 1, 65535, "must be a TCP port (1-65535)")
    max_model_len: Count
    max_num_seqs: Count
    compile_minutes: tuple[CompileAllowance, ...] = Field(min_length=1)
    compile_source: source_page("the published compile times")

    @field_validator("compile_minutes")
    @classmethod
    def _ascending(cls, steps: tuple[CompileAllowance, ...]) -> tuple[CompileAllowance, ...]:
        sizes = [s.parameters_up_to for s in steps]
        if sizes != sorted(set(sizes)):
            raise ValueError("list the allowances by parameters_up_to, smallest first, each size once")
        return steps

    def serves(self, arch: Architecture | None) -> bool:
        """Whether NxD Inference serves a model of ``arch`` through this image."""
        return arch is not None and arch.model_class in self.model_classes

    def refusal(self, model: str, arch: Architecture | None) -> str:
        """Why this image does not serve ``model``, in one clause."""
        named = f"is {arch.model_class}" if arch is not None and arch.model_class else \
            "names no class here (the catalog does not list it, or its config gives no architectures)"
        return (f"AWS's vLLM Neuron image serves only what NxD Inference serves ({', '.join(self.model_classes)}), "
                f"and {model} {named}")

    def compile_allowance_minutes(self, arch: Architecture) -> int | None:
        """The compile's allowance for a model of ``arch``; None for a model above every step."""
        parameters = arch.parameters or arch.weights_bytes() / DTYPE_BYTES[arch.dtype]
        return next((s.minutes for s in self.compile_minutes if parameters <= s.parameters_up_to), None)
