"""The zones of each region: the available zones that offer the most of the region's rig types, as the base
network chooses them at deploy time."""

from __future__ import annotations

from rigs import aws
from rigs.account.checks.base import FAIL, OK, WARN, Check, Finding, Outcome, Scope, each_region, on_instances, short, unknown
from rigs.placement.zones import choose_zones, offer_counts, usable_zones


def zones(scope: Scope, region: str) -> Outcome:
    """The region's zones; gives the zones the base network gets, as its deploy-time custom resource
    chooses them (:mod:`rigs.placement.zones`, which that handler inlines)."""
    blocks = scope.names_in(region, on_instances)
    if not blocks:
        return Outcome([], ())
    ec2 = scope.clients("ec2", region)
    types = sorted({rig.instance_type for rig in scope.catalog.ec2_rigs() if region in rig.regions})
    try:
        zones = aws.call(ec2.describe_availability_zones, attempts=3)["AvailabilityZones"]
        offers = aws.paginate(ec2, "describe_instance_type_offerings", "InstanceTypeOfferings",
                              LocationType="availability-zone",
                              Filters=[{"Name": "instance-type", "Values": types}])
    except Exception as exc:  # noqa: BLE001
        return Outcome([unknown("Zones", "", region, exc, "ec2")], ())
    available = usable_zones(zones)
    impaired = sorted(z["ZoneName"] for z in zones if z.get("State") != "available")
    spec = scope.catalog.regions.get(region)
    network = choose_zones(offer_counts(zones, offers), spec.availability_zones if spec else len(available))
    if not network:
        return Outcome([Finding("Zones", "", region, FAIL,
                        f"no available zone offers any of {', '.join(types)} (available: "
                        f"{short(available, region) or 'none'})",
                        "none here: `up` tries the rig's other regions", blocks)], network)
    detail = f"base network in {short(sorted(set(network)), region)}"
    if impaired:
        detail += f"; not available: {short(impaired, region)}"
    return Outcome([Finding("Zones", "", region, OK if not impaired else WARN, detail)], network)


CHECK = Check("Zones", each_region, zones)
