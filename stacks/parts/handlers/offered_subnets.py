"""Custom resource: the rig network's subnets whose zone offers the instance type.

Zone offerings differ per account and change over time, so they are read at deploy
time (DescribeInstanceTypeOfferings), never at synth. Properties: SubnetIds,
InstanceType, AllowedZones (may be empty: every zone). Returns SubnetIds and Zones,
comma-separated, sorted by zone, one subnet per zone (the network may repeat a zone).
"""
import boto3


def compute(properties, ec2=None):
    ec2 = ec2 or boto3.client("ec2")
    instance_type = properties["InstanceType"]
    allowed = set(properties.get("AllowedZones") or [])
    subnets = ec2.describe_subnets(SubnetIds=list(properties["SubnetIds"]))["Subnets"]
    offered = set()
    pages = ec2.get_paginator("describe_instance_type_offerings").paginate(
        LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": [instance_type]}])
    for page in pages:
        offered.update(offer["Location"] for offer in page["InstanceTypeOfferings"])
    network = sorted({subnet["AvailabilityZone"] for subnet in subnets})
    first = {}
    for subnet in sorted(subnets, key=lambda s: s["SubnetId"]):
        first.setdefault(subnet["AvailabilityZone"], subnet["SubnetId"])
    chosen = [(zone, first[zone]) for zone in network if zone in offered and (not allowed or zone in allowed)]
    if not chosen:
        raise RuntimeError(
            f"no zone of the rig network can launch {instance_type}: network zones "
            f"{', '.join(network)}; zones offering it {', '.join(sorted(offered)) or 'none'}"
            + (f"; allowed zones {', '.join(sorted(allowed))}" if allowed else "")
            + ". Deploy the rig to another region (-c region.<rig>=...) or widen -c zones.<rig>.")
    return {"SubnetIds": ",".join(subnet for _, subnet in chosen),
            "Zones": ",".join(zone for zone, _ in chosen)}
