"""The launcher's patch 12: an update that keeps a parameter the stack took from its default, as ``cdk deploy`` does
with ``BootstrapVersion`` when it updates a stack it created earlier."""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws
from moto.cloudformation.models import CloudFormationBackend

from rigs.offline.moto_server import keep_previous_parameters

TEMPLATE = {"Parameters": {"Version": {"Type": "String", "Default": "21"}},
            "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
            "Outputs": {"Version": {"Value": {"Ref": "Version"}}}}


@pytest.fixture
def patched():
    original = CloudFormationBackend._resolve_update_parameters
    keep_previous_parameters()
    yield
    CloudFormationBackend._resolve_update_parameters = original


def update_keeping_version(cloudformation) -> None:
    cloudformation.create_stack(StackName="base", TemplateBody=json.dumps(TEMPLATE))
    changed = dict(TEMPLATE, Resources={**TEMPLATE["Resources"], "Other": {"Type": "AWS::SNS::Topic"}})
    cloudformation.update_stack(StackName="base", TemplateBody=json.dumps(changed),
                                Parameters=[{"ParameterKey": "Version", "UsePreviousValue": True}])


@mock_aws
def test_unpatched_moto_cannot_keep_a_defaulted_parameter():
    with pytest.raises(KeyError, match="Version"):
        update_keeping_version(boto3.client("cloudformation", region_name="us-east-1"))


@mock_aws
def test_the_update_keeps_the_default_as_cloudformation_does(patched):
    cloudformation = boto3.client("cloudformation", region_name="us-east-1")
    update_keeping_version(cloudformation)
    stack = cloudformation.describe_stacks(StackName="base")["Stacks"][0]
    assert stack["StackStatus"] == "UPDATE_COMPLETE"
    assert [(o["OutputKey"], o["OutputValue"]) for o in stack["Outputs"]] == [("Version", "21")]
