"""The catalog as one pydantic model: the four regions' networks, every rig by name, the accelerated instance
families and the models section, validated once.

Every problem in the file is collected and raised together in one CatalogError, each with the field path
it belongs to, so a broken catalog is fixed in one pass. The rigs are ``kinds/``, one module per kind; what they
serve (their weights, image and variants) ``served.py``; ``model.py`` is the door the rest of the code uses.
"""

from __future__ import annotations

import re
from typing import Mapping

import yaml
from pydantic import StrictBool, StrictInt, StrictStr, ValidationError, field_validator, model_validator

from rigs.catalog.checks import Frozen, between, checked, located, problems
from rigs.catalog.errors import CatalogError, UnknownRigError
from rigs.catalog.served import Architecture, BedrockEndpoint, ModelCard, ModelId, NeuronVllm, RegionName, Text, \
    source_page
from rigs.catalog.kinds import AnyRig, DeployableRig, Rig
from rigs.catalog.kinds.base import NAME
from rigs.catalog.kinds.ec2 import NEURON_FAMILIES, Ec2Rig, NeuronRig, architecture_of
from rigs.catalog.kinds.sagemaker import SageMakerRig
from rigs.contract import REGIONS


class RegionSpec(Frozen):
    """A region's base network: how many zones (subnets) it spans at most.

    Which zones is decided at deploy time from the zones the account can use there
    (``rigs/placement/zones.py``, run by ``stacks/parts/handlers/usable_zones.py``); the count is what
    synth must know.
    """

    availability_zones: between(StrictInt, 1, 6, "must be between 1 and 6")


RigName = checked(StrictStr, lambda n: None if NAME.match(n) else "rig names are lower-case letters, digits and dashes",
                  pattern=NAME.pattern)


_CAPABILITY = re.compile(r"^\d{1,2}\.\d$")

SAGEMAKER_PREFIX = "ml."
"""A SageMaker hosting instance type is its EC2 twin's name after this prefix (``ml.g6.xlarge``)."""


class InstanceFamily(Frozen):
    """An accelerated EC2 instance family: its accelerator, the memory of each, and its sizes.

    Attributes:
        accelerator: what one accelerator is (a GPU; on Inferentia2 and Trainium one NeuronCore, the unit a
            tensor-parallel degree counts).
        memory_mib: each accelerator's memory, MiB, as EC2's ``DescribeInstanceTypes`` gives it (``GpuInfo``,
            or ``NeuronInfo``'s device memory over its cores).
        sizes: instance type -> accelerators, cheapest first (the order ``-c model.<rig>`` tries them in).
        sagemaker: whether SageMaker hosting offers every size as an ``ml.`` twin.
        source: the family's public page.
        accelerators_per_device: accelerators per device node the instance has (a Neuron device, ``/dev/neuronN``,
            holds 2 NeuronCores on Inferentia2 and Trainium1); 1 for a GPU.
        host_memory_gib: each size's host memory, GiB, where it limits what is served: NxD Inference holds the
            whole checkpoint on the host while it shards it to the NeuronCores (``rigs/sizing/fit.py``).
        compute_capability: an NVIDIA GPU's CUDA compute capability (``8.9``), as NVIDIA's CUDA GPUs page gives
            it: which formats and kernels vLLM runs on it (``rigs/sizing/compat.py``); None for a Neuron family.
    """

    accelerator: Text
    memory_mib: between(StrictInt, 1024, 1 << 22, "must be MiB of one accelerator")
    sizes: Mapping[StrictStr, between(StrictInt, 1, 64, "must be 1 to 64 accelerators")]
    sagemaker: StrictBool
    source: source_page("the family's public page")
    accelerators_per_device: between(StrictInt, 1, 64, "must be 1 to 64 accelerators") = 1
    host_memory_gib: Mapping[StrictStr, between(StrictInt, 1, 1 << 20, "must be GiB of host memory")] = {}
    compute_capability: checked(StrictStr, lambda c: None if _CAPABILITY.match(c) else
                                "must be major.minor, as NVIDIA's CUDA GPUs page gives it (8.9)",
                                pattern=_CAPABILITY.pattern) | None = None

    @model_validator(mode="after")
    def _host_memory_of_its_sizes(self) -> "InstanceFamily":
        located("InstanceFamily", [(("host_memory_gib", size), "not one of its sizes")
                                   for size in self.host_memory_gib if size not in self.sizes])
        return self

    @model_validator(mode="after")
    def _capability_of_gpus(self) -> "InstanceFamily":
        """A GPU family states its compute capability (the compatibility rules need it); a Neuron family none."""
        if self.neuron and self.compute_capability is not None:
            located("InstanceFamily", [(("compute_capability",), "a Neuron family has none: leave it out")])
        if not self.neuron and self.compute_capability is None:
            located("InstanceFamily", [(("compute_capability",), "a GPU family needs its CUDA compute capability "
                                                                 "(NVIDIA's CUDA GPUs page)")])
        return self

    @property
    def capability(self) -> tuple[int, int] | None:
        """:attr:`compute_capability` as (major, minor), to compare; None for a Neuron family."""
        if self.compute_capability is None:
            return None
        major, minor = self.compute_capability.split(".")
        return int(major), int(minor)

    @property
    def neuron(self) -> bool:
        """Whether its accelerators are AWS Neuron cores (Inferentia, Trainium)."""
        return next(iter(self.sizes), "").startswith(NEURON_FAMILIES)

    @property
    def memory_bytes(self) -> int:
        return self.memory_mib * 1024 * 1024


class Catalog(Frozen):
    """The whole file: the four regions' networks, every rig by name, the accelerated instance families and
    the models the rigs can serve by name."""

    regions: Mapping[RegionName, RegionSpec]
    rigs: Mapping[RigName, AnyRig]
    instance_families: Mapping[StrictStr, InstanceFamily]
    models: Mapping[ModelId, ModelCard]
    neuron_vllm: NeuronVllm | None = None
    """AWS's vLLM image for Inferentia2 and Trainium1: what a Neuron rig serves another model with."""

    @field_validator("instance_families")
    @classmethod
    def _sizes_of_their_family(cls, families: Mapping[str, InstanceFamily]) -> Mapping[str, InstanceFamily]:
        located("instance_families", [((name, "sizes", size), f"not a size of {name} ({name}.<size>)")
                                      for name, family in families.items() for size in family.sizes
                                      if size.split(".", 1)[0] != name])
        return families

    @field_validator("regions")
    @classmethod
    def _every_region(cls, regions: Mapping[str, RegionSpec]) -> Mapping[str, RegionSpec]:
        located("regions", [((name,), "missing; every one of the four regions needs an entry")
                            for name in REGIONS if name not in regions])
        return regions

    @model_validator(mode="after")
    def _named_with_a_stack_and_port_each(self) -> "Catalog":
        """Names each rig by its key; two rigs never share a stack or a local port."""
        found: list[tuple[tuple[str | int, ...], str]] = []
        owners: dict[tuple[str, object], str] = {}
        for name, rig in self.rigs.items():
            rig._name = name
            for key, clash, what in (("stack_name", "", "the stack"), ("local_port", "port clash: ", "the local port")):
                value = getattr(rig, key, None)
                if value is not None and (key, value) in owners:
                    found.append((("rigs", name, key), f"{clash}{value} is also {what} of rig {owners[key, value]!r}"))
                elif value is not None:
                    owners[key, value] = name
        located("catalog", found)
        return self

    @model_validator(mode="after")
    def _sized_rigs(self) -> "Catalog":
        """Every deployable rig runs on an instance type of a listed family, so it can be sized (``rigs fit``)."""
        located("catalog", [(("rigs", name, "instance_type"), f"{rig.instance_type} is in no instance family of "
                             "instance_families: add its family (accelerator, memory, sizes)")
                            for name, rig in self.rigs.items() if rig.deployed
                            and self.family_of(rig.instance_type) is None])
        return self

    @model_validator(mode="after")
    def _families_listed(self) -> "Catalog":
        """Every family a rig also deploys on is one of instance_families, of the rig's CPU architecture, offered as
        an ``ml.`` twin where the rig is a SageMaker endpoint."""
        found: list[tuple[tuple[str | int, ...], str]] = []
        for name, rig in self.rigs.items():
            own = self.family_of(rig.instance_type) if rig.deployed else None
            for index, family_name in enumerate(getattr(rig, "also_on", ())):
                family = self.instance_families.get(family_name)
                where = ("rigs", name, "also_on", index)
                if family is None:
                    found.append((where, f"{family_name} is not one of instance_families"))
                elif own is not None and (family.neuron != own[1].neuron or architecture_of(
                        next(iter(family.sizes))) != architecture_of(rig.instance_type)):
                    found.append((where, f"{family_name} is not the same kind of instance as {rig.instance_type}"))
                elif rig.instance_type.startswith(SAGEMAKER_PREFIX) and not family.sagemaker:
                    found.append((where, f"SageMaker hosting offers no ml.{family_name} sizes"))
        located("catalog", found)
        return self

    def family_of(self, instance_type: str) -> tuple[str, InstanceFamily] | None:
        """The family of an EC2 instance type or of its SageMaker ``ml.`` twin (only where SageMaker offers it)."""
        twin = instance_type.startswith(SAGEMAKER_PREFIX)
        ec2_type = instance_type.removeprefix(SAGEMAKER_PREFIX)
        name = ec2_type.split(".", 1)[0]
        family = self.instance_families.get(name)
        if family is None or ec2_type not in family.sizes or (twin and not family.sagemaker):
            return None
        return name, family

    def neuron_why_not(self, rig: NeuronRig, model: str, arch: Architecture | None) -> str | None:
        """Why Neuron ``rig`` cannot serve ``model`` (of ``arch``; None where only its name is known), in one line;
        None where it can: its own model, or one AWS's vLLM Neuron image serves (:attr:`neuron_vllm`)."""
        if model == rig.weights.model:
            return None
        if self.neuron_vllm is None:
            return rig.other_models
        if self.neuron_vllm.serves(arch):
            return None
        return f"{rig.other_models}; {self.neuron_vllm.refusal(model, arch)}"

    def bedrock_endpoint(self, bedrock_id: str) -> BedrockEndpoint | None:
        """What Bedrock's OpenAI-compatible endpoint offers for the model it serves as ``bedrock_id``, as the models
        section states it; None for a model the section does not name."""
        return next((c.bedrock_endpoint for c in self.models.values() if c.bedrock_id == bedrock_id), None)

    def get(self, name: str) -> Rig:
        try:
            return self.rigs[name]
        except KeyError:
            raise UnknownRigError(name, list(self.rigs)) from None

    def ec2_rigs(self) -> list[Ec2Rig]:
        return [r for r in self.rigs.values() if r.on_instances]

    def sagemaker_rigs(self) -> list[SageMakerRig]:
        return [r for r in self.rigs.values() if r.on_endpoint]

    def deployable(self) -> list[DeployableRig]:
        return [r for r in self.rigs.values() if r.deployed]

    def rig_regions(self) -> list[str]:
        """Regions where at least one EC2 rig may run, in the contract's order."""
        used = {region for rig in self.ec2_rigs() for region in rig.regions}
        return [region for region in REGIONS if region in used]


# --- loading ----------------------------------------------------------------------


def _duplicate_keys(node: yaml.Node | None, path: str = "catalog") -> list[str]:
    """Duplicate mapping keys anywhere in the document (PyYAML silently keeps the last one)."""
    problems: list[str] = []
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            child = key if path == "catalog" else f"{path}.{key}"
            if key in seen:
                problems.append(f"{child}: duplicate name (line {key_node.start_mark.line + 1}); "
                                "each name may appear once")
            seen.add(key)
            problems.extend(_duplicate_keys(value_node, child))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            problems.extend(_duplicate_keys(item, f"{path}[{index}]"))
    return problems


def parse_catalog(text: str, source: str = "catalog") -> Catalog:
    """The catalog in ``text``; raise CatalogError listing every problem (``source`` names the file)."""
    try:
        duplicates = _duplicate_keys(yaml.compose(text, Loader=yaml.SafeLoader))
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CatalogError([f"not valid YAML: {exc}"], source) from None
    try:
        catalog = Catalog.model_validate(data)
    except ValidationError as exc:
        raise CatalogError(duplicates + [f"{p.path('catalog')}: {p.message}" for p in problems(exc, Catalog)],
                           source) from None
    if duplicates:
        raise CatalogError(duplicates, source)
    return catalog
