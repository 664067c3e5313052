"""The lifetime release does its one call with only the permission it is given (moto and the policy documents).

At the deadline EventBridge Scheduler assumes the release role and makes exactly one call:

- EC2 rigs: ``autoscaling:UpdateAutoScalingGroup`` with MinSize/MaxSize/DesiredCapacity 0 on
  the rig's group. Auto Scaling then terminates the instance itself, under its service-linked
  role; the release role needs no EC2 permission (no launch template is passed, so none of
  the ``ec2:RunInstances``/``iam:PassRole`` checks of a template change apply).
- SageMaker: ``sagemaker:DeleteEndpoint`` on the rig's endpoint; SageMaker releases the
  instance behind it.

Here the call is read from the synthesized schedule (target and input), the permission from
the release role's policy, both resolved with real names from moto: the statement's resource
must match the ARN moto gives the group or endpoint, and a caller holding exactly the policy's
actions makes the call through moto's IAM enforcement and releases the compute, while any
other call is refused. moto enforces actions, not resource ARNs (it checks every request
against ``Resource: *``), so the ARN is matched separately, the way IAM matches it.
"""

from __future__ import annotations

import fnmatch
import json

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws, settings
from moto.core.authorization import ActionAuthenticatorMixin

from rigs.catalog.model import load_catalog
from tests.contract.templates import one
from tests.contract.templates import resources_of

ACCOUNT = "123456789012"
CATALOG = load_catalog()


def resolve(node, names: dict[str, str], region: str):
    """A template value with Ref, Fn::Join and the pseudo parameters replaced by ``names``."""
    if isinstance(node, dict) and "Ref" in node:
        return {"AWS::AccountId": ACCOUNT, "AWS::Partition": "aws", "AWS::Region": region}.get(node["Ref"]) \
            or names[node["Ref"]]
    if isinstance(node, dict) and "Fn::Join" in node:
        separator, parts = node["Fn::Join"]
        return separator.join(resolve(part, names, region) for part in parts)
    if isinstance(node, dict) and "Fn::GetAtt" in node:
        return names[".".join(node["Fn::GetAtt"])]
    return node


def release_call(template: dict, names: dict[str, str], region: str) -> tuple[str, str, dict, list[dict]]:
    """(service, API action, input, the release role's statements) of the rig's schedule, resolved."""
    target = one(template, "AWS::Scheduler::Schedule")["Properties"]["Target"]
    arn = resolve(target["Arn"], names, region)
    prefix = "arn:aws:scheduler:::aws-sdk:"
    assert arn.startswith(prefix), arn
    service, action = arn[len(prefix):].split(":")
    role_id = target["RoleArn"]["Fn::GetAtt"][0]
    role = template["Resources"][role_id]["Properties"]
    assert role["AssumeRolePolicyDocument"]["Statement"] == [{
        "Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "scheduler.amazonaws.com"},
        "Condition": {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}}]
    assert "Policies" not in role and "ManagedPolicyArns" not in role
    statements = [resolve_statement(s, names, region) for p in resources_of(template, "AWS::IAM::Policy").values()
                  if {"Ref": role_id} in p["Properties"]["Roles"] for s in p["Properties"]["PolicyDocument"]["Statement"]]
    return service, action, json.loads(resolve(target["Input"], names, region)), statements


def resolve_statement(statement: dict, names: dict[str, str], region: str) -> dict:
    return {**statement, "Resource": resolve(statement["Resource"], names, region)}


def iam_action(service: str, api_action: str) -> str:
    """Scheduler's universal target names the SDK operation; IAM names the same action capitalised."""
    return f"{service}:{api_action[0].upper()}{api_action[1:]}"


def arn_matches(pattern: str, arn: str) -> bool:
    """IAM's resource match: ``*`` any run of characters, ``?`` one, case-sensitive."""
    return fnmatch.fnmatchcase(arn, pattern)


def caller_with(actions: list[str], region: str, service: str, user: str = "release"):
    """A client for ``service`` signed by an IAM user allowed exactly ``actions`` (on any resource, see above)."""
    iam = boto3.client("iam", region_name=region)
    iam.create_user(UserName=user)
    iam.put_user_policy(UserName=user, PolicyName="release", PolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": actions, "Resource": "*"}]}))
    key = iam.create_access_key(UserName=user)["AccessKey"]
    return lambda name=service: boto3.client(name, region_name=region, aws_access_key_id=key["AccessKeyId"],
                                             aws_secret_access_key=key["SecretAccessKey"], aws_session_token=None)


class IamEnforcement:
    """Switches moto's IAM checks on (every request checked against its caller's policies) and off."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.monkeypatch = monkeypatch

    def on(self) -> None:
        self.monkeypatch.setattr(settings, "INITIAL_NO_AUTH_ACTION_COUNT", 0)
        self.monkeypatch.setattr(ActionAuthenticatorMixin, "request_count", 0)

    def off(self) -> None:
        self.monkeypatch.setattr(settings, "INITIAL_NO_AUTH_ACTION_COUNT", float("inf"))


@pytest.fixture
def iam_checks(monkeypatch):
    with mock_aws():
        yield IamEnforcement(monkeypatch)


def refused(call, **kwargs) -> bool:
    """Whether IAM refused the call (moto answers SageMaker's refusals as a bare 403)."""
    try:
        call(**kwargs)
    except ClientError as exc:
        return exc.response["ResponseMetadata"]["HTTPStatusCode"] == 403 or \
            exc.response["Error"]["Code"] in ("AccessDenied", "AccessDeniedException")
    return False


@pytest.mark.parametrize("rig", CATALOG.ec2_rigs(), ids=lambda r: r.name)
def test_scale_to_zero_is_one_update_call_that_the_release_policy_allows_on_the_rigs_group(
        templates, stack_regions, iam_checks, rig):
    template = templates[rig.stack_name]
    region = stack_regions[rig.stack_name]
    [group_id] = resources_of(template, "AWS::AutoScaling::AutoScalingGroup")
    ec2 = boto3.client("ec2", region_name=region)
    # Any image id: moto does not check that it exists, and whether it loads its public AMIs
    # depends on what ran earlier in the process.
    template_id = ec2.create_launch_template(LaunchTemplateName="rig", LaunchTemplateData={
        "ImageId": "ami-0123456789abcdef0", "InstanceType": "m5.large"})["LaunchTemplate"]["LaunchTemplateId"]
    name = f"{rig.stack_name}-{group_id}-AbCdEf123456"
    autoscaling = boto3.client("autoscaling", region_name=region)
    autoscaling.create_auto_scaling_group(
        AutoScalingGroupName=name, MinSize=1, MaxSize=1, DesiredCapacity=1, AvailabilityZones=[f"{region}a"],
        LaunchTemplate={"LaunchTemplateId": template_id, "Version": "1"})
    [group] = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[name])["AutoScalingGroups"]
    assert len(group["Instances"]) == 1

    service, action, call_input, statements = release_call(template, {group_id: name}, region)
    assert (service, action) == ("autoscaling", "updateAutoScalingGroup")
    assert call_input == {"AutoScalingGroupName": name, "MinSize": 0, "MaxSize": 0, "DesiredCapacity": 0}
    [statement] = statements
    assert statement["Effect"] == "Allow" and statement["Action"] == iam_action(service, action)
    assert arn_matches(statement["Resource"], group["AutoScalingGroupARN"])
    assert not arn_matches(statement["Resource"], group["AutoScalingGroupARN"].replace(name, name + "-other"))

    client = caller_with([statement["Action"]], region, "autoscaling")
    without = caller_with(["autoscaling:DescribeAutoScalingGroups"], region, "autoscaling", user="other")
    iam_checks.on()
    assert refused(without().update_auto_scaling_group, **call_input)  # the call needs this very permission
    client().update_auto_scaling_group(**call_input)
    assert refused(client().delete_auto_scaling_group, AutoScalingGroupName=name, ForceDelete=True)
    assert refused(client("ec2").terminate_instances, InstanceIds=[group["Instances"][0]["InstanceId"]])
    iam_checks.off()
    [after] = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[name])["AutoScalingGroups"]
    assert (after["MinSize"], after["MaxSize"], after["DesiredCapacity"], after["Instances"]) == (0, 0, 0, [])


def test_endpoint_deletion_is_one_delete_call_that_the_release_policy_allows_on_the_rigs_endpoint(
        templates, stack_regions, iam_checks):
    rig = CATALOG.get("sagemaker")
    template = templates[rig.stack_name]
    region = stack_regions[rig.stack_name]
    [endpoint_id] = resources_of(template, "AWS::SageMaker::Endpoint")
    sagemaker = boto3.client("sagemaker", region_name=region)
    sagemaker.create_model(ModelName="rig-model", ExecutionRoleArn=f"arn:aws:iam::{ACCOUNT}:role/r",
                           PrimaryContainer={"Image": rig.image.reference(region)})
    sagemaker.create_endpoint_config(EndpointConfigName="rig-config", ProductionVariants=[{
        "VariantName": "AllTraffic", "ModelName": "rig-model", "InstanceType": "ml.m5.large",
        "InitialInstanceCount": 1}])
    name = "Endpoint8024A810-abcdef123456"
    arn = sagemaker.create_endpoint(EndpointName=name, EndpointConfigName="rig-config")["EndpointArn"]

    service, action, call_input, statements = release_call(
        template, {endpoint_id: arn, f"{endpoint_id}.EndpointName": name}, region)
    assert (service, action) == ("sagemaker", "deleteEndpoint")
    assert call_input == {"EndpointName": name}
    [statement] = statements
    assert statement["Effect"] == "Allow" and statement["Action"] == iam_action(service, action)
    assert statement["Resource"] == arn == sagemaker.describe_endpoint(EndpointName=name)["EndpointArn"]

    client = caller_with([statement["Action"]], region, "sagemaker")
    without = caller_with(["sagemaker:DescribeEndpoint"], region, "sagemaker", user="other")
    iam_checks.on()
    assert refused(without().delete_endpoint, **call_input)  # the call needs this very permission
    assert refused(client().delete_model, ModelName="rig-model")
    assert refused(client().delete_endpoint_config, EndpointConfigName="rig-config")
    client().delete_endpoint(**call_input)
    iam_checks.off()
    assert [e["EndpointName"] for e in sagemaker.list_endpoints()["Endpoints"]] == []
    assert sagemaker.describe_model(ModelName="rig-model")  # model and config stay (free) until cdk destroy
