"""The stack outputs the agent and the provisioning library read (keys in rigs/contract.py)."""

from __future__ import annotations

from typing import Mapping, Union

import aws_cdk as cdk

from rigs.catalog.model import Ec2Rig, SageMakerRig
from rigs.contract import OutputKey


def add_rig_outputs(stack: cdk.Stack, *, rig: Union[Ec2Rig, SageMakerRig], region: str, lifetime_expires_at: str,
                    log_group_name: str, specific: Mapping[str, str]) -> None:
    """Every rig's common outputs plus ``specific`` (how this kind of rig is reached); the context its server is
    told to serve where its flags name one (the agent's token limit and KV prediction follow it)."""
    context = rig.serve_context
    outputs = {
        OutputKey.RIG: rig.name,
        OutputKey.REGION: region,
        OutputKey.RUNTIME: rig.runtime,
        OutputKey.MODEL_ID: rig.model_id,
        OutputKey.INSTANCE_TYPE: rig.instance_type,
        OutputKey.LOG_GROUP: log_group_name,
        OutputKey.EXPIRES_AT: lifetime_expires_at,
        **({OutputKey.CONTEXT_TOKENS: str(context)} if context is not None else {}),
        **specific,
    }
    for key, value in outputs.items():
        cdk.CfnOutput(stack, key, value=value)
