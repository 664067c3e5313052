"""The EC2 rigs: a server in a container on one EC2 instance of the app's own, one model per runtime (vLLM on a GPU,
the hand-ported Neuron server, AWS's vLLM Neuron image), told apart by ``runtime``.

Each answers on EC2's terms: its zones, AMI and image (:attr:`Ec2Rig.on_instances`), its context and the way another
model is served on it in its serve flags (:meth:`Ec2Rig.serving`), a gated model's token read at boot."""

from __future__ import annotations

import math
import re
from typing import Any, ClassVar, Literal, Mapping

from pydantic import StrictBool, StrictInt, StrictStr, ValidationInfo, field_validator

from rigs.catalog.checks import Strings, between, checked
from rigs.catalog.kinds.base import DeployedRig, VariantName
from rigs.catalog.served import NeuronVariant, RootFreeGib, Variant, VllmVariant

NEURON_FAMILIES = ("inf", "trn")
MAX_ROOT_VOLUME_GIB = 16384
"""The largest gp3 volume (16 TiB): the deploy-time root volume handler fails an AMI that would need more."""
ROOT_ALLOWANCE_GIB = 30
"""Free GiB a rig's root volume needs beyond a model's weights: the server image's layers, the swapfile and margin
(an allowance; the catalog's ``root_free_gib`` stays the floor)."""
_GIB = 1 << 30
_SERVE_FLAGS_WITH_VALUE = ("--max-model-len", "--tensor-parallel-size", "--data-parallel-size", "--tool-call-parser",
                           "--reasoning-parser")
_CONTEXT_FLAG = "--max-model-len"


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

    on_instances: ClassVar[bool] = True
    hf_token_refusal: ClassVar[str | None] = None

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

    def context_setting(self) -> tuple[str | None, str]:
        """Its serve flag ``--max-model-len``."""
        flags = list(self.serve_flags)
        value = flags[flags.index(_CONTEXT_FLAG) + 1] if _CONTEXT_FLAG in flags[:-1] else None
        return value, f"serve flag {_CONTEXT_FLAG}"

    def serving(self, context: int, tensor_parallel: int, tool_call_parser: str | None,
                weights_bytes: int, data_parallel: int = 1,
                reasoning_parser: str | None = None) -> dict[str, Any]:
        """Its serve flags with the context, the tensor and data parallelism (vLLM's ``--data-parallel-size``: one
        server, a replica on each group of ``tensor_parallel`` GPUs) and the tool-call and reasoning parsers
        replaced, and a root volume with room for the weights."""
        flags: list[str] = []
        rest = list(self.serve_flags)
        while rest:
            flag = rest.pop(0)
            if flag in _SERVE_FLAGS_WITH_VALUE and rest:
                rest.pop(0)
            elif flag != "--enable-auto-tool-choice":
                flags.append(flag)
        flags += [_CONTEXT_FLAG, str(context)]
        if tensor_parallel > 1:
            flags += ["--tensor-parallel-size", str(tensor_parallel)]
        if data_parallel > 1:
            flags += ["--data-parallel-size", str(data_parallel)]
        if tool_call_parser:
            flags += ["--enable-auto-tool-choice", "--tool-call-parser", tool_call_parser]
        if reasoning_parser:
            flags += ["--reasoning-parser", reasoning_parser]
        return {"serve_flags": tuple(flags),
                "root_free_gib": max(self.root_free_gib, math.ceil(weights_bytes / _GIB) + ROOT_ALLOWANCE_GIB)}

    def pinned_metadata(self, region: str | None) -> dict[str, str]:
        """Its instance type, image and serve flags."""
        return {**super().pinned_metadata(region), "serve_flags": " ".join(self.serve_flags)}

    def stated_limits(self, deployed_context: int | None = None) -> dict[str, int | None]:
        """Its own prompt and total limits (a Neuron build's compiled shapes), else its context."""
        limits = super().stated_limits(deployed_context)
        return {"max_prompt_tokens": self.max_prompt_tokens,
                "max_total_tokens": self.max_total_tokens or limits["max_total_tokens"]}


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

    model_compiled_in: ClassVar[bool] = True


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
