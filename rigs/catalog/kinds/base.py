"""What every rig states, and the questions every kind of rig answers for itself.

A caller never tests a rig's class: it asks the rig whether a stack deploys it (:attr:`RigBase.deployed`), whether
it runs on EC2 instances of its own (:attr:`RigBase.on_instances`) or is a SageMaker endpoint
(:attr:`RigBase.on_endpoint`), how it is priced (:meth:`RigBase.price`), what the catalog pins for it
(:meth:`RigBase.pinned_metadata`), which token limits it states (:meth:`RigBase.stated_limits`) and what it is
expected to serve (:meth:`RigBase.expected`); a deployed rig also says how a model is served on it
(:meth:`DeployedRig.serving`) and whether it builds its own image (:attr:`DeployedRig.builds_own_image`).
"""

from __future__ import annotations

import re
from abc import abstractmethod
from typing import Any, Callable, ClassVar, Mapping, Protocol, Union

from pydantic import PrivateAttr, StrictBool, StrictFloat, StrictInt, StrictStr, ValidationInfo, field_validator

from rigs.catalog.checks import Frozen, Strings, between, checked
from rigs.catalog.facts import Deployment, Predictor, fact
from rigs.catalog.images import OWN_IMAGE_PREFIX
from rigs.catalog.price_terms import STANDARD_TIER
from rigs.catalog.runtimes import VLLM, runtime
from rigs.catalog.served import REGION_PLACEHOLDER, ModelId, PinnedImage, ReadyMinutes, Variant, Weights
from rigs.contract import REGIONS

NAME = re.compile(r"^[a-z][a-z0-9-]*$")
_STACK_NAME = re.compile(r"^Inference[A-Z][A-Za-z0-9]*$")
_TAG_VERSION = re.compile(r"(?:^|[:v-])v?(\d+\.\d+\.\d+(?:rc\d+)?)")

BIG_VARIANT = "big"
"""The variant ``python -m rigs rehearse --big`` moves a rig to (a bigger model on the same instance)."""


def _regions(regions: tuple[str, ...]) -> str | None:
    outside = [r for r in regions if r not in REGIONS]
    if not regions:
        return "must name at least one region"
    if outside:
        return f"{', '.join(outside)} outside the four regions {', '.join(REGIONS)}"
    return "lists a region twice" if len(set(regions)) != len(regions) else None


Regions = checked(Strings, _regions, items={"enum": list(REGIONS)}, minItems=1, uniqueItems=True)
VariantName = checked(StrictStr, lambda n: None if NAME.match(n) else
                      "variant names are lower-case letters, digits and dashes", pattern=NAME.pattern)
Hours = between(Union[StrictInt, StrictFloat], 0, 168, "must be between 0 and 168 hours", above=True)


class PriceLookup(Protocol):
    """The lookups a rig is priced with: :class:`rigs.catalog.pricing.PriceBook`'s (the kinds sit below it)."""

    def instance_hourly_price(self, instance_type: str, region: str) -> Any: ...

    def bedrock_token_prices(self, model_id: str, region: str, tier: str = STANDARD_TIER) -> Any: ...


class RigBase(Frozen):
    """What every backend states: its label, model, tool calls, regions, price source and weights.

    Its ``name`` is its key in the catalog (set by the catalog, never written in the rig)."""

    label: StrictStr
    model_id: ModelId
    tool_calls: StrictBool
    regions: Regions
    weights: Weights
    """What it serves, as published (:class:`Weights`)."""
    _name: str = PrivateAttr("")

    deployed: ClassVar[bool] = False
    """A stack of this app deploys it (``python -m rigs up``); else it is a managed model the benchmark only calls."""
    on_instances: ClassVar[bool] = False
    """It runs on EC2 instances of its own: zones, an AMI, a server image pulled at boot, vCPU quotas, and it is
    reached through an SSM port forward (with the local tools that needs)."""
    on_endpoint: ClassVar[bool] = False
    """It is a SageMaker endpoint: found by its stack's ``EndpointName`` output, called through the SageMaker runtime,
    held to an endpoint quota, sized on SageMaker's ``ml.`` twins of the EC2 sizes."""
    priced_per_token: ClassVar[bool] = False
    """It is billed per input and output token; any other rig per instance-hour."""
    model_compiled_in: ClassVar[bool] = False
    """Its own server has its model compiled in: another model runs only on another runtime, or not at all (its
    ``other_models`` says why)."""

    @property
    def name(self) -> str:
        return self._name

    @property
    def backend_kind(self) -> str:
        """The agent's backend kind it is reached as: its runtime's (``rigs/catalog/runtimes.py``)."""
        return runtime(self.runtime).backend_kind

    @property
    def pinned_per_region(self) -> bool:
        """Its image lives in a regional registry, so its digests are pinned per region (``python -m rigs pins``)."""
        return False

    @abstractmethod
    def price(self, book: PriceLookup, region: str, tier: str = STANDARD_TIER) -> Any:
        """Its price in ``region`` (``tier``: Bedrock's service tier, for a rig billed per token)."""

    @abstractmethod
    def pinned_metadata(self, region: str | None) -> dict[str, str]:
        """What the catalog pins for it, for the report (instance type, image, serve flags), in ``region``."""

    @abstractmethod
    def stated_limits(self, deployed_context: int | None = None) -> dict[str, int | None]:
        """The token limits the catalog states for it (``max_prompt_tokens``, ``max_total_tokens``; None where none is
        stated); ``deployed_context``: the context its stack says it serves (its ``ContextTokens`` output)."""

    @abstractmethod
    def expected(self, model_id: str, at: Deployment, predict: Predictor | None = None) -> dict[str, Any]:
        """What the catalog says serves it with ``model_id`` as it is reached now (``at``), as facts
        (:func:`rigs.catalog.facts.fact`); ``predict`` gives what ``python -m rigs fit`` predicts."""


class DeployedRig(PinnedImage, RigBase):
    """A rig the app deploys: its stack, instance, image, lifetime limit and variants."""

    stack_name: checked(StrictStr, lambda s: None if _STACK_NAME.match(s) else
                        "must look like Inference<Name> (letters and digits)", pattern=_STACK_NAME.pattern)
    instance_type: StrictStr
    max_hours: Hours
    ready_timeout_minutes: ReadyMinutes
    variants: Mapping[VariantName, Variant] = {}
    no_big_variant: checked(StrictStr, lambda r: None if r.strip() else
                            "must say why (a sentence), or be left out") | None = None
    """Why the rig has no ``big`` variant (no published bigger build), for ``rehearse --big``."""
    also_on: Strings = ()
    """Instance families it also deploys on, besides its instance type's (the same image and AMI serve them): the
    sizes ``-c model.<rig>`` may move it to and ``-c instance_type.<rig>`` may name, its own family's first."""

    deployed: ClassVar[bool] = True
    hf_token_refusal: ClassVar[str | None]
    """Why a model gated on the Hugging Face Hub cannot be served on it (its token would have nowhere private to go);
    None where its boot reads the token from an SSM parameter (``-c hf_token_parameter``)."""

    @field_validator("no_big_variant")
    @classmethod
    def _no_big_beside_big(cls, reason: str | None, info: ValidationInfo) -> str | None:
        if reason is not None and BIG_VARIANT in (info.data.get("variants") or {}):
            raise ValueError(f"the rig has a {BIG_VARIANT!r} variant: leave no_big_variant out")
        return reason

    def with_variant(self, variant: str) -> Any:
        """This rig with one of its named variants applied."""
        if variant not in self.variants:
            raise ValueError(f"rig {self.name!r} has no variant {variant!r}; "
                             f"variants: {', '.join(sorted(self.variants)) or 'none'}")
        return self.model_copy(update=self.variants[variant].overrides(self))

    @property
    def families(self) -> tuple[str, ...]:
        """The instance families it deploys on: its instance type's, then :attr:`also_on`."""
        return (self.instance_type.removeprefix("ml.").split(".", 1)[0], *self.also_on)

    @property
    def builds_own_image(self) -> bool:
        """This app builds its image into the account's own ECR (:data:`rigs.catalog.images.OWN_IMAGE_PREFIX`), with
        a stack of its own (``<stack>Image``, ``stacks/g5g_image_stack.py``)."""
        return self.image.repository.startswith(OWN_IMAGE_PREFIX)

    @property
    def pinned_per_region(self) -> bool:
        return self.image.regional

    @property
    def engine(self) -> str | None:
        """The engine its runtime serves with, as provenance names it (``rigs/catalog/runtimes.py``)."""
        return runtime(self.runtime).engine

    @abstractmethod
    def context_setting(self) -> tuple[str | None, str]:
        """The context its server is told to serve, as written (None where nothing names it), and where."""

    @property
    def serve_context(self) -> int | None:
        """The context it serves, in tokens (None where its settings name none): its stack's ``ContextTokens``
        output (:data:`rigs.contract.OutputKey.CONTEXT_TOKENS`)."""
        value, _ = self.context_setting()
        return int(value) if value and value.isdigit() else None

    @abstractmethod
    def serving(self, context: int, tensor_parallel: int, tool_call_parser: str | None,
                weights_bytes: int, data_parallel: int = 1,
                reasoning_parser: str | None = None) -> dict[str, Any]:
        """How another model is served on it (``-c model.<rig>``): the fields that make its server serve ``context``
        tokens over ``tensor_parallel`` accelerators in each of ``data_parallel`` replicas, with tool calls parsed by
        ``tool_call_parser`` and its thinking by ``reasoning_parser`` (none when None), for weights of
        ``weights_bytes``."""

    def price(self, book: PriceLookup, region: str, tier: str = STANDARD_TIER) -> Any:
        """Per instance-hour: its instance type's on-demand price in ``region``."""
        return book.instance_hourly_price(self.instance_type, region)

    def pinned_metadata(self, region: str | None) -> dict[str, str]:
        """Its instance type and image; a regional image without ``region`` is shown with ``<region>``."""
        reference = self.image.reference(region).replace(REGION_PLACEHOLDER, "<region>")
        meta = {"instance_type": self.instance_type, "image": reference}
        if "@" in reference:
            meta["image_digest"] = reference.rpartition("@")[2]
        return meta

    def stated_limits(self, deployed_context: int | None = None) -> dict[str, int | None]:
        """Its context (the stack's, else its settings')."""
        return {"max_prompt_tokens": None, "max_total_tokens": deployed_context or self.serve_context}

    def expected(self, model_id: str, at: Deployment, predict: Predictor | None = None) -> dict[str, Any]:
        """The engine and its version (a vLLM image's tag), the model every request names, the context length of its
        settings (the stack's ``ContextTokens`` output where given), its instance type (the stack's ``InstanceType``
        output where given: ``-c model.<rig>`` may have moved it) and image digest (the catalog's pin, else the digest
        the stack read at deploy time), and for a vLLM rig the KV cache ``predict`` gives at that context."""
        out: dict[str, Any] = {}
        if self.engine:
            out["engine"] = fact(self.engine, f"catalog runtime {self.runtime}")
        out["model"] = fact(model_id, "the model id every request names")
        out.update(self._variant_facts(model_id, at))
        if at.context_tokens is not None:
            out["context_tokens"] = fact(at.context_tokens,
                                         "the stack's ContextTokens output (the context it was served at)")
        out["instance_type"] = (fact(at.instance_type, "the stack's InstanceType output (the size the model was "
                                     "fitted to)") if at.instance_type else fact(self.instance_type,
                                                                                 "catalog instance_type"))
        context = out.get("context_tokens", {}).get("value")
        if predict is not None and self._sizes_its_cache and isinstance(context, int):
            out.update(predict(model_id, at.instance_type or self.instance_type, context))
        return out

    @property
    def _sizes_its_cache(self) -> bool:
        """Its server sizes its KV cache from what the accelerators' memory leaves (vLLM, not compiled)."""
        return self.engine == VLLM.engine and not runtime(self.runtime).compiled_kv_cache

    def _variant_facts(self, model_id: str, at: Deployment) -> dict[str, Any]:
        """What depends on the variant deployed (image, context): expected only where every variant serving
        ``model_id`` agrees, since the stack's outputs name the model, not the variant."""
        builds = [r for r in (self, *(self.with_variant(v) for v in self.variants)) if r.model_id == model_id] \
            or [self]
        out: dict[str, Any] = {}
        readers: dict[str, Callable[[DeployedRig], dict[str, Any]]] = {
            "image": lambda r: r._image_facts(at), "context length": lambda r: r._context_facts()}
        for what, read in readers.items():
            each = [read(r) for r in builds]
            if all(e == each[0] for e in each):
                out.update(each[0])
            else:
                why = (f"the catalog's variants of {self.name} differ in {what} and the stack does not say which one "
                       "is deployed")
                out.update({name: fact(None, why) for e in each for name in e})
        return out

    def _image_facts(self, at: Deployment) -> dict[str, Any]:
        """The engine version the image's tag names (vLLM images) and the digest it is pinned to."""
        out = {}
        if self.engine == VLLM.engine:
            found = _TAG_VERSION.search(self.image.tag)
            if found:
                out["engine_version"] = fact(found.group(1), f"catalog image tag {self.image.tag}")
        digest = self.image.digest_for(at.region)
        if digest:
            out["image_digest"] = fact(digest, f"catalog pin of {self.image.repository_in(at.region)}:{self.image.tag}")
        elif at.image_digest:
            out["image_digest"] = fact(at.image_digest, f"the stack's {at.region} ImageDigest output (the tag's digest "
                                                         "there at deploy time)")
        return out

    def _context_facts(self) -> dict[str, Any]:
        """The context length its server is told to serve."""
        value, source = self.context_setting()
        return {"context_tokens": fact(int(value), source)} if value and value.isdigit() else {}
