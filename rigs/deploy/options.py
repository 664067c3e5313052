"""Per-deploy choices for a rig stack, validated: region, zones, variant, lifetime, image, AMI; and the context
keys this app knows.

Every context key the app reads is declared once, in :data:`CONTEXT_KEYS` (a :class:`ContextKey` each: its
pattern, ``{rig}`` standing for a deployable rig and ``{region}`` for one of the four regions, and what it does);
``app.py`` reads the values by these declarations, and a key the app does not know is refused in one line that
names the known ones (:func:`unknown_keys`), while the CDK's own keys pass (:func:`cdk_own`). ``python -m rigs up``
checks its ``-c`` values the same way before anything runs (:func:`check_deploy_context`).
The model a rig serves, the size it runs on and the context it holds (``model.<rig>``, ``model``,
``model_config.<rig>``, ``instance_type.<rig>``, ``hf_token_parameter``, ``max_model_len.<rig>``, ``max_model_len``)
are declared here too and read by ``rigs/deploy/model_options.py``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, SkipValidation

from rigs.catalog.model import DeployableRig, Ec2Rig
from rigs.contract import MANAGED_BY, REGIONS

OWN_IMAGE_PREFIX = f"{MANAGED_BY}/"
"""Catalog images under this namespace are built by this app into the account's own ECR
(the g5g image, by the InferenceG5gImage stack); they have no public registry."""

MAX_LIFETIME_HOURS = 168
_ZONE = re.compile(r"^(?P<region>[a-z]{2}-[a-z]+-\d)[a-z]$")
_AMI = re.compile(r"^ami-[0-9a-f]{8}([0-9a-f]{9})?$")
_ECR = re.compile(r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com/"
                  r"(?P<repository>[a-z0-9][a-z0-9._/-]*?)(?P<ref>(:[\w][\w.-]{0,127})?(@sha256:[0-9a-f]{64})?)$")
_IMAGE = re.compile(r"^[a-z0-9][a-z0-9._/-]*(:[\w][\w.-]{0,127})?(@sha256:[0-9a-f]{64})?$")


class OptionsError(ValueError):
    """Context values that cannot be used. ``problems`` lists each with its context key."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


MAX_ZONES = 6
"""The most zones a base network spans (``-c az_count.<region>``, ``-c zones.<region>``)."""


@dataclass(frozen=True, slots=True)
class ContextKey:
    """One context key of this app: its pattern, what it does, and whether the project's own commands set it."""

    pattern: str
    """The key; ``{rig}`` stands for a deployable rig of the catalog, ``{region}`` for one of the four regions,
    ``{stack}`` for a stack of the app."""
    help: str
    internal: bool = False
    """Set by ``python -m rigs up``, ``./scripts/cdk`` or ``app.py`` itself, not given by hand."""

    def key(self, **names: str) -> str:
        """The key for these names: ``REGION.key(rig="g6")`` is ``region.g6``."""
        return self.pattern.format(**names)

    def matches(self, key: str, names: Mapping[str, Sequence[str]]) -> bool:
        """Whether ``key`` is this key for one of ``names`` (placeholder -> the names it stands for; ``{stack}``
        stands for any stack name)."""
        regex = []
        for i, part in enumerate(re.split(r"\{(\w+)\}", self.pattern)):
            if i % 2 == 0:
                regex.append(re.escape(part))
            elif part == "stack":
                regex.append("[A-Za-z][A-Za-z0-9-]*")
            else:
                regex.append(f"(?:{'|'.join(map(re.escape, names[part]))})")
        return re.fullmatch("".join(regex), key) is not None


REGION = ContextKey("region.{rig}", "a region from the rig's catalog list (default: the first)")
ZONES = ContextKey("zones.{rig}", "comma-separated zones of that region the rig may launch in")
VARIANT = ContextKey("{rig}_variant", "a catalog variant of the rig, e.g. inf2_variant=tp2, g6_variant=big")
MAX_HOURS = ContextKey("max_hours", f"lifetime in hours of every rig, above 0 and at most {MAX_LIFETIME_HOURS}")
RIG_MAX_HOURS = ContextKey("max_hours.{rig}", "lifetime in hours of one rig (beats max_hours)")
IMAGE = ContextKey("image.{rig}", "a pinned server image to run instead of the catalog's (EC2 rigs)")
AMI = ContextKey("ami.{rig}", "an AMI id to boot instead of the catalog's SSM parameter (EC2 rigs)")
REGION_ZONES = ContextKey("zones.{region}", "the zones the region's base network uses, named (default: chosen at "
                          "deploy time)")
AZ_COUNT = ContextKey("az_count.{region}", f"how many zones the region's base network spans, 1 to {MAX_ZONES}")
RECORDED_REGION = ContextKey("recorded_region.{rig}", "where python -m rigs up last brought the rig up (the "
                             "placement file)", internal=True)
RECORDED_ZONES = ContextKey("recorded_zones.{rig}", "the zones it came up in there", internal=True)
DEPLOYED_REGIONS = ContextKey("deployed_regions.{stack}", "the regions CloudFormation shows the stack in",
                              internal=True)
LOOKED_UP = ContextKey("deployed_regions_complete", "every region answered where the stacks are", internal=True)
DESTROYING = ContextKey("aws-inference:destroying", "./scripts/cdk destroy: a stack found nowhere is left out",
                        internal=True)
RIG_MODEL = ContextKey("model.{rig}", "a Hugging Face model id for g6, g5g or sagemaker (the catalog's models section, "
                       "or with model_config.<rig>)")
MODEL = ContextKey("model", "a Hugging Face model id for every rig that serves any model")
MODEL_CONFIG = ContextKey("model_config.{rig}", "a local config.json of a model the catalog does not list (read at "
                          "synth, never fetched)")
INSTANCE_TYPE = ContextKey("instance_type.{rig}", "the instance type to run on instead of the one sized to fit")
HF_TOKEN_PARAMETER = ContextKey("hf_token_parameter", "an SSM SecureString parameter with the Hugging Face token of a "
                                "gated model (EC2 rigs)")
RIG_MAX_MODEL_LEN = ContextKey("max_model_len.{rig}", "the tokens one sequence may hold (prompt and output): the rig "
                               "serves this or the model's longest context, whichever is shorter, sized to fit")
MAX_MODEL_LEN = ContextKey("max_model_len", "the same for every rig that serves any model (beaten by "
                           "max_model_len.<rig>)")
MODEL_KEYS = (RIG_MODEL, MODEL, MODEL_CONFIG, INSTANCE_TYPE, HF_TOKEN_PARAMETER, RIG_MAX_MODEL_LEN, MAX_MODEL_LEN)
"""The model a rig serves and the size it runs on: read by ``rigs/deploy/model_options.py``."""

CONTEXT_KEYS: tuple[ContextKey, ...] = (REGION, ZONES, VARIANT, MAX_HOURS, RIG_MAX_HOURS, IMAGE, AMI, REGION_ZONES,
                                        AZ_COUNT, *MODEL_KEYS, RECORDED_REGION, RECORDED_ZONES, DEPLOYED_REGIONS,
                                        LOOKED_UP, DESTROYING)
"""Every context key the app reads (docs/rigs.md lists those given by hand)."""

CDK_KEY_PREFIXES = ("@aws-cdk", "aws:cdk:", "aws-cdk:", "cdk-", "cdk:")
"""The CDK's own context keys: its feature flags (``@aws-cdk/...``), the CLI's settings (``aws:cdk:...``)."""
CDK_KEYS = frozenset({"acknowledged-issue-numbers", "cli-telemetry"})


def cdk_own(key: str) -> bool:
    """Whether ``key`` is the CDK's own: a feature flag, a CLI setting, or a context lookup's cached answer
    (``availability-zones:account=...:region=...`` in ``cdk.context.json``)."""
    return key.startswith(CDK_KEY_PREFIXES) or key in CDK_KEYS or ":account=" in key


def unknown_keys(keys: Iterable[str], rigs: Sequence[str], also: Iterable[str] = ()) -> OptionsError | None:
    """The error naming every key of ``keys`` this app does not know (None: all known). ``rigs``: the names
    ``{rig}`` stands for; ``also``: keys that pass too (those ``cdk.json`` sets); the CDK's own keys pass."""
    names = {"rig": tuple(rigs), "region": REGIONS}
    passed = set(also)
    unknown = sorted(k for k in keys if k not in passed and not cdk_own(k)
                     and not any(c.matches(k, names) for c in CONTEXT_KEYS))
    if not unknown:
        return None
    known = ", ".join(c.pattern.replace("{", "<").replace("}", ">") for c in CONTEXT_KEYS if not c.internal)
    return OptionsError([f"-c {', '.join(unknown)}: not a context key of this app; its keys are {known} (<rig>: "
                         f"{', '.join(rigs)}; <region>: {', '.join(REGIONS)}), and the CDK's own (@aws-cdk/..., "
                         "aws:cdk:..., cdk.json's) pass"])


class _Typed(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class EcrImage(_Typed):
    """An image in an ECR repository; ``account`` None means the deploying account."""

    repository: str
    ref: str
    """``:tag``, ``@sha256:…`` or both."""
    account: str | None = None
    region: str | None = None


class ServerImage(_Typed):
    """Where an EC2 rig pulls its server image: a public reference or an ECR image."""

    public: str | None = None
    ecr: EcrImage | None = None


class RigOptions(_Typed):
    """The validated choices for one rig stack (:func:`parse_rig_options` makes them, every problem at once)."""

    rig: SkipValidation[DeployableRig]
    """The catalog entry with any variant applied (the catalog validated it)."""
    region: str
    zones: tuple[str, ...] = ()
    lifetime_hours: float = 0.0
    image: ServerImage | None = None
    """EC2 rigs only."""
    ami: str | None = None
    hf_token_parameter: str | None = None
    """EC2 rigs: the SSM SecureString parameter the boot script reads the Hugging Face token from."""

    @property
    def lifetime_minutes(self) -> int:
        return max(1, round(self.lifetime_hours * 60))


def ecr_image(reference: str) -> EcrImage | None:
    """Split an ECR pull reference into account, region, repository and tag/digest."""
    match = _ECR.match(reference)
    if not match or not match.group("ref"):
        return None
    return EcrImage(repository=match.group("repository"), ref=match.group("ref"),
                    account=match.group("account"), region=match.group("region"))


def pull_form(reference: str) -> str:
    """``repo:tag@sha256:…`` as ``repo@sha256:…`` (Docker pulls such a reference by the digest alone, and
    docker/cli#7181 refuses the pair); any other reference unchanged."""
    name, at, digest = reference.partition("@")
    if not at:
        return reference
    path, slash, last = name.rpartition("/")
    return f"{path}{slash}{last.partition(':')[0]}@{digest}"


def catalog_image(rig: Ec2Rig) -> ServerImage:
    """The catalog's image, as pulled (:meth:`rigs.catalog.served.ContainerImage.pull_reference`): the account's own
    ECR for ``aws-inference/…``, else public."""
    if rig.image.repository.startswith(OWN_IMAGE_PREFIX):
        ref = f"@{rig.image.digest}" if rig.image.digest else f":{rig.image.tag}"
        return ServerImage(ecr=EcrImage(repository=rig.image.repository, ref=ref))
    return ServerImage(public=rig.image.pull_reference())


def _zone_region(zone: str) -> str | None:
    """The region a zone name belongs to (``us-east-1a`` -> ``us-east-1``); None if it is not a zone name."""
    match = _ZONE.match(zone)
    return match.group("region") if match else None


def _zone_names(zones: Any) -> tuple[str, ...]:
    """``us-east-1a,us-east-1c`` (or a list) as sorted, distinct zone names; () when none is given."""
    if zones is None:
        return ()
    raw = zones if isinstance(zones, (list, tuple)) else str(zones).split(",")
    return tuple(sorted({str(z).strip() for z in raw if str(z).strip()}))


def parse_region_zones(region: str, zones: Any, *, az_count_given: bool = False) -> tuple[str, ...]:
    """``-c zones.<region>=us-east-1a,us-east-1c``: the base network's zones, named.

    Empty when not given (the zones are then chosen at deploy time). Raises OptionsError
    for a zone of another region, more than six zones, or ``-c az_count.<region>`` given too.
    """
    if zones is None or not str(zones).strip():
        return ()
    named = _zone_names(zones)
    problems = [f"-c zones.{region}: {zone!r} is not a zone of {region} (write e.g. {region}a,{region}c)"
                for zone in named if _zone_region(zone) != region]
    if len(named) > MAX_ZONES:
        problems.append(f"-c zones.{region}: {len(named)} zones; the network spans at most {MAX_ZONES}")
    if az_count_given:
        problems.append(f"-c zones.{region} and -c az_count.{region} both given: the named zones set the count; "
                        "give one of them")
    if problems:
        raise OptionsError(problems)
    return named


def parse_az_count(region: str, value: Any) -> int | None:
    """``-c az_count.<region>=N``: the base network's zone count; None when not given. Raises OptionsError unless
    it is a whole number from 1 to :data:`MAX_ZONES`."""
    if value is None:
        return None
    try:
        count = int(value)
    except (TypeError, ValueError):
        count = 0
    if not 1 <= count <= MAX_ZONES:
        raise OptionsError([f"-c az_count.{region}={value!r}: give a whole number of zones from 1 to {MAX_ZONES}"])
    return count


def lifetime_hours(value: Any) -> float:
    """A rig's lifetime in hours (``-c max_hours``, ``--max-hours``); ValueError, saying what to give, unless it is
    above 0 and at most :data:`MAX_LIFETIME_HOURS`."""
    try:
        hours = float(str(value))
    except ValueError:
        hours = math.nan
    if not 0 < hours <= MAX_LIFETIME_HOURS:
        raise ValueError(f"give a number of hours above 0 and at most {MAX_LIFETIME_HOURS}")
    return hours


def rig_values(rig: str, get: Callable[[str], Any]) -> dict[str, Any]:
    """One rig's variant, lifetime, image and AMI as the context gives them (``get``: a key's value, None when
    absent): :func:`parse_rig_options`'s keyword arguments but the region and zones."""
    own_hours = get(RIG_MAX_HOURS.key(rig=rig))
    return {"variant": get(VARIANT.key(rig=rig)),
            "max_hours": own_hours if own_hours is not None else get(MAX_HOURS.key()),
            "image": get(IMAGE.key(rig=rig)), "ami": get(AMI.key(rig=rig))}


def check_deploy_context(rigs: Sequence[DeployableRig], context: Mapping[str, Any], names: Sequence[str],
                         also: Iterable[str] = ()) -> None:
    """``python -m rigs up``'s ``-c`` values, checked before anything runs as the app checks them at synth: every
    key known (``names``: the deployable rigs', ``also``: ``cdk.json``'s), each rig's values (its zones only with
    its region: ``up`` otherwise chooses both per attempt) and each region's base network. Raises OptionsError
    listing every problem."""
    unknown = unknown_keys(context, names, also)
    problems = list(unknown.problems) if unknown else []
    for rig in rigs:
        region = context.get(REGION.key(rig=rig.name))
        try:
            parse_rig_options(rig, region=region, zones=context.get(ZONES.key(rig=rig.name)) if region else None,
                              **rig_values(rig.name, context.get))
        except OptionsError as exc:
            problems += exc.problems
    for region in REGIONS:
        try:
            count = parse_az_count(region, context.get(AZ_COUNT.key(region=region)))
            parse_region_zones(region, context.get(REGION_ZONES.key(region=region)), az_count_given=count is not None)
        except OptionsError as exc:
            problems += exc.problems
    if problems:
        raise OptionsError(problems)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def parse_rig_options(rig: DeployableRig, *, region: Any = None, zones: Any = None, variant: Any = None,
                      max_hours: Any = None, image: Any = None, ami: Any = None) -> RigOptions:
    """Validate raw context values for ``rig``; raise OptionsError listing every problem."""
    problems: list[str] = []
    name = rig.name

    chosen_region = _text(region) or rig.regions[0]
    if chosen_region not in rig.regions:
        problems.append(f"-c region.{name}={chosen_region}: {name} runs in {', '.join(rig.regions)} "
                        "(the catalog's regions for it)")

    zone_list = _zone_names(zones)
    problems += [f"-c zones.{name}: {zone!r} is not a zone of {chosen_region} (write e.g. {chosen_region}a,"
                 f"{chosen_region}c)" for zone in zone_list if _zone_region(zone) != chosen_region]

    chosen_variant = _text(variant)
    if chosen_variant is not None:
        if chosen_variant not in rig.variants:
            known = ", ".join(sorted(rig.variants)) or "none"
            problems.append(f"-c {name}_variant={chosen_variant}: {name} has no such variant (variants: {known})")
        else:
            rig = rig.with_variant(chosen_variant)

    hours: float = rig.max_hours
    if _text(max_hours) is not None:
        try:
            hours = lifetime_hours(max_hours)
        except ValueError as exc:
            problems.append(f"-c max_hours={max_hours!r} for {name}: {exc}")

    server_image: ServerImage | None = None
    ami_id = _text(ami)
    image_text = _text(image)
    if isinstance(rig, Ec2Rig):
        server_image = catalog_image(rig)
        if image_text is not None:
            if image_text.endswith(":latest") or not _IMAGE.match(image_text) or (
                    ":" not in image_text.rsplit("/", 1)[-1] and "@" not in image_text):
                problems.append(f"-c image.{name}={image_text}: give a pinned image reference "
                                "(registry/repository:tag or @sha256:digest, never :latest)")
            else:
                found = ecr_image(pull_form(image_text))
                server_image = ServerImage(ecr=found) if found else ServerImage(public=pull_form(image_text))
        if ami_id is not None and not _AMI.match(ami_id):
            problems.append(f"-c ami.{name}={ami_id}: give an AMI id such as ami-0123456789abcdef0")
    elif image_text is not None or ami_id is not None or zone_list:
        problems.append(f"{name} is a managed endpoint: -c image./ami./zones.{name} do not apply to it")

    if problems:
        raise OptionsError(problems)
    return RigOptions(rig=rig, region=chosen_region, zones=zone_list, lifetime_hours=hours,
                      image=server_image, ami=ami_id)
