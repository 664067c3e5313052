"""The network rigs launch into: public subnets in every zone, no NAT gateway."""

from __future__ import annotations

from typing import Sequence

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs
from constructs import Construct

from .checks import skip_checkov


class RigNetwork(Construct):
    """A VPC with one public subnet in each of ``zones``.

    A subnet in every zone lets a rig's Auto Scaling group move to another zone when
    one has no capacity. The zones are deploy-time values (see ``UsableZones``), so
    synth needs no lookup and never writes dummy zone names. Rigs need outbound HTTPS
    only (SSM, image registries, model hub), so there is no NAT gateway: instances get a
    public address, and their security group admits no inbound traffic at all.

    Attributes:
        vpc: the VPC.
        flow_log_group: where rejected-traffic flow logs go.
    """

    def __init__(self, scope: Construct, id_: str, *, zones: Sequence[str], cidr: str = "10.64.0.0/16") -> None:
        super().__init__(scope, id_)
        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            ip_addresses=ec2.IpAddresses.cidr(cidr),
            availability_zones=list(zones),
            nat_gateways=0,
            subnet_configuration=[
                ec2.SubnetConfiguration(name="Rigs", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=22),
            ],
            # Nothing uses the default security group; restricting it would add a
            # Lambda-backed custom resource to every region for no gain.
            restrict_default_security_group=False,
        )
        self.flow_log_group = logs.LogGroup(
            self,
            "RejectedTrafficLog",
            retention=logs.RetentionDays.ONE_MONTH,
            removal_policy=cdk.RemovalPolicy.DESTROY,
        )
        skip_checkov(self.flow_log_group, "CKV_AWS_158",
                     "Rejected-traffic flow log records (addresses and ports, no payloads); CloudWatch Logs encrypts "
                     "them at rest with a service key, and a customer-managed key would bill every month in every "
                     "region the base network lives in.")
        self.vpc.add_flow_log(
            "RejectedTraffic",
            destination=ec2.FlowLogDestination.to_cloud_watch_logs(self.flow_log_group),
            traffic_type=ec2.FlowLogTrafficType.REJECT,
        )
