"""Per-deploy choices for a rig stack, validated: region, zones, variant, lifetime, image, AMI.

The keys they are given under are declared in :mod:`rigs.context_keys`; ``app.py`` reads them at synth and
``python -m rigs up`` checks its ``-c`` values the same way before anything runs (:func:`check_deploy_context`).
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable, Iterable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, SkipValidation

from rigs.catalog.images import ServerImage, catalog_image, ecr_image, pull_form
from rigs.catalog.model import DeployableRig
from rigs.context_keys import AMI, AZ_COUNT, IMAGE, MAX_HOURS, MAX_LIFETIME_HOURS, MAX_ZONES, REGION, REGION_ZONES, \
    RIG_MAX_HOURS, VARIANT, ZONES, OptionsError, unknown_keys
from rigs.contract import REGIONS

_ZONE = re.compile(r"^(?P<region>[a-z]{2}-[a-z]+-\d)[a-z]$")
_AMI = re.compile(r"^ami-[0-9a-f]{8}([0-9a-f]{9})?$")
_IMAGE = re.compile(r"^[a-z0-9][a-z0-9._/-]*(:[\w][\w.-]{0,127})?(@sha256:[0-9a-f]{64})?$")


class _Typed(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


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
    if rig.on_instances:
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
