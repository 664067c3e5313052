"""The security group every rig uses: no inbound rule, outbound web only."""

from __future__ import annotations

from aws_cdk import aws_ec2 as ec2
from constructs import Construct


class SsmOnlySecurityGroup(Construct):
    """A security group with no inbound rule; rigs are reached only through SSM.

    Outbound: HTTPS (SSM, CloudFormation, CloudWatch Logs, Secrets Manager, image
    registries, the model hub) and HTTP (Ubuntu package mirrors). DNS to the VPC
    resolver is not filtered by security groups.

    Attributes:
        security_group: the group.
    """

    def __init__(self, scope: Construct, id_: str, *, vpc: ec2.IVpc) -> None:
        super().__init__(scope, id_)
        self.security_group = ec2.SecurityGroup(
            self,
            "Group",
            vpc=vpc,
            description="aws-inference rigs: no inbound rule, reached through SSM only",
            allow_all_outbound=False,
        )
        self.security_group.add_egress_rule(ec2.Peer.any_ipv4(), ec2.Port.tcp(443), "HTTPS: AWS APIs, registries, model hub")
        self.security_group.add_egress_rule(ec2.Peer.any_ipv4(), ec2.Port.tcp(80), "HTTP: Ubuntu package mirrors")
