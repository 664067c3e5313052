"""Discovery against moto: stacks with our tags and outputs, ASG instances, SageMaker endpoints.

moto does not implement SSM ``describe_instance_information``; a botocore Stubber answers it.
"""

from __future__ import annotations

import json
from typing import Iterator

import boto3
import pytest
from botocore.stub import ANY, Stubber
from moto import mock_aws

from agent.reach.discovery import AwsClients, Discoverer
from rigs.catalog.model import load_catalog
from rigs.contract import MANAGED_BY, REGIONS, TAG_MANAGED_BY, TAG_RIG, OutputKey

CATALOG = load_catalog()
TEMPLATE = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}}


@pytest.fixture
def session() -> Iterator[boto3.Session]:
    with mock_aws():
        yield boto3.Session(region_name="us-east-1")


def make_stack(session: boto3.Session, region: str, name: str, outputs: dict[str, str],
               tags: dict[str, str] | None = None) -> None:
    template = dict(TEMPLATE, Outputs={key: {"Value": value} for key, value in outputs.items()})
    tags = {TAG_MANAGED_BY: MANAGED_BY, **(tags or {})}
    session.client("cloudformation", region_name=region).create_stack(
        StackName=name, TemplateBody=json.dumps(template),
        Tags=[{"Key": k, "Value": v} for k, v in tags.items()])


def make_ec2_rig(session: boto3.Session, region: str, rig: str, capacity: int = 1, port: int = 8000) -> str | None:
    """A rig stack whose ASG holds ``capacity`` instances; returns the instance id (or None)."""
    ec2 = session.client("ec2", region_name=region)
    ec2.create_launch_template(LaunchTemplateName=f"{rig}-template",
                               LaunchTemplateData={"ImageId": "ami-12c6146b", "InstanceType": "g6.xlarge"})
    asg = session.client("autoscaling", region_name=region)
    group = f"{rig}-asg-{region}"
    asg.create_auto_scaling_group(AutoScalingGroupName=group, LaunchTemplate={"LaunchTemplateName": f"{rig}-template"},
                                  MinSize=0, MaxSize=1, DesiredCapacity=capacity,
                                  AvailabilityZones=[f"{region}a"])
    spec = CATALOG.get(rig)
    make_stack(session, region, f"Inference{rig.capitalize()}", {
        OutputKey.RIG: rig, OutputKey.REGION: region, OutputKey.RUNTIME: spec.runtime,
        OutputKey.MODEL_ID: spec.model_id, OutputKey.INSTANCE_TYPE: spec.instance_type,
        OutputKey.REMOTE_PORT: str(port), OutputKey.AUTO_SCALING_GROUP: group,
        OutputKey.LOG_GROUP: f"/aws-inference/{rig}", OutputKey.EXPIRES_AT: "2026-12-01T04:00:00Z",
    }, tags={TAG_RIG: rig})
    instances = asg.describe_auto_scaling_groups(AutoScalingGroupNames=[group])["AutoScalingGroups"][0]["Instances"]
    return instances[0]["InstanceId"] if instances else None


def make_endpoint(session: boto3.Session, region: str, name: str = "gemma-endpoint") -> None:
    sm = session.client("sagemaker", region_name=region)
    sm.create_model(ModelName="m", ExecutionRoleArn="arn:aws:iam::123456789012:role/r",
                    PrimaryContainer={"Image": "123456789012.dkr.ecr.us-east-2.amazonaws.com/vllm:x"})
    sm.create_endpoint_config(EndpointConfigName="c", ProductionVariants=[{
        "VariantName": "AllTraffic", "ModelName": "m", "InitialInstanceCount": 1,
        "InstanceType": "ml.m5.large"}])  # moto rejects ml.g6; the type reported comes from the outputs
    sm.create_endpoint(EndpointName=name, EndpointConfigName="c")
    make_stack(session, region, "InferenceSageMaker", {
        OutputKey.RIG: "sagemaker", OutputKey.REGION: region, OutputKey.RUNTIME: "sagemaker-vllm",
        OutputKey.MODEL_ID: CATALOG.get("sagemaker").model_id, OutputKey.INSTANCE_TYPE: "ml.g6.xlarge",
        OutputKey.ENDPOINT_NAME: name,
    })


class Ssm:
    """Stubbed SSM answers, per region, attached to the run's own clients."""

    def __init__(self, clients: AwsClients) -> None:
        self.clients = clients
        self.stubbers: list[Stubber] = []

    def answer(self, region: str, pings: dict[str, str]) -> None:
        stubber = Stubber(self.clients.get("ssm", region))
        stubber.add_response("describe_instance_information", {"InstanceInformationList": [
            {"InstanceId": iid, "PingStatus": ping} for iid, ping in pings.items()]},
            {"Filters": [{"Key": "InstanceIds", "Values": ANY}]})
        stubber.activate()
        self.stubbers.append(stubber)

    def verify(self) -> None:
        for stubber in self.stubbers:
            stubber.assert_no_pending_responses()


def discoverer(session: boto3.Session) -> tuple[Discoverer, Ssm]:
    clients = AwsClients(session)
    return Discoverer(clients, CATALOG), Ssm(clients)


def reasons(discovery) -> dict[str, str]:
    return {skip.name: skip.reason for skip in discovery.skipped}


def test_nothing_deployed_explains_every_rig(session: boto3.Session) -> None:
    found = Discoverer(AwsClients(session), CATALOG).discover()
    assert found.rigs == []
    assert set(reasons(found)) == {"g6", "g5g", "inf2", "trn1", "sagemaker"}
    assert all(r == f"no deployed stack found in {', '.join(REGIONS)}" for r in reasons(found).values())


def test_ec2_rig_online_and_endpoint_in_service(session: boto3.Session) -> None:
    instance = make_ec2_rig(session, "us-east-2", "g6")
    make_endpoint(session, "us-west-2")
    disc, ssm = discoverer(session)
    ssm.answer("us-east-2", {instance: "Online"})
    found = disc.discover()
    ssm.verify()
    g6 = found.get("g6")
    assert g6 is not None and g6.instance_id == instance
    assert g6.outputs.remote_port == 8000 and g6.region == "us-east-2"
    assert g6.metadata["ami_id"] == "ami-12c6146b"
    assert g6.metadata["availability_zone"] == "us-east-2a"
    assert g6.metadata["instance_type"] == "g6.xlarge"
    assert g6.metadata["expires_at"] == "2026-12-01T04:00:00Z"
    assert g6.metadata["log_group"] == "/aws-inference/g6"
    assert "SSM port forward" in g6.describe()
    sm = found.get("sagemaker")
    assert sm is not None and sm.outputs.endpoint_name == "gemma-endpoint" and sm.region == "us-west-2"
    assert sm.instance_id is None
    assert "g6" not in reasons(found) and "sagemaker" not in reasons(found)


def test_instance_not_on_ssm_is_skipped_with_its_ping_status(session: boto3.Session) -> None:
    instance = make_ec2_rig(session, "us-east-1", "g5g")
    disc, ssm = discoverer(session)
    ssm.answer("us-east-1", {instance: "ConnectionLost"})
    found = disc.discover(names=["g5g"])
    assert found.rigs == []
    assert reasons(found)["g5g"] == f"{instance} in us-east-1 is not on SSM (SSM PingStatus ConnectionLost)"


def test_instance_not_registered_with_ssm(session: boto3.Session) -> None:
    instance = make_ec2_rig(session, "us-east-1", "inf2", port=8080)
    disc, ssm = discoverer(session)
    ssm.answer("us-east-1", {})
    found = disc.discover(names=["inf2"])
    assert reasons(found)["inf2"] == f"{instance} in us-east-1 is not on SSM (not registered with SSM yet)"


def test_stopped_rig_scaled_to_zero(session: boto3.Session) -> None:
    make_ec2_rig(session, "us-west-2", "trn1", capacity=0, port=8080)
    found = Discoverer(AwsClients(session), CATALOG).discover(names=["trn1"])
    assert "scaled to zero" in reasons(found)["trn1"]


def test_stopped_instance_is_not_used(session: boto3.Session) -> None:
    instance = make_ec2_rig(session, "us-east-2", "g6")
    session.client("ec2", region_name="us-east-2").stop_instances(InstanceIds=[instance])
    found = Discoverer(AwsClients(session), CATALOG).discover(names=["g6"])
    assert found.rigs == []
    assert reasons(found)["g6"] == f"no running instance in us-east-2 ({instance} stopped)"


def test_endpoint_gone(session: boto3.Session) -> None:
    make_endpoint(session, "us-east-2")
    session.client("sagemaker", region_name="us-east-2").delete_endpoint(EndpointName="gemma-endpoint")
    found = Discoverer(AwsClients(session), CATALOG).discover(names=["sagemaker"])
    assert reasons(found)["sagemaker"] == "endpoint gemma-endpoint not found in us-east-2"


def test_other_stacks_ignored_and_broken_outputs_explained(session: boto3.Session) -> None:
    make_stack(session, "us-east-1", "SomeoneElses", {OutputKey.RIG: "g6"}, tags={TAG_MANAGED_BY: "other"})
    make_stack(session, "us-east-1", "InferenceBase-us-east-1", {"VpcId": "vpc-1"})
    make_stack(session, "us-east-1", "InferenceG6", {OutputKey.RIG: "g6", OutputKey.REGION: "us-east-1"},
               tags={TAG_RIG: "g6"})
    found = Discoverer(AwsClients(session), CATALOG).discover()
    assert "stack InferenceG6 in us-east-1: stack outputs lack" in reasons(found)["g6"]
    assert "InferenceBase-us-east-1" not in str(found.skipped)


def test_first_region_in_order_wins(session: boto3.Session) -> None:
    east1 = make_ec2_rig(session, "us-east-1", "g6")
    east2 = make_ec2_rig(session, "us-east-2", "g6")
    disc, ssm = discoverer(session)
    ssm.answer("us-east-1", {east1: "Online"})
    found = disc.discover(names=["g6"])
    assert found.get("g6").instance_id == east1
    assert reasons(found)["g6"].startswith("stack InferenceG6 in us-east-2 not used")
    assert east2 not in str(found.rigs)


def test_access_denied_region_is_explained_and_others_still_searched(session: boto3.Session) -> None:
    make_endpoint(session, "us-west-2")
    clients = AwsClients(session)
    stubber = Stubber(clients.get("cloudformation", "us-east-1"))
    stubber.add_client_error("describe_stacks", "AccessDenied", "not allowed")
    stubber.activate()
    found = Discoverer(clients, CATALOG).discover()
    assert reasons(found)["us-east-1"] == "cloudformation DescribeStacks failed: AccessDenied: not allowed"
    assert found.get("sagemaker") is not None


HTML_PAGE = ("<!doctype html>\n<html lang=en>\n<title>500 Internal Server Error</title>\n<h1>Internal Server Error</h1>\n"
             "<p>The server encountered an internal error and was unable to complete your request.</p>\n")


def test_a_failed_call_is_named_with_a_readable_reason_never_a_page(session: boto3.Session) -> None:
    instance = make_ec2_rig(session, "us-east-2", "g6")
    clients = AwsClients(session)
    stubber = Stubber(clients.get("ssm", "us-east-2"))  # the answer moto's server gives: an HTML error page
    stubber.add_client_error("describe_instance_information", "500", HTML_PAGE, http_status_code=500)
    stubber.activate()
    found = Discoverer(clients, CATALOG).discover(names=["g6"])
    assert reasons(found)["g6"] == ("us-east-2: ssm DescribeInstanceInformation failed: HTTP 500: an HTML page: "
                                    "500 Internal Server Error")
    assert instance and "<" not in reasons(found)["g6"]


def test_clients_created_once_per_service_and_region(session: boto3.Session) -> None:
    clients = AwsClients(session)
    assert clients.get("cloudformation", "us-east-1") is clients.get("cloudformation", "us-east-1")
    assert clients.get("cloudformation", "us-east-1") is not clients.get("cloudformation", "us-east-2")
    config = clients.get("ec2", "us-west-2").meta.config
    assert (config.connect_timeout, config.read_timeout, config.retries.get("total_max_attempts")) == (5, 20, 4)
