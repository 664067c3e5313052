"""Per-region base stack: what all rigs of a region share and what outlives them."""

from __future__ import annotations

from typing import Sequence

import aws_cdk as cdk
from constructs import Construct

from rigs.contract import MANAGED_BY, TAG_MANAGED_BY

from .parts.custom_resources import UsableZones
from .parts.instance_profile import RigInstanceProfile
from .parts.load_generator import LoadResults
from .parts.network import RigNetwork
from .parts.ssm_only_sg import SsmOnlySecurityGroup


class InferenceBaseStack(cdk.Stack):
    """The network, the SSM-only security group and the rig instance profile of one region.

    Props:
        zone_slots: how many zones (subnets) the network spans.
        instance_types: the rig instance types of the region; the zones offering most of
            them are chosen at deploy time.
        named_zones: exactly these zones instead (``-c zones.<region>=...``); as many as slots.

    Attributes:
        zones, network, security_group, instance_profile, load_results: the parts, for rig stacks to reference.
    """

    def __init__(self, scope: Construct, id_: str, *, zone_slots: int, instance_types: Sequence[str],
                 named_zones: Sequence[str] = (), **kwargs) -> None:
        # A stack-level tag too, so that discovery and `python -m rigs sweep --all` find the stack.
        super().__init__(scope, id_, tags={TAG_MANAGED_BY: MANAGED_BY}, **kwargs)
        self.zones = UsableZones(self, "Zones", slots=zone_slots, instance_types=instance_types,
                                 named_zones=named_zones)
        self.network = RigNetwork(self, "Network", zones=self.zones.zones)
        cdk.CfnOutput(self, "NetworkZones", value=self.zones.zone_list,
                      description="The zones of the rig network's subnets, chosen at deploy time (one per subnet)")
        self.security_group = SsmOnlySecurityGroup(self, "SsmOnly", vpc=self.network.vpc)
        self.instance_profile = RigInstanceProfile(self, "RigInstance")
        self.load_results = LoadResults(self, "LoadResults")
