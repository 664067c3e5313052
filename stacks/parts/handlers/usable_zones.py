"""Custom resource: the zones the base network's subnets go in, chosen at deploy time.

Fn::GetAZs lists only zones with a default subnet when the account has any, and some
accounts cannot use every listed zone, so zones are not taken by index. This reads the
zones available to the account (DescribeAvailabilityZones: standard zones, state
available, opted in) and how many of the region's rig types each offers
(DescribeInstanceTypeOfferings), and takes the Slots best (a zone offering none is never
used), or exactly the named Zones after checking each is available. Properties: Slots,
InstanceTypes, Zones (may be empty). Returns Zones: one zone per slot, comma-separated;
with fewer usable zones than slots the zones repeat (a second subnet in a zone is free).
"""
import boto3


def compute(properties, ec2=None):
    ec2 = ec2 or boto3.client("ec2")
    region = ec2.meta.region_name
    slots = int(properties["Slots"])
    types = list(properties.get("InstanceTypes") or [])
    named = list(properties.get("Zones") or [])
    zones = ec2.describe_availability_zones()["AvailabilityZones"]
    offers = {z["ZoneName"]: 0 for z in zones if z.get("State") == "available"
              and z.get("ZoneType", "availability-zone") == "availability-zone"
              and z.get("OptInStatus", "opt-in-not-required") != "not-opted-in"}
    pages = ec2.get_paginator("describe_instance_type_offerings").paginate(
        LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": types}])
    for page in pages:
        for offer in page["InstanceTypeOfferings"]:
            if offer["Location"] in offers:
                offers[offer["Location"]] += 1
    usable = ", ".join(sorted(offers)) or "none"
    if named:
        bad = [zone for zone in named if zone not in offers]
        if bad:
            raise RuntimeError(f"-c zones.{region}: {', '.join(bad)} not available to this account; "
                               f"available zones: {usable}")
        chosen = named
    else:
        ranked = sorted((z for z in offers if offers[z]), key=lambda z: (-offers[z], z))
        chosen = sorted(ranked[:slots])
    if not chosen:
        raise RuntimeError(f"no zone of {region} available to this account offers any of {', '.join(types)} "
                           f"(available zones: {usable}); rigs cannot run in {region}")
    return {"Zones": ",".join(chosen[index % len(chosen)] for index in range(slots))}
