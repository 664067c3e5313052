"""Custom resource: the zones the base network's subnets go in, chosen at deploy time.

Not Fn::GetAZs (it lists only zones with a default subnet when an account has any): the zones
available to the account that offer the most rig types, as the doctor chooses them too
(rigs/placement/zones.py, inlined here at synth), or the named Zones once checked available.
Properties: Slots, InstanceTypes, Zones (may be empty). Returns Zones: one per slot, comma-separated.
"""
import boto3
from rigs.placement.zones import choose_zones, fill, offer_counts


def compute(properties, ec2=None):
    ec2 = ec2 or boto3.client("ec2")
    region = ec2.meta.region_name
    slots = int(properties["Slots"])
    types = list(properties.get("InstanceTypes") or [])
    named = list(properties.get("Zones") or [])
    pages = ec2.get_paginator("describe_instance_type_offerings").paginate(
        LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": types}])
    offers = offer_counts(ec2.describe_availability_zones()["AvailabilityZones"],
                          [offer for page in pages for offer in page["InstanceTypeOfferings"]])
    usable = ", ".join(sorted(offers)) or "none"
    bad = [zone for zone in named if zone not in offers]
    if bad:
        raise RuntimeError(f"-c zones.{region}: {', '.join(bad)} not available to this account; "
                           f"available zones: {usable}")
    chosen = fill(named, slots) if named else choose_zones(offers, slots)
    if not chosen:
        raise RuntimeError(f"no zone of {region} available to this account offers any of {', '.join(types)} "
                           f"(available zones: {usable}); rigs cannot run in {region}")
    return {"Zones": ",".join(chosen)}
