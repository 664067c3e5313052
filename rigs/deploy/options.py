"""Per-deploy choices for a rig stack, validated: region, zones, variant, lifetime, image, AMI.

``app.py`` reads the raw CLI context values (``-c region.g6=us-east-1`` and friends) and
passes them here; this module never reads context or the environment itself. Every
problem is collected and raised together in one :class:`OptionsError` that names the
context key and the fix; what is chosen is a frozen pydantic model (:class:`RigOptions`,
with its :class:`ServerImage`), unknown fields refused.

Context keys (all optional):

=====================  ============================================================
``region.<rig>``       a region from the rig's catalog list (default: the first)
``zones.<rig>``        comma-separated zones of that region the rig may launch in
``<rig>_variant``      a catalog variant of the rig, e.g. ``inf2_variant=tp2``, ``g6_variant=big``
``max_hours.<rig>``    lifetime in hours for one rig (``max_hours`` for all rigs)
``image.<rig>``        a server image to run instead of the catalog's (EC2 rigs)
``ami.<rig>``          an AMI id to boot instead of the catalog's SSM parameter
``zones.<region>``     the zones the region's base network uses (see
                       :func:`parse_region_zones`; default: chosen at deploy time)
=====================  ============================================================

The model a rig serves and the size it runs on (``model.<rig>``, ``model``, ``model_config.<rig>``,
``instance_type.<rig>``, ``hf_token_parameter``) are ``rigs/deploy/model_options.py``'s.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, SkipValidation

from rigs.catalog.model import DeployableRig, Ec2Rig
from rigs.contract import MANAGED_BY

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
        super().__init__("invalid -c options:\n" + "\n".join(f"  - {p}" for p in problems))


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


def catalog_image(rig: Ec2Rig) -> ServerImage:
    """The catalog's image: the account's own ECR for ``aws-inference/…``, else public."""
    if rig.image.repository.startswith(OWN_IMAGE_PREFIX):
        ref = f":{rig.image.tag}" + (f"@{rig.image.digest}" if rig.image.digest else "")
        return ServerImage(ecr=EcrImage(repository=rig.image.repository, ref=ref))
    return ServerImage(public=rig.image.reference())


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
    if len(named) > 6:
        problems.append(f"-c zones.{region}: {len(named)} zones; the network spans at most 6")
    if az_count_given:
        problems.append(f"-c zones.{region} and -c az_count.{region} both given: the named zones set the count; "
                        "give one of them")
    if problems:
        raise OptionsError(problems)
    return named


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
            hours = float(str(max_hours))
        except ValueError:
            hours = -1.0
        if not 0 < hours <= MAX_LIFETIME_HOURS:
            problems.append(f"-c max_hours={max_hours!r} for {name}: give a number of hours above 0 "
                            f"and at most {MAX_LIFETIME_HOURS}")

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
                found = ecr_image(image_text)
                server_image = ServerImage(ecr=found) if found else ServerImage(public=image_text)
        if ami_id is not None and not _AMI.match(ami_id):
            problems.append(f"-c ami.{name}={ami_id}: give an AMI id such as ami-0123456789abcdef0")
    elif image_text is not None or ami_id is not None or zone_list:
        problems.append(f"{name} is a managed endpoint: -c image./ami./zones.{name} do not apply to it")

    if problems:
        raise OptionsError(problems)
    return RigOptions(rig=rig, region=chosen_region, zones=zone_list, lifetime_hours=hours,
                      image=server_image, ami=ami_id)
