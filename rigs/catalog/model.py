"""The typed rig catalog: `catalog.yaml` loaded and validated once.

Every problem in the file is collected and raised together in one CatalogError, each
with the field path it belongs to, so a broken catalog is fixed in one pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Union

import yaml

from rigs.command import UsageError
from rigs.contract import REGIONS

CATALOG_PATH = Path(__file__).parent.parent / "catalog.yaml"

KINDS = ("ec2", "sagemaker", "bedrock")
RUNTIMES_BY_KIND = {"ec2": ("vllm", "neuronx"), "sagemaker": ("sagemaker-vllm",), "bedrock": ("bedrock",)}
PRICE_SOURCE_BY_KIND = {"ec2": "ec2-on-demand", "sagemaker": "sagemaker-hosting", "bedrock": "bedrock-on-demand"}
ARCHITECTURES = ("x86_64", "arm64")
NEURON_FAMILIES = ("inf", "trn")

_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_STACK_NAME = re.compile(r"^Inference[A-Z][A-Za-z0-9]*$")
_RIG_NAME = re.compile(r"^[a-z][a-z0-9-]*$")


class CatalogError(ValueError):
    """The catalog is invalid. ``problems`` lists every problem, each with its field path."""

    def __init__(self, problems: list[str], source: str) -> None:
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{source}: {len(problems)} problem(s) in the rig catalog:\n{lines}")


class UnknownRigError(UsageError, KeyError):
    """A rig name that is not in the catalog (bad input: exit 2)."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = known
        super().__init__(f"unknown rig {name!r}; known rigs: {', '.join(known)}")

    def __str__(self) -> str:
        return str(self.args[0])


REGION_PLACEHOLDER = "{region}"


@dataclass(frozen=True, slots=True)
class ContainerImage:
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
    digests: Mapping[str, str] = field(default_factory=dict)

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
        """The pull reference in ``region``: ``repo:tag@sha256:…`` where a digest is pinned there.

        A regional image without a pin in ``region`` (or without a region) gives
        ``repo:tag`` only; :meth:`digest_for` says whether there is a pin.
        """
        ref = f"{self.repository_in(region)}:{self.tag}"
        digest = self.digest_for(region)
        return f"{ref}@{digest}" if digest else ref


@dataclass(frozen=True, slots=True)
class RegionSpec:
    """A region's base network: how many zones (subnets) it spans at most.

    Which zones is decided at deploy time from the zones the account can use there
    (``rigs/deploy/zone_choice.py``, run by ``stacks/parts/handlers/usable_zones.py``); the count is what
    synth must know.
    """

    name: str
    availability_zones: int


@dataclass(frozen=True, slots=True)
class Weights:
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

    model: str
    precision: str
    bytes_per_weight: float | None
    memory_gib: float | None
    memory_basis: str | None
    engine: str
    source: str

    def metadata(self, prefix: str) -> dict[str, str]:
        """The fields as metadata strings, each key ``prefix`` + the field's name; absent ones left out."""
        values = {"model": self.model, "precision": self.precision, "bytes_per_weight": self.bytes_per_weight,
                  "memory_gib": self.memory_gib, "memory_basis": self.memory_basis, "engine": self.engine,
                  "source": self.source}
        return {prefix + k: f"{v:g}" if isinstance(v, float) else str(v) for k, v in values.items() if v is not None}


@dataclass(frozen=True, slots=True)
class Variant:
    """A named alternative build of a rig: each field given replaces the rig's (``container_env`` is
    merged into the rig's), the others stay. Selected per deploy with ``-c <rig>_variant=<name>``.

    ``model_source`` names the public page of a variant's checkpoint: a variant that changes the
    model must say where that model is published. The variant named ``big`` is the bigger model
    ``python -m rigs rehearse --big`` moves a rig to.
    """

    name: str
    model_id: str | None = None
    model_source: str | None = None
    image: ContainerImage | None = None
    serve_flags: tuple[str, ...] | None = None
    container_env: Mapping[str, str] | None = None
    neuron_devices: tuple[str, ...] | None = None
    max_prompt_tokens: int | None = None
    max_total_tokens: int | None = None
    ready_timeout_minutes: int | None = None
    root_free_gib: int | None = None
    weights: Weights | None = None

    def overrides(self, rig: "Ec2Rig | SageMakerRig") -> dict[str, Any]:
        """The fields this variant replaces on ``rig``."""
        changed = {key: getattr(self, key) for key in ("model_id", "image", "serve_flags", "neuron_devices",
                                                        "max_prompt_tokens", "max_total_tokens",
                                                        "ready_timeout_minutes", "root_free_gib", "weights")
                   if getattr(self, key) is not None}
        if self.container_env is not None:
            changed["container_env"] = {**getattr(rig, "container_env", {}), **self.container_env}
        return changed


BIG_VARIANT = "big"
"""The variant ``python -m rigs rehearse --big`` moves a rig to (a bigger model on the same instance)."""


def _with_variant(rig: "Ec2Rig | SageMakerRig", variant: str) -> Any:
    if variant not in rig.variants:
        raise ValueError(f"rig {rig.name!r} has no variant {variant!r}; "
                         f"variants: {', '.join(sorted(rig.variants)) or 'none'}")
    return replace(rig, **rig.variants[variant].overrides(rig))


MAX_ROOT_VOLUME_GIB = 16384
"""The largest gp3 volume (16 TiB): the deploy-time root volume handler fails an AMI that would need more."""


@dataclass(frozen=True, slots=True)
class Ec2Rig:
    """A rig that runs its server in a container on one EC2 instance."""

    name: str
    stack_name: str
    label: str
    instance_type: str
    architecture: str
    ami_ssm_parameter: str
    runtime: str
    image: ContainerImage
    model_id: str
    serve_flags: tuple[str, ...]
    port: int
    local_port: int
    tool_calls: bool
    root_volume_gib: int
    """The smallest root volume, GiB."""
    root_free_gib: int
    """GiB the rig needs free on its root volume beyond the AMI's own snapshot (server
    image, model, swapfile): see :meth:`root_volume_gib_for`."""
    swap_gib: int
    regions: tuple[str, ...]
    price_source: str
    max_hours: float
    ready_timeout_minutes: int
    neuron_devices: tuple[str, ...] = ()
    max_prompt_tokens: int | None = None
    max_total_tokens: int | None = None
    variants: Mapping[str, Variant] = field(default_factory=dict)
    no_big_variant: str | None = None
    """Why the rig has no ``big`` variant (no published bigger build), for ``rehearse --big``."""
    hf_token_required: bool = False
    """The model is gated on the Hugging Face Hub: the rig cannot boot without the token secret."""
    weights: Weights | None = None
    """What it serves, as published (:class:`Weights`)."""
    kind: str = "ec2"

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

    def with_variant(self, variant: str) -> "Ec2Rig":
        """This rig with one of its named variants applied."""
        return _with_variant(self, variant)


@dataclass(frozen=True, slots=True)
class SageMakerRig:
    """A SageMaker real-time endpoint running a serving container."""

    name: str
    stack_name: str
    label: str
    instance_type: str
    runtime: str
    image: ContainerImage
    model_id: str
    container_env: Mapping[str, str]
    startup_timeout_seconds: int
    tool_calls: bool
    regions: tuple[str, ...]
    price_source: str
    max_hours: float
    ready_timeout_minutes: int
    variants: Mapping[str, Variant] = field(default_factory=dict)
    no_big_variant: str | None = None
    """Why the rig has no ``big`` variant (no published bigger build), for ``rehearse --big``."""
    weights: Weights | None = None
    """What it serves, as published (:class:`Weights`)."""
    kind: str = "sagemaker"

    def with_variant(self, variant: str) -> "SageMakerRig":
        """This rig with one of its named variants applied."""
        return _with_variant(self, variant)


@dataclass(frozen=True, slots=True)
class BedrockBackend:
    """A Bedrock model: nothing to deploy, called by inference profile id."""

    name: str
    label: str
    runtime: str
    model_id: str
    tool_calls: bool
    regions: tuple[str, ...]
    price_source: str
    weights: Weights | None = None
    """What it serves, as published (:class:`Weights`)."""
    kind: str = "bedrock"


Rig = Union[Ec2Rig, SageMakerRig, BedrockBackend]
DeployableRig = Union[Ec2Rig, SageMakerRig]


def weights_for(rig: Rig, model_id: str) -> Weights | None:
    """What ``rig`` serves when it serves ``model_id``: its own weights, or those of the variant with that
    model; None for any other model (an override the catalog says nothing about)."""
    if model_id == rig.model_id:
        return rig.weights
    for variant in getattr(rig, "variants", {}).values():
        if variant.model_id == model_id:
            return variant.weights
    return None


@dataclass(frozen=True, slots=True)
class Catalog:
    regions: Mapping[str, RegionSpec]
    rigs: Mapping[str, Rig]

    def get(self, name: str) -> Rig:
        try:
            return self.rigs[name]
        except KeyError:
            raise UnknownRigError(name, list(self.rigs)) from None

    def ec2_rigs(self) -> list[Ec2Rig]:
        return [r for r in self.rigs.values() if isinstance(r, Ec2Rig)]

    def sagemaker_rigs(self) -> list[SageMakerRig]:
        return [r for r in self.rigs.values() if isinstance(r, SageMakerRig)]

    def deployable(self) -> list[DeployableRig]:
        return [r for r in self.rigs.values() if isinstance(r, (Ec2Rig, SageMakerRig))]

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


def load_catalog(path: Path = CATALOG_PATH) -> Catalog:
    """Load and validate the catalog; raise CatalogError listing every problem."""
    return parse_catalog(path.read_text(encoding="utf-8"), source=str(path.name))


def parse_catalog(text: str, source: str = "catalog") -> Catalog:
    try:
        duplicates = _duplicate_keys(yaml.compose(text, Loader=yaml.SafeLoader))
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CatalogError([f"not valid YAML: {exc}"], source) from None
    checker = _Checker(duplicates)
    catalog = checker.catalog(data)
    if checker.problems or catalog is None:
        raise CatalogError(checker.problems, source)
    return catalog


_COMMON = {"kind", "label", "runtime", "model_id", "tool_calls", "regions", "price_source", "weights"}
_DEPLOYED = {"stack_name", "instance_type", "image", "image_digest", "max_hours", "ready_timeout_minutes",
             "variants", "no_big_variant"}
_FIELDS = {
    "ec2": _COMMON | _DEPLOYED | {"architecture", "ami_ssm_parameter", "serve_flags", "port", "local_port",
                                  "root_volume_gib", "root_free_gib", "swap_gib", "neuron_devices",
                                  "max_prompt_tokens", "max_total_tokens", "hf_token_required"},
    "sagemaker": _COMMON | _DEPLOYED | {"image_digests", "container_env", "startup_timeout_seconds"},
    "bedrock": set(_COMMON),
}
_OPTIONAL = {"image_digest", "image_digests", "neuron_devices", "max_prompt_tokens", "max_total_tokens", "variants",
             "hf_token_required", "no_big_variant"}
_VARIANT_FIELDS = {
    "vllm": {"model_id", "model_source", "image", "image_digest", "serve_flags", "ready_timeout_minutes",
             "root_free_gib", "weights"},
    "neuronx": {"image", "image_digest", "neuron_devices", "max_prompt_tokens", "max_total_tokens",
                "ready_timeout_minutes"},
    "sagemaker-vllm": {"model_id", "model_source", "container_env", "ready_timeout_minutes", "weights"},
}
"""What a variant may replace, by runtime: a Neuron server's model is built into its image, and the
SageMaker image is AWS's, with optional pins per region, so neither is a variant's to change."""
def _ready_timeout_check(minutes: int) -> str | None:
    return None if 5 <= minutes <= 120 else "must be 5 to 120 minutes"


def _root_free_check(gib: int) -> str | None:
    return None if 1 <= gib <= 1024 else "must be 1 to 1024 GiB"


_MODEL_SOURCE = re.compile(r"^https://[a-z0-9.-]+\.[a-z]{2,}/\S+$")
_WEIGHTS_FIELDS = {"model", "precision", "bytes_per_weight", "memory_gib", "memory_basis", "engine", "source"}


class _Checker:
    def __init__(self, problems: list[str]) -> None:
        self.problems = problems

    def fail(self, path: str, message: str) -> None:
        self.problems.append(f"{path}: {message}")

    # generic readers: each returns None (and records a problem) when the value is unusable

    def mapping(self, value: Any, path: str) -> dict | None:
        if not isinstance(value, dict):
            self.fail(path, f"must be a mapping, got {type(value).__name__}")
            return None
        return value

    def keys(self, data: dict, path: str, allowed: set[str], required: set[str]) -> None:
        for key in sorted(set(data) - allowed, key=str):
            self.fail(f"{path}.{key}", f"unknown key (allowed: {', '.join(sorted(allowed))})")
        for key in sorted(required - set(data)):
            self.fail(f"{path}.{key}", "missing required field")

    def typed(self, data: dict, key: str, path: str, kind: type | tuple[type, ...],
              check: Callable[[Any], str | None] | None = None) -> Any:
        if key not in data:
            return None
        value = data[key]
        if isinstance(value, bool) and kind in (int, float, (int, float)):
            self.fail(f"{path}.{key}", f"must be a number, got {value!r}")
            return None
        if not isinstance(value, kind):
            names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            self.fail(f"{path}.{key}", f"must be {names}, got {value!r}")
            return None
        if check is not None:
            message = check(value)
            if message:
                self.fail(f"{path}.{key}", message)
                return None
        return value

    def string_list(self, data: dict, key: str, path: str) -> tuple[str, ...] | None:
        value = self.typed(data, key, path, list)
        if value is None:
            return None
        bad = [v for v in value if not isinstance(v, str)]
        if bad:
            self.fail(f"{path}.{key}", f"every entry must be a string (quote numbers), got {bad!r}")
            return None
        return tuple(value)

    def image(self, data: dict, path: str, allow_region: bool) -> ContainerImage | None:
        text = self.typed(data, "image", path, str)
        digest = self.typed(data, "image_digest", path, str,
                            lambda d: None if _DIGEST.match(d) else "must look like sha256:<64 hex digits>")
        digests = self.region_digests(data, path)
        if text is None:
            return None
        last = text.rsplit("/", 1)[-1]
        if "@" in text:
            self.fail(f"{path}.image", "put the digest in image_digest, not in image")
            return None
        if ":" not in last:
            self.fail(f"{path}.image", f"{text!r} has no tag; pin a version tag (never :latest)")
            return None
        repository, tag = text.rsplit(":", 1)
        if tag == "latest":
            self.fail(f"{path}.image", f"{text!r} uses :latest; pin a version tag")
            return None
        regional = REGION_PLACEHOLDER in repository
        if regional and not allow_region:
            self.fail(f"{path}.image", "a {region} placeholder is only allowed for SageMaker images")
            return None
        if regional and digest is not None:
            self.fail(f"{path}.image_digest", "a regional registry is pinned per region: use image_digests "
                                              "(region: digest; `python -m rigs pins refresh` writes them)")
            return None
        if not regional and "image_digests" in data:
            self.fail(f"{path}.image_digests", "only an image with a {region} placeholder is pinned per region; "
                                               "use image_digest")
            return None
        if digests is None:
            return None
        regions = data.get("regions") if isinstance(data.get("regions"), list) else []
        stray = sorted(set(digests) - set(regions))
        if regional and stray:
            self.fail(f"{path}.image_digests", f"pins for {', '.join(stray)}, which the rig does not run in "
                                               f"(its regions: {', '.join(map(str, regions))})")
            return None
        return ContainerImage(repository=repository, tag=tag, digest=digest, digests=digests)

    def weights(self, data: dict, path: str) -> Weights | None:
        """``weights``: what the rig serves, as published (:class:`Weights`); None when absent or unusable."""
        if "weights" not in data:
            return None
        where = f"{path}.weights"
        body = self.mapping(data["weights"], where)
        if body is None:
            return None
        before = len(self.problems)
        self.keys(body, where, _WEIGHTS_FIELDS, _WEIGHTS_FIELDS - {"bytes_per_weight", "memory_gib", "memory_basis"})
        text = lambda v: None if v.strip() else "must not be empty"  # noqa: E731
        number = lambda low, high: lambda v: None if low < v <= high else f"must be above {low} and at most {high}"  # noqa: E731
        fields = dict(
            model=self.typed(body, "model", where, str, text),
            precision=self.typed(body, "precision", where, str, text),
            bytes_per_weight=self.typed(body, "bytes_per_weight", where, (int, float), number(0, 4))
            if body.get("bytes_per_weight") is not None else None,
            memory_gib=self.typed(body, "memory_gib", where, (int, float), number(0, 1024))
            if body.get("memory_gib") is not None else None,
            memory_basis=self.typed(body, "memory_basis", where, str, text),
            engine=self.typed(body, "engine", where, str, text),
            source=self.typed(body, "source", where, str, lambda u: None if _MODEL_SOURCE.match(u)
                              else "must be an https:// address of the checkpoint's (or model's) public page"),
        )
        if fields["memory_gib"] is not None and not fields["memory_basis"]:
            self.fail(f"{where}.memory_basis", "say where memory_gib comes from (a published log or report)")
        if len(self.problems) != before:
            return None
        return Weights(**{k: float(v) if isinstance(v, int) and not isinstance(v, bool) else v
                          for k, v in fields.items()})

    def region_digests(self, data: dict, path: str) -> dict[str, str] | None:
        """``image_digests``: region -> digest; an empty mapping when absent, None when unusable."""
        if "image_digests" not in data:
            return {}
        mapping = self.mapping(data["image_digests"], f"{path}.image_digests")
        if mapping is None:
            return None
        pins: dict[str, str] = {}
        for region, digest in mapping.items():
            where = f"{path}.image_digests.{region}"
            if region not in REGIONS:
                self.fail(where, f"outside the four regions {', '.join(REGIONS)}")
            elif not isinstance(digest, str) or not _DIGEST.match(digest):
                self.fail(where, f"must look like sha256:<64 hex digits>, got {digest!r}")
            else:
                pins[region] = digest
        return pins if len(pins) == len(mapping) else None

    def regions_list(self, data: dict, path: str) -> tuple[str, ...] | None:
        regions = self.string_list(data, "regions", path)
        if regions is None:
            return None
        if not regions:
            self.fail(f"{path}.regions", "must name at least one region")
        outside = [r for r in regions if r not in REGIONS]
        if outside:
            self.fail(f"{path}.regions", f"{', '.join(outside)} outside the four regions {', '.join(REGIONS)}")
        if len(set(regions)) != len(regions):
            self.fail(f"{path}.regions", "lists a region twice")
        return regions if not outside else None

    # catalog structure

    def catalog(self, data: Any) -> Catalog | None:
        top = self.mapping(data, "catalog")
        if top is None:
            return None
        self.keys(top, "catalog", {"regions", "rigs"}, {"regions", "rigs"})
        regions = self.region_specs(top.get("regions"))
        rigs_data = self.mapping(top.get("rigs", {}), "rigs") or {}
        rigs: dict[str, Rig] = {}
        for name, body in rigs_data.items():
            path = f"rigs.{name}"
            if not isinstance(name, str) or not _RIG_NAME.match(name):
                self.fail(path, "rig names are lower-case letters, digits and dashes")
                continue
            rig = self.rig(name, body, path)
            if rig is not None:
                rigs[name] = rig
        self.cross_checks(rigs)
        return Catalog(regions=regions, rigs=rigs)

    def region_specs(self, data: Any) -> dict[str, RegionSpec]:
        specs: dict[str, RegionSpec] = {}
        mapping = self.mapping(data, "regions") if data is not None else None
        for name, body in (mapping or {}).items():
            path = f"regions.{name}"
            if name not in REGIONS:
                self.fail(path, f"outside the four regions {', '.join(REGIONS)}")
                continue
            body = self.mapping(body, path)
            if body is None:
                continue
            self.keys(body, path, {"availability_zones"}, {"availability_zones"})
            count = self.typed(body, "availability_zones", path, int,
                               lambda n: None if 1 <= n <= 6 else "must be between 1 and 6")
            if count is not None:
                specs[name] = RegionSpec(name=name, availability_zones=count)
        for name in REGIONS:
            if mapping is not None and name not in mapping:
                self.fail(f"regions.{name}", "missing; every one of the four regions needs an entry")
        return specs

    def rig(self, name: str, body: Any, path: str) -> Rig | None:
        data = self.mapping(body, path)
        if data is None:
            return None
        kind = data.get("kind")
        if kind not in KINDS:
            self.fail(f"{path}.kind", f"must be one of {', '.join(KINDS)}, got {kind!r}")
            return None
        allowed = _FIELDS[kind]
        self.keys(data, path, allowed, allowed - _OPTIONAL)
        before = len(self.problems)
        runtime = self.typed(data, "runtime", path, str,
                             lambda r: None if r in RUNTIMES_BY_KIND[kind] else
                             f"a {kind} rig runs one of {', '.join(RUNTIMES_BY_KIND[kind])}, got {r!r}")
        common = dict(
            name=name,
            label=self.typed(data, "label", path, str),
            runtime=runtime,
            model_id=self.typed(data, "model_id", path, str, lambda m: None if m.strip() else "must not be empty"),
            tool_calls=self.typed(data, "tool_calls", path, bool),
            regions=self.regions_list(data, path),
            price_source=self.typed(data, "price_source", path, str,
                                    lambda p: None if p == PRICE_SOURCE_BY_KIND[kind] else
                                    f"a {kind} rig is priced from {PRICE_SOURCE_BY_KIND[kind]}, got {p!r}"),
            weights=self.weights(data, path),
        )
        if kind == "bedrock":
            return BedrockBackend(**common) if len(self.problems) == before else None
        deployed = dict(
            stack_name=self.typed(data, "stack_name", path, str,
                                  lambda s: None if _STACK_NAME.match(s) else
                                  "must look like Inference<Name> (letters and digits)"),
            instance_type=self.typed(data, "instance_type", path, str),
            image=self.image(data, path, allow_region=(kind == "sagemaker")),
            max_hours=self.typed(data, "max_hours", path, (int, float),
                                 lambda h: None if 0 < h <= 168 else "must be between 0 and 168 hours"),
            ready_timeout_minutes=self.typed(data, "ready_timeout_minutes", path, int, _ready_timeout_check),
        )
        deployed["variants"] = self.variants(data, path, common["runtime"])
        deployed["no_big_variant"] = self.big_variant(data, path, deployed["variants"])
        instance_type = deployed["instance_type"]
        if kind == "sagemaker":
            if instance_type is not None and not instance_type.startswith("ml."):
                self.fail(f"{path}.instance_type", f"a SageMaker instance type starts with ml., got {instance_type!r}")
            env = self.mapping(data.get("container_env", {}), f"{path}.container_env") or {}
            for key, value in env.items():
                if not isinstance(value, str):
                    self.fail(f"{path}.container_env.{key}", f"must be a string (quote it), got {value!r}")
            rig = dict(
                container_env=dict(env),
                startup_timeout_seconds=self.typed(data, "startup_timeout_seconds", path, int,
                                                   lambda s: None if 60 <= s <= 3600 else "must be 60 to 3600"),
            )
            if len(self.problems) != before:
                return None
            return SageMakerRig(**common, **deployed, **rig)
        return self.ec2_rig(data, path, common, deployed, before)

    def ec2_rig(self, data: dict, path: str, common: dict, deployed: dict, before: int) -> Ec2Rig | None:
        instance_type = deployed["instance_type"]
        architecture = self.typed(data, "architecture", path, str,
                                  lambda a: None if a in ARCHITECTURES else f"must be one of {', '.join(ARCHITECTURES)}")
        if instance_type is not None:
            family = instance_type.split(".", 1)[0]
            if instance_type.startswith("ml.") or "." not in instance_type:
                self.fail(f"{path}.instance_type", f"not an EC2 instance type: {instance_type!r}")
            else:
                neuron = family.startswith(NEURON_FAMILIES)
                if common["runtime"] == "neuronx" and not neuron:
                    self.fail(f"{path}.runtime", f"neuronx needs a Neuron instance (inf*/trn*), not {instance_type}")
                if common["runtime"] == "vllm" and neuron:
                    self.fail(f"{path}.runtime", f"vllm is for GPU instances, {instance_type} is a Neuron instance")
                graviton = re.match(r"^[a-z]+\d+[a-z]*g[a-z]*$", family) is not None and family[-1] == "g"
                expected = "arm64" if graviton else "x86_64"
                if architecture is not None and architecture != expected:
                    self.fail(f"{path}.architecture", f"{instance_type} is {expected}, not {architecture}")
        port_check = lambda p: None if 1 <= p <= 65535 else "must be a TCP port (1-65535)"  # noqa: E731
        local_check = lambda p: None if 1024 <= p <= 65535 else "must be an unprivileged port (1024-65535)"  # noqa: E731
        size_check = lambda n: None if 8 <= n <= 16384 else "must be 8 to 16384 GiB"  # noqa: E731
        rig = dict(
            architecture=architecture,
            ami_ssm_parameter=self.typed(data, "ami_ssm_parameter", path, str,
                                         lambda p: None if p.startswith("/") else "must be an SSM parameter path"),
            serve_flags=self.string_list(data, "serve_flags", path),
            port=self.typed(data, "port", path, int, port_check),
            local_port=self.typed(data, "local_port", path, int, local_check),
            root_volume_gib=self.typed(data, "root_volume_gib", path, int, size_check),
            root_free_gib=self.typed(data, "root_free_gib", path, int, _root_free_check),
            swap_gib=self.typed(data, "swap_gib", path, int, lambda n: None if 0 <= n <= 256 else "must be 0 to 256"),
            neuron_devices=self.string_list(data, "neuron_devices", path) or (),
            max_prompt_tokens=self.typed(data, "max_prompt_tokens", path, int),
            max_total_tokens=self.typed(data, "max_total_tokens", path, int),
            hf_token_required=self.typed(data, "hf_token_required", path, bool) or False,
        )
        if common["runtime"] == "neuronx" and not rig["neuron_devices"]:
            self.fail(f"{path}.neuron_devices", "a neuronx rig must name the Neuron devices it passes through")
        if common["runtime"] != "neuronx" and rig["neuron_devices"]:
            self.fail(f"{path}.neuron_devices", "only neuronx rigs take Neuron devices")
        if len(self.problems) != before:
            return None
        return Ec2Rig(**common, **deployed, **rig)

    def variants(self, data: dict, path: str, runtime: str | None) -> dict[str, Variant]:
        """``variants``: name -> the fields it replaces, each checked as the rig's own field is."""
        result: dict[str, Variant] = {}
        mapping = self.mapping(data["variants"], f"{path}.variants") if "variants" in data else None
        allowed = _VARIANT_FIELDS.get(runtime or "", set())
        for name, body in (mapping or {}).items():
            vpath = f"{path}.variants.{name}"
            if not isinstance(name, str) or not _RIG_NAME.match(name):
                self.fail(vpath, "variant names are lower-case letters, digits and dashes")
                continue
            body = self.mapping(body, vpath)
            if body is None:
                continue
            before = len(self.problems)
            self.keys(body, vpath, allowed, set())
            if not set(body) & (allowed - {"model_source", "image_digest", "weights"}):
                self.fail(vpath, f"a variant must change something (it may set: {', '.join(sorted(allowed))})")
            if "model_id" in body and "model_source" not in body:
                self.fail(f"{vpath}.model_source", "a variant that changes the model must name the public page "
                                                   "of its checkpoint (https://...)")
            if "model_source" in body and "model_id" not in body:
                self.fail(f"{vpath}.model_source", "only a variant that sets model_id names a model source")
            if "model_id" in body and "weights" not in body:
                self.fail(f"{vpath}.weights", "a variant that changes the model must say what it serves (weights: "
                                              "model, precision, bytes_per_weight, engine, source)")
            env = None
            if "container_env" in body:
                env = self.mapping(body["container_env"], f"{vpath}.container_env")
                for key, value in (env or {}).items():
                    if not isinstance(value, str):
                        self.fail(f"{vpath}.container_env.{key}", f"must be a string (quote it), got {value!r}")
            variant = Variant(
                name=name,
                model_id=self.typed(body, "model_id", vpath, str, lambda m: None if m.strip() else "must not be empty"),
                model_source=self.typed(body, "model_source", vpath, str, lambda u: None if _MODEL_SOURCE.match(u)
                                        else "must be an https:// address of the checkpoint's public page"),
                image=self.image(body, vpath, allow_region=False) if "image" in body else None,
                serve_flags=self.string_list(body, "serve_flags", vpath),
                container_env=dict(env) if env is not None else None,
                neuron_devices=self.string_list(body, "neuron_devices", vpath),
                max_prompt_tokens=self.typed(body, "max_prompt_tokens", vpath, int),
                max_total_tokens=self.typed(body, "max_total_tokens", vpath, int),
                ready_timeout_minutes=self.typed(body, "ready_timeout_minutes", vpath, int, _ready_timeout_check),
                root_free_gib=self.typed(body, "root_free_gib", vpath, int, _root_free_check),
                weights=self.weights(body, vpath),
            )
            if "image_digest" in body and "image" not in body:
                self.fail(f"{vpath}.image_digest", "pins the variant's image: give image too")
            if len(self.problems) == before:
                result[name] = variant
        return result

    def big_variant(self, data: dict, path: str, variants: dict[str, Variant]) -> str | None:
        """``no_big_variant``: why the rig has no ``big`` variant; never beside one."""
        reason = self.typed(data, "no_big_variant", path, str,
                            lambda r: None if r.strip() else "must say why (a sentence), or be left out")
        if reason is not None and BIG_VARIANT in variants:
            self.fail(f"{path}.no_big_variant", f"the rig has a {BIG_VARIANT!r} variant: leave no_big_variant out")
            return None
        return reason

    def cross_checks(self, rigs: dict[str, Rig]) -> None:
        stacks: dict[str, str] = {}
        local_ports: dict[int, str] = {}
        for rig in rigs.values():
            stack = getattr(rig, "stack_name", None)
            if stack:
                if stack in stacks:
                    self.fail(f"rigs.{rig.name}.stack_name", f"{stack} is also the stack of rig {stacks[stack]!r}")
                stacks[stack] = rig.name
            if isinstance(rig, Ec2Rig):
                if rig.local_port in local_ports:
                    self.fail(f"rigs.{rig.name}.local_port",
                              f"port clash: {rig.local_port} is also the local port of rig {local_ports[rig.local_port]!r}")
                local_ports[rig.local_port] = rig.name
