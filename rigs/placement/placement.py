"""The recorded placement: per rig, the regions and zones to try in order, and where it was deployed.

``python -m rigs preflight`` writes the candidates; ``python -m rigs up`` records the region a
rig finally came up in; ``app.py`` reads that region so a fresh ``cdk destroy --all`` (or
``cdk deploy``) reaches a rig that ``up`` moved. The file lives in ``.rigs/placement.json``
(gitignored; ``RIGS_STATE_DIR`` moves the whole ``.rigs`` state directory).

Typed with pydantic (:class:`Placement`, unknown keys refused) and never touching AWS: ``app.py`` imports
this module. Its JSON Schema is committed beside it (``python -m rigs.placement.placement --write``; a test
fails when it is stale).
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, ValidationError, field_serializer, \
    model_serializer

from kit import generated, utc
from kit.command import UsageError
from kit.files import write_json
from rigs.context_keys import RECORDED_REGION, RECORDED_ZONES

PROJECT_DIR = Path(__file__).resolve().parents[2]
STATE_DIR_ENV = "RIGS_STATE_DIR"
FORMAT_VERSION = 1
SCHEMA_PATH = Path(__file__).with_name("placement.schema.json")

_lock = threading.Lock()


def state_dir() -> Path:
    """``$RIGS_STATE_DIR`` or ``<project>/.rigs``."""
    configured = os.environ.get(STATE_DIR_ENV)
    return Path(configured).expanduser().resolve() if configured else PROJECT_DIR / ".rigs"


def placement_path() -> Path:
    return state_dir() / "placement.json"


class PlacementError(UsageError, ValueError):
    """The placement file cannot be read (bad input: exit 2)."""


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class Candidate(_Record):
    """One region to try for a rig, with the zones that offer its instance type there."""

    region: str
    zones: tuple[str, ...] = ()


class Deployed(_Record):
    """Where ``up`` last brought a rig up."""

    region: str
    zones: tuple[str, ...] = ()
    stack: str = ""
    at: str = ""
    """When ``up`` recorded it (UTC, ISO to the second)."""


class RigPlacement(_Record):
    """One rig's candidates from preflight, and where it is deployed (kept in the file only when it is)."""

    candidates: tuple[Candidate, ...] = ()
    skipped: dict[str, str] = {}
    """Region -> why the rig cannot run there."""
    checked_at: str | None = None
    instance_type: str | None = None
    """The instance type preflight checked (a model served on a bigger size, ``-c model.<rig>``, is checked again:
    its quotas and zones are another type's); None in a file written before it was recorded."""
    deployed: Deployed | None = None

    @model_serializer(mode="wrap")
    def _deployed_only_when_known(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if data.get("deployed") is None:
            data.pop("deployed", None)
        return data


class Placement(_Record):
    """``.rigs/placement.json``: per rig, the regions to try and where it was deployed."""

    version: Literal[1] = FORMAT_VERSION
    rigs: dict[str, RigPlacement] = {}

    @field_serializer("rigs")
    def _by_name(self, rigs: dict[str, RigPlacement]) -> dict[str, RigPlacement]:
        return dict(sorted(rigs.items()))

    def get(self, rig: str) -> RigPlacement | None:
        return self.rigs.get(rig)

    def deployed_region(self, rig: str) -> str | None:
        entry = self.rigs.get(rig)
        return entry.deployed.region if entry and entry.deployed else None

    def with_rig(self, name: str, entry: RigPlacement) -> Placement:
        return Placement(rigs={**self.rigs, name: entry})


def load(path: Path | None = None) -> Placement:
    """The recorded placement; an empty one when the file does not exist.

    Raises:
        PlacementError: not JSON, or not of the file's shape (every problem named with its path).
    """
    path = path or placement_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Placement()
    try:
        return Placement.model_validate_json(text)
    except ValidationError as exc:
        if any(e["type"] == "json_invalid" for e in exc.errors()):
            reason = exc.errors()[0]["ctx"].get("error", "")
            raise PlacementError(f"{path}: not valid JSON ({reason}); delete it and run `python -m rigs preflight`") \
                from None
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'top level'}: {e['msg']}" for e in exc.errors())
        raise PlacementError(f"{path}: not a placement file ({problems}); delete it and run "
                             "`python -m rigs preflight`") from None


def _write(placement: Placement, path: Path) -> None:
    write_json(path, placement)


def schema_file() -> generated.Generated:
    """``placement.schema.json``, generated from :class:`Placement`."""
    return generated.schema_file(
        SCHEMA_PATH, Placement.model_json_schema, ".rigs/placement.json",
        "Per rig, the regions and zones to try in order (python -m rigs preflight) and where python -m rigs up "
        "brought it up. Generated from rigs/placement/placement.py (python -m rigs.placement.placement --write); "
        "do not edit.")


def record_candidates(rig: str, candidates: Sequence[Candidate], skipped: Mapping[str, str],
                      path: Path | None = None, instance_type: str | None = None) -> Placement:
    """Record preflight's verdict for one rig (checked on ``instance_type``), keeping where it is deployed."""
    path = path or placement_path()
    with _lock:
        current = load(path)
        previous = current.rigs.get(rig)
        updated = current.with_rig(rig, RigPlacement(candidates=tuple(candidates), skipped=dict(skipped),
                                                     checked_at=utc.iso_seconds(), instance_type=instance_type,
                                                     deployed=previous.deployed if previous else None))
        _write(updated, path)
        return updated


def record_deployed(rig: str, region: str, zones: Sequence[str], stack: str, path: Path | None = None) -> Placement:
    """Record the region a rig came up in; app.py synthesizes the rig's stack there from now on."""
    path = path or placement_path()
    with _lock:
        current = load(path)
        previous = current.rigs.get(rig) or RigPlacement()
        updated = current.with_rig(rig, previous.model_copy(update={"deployed": Deployed(
            region=region, zones=tuple(zones), stack=stack, at=utc.iso_seconds())}))
        _write(updated, path)
        return updated


def recorded_context(catalog_regions: Mapping[str, Sequence[str]], placement_: Placement | None = None) -> dict[str, str]:
    """Default CDK context for ``app.py``: where ``up`` last brought each rig up.

    ``catalog_regions`` maps rig name -> the catalog's regions for it; a recorded region the
    catalog no longer lists is left out. Keys are ``recorded_region.<rig>`` and
    ``recorded_zones.<rig>``; ``app.py`` uses them only when ``-c region.<rig>`` is not given
    (and the zones only for that same region), so explicit context always wins.
    """
    current = placement_ if placement_ is not None else load()
    context: dict[str, str] = {}
    for rig, regions in catalog_regions.items():
        entry = current.get(rig)
        if entry is None or entry.deployed is None or entry.deployed.region not in regions:
            continue
        context[RECORDED_REGION.key(rig=rig)] = entry.deployed.region
        if entry.deployed.zones:
            context[RECORDED_ZONES.key(rig=rig)] = ",".join(entry.deployed.zones)
    return context


@dataclass(frozen=True, slots=True)
class RegionChoice:
    """The region app.py synthesizes a rig's stack in, why, and where else it exists.

    Attributes:
        region: The stack's region for this synth.
        why: Said on stderr so a deploy says where it goes and why.
        also_deployed: Other regions where a stack of the same name exists; app.py synthesizes
            it there too, so ``cdk destroy --all`` removes every copy.
    """

    region: str
    why: str
    also_deployed: tuple[str, ...] = ()


def choose_region(rig: str, catalog_regions: Sequence[str], *, explicit: str | None = None,
                  deployed: Sequence[str] = (), looked_up: bool = False,
                  recorded: str | None = None) -> RegionChoice:
    """Where a rig's stack is synthesized. In order of precedence:

    1. ``-c region.<rig>``: the user's explicit choice;
    2. where CloudFormation says the stack is (``deployed``; the recorded region first if it
       is among them, else the catalog's order);
    3. where ``python -m rigs up`` recorded it, unless CloudFormation was asked in every
       region (``looked_up``) and it is not there: then the record is stale and ignored;
    4. the catalog's first region for the rig.
    """
    ordered = sorted(deployed, key=lambda r: (catalog_regions.index(r) if r in catalog_regions else len(catalog_regions), r))
    if explicit:
        return RegionChoice(explicit, f"-c region.{rig}={explicit}", tuple(r for r in ordered if r != explicit))
    if ordered:
        region = recorded if recorded in ordered else ordered[0]
        others = tuple(r for r in ordered if r != region)
        why = "deployed there (CloudFormation)"
        if recorded and recorded != region:
            why += f"; the placement file said {recorded}"
        return RegionChoice(region, why, others)
    if recorded and recorded in catalog_regions and not looked_up:
        return RegionChoice(recorded, "recorded by `python -m rigs up` (.rigs/placement.json)")
    stale = recorded if recorded and looked_up else None
    why = f"the catalog's first region for {rig}"
    if stale:
        why += f" (not deployed anywhere; the placement file's {stale} is out of date)"
    return RegionChoice(catalog_regions[0], why)


def reconcile(deployed: Mapping[str, Sequence[str]], path: Path | None = None) -> list[str]:
    """Bring the recorded placement in line with what CloudFormation said in all four regions.

    Args:
        deployed: Rig name -> the regions its stack exists in (asked in every region).

    Returns:
        One line per change (a record cleared because the rig is gone, or moved to the region
        it really is in); nothing is written when nothing changes.
    """
    path = path or placement_path()
    with _lock:
        current = load(path)
        rigs = dict(current.rigs)
        changes: list[str] = []
        for name, entry in current.rigs.items():
            if entry.deployed is None or name not in deployed:
                continue
            regions = list(deployed[name])
            if not regions:
                rigs[name] = entry.model_copy(update={"deployed": None})
                changes.append(f"{name}: not deployed in any region; cleared the record of {entry.deployed.region}")
            elif entry.deployed.region not in regions:
                rigs[name] = entry.model_copy(update={"deployed": Deployed(
                    region=regions[0], stack=entry.deployed.stack, at=utc.iso_seconds())})
                changes.append(f"{name}: deployed in {regions[0]}, not {entry.deployed.region}; record updated")
        if changes:
            _write(Placement(rigs=rigs), path)
        return changes


def forget_deployed(rigs: Sequence[str], path: Path | None = None) -> list[str]:
    """Clear the deployed record of ``rigs`` (their stacks were deleted); returns those cleared."""
    path = path or placement_path()
    with _lock:
        current = load(path)
        updated = dict(current.rigs)
        cleared = [name for name in rigs if (entry := current.rigs.get(name)) and entry.deployed]
        for name in cleared:
            entry = current.rigs[name]
            updated[name] = entry.model_copy(update={"deployed": None})
        if cleared:
            _write(Placement(rigs=updated), path)
        return cleared


if __name__ == "__main__":
    sys.exit(generated.main([schema_file()], "python -m rigs.placement.placement",
                            "Write or check the JSON Schema of .rigs/placement.json."))
