"""Per-region base stack: what all rigs of a region share and what outlives them."""

from __future__ import annotations

import aws_cdk as cdk
from constructs import Construct

from rigs.contract import MANAGED_BY, TAG_MANAGED_BY

from .parts.instance_profile import RigInstanceProfile
from .parts.network import RigNetwork
from .parts.ssm_only_sg import SsmOnlySecurityGroup


class InferenceBaseStack(cdk.Stack):
    """The network, the SSM-only security group and the rig instance profile of one region.

    Attributes:
        network, security_group, instance_profile: the parts, for rig stacks to reference.
    """

    def __init__(self, scope: Construct, id_: str, *, az_count: int, **kwargs) -> None:
        # A stack-level tag too, so that discovery and `python -m rigs sweep --all` find the stack.
        super().__init__(scope, id_, tags={TAG_MANAGED_BY: MANAGED_BY}, **kwargs)
        self.network = RigNetwork(self, "Network", az_count=az_count)
        self.security_group = SsmOnlySecurityGroup(self, "SsmOnly", vpc=self.network.vpc)
        self.instance_profile = RigInstanceProfile(self, "RigInstance")
