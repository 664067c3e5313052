"""The launcher's patch: a network stack's deletion takes its route tables, gateway and VPC with it.

moto itself leaves them (``tests/e2e/test_moto_behaviour.py`` keeps that behaviour on record); with the
patch, ``cdk destroy`` of a base stack succeeds the first time, as on AWS.
"""

from __future__ import annotations

import json

import boto3
from moto import mock_aws

from rigs.offline.moto_server import delete_networks_with_their_stacks

NETWORK = {"Resources": {
    "Vpc": {"Type": "AWS::EC2::VPC", "Properties": {"CidrBlock": "10.0.0.0/16"}},
    "Subnet": {"Type": "AWS::EC2::Subnet", "Properties": {"VpcId": {"Ref": "Vpc"}, "CidrBlock": "10.0.0.0/24"}},
    "Gateway": {"Type": "AWS::EC2::InternetGateway"},
    "Attachment": {"Type": "AWS::EC2::VPCGatewayAttachment",
                   "Properties": {"VpcId": {"Ref": "Vpc"}, "InternetGatewayId": {"Ref": "Gateway"}}},
    "Routes": {"Type": "AWS::EC2::RouteTable", "Properties": {"VpcId": {"Ref": "Vpc"}}},
    "Association": {"Type": "AWS::EC2::SubnetRouteTableAssociation",
                    "Properties": {"RouteTableId": {"Ref": "Routes"}, "SubnetId": {"Ref": "Subnet"}}},
    "Default": {"Type": "AWS::EC2::Route", "DependsOn": "Attachment", "Properties": {
        "RouteTableId": {"Ref": "Routes"}, "DestinationCidrBlock": "0.0.0.0/0", "GatewayId": {"Ref": "Gateway"}}},
}}


def test_a_network_stack_is_deleted_whole_and_the_patch_undoes():
    undo = delete_networks_with_their_stacks()
    try:
        with mock_aws():
            cloudformation = boto3.client("cloudformation", region_name="us-east-1")
            ec2 = boto3.client("ec2", region_name="us-east-1")
            cloudformation.create_stack(StackName="net", TemplateBody=json.dumps(NETWORK))
            [vpc] = [v["VpcId"] for v in ec2.describe_vpcs()["Vpcs"] if not v["IsDefault"]]
            cloudformation.delete_stack(StackName="net")
            assert [v for v in ec2.describe_vpcs()["Vpcs"] if not v["IsDefault"]] == []
            assert ec2.describe_internet_gateways()["InternetGateways"] == []
            assert [t for t in ec2.describe_route_tables()["RouteTables"] if t["VpcId"] == vpc] == []
    finally:
        undo()
    from moto.ec2.models.route_tables import RouteTable

    assert "delete_from_cloudformation_json" not in vars(RouteTable)  # moto's own (a no-op) again
