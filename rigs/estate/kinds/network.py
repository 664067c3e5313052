"""The network of ours (security groups, subnets, route tables, internet gateways, VPCs): one listing, kept
between runs, deleted dependents first and only with ``--all``; a VPC that holds anything not ours stays."""

from __future__ import annotations

from typing import Any, Callable

from rigs import aws
from rigs.estate import resources
from rigs.estate.kinds.base import Deletion, Finder, Kind, Listing, unless_gone
from rigs.estate.resources import OUR_TAG_FILTER, Resource, ours


def _list(finder: Finder) -> None:
    ec2 = finder.clients("ec2", finder.region)
    for group in aws.paginate(ec2, "describe_security_groups", "SecurityGroups", Filters=OUR_TAG_FILTER):
        if group.get("GroupName") == "default":
            continue
        finder.add(SECURITY_GROUP, group["GroupId"], group.get("Tags"), name=group.get("GroupName", ""),
                   detail=f"in {group.get('VpcId', '?')}", extra={"vpc": group.get("VpcId", "")})
    for subnet in aws.paginate(ec2, "describe_subnets", "Subnets", Filters=OUR_TAG_FILTER):
        finder.add(SUBNET, subnet["SubnetId"], subnet.get("Tags"), detail=subnet.get("AvailabilityZone", ""),
                   extra={"vpc": subnet.get("VpcId", "")})
    for table in aws.paginate(ec2, "describe_route_tables", "RouteTables", Filters=OUR_TAG_FILTER):
        main = any(a.get("Main") for a in table.get("Associations", []))
        finder.add(ROUTE_TABLE, table["RouteTableId"], table.get("Tags"), state="main" if main else "",
                   extra={"vpc": table.get("VpcId", ""),
                          "associations": tuple(a["RouteTableAssociationId"] for a in table.get("Associations", [])
                                                if not a.get("Main") and a.get("RouteTableAssociationId"))})
    for gateway in aws.paginate(ec2, "describe_internet_gateways", "InternetGateways", Filters=OUR_TAG_FILTER):
        vpcs = tuple(a["VpcId"] for a in gateway.get("Attachments", []) if a.get("VpcId"))
        finder.add(INTERNET_GATEWAY, gateway["InternetGatewayId"], gateway.get("Tags"),
                   detail=f"attached to {', '.join(vpcs)}" if vpcs else "detached", extra={"vpcs": vpcs})
    for vpc in aws.paginate(ec2, "describe_vpcs", "Vpcs", Filters=OUR_TAG_FILTER):
        finder.add(VPC, vpc["VpcId"], vpc.get("Tags"), detail=vpc.get("CidrBlock", ""), state=vpc.get("State", ""))


LISTING = Listing("network (security groups, subnets, route tables, gateways, VPCs)", _list)


def _draining(deletion: Deletion, operation: Callable[[], Any]) -> None:
    """Network deletions fail with DependencyViolation while ENIs and instances drain: retried a while."""
    deletion.retrying(operation, "DependencyViolation")


def _delete_group(deletion: Deletion, group: Resource) -> None:
    ec2 = deletion.client("ec2", group)
    _draining(deletion, lambda: ec2.delete_security_group(GroupId=group.id))


def _delete_gateway(deletion: Deletion, gateway: Resource) -> None:
    ec2 = deletion.client("ec2", gateway)
    for vpc in gateway.get("vpcs", ()):
        unless_gone(lambda: ec2.detach_internet_gateway(InternetGatewayId=gateway.id, VpcId=vpc),
                    "Gateway.NotAttached")
    aws.call(ec2.delete_internet_gateway, InternetGatewayId=gateway.id)


def _delete_table(deletion: Deletion, table: Resource) -> None:
    ec2 = deletion.client("ec2", table)
    for association in table.get("associations", ()):
        unless_gone(lambda: ec2.disassociate_route_table(AssociationId=association))
    if table.state != "main":  # the main table goes with its VPC
        aws.call(ec2.delete_route_table, RouteTableId=table.id)


def _delete_subnet(deletion: Deletion, subnet: Resource) -> None:
    ec2 = deletion.client("ec2", subnet)
    _draining(deletion, lambda: ec2.delete_subnet(SubnetId=subnet.id))


def _delete_vpc(deletion: Deletion, vpc: Resource) -> None:
    ec2 = deletion.client("ec2", vpc)
    _draining(deletion, lambda: ec2.delete_vpc(VpcId=vpc.id))


def _foreign_in_vpc(deletion: Deletion, vpc: Resource) -> str:
    """What in the VPC is not ours (by tag): then the VPC must stay, and this says why."""
    ec2 = deletion.client("ec2", vpc)
    in_vpc = [{"Name": "vpc-id", "Values": [vpc.id]}]
    foreign: list[str] = []
    reservations = aws.paginate(ec2, "describe_instances", "Reservations", Filters=[
        *in_vpc, {"Name": "instance-state-name", "Values": ["pending", "running", "stopping", "stopped"]}])
    for reservation in reservations:
        foreign += [i["InstanceId"] for i in reservation.get("Instances", []) if not ours(i.get("Tags"))]
    foreign += [s["SubnetId"] for s in aws.paginate(ec2, "describe_subnets", "Subnets", Filters=in_vpc)
                if not ours(s.get("Tags"))]
    foreign += [t["RouteTableId"] for t in aws.paginate(ec2, "describe_route_tables", "RouteTables", Filters=in_vpc)
                if not ours(t.get("Tags")) and not any(a.get("Main") for a in t.get("Associations", []))]
    foreign += [g["InternetGatewayId"] for g in aws.paginate(
        ec2, "describe_internet_gateways", "InternetGateways",
        Filters=[{"Name": "attachment.vpc-id", "Values": [vpc.id]}]) if not ours(g.get("Tags"))]
    foreign += [g["GroupId"] for g in aws.paginate(ec2, "describe_security_groups", "SecurityGroups", Filters=in_vpc)
                if g.get("GroupName") != "default" and not ours(g.get("Tags"))]
    foreign += [n["NetworkInterfaceId"] for n in aws.paginate(ec2, "describe_network_interfaces", "NetworkInterfaces",
                                                               Filters=in_vpc)
                if not ours(n.get("TagSet"))]
    return f"it holds {', '.join(foreign)} without our tag" if foreign else ""


SECURITY_GROUP = Kind(resources.SECURITY_GROUP, LISTING, kept=True, delete=_delete_group,
                      gone_codes=("InvalidGroup.NotFound",))
SUBNET = Kind(resources.SUBNET, LISTING, kept=True, delete=_delete_subnet, gone_codes=("InvalidSubnetID.NotFound",))
ROUTE_TABLE = Kind(resources.ROUTE_TABLE, LISTING, kept=True, delete=_delete_table,
                   gone_codes=("InvalidRouteTableID.NotFound",))
INTERNET_GATEWAY = Kind(resources.INTERNET_GATEWAY, LISTING, kept=True, delete=_delete_gateway,
                        gone_codes=("InvalidInternetGatewayID.NotFound",))
VPC = Kind(resources.VPC, LISTING, kept=True, delete=_delete_vpc, gone_codes=("InvalidVpcID.NotFound",),
           keep_because=_foreign_in_vpc)
