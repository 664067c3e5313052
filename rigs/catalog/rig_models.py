"""The catalog's rigs, one model per kind and, on EC2, per runtime: told apart by ``kind`` and ``runtime``
(discriminated unions), so each shape is checked by its own model and the code has no switch on either."""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal, Mapping, Union

from pydantic import Field, PrivateAttr, StrictBool, StrictFloat, StrictInt, StrictStr, ValidationInfo, \
    field_validator

from rigs.catalog.checks import Frozen, Quoted, Strings, between, checked
from rigs.catalog.served import ModelId, NeuronVariant, PinnedImage, ReadyMinutes, RootFreeGib, SageMakerVariant, \
    Variant, VllmVariant, Weights
from rigs.contract import REGIONS

NEURON_FAMILIES = ("inf", "trn")
NAME = re.compile(r"^[a-z][a-z0-9-]*$")
_STACK_NAME = re.compile(r"^Inference[A-Z][A-Za-z0-9]*$")

MAX_ROOT_VOLUME_GIB = 16384
"""The largest gp3 volume (16 TiB): the deploy-time root volume handler fails an AMI that would need more."""
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

    @property
    def name(self) -> str:
        return self._name


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


def architecture_of(instance_type: str) -> str:
    """The CPU architecture of an EC2 instance type (or its ``ml.`` twin): a family whose name ends in ``g`` after
    its generation (``g5g``, ``c7g``) is Graviton, arm64; any other x86_64."""
    family = instance_type.removeprefix("ml.").split(".", 1)[0]
    return "arm64" if re.match(r"^[a-z]+\d+[a-z]*g[a-z]*$", family) and family[-1] == "g" else "x86_64"


def _neuron(instance_type: str) -> bool:
    return instance_type.split(".", 1)[0].startswith(NEURON_FAMILIES)


class Ec2Rig(DeployedRig):
    """A rig that runs its server in a container on one EC2 instance."""

    kind: Literal["ec2"]
    price_source: Literal["ec2-on-demand"]
    architecture: Literal["x86_64", "arm64"]
    ami_ssm_parameter: checked(StrictStr, lambda p: None if p.startswith("/") else "must be an SSM parameter path")
    serve_flags: Strings
    port: between(StrictInt, 1, 65535, "must be a TCP port (1-65535)")
    local_port: between(StrictInt, 1024, 65535, "must be an unprivileged port (1024-65535)")
    root_volume_gib: between(StrictInt, 8, 16384, "must be 8 to 16384 GiB")
    """The smallest root volume, GiB."""
    root_free_gib: RootFreeGib
    """GiB the rig needs free on its root volume beyond the AMI's own snapshot (server
    image, model, swapfile): see :meth:`root_volume_gib_for`."""
    swap_gib: between(StrictInt, 0, 256, "must be 0 to 256")
    max_prompt_tokens: StrictInt | None = None
    max_total_tokens: StrictInt | None = None
    hf_token_required: StrictBool = False
    """The model is gated on the Hugging Face Hub: the rig cannot boot without the token secret."""

    @field_validator("instance_type")
    @classmethod
    def _ec2_type(cls, instance_type: str) -> str:
        if instance_type.startswith("ml.") or "." not in instance_type:
            raise ValueError(f"not an EC2 instance type: {instance_type!r}")
        return instance_type

    @field_validator("architecture")
    @classmethod
    def _architecture(cls, architecture: str, info: ValidationInfo) -> str:
        instance_type = info.data.get("instance_type")
        if instance_type:
            expected = architecture_of(instance_type)
            if architecture != expected:
                raise ValueError(f"{instance_type} is {expected}, not {architecture}")
        return architecture

    @property
    def instance_family(self) -> str:
        return self.instance_type.split(".", 1)[0]

    def root_volume_gib_for(self, snapshot_gib: int) -> int:
        """The root volume for an AMI whose root snapshot is ``snapshot_gib``: the snapshot plus
        what the rig needs free, and never below ``root_volume_gib``.

        The same rule runs at deploy time in ``stacks/parts/handlers/root_volume.py``
        (inline Lambda code cannot import this module); a test keeps the two equal.
        """
        return max(self.root_volume_gib, snapshot_gib + self.root_free_gib)


class VllmRig(Ec2Rig):
    """vLLM on a GPU instance."""

    variants: Mapping[VariantName, VllmVariant] = {}
    runtime: Literal["vllm"]
    neuron_devices: ClassVar[tuple[str, ...]] = ()

    @field_validator("runtime")
    @classmethod
    def _gpu(cls, runtime: str, info: ValidationInfo) -> str:
        instance_type = info.data.get("instance_type")
        if instance_type and _neuron(instance_type):
            raise ValueError(f"vllm is for GPU instances, {instance_type} is a Neuron instance")
        return runtime


class _OnNeuron(Ec2Rig):
    """An EC2 rig whose runtime needs a Neuron instance (inf*/trn*): the check both Neuron runtimes share."""

    @field_validator("runtime", check_fields=False)
    @classmethod
    def _neuron_instance(cls, runtime: str, info: ValidationInfo) -> str:
        instance_type = info.data.get("instance_type")
        if instance_type and not _neuron(instance_type):
            raise ValueError(f"{runtime} needs a Neuron instance (inf*/trn*), not {instance_type}")
        return runtime


class NeuronRig(_OnNeuron):
    """A Neuron server on Inferentia or Trainium, with the devices it passes through."""

    variants: Mapping[VariantName, NeuronVariant] = {}
    runtime: Literal["neuronx"]
    neuron_devices: checked(Strings, lambda d: None if d else
                            "a neuronx rig must name the Neuron devices it passes through", minItems=1)
    other_models: checked(StrictStr, lambda r: None if r.strip() and "\n" not in r.strip() else
                          "must say in one line why it serves no other model")
    """Why the rig serves its own model only (its server's graph is compiled in): one line, shown wherever
    another model is asked of it (``python -m rigs fit``, ``-c model.<rig>``, ``agent.run --list``)."""


class NeuronVllmRig(_OnNeuron):
    """AWS's vLLM Neuron image on Inferentia2 or Trainium1, serving a model NxD Inference compiles when the server
    starts: made from a Neuron rig and the catalog's ``neuron_vllm`` by ``-c model.<rig>=ID``
    (``rigs/deploy/neuron_vllm.py``), never written in the catalog. Its ready timeout is the rig's own plus the
    compile's allowance, so it may pass the catalog's 120 minutes."""

    runtime: Literal["neuron-vllm"]
    variants: Mapping[VariantName, Variant] = {}
    neuron_devices: checked(Strings, lambda d: None if d else "name the Neuron devices it passes through",
                            minItems=1)
    ready_timeout_minutes: between(StrictInt, 5, 12 * 60, "must be 5 to 720 minutes (CloudFormation's 12 hours)")
    compile_allowance_minutes: between(StrictInt, 1, 600, "must be 1 to 600 minutes")
    """What the ready timeout allows for NxD Inference's compile (the catalog's ``neuron_vllm.compile_minutes``)."""


class SageMakerRig(DeployedRig):
    """A SageMaker real-time endpoint running a serving container."""

    regional_images: ClassVar[bool] = True
    kind: Literal["sagemaker"]
    price_source: Literal["sagemaker-hosting"]
    runtime: Literal["sagemaker-vllm"]
    variants: Mapping[VariantName, SageMakerVariant] = {}
    container_env: Mapping[str, Quoted]
    startup_timeout_seconds: between(StrictInt, 60, 3600, "must be 60 to 3600")

    @field_validator("instance_type")
    @classmethod
    def _ml_type(cls, instance_type: str) -> str:
        if not instance_type.startswith("ml."):
            raise ValueError(f"a SageMaker instance type starts with ml., got {instance_type!r}")
        return instance_type


class BedrockBackend(RigBase):
    """A Bedrock model: nothing to deploy, called by inference profile id through Converse (runtime ``bedrock``), or
    by its model id through Bedrock's OpenAI-compatible endpoint (runtime ``bedrock-mantle``)."""

    kind: Literal["bedrock"]
    price_source: Literal["bedrock-on-demand"]
    runtime: Literal["bedrock", "bedrock-mantle"]
    context_tokens: StrictInt | None = None
    """The model's context window in tokens (prompt and output together), from its public model page: what a
    request of the user's workload must fit (docs/traffic.md, "Your traffic")."""


AnyEc2Rig = Annotated[Union[VllmRig, NeuronRig], Field(discriminator="runtime")]
AnyRig = Annotated[Union[AnyEc2Rig, SageMakerRig, BedrockBackend], Field(discriminator="kind")]
Rig = Union[Ec2Rig, SageMakerRig, BedrockBackend]
DeployableRig = Union[Ec2Rig, SageMakerRig]
