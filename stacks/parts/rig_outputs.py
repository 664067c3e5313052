"""The stack outputs the agent and the provisioning library read (keys in rigs/contract.py)."""

from __future__ import annotations

from typing import Mapping, Union

import aws_cdk as cdk

from rigs.catalog.model import Ec2Rig, SageMakerRig
from rigs.contract import OutputKey


def add_rig_outputs(stack: cdk.Stack, *, rig: Union[Ec2Rig, SageMakerRig], region: str, lifetime_expires_at: str,
                    log_group_name: str, specific: Mapping[str, str]) -> None:
    """Every rig's common outputs plus ``specific`` (how this kind of rig is reached)."""
    outputs = {
        OutputKey.RIG: rig.name,
        OutputKey.REGION: region,
        OutputKey.RUNTIME: rig.runtime,
        OutputKey.MODEL_ID: rig.model_id,
        OutputKey.INSTANCE_TYPE: rig.instance_type,
        OutputKey.LOG_GROUP: log_group_name,
        OutputKey.EXPIRES_AT: lifetime_expires_at,
        **specific,
    }
    for key, value in outputs.items():
        cdk.CfnOutput(stack, key, value=value)
