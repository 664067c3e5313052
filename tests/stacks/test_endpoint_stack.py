"""The SageMaker endpoint stack: AWS's vLLM container, least-privilege role, readiness, lifetime."""

from __future__ import annotations

import json

import pytest
from aws_cdk.assertions import Template

from rigs.catalog.model import load_catalog
from rigs.contract import MANAGED_BY, TAG_MANAGED_BY, TAG_RIG, OutputKey
from tests.contract.templates import one
from tests.contract.templates import resources_of
from tests.contract.templates import stack_outputs

CATALOG = load_catalog()
RIG = CATALOG.get("sagemaker")


@pytest.fixture(scope="module")
def template(templates) -> dict:
    return templates[RIG.stack_name]


@pytest.fixture(scope="module")
def region(stack_regions) -> str:
    return stack_regions[RIG.stack_name]


def logical_id(template: dict, type_: str) -> str:
    [found] = resources_of(template, type_)
    return found


def test_endpoint_deploys_to_the_first_catalog_region_by_default(region):
    assert region == RIG.regions[0]


def test_model_runs_the_pinned_dlc_image_of_its_region_with_the_catalog_env(template, region):
    container = one(template, "AWS::SageMaker::Model")["Properties"]["PrimaryContainer"]
    assert container["Image"] == f"763104351884.dkr.ecr.{region}.amazonaws.com/vllm@{RIG.image.digest_for(region)}"
    assert container["Environment"] == {**RIG.container_env, "SM_VLLM_MODEL": RIG.model_id,
                                        "SM_VLLM_SERVED_MODEL_NAME": RIG.model_id}
    assert container["Environment"]["SM_VLLM_ENABLE_AUTO_TOOL_CHOICE"] == "true"
    assert container["Environment"]["SM_VLLM_TOOL_CALL_PARSER"] == "gemma4"


def test_a_pinned_region_reads_nothing_at_deploy_and_reports_its_pin(template, region):
    assert RIG.image.digest_for(region)
    assert set(template["Rules"]) == {"CheckBootstrapVersion"}
    assert not resources_of(template, "Custom::ImageDigest")
    assert stack_outputs(template)[OutputKey.IMAGE_DIGEST] == RIG.image.digest_for(region)


@pytest.mark.parametrize("where", RIG.regions)
def test_without_a_pin_every_region_runs_the_digest_its_registry_has_for_the_tag(unpinned_endpoint_templates, where):
    """The stack deploys in each of the rig's regions: the tag's digest is read there at deploy time."""
    template = unpinned_endpoint_templates[where]
    repository = f"763104351884.dkr.ecr.{where}.amazonaws.com/vllm"
    [(digest_id, resource)] = resources_of(template, "Custom::ImageDigest").items()
    assert {k: v for k, v in resource["Properties"].items() if k not in ("ServiceToken", "ServiceTimeout")} == {
        "RegistryId": "763104351884", "RepositoryName": "vllm", "ImageTag": RIG.image.tag}
    digest = {"Fn::GetAtt": [digest_id, "Digest"]}
    container = one(template, "AWS::SageMaker::Model")["Properties"]["PrimaryContainer"]
    assert container["Image"] == {"Fn::Join": ["@", [repository, digest]]}
    assert template["Outputs"][OutputKey.IMAGE_DIGEST]["Value"] == digest
    assert set(template["Rules"]) == {"CheckBootstrapVersion"} and "DeployUnpinnedImageIn" not in template["Parameters"]


@pytest.mark.parametrize("where", RIG.regions)
def test_the_digest_reader_may_only_describe_and_pull_that_one_repository(unpinned_endpoint_templates, where):
    template = unpinned_endpoint_templates[where]
    resource = one(template, "Custom::ImageDigest")
    function = template["Resources"][resource["Properties"]["ServiceToken"]["Fn::GetAtt"][0]]["Properties"]
    role = template["Resources"][function["Role"]["Fn::GetAtt"][0]]["Properties"]
    statements = [s for p in role["Policies"] for s in p["PolicyDocument"]["Statement"]]
    assert [s for s in statements if s["Action"] != ["logs:CreateLogStream", "logs:PutLogEvents"]] == [{
        "Action": ["ecr:BatchGetImage", "ecr:DescribeImages"], "Effect": "Allow", "Resource": {
            "Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, f":ecr:{where}:763104351884:repository/vllm"]]}}]
    assert "ManagedPolicyArns" not in role


def test_config_and_endpoint_are_wired_by_attributes_with_generated_names(template):
    model_id = logical_id(template, "AWS::SageMaker::Model")
    config_id = logical_id(template, "AWS::SageMaker::EndpointConfig")
    [variant] = one(template, "AWS::SageMaker::EndpointConfig")["Properties"]["ProductionVariants"]
    assert variant == {
        "VariantName": "AllTraffic", "ModelName": {"Fn::GetAtt": [model_id, "ModelName"]},
        "InitialInstanceCount": 1, "InstanceType": RIG.instance_type,
        "ContainerStartupHealthCheckTimeoutInSeconds": 1800, "ModelDataDownloadTimeoutInSeconds": 1800}
    endpoint = one(template, "AWS::SageMaker::Endpoint")["Properties"]
    assert endpoint["EndpointConfigName"] == {"Fn::GetAtt": [config_id, "EndpointConfigName"]}
    for type_, name in (("AWS::SageMaker::Model", "ModelName"), ("AWS::SageMaker::EndpointConfig", "EndpointConfigName"),
                        ("AWS::SageMaker::Endpoint", "EndpointName")):
        assert name not in one(template, type_)["Properties"], f"{type_} has a physical name"


def test_execution_role_allows_only_the_image_pull_logs_and_metrics(template, region):
    model = one(template, "AWS::SageMaker::Model")["Properties"]
    role_id = model["ExecutionRoleArn"]["Fn::GetAtt"][0]
    role = template["Resources"][role_id]["Properties"]
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"Service": "sagemaker.amazonaws.com"}
    assert "ManagedPolicyArns" not in role, "no AmazonSageMakerFullAccess or any managed policy"
    statements = {s["Sid"]: s for policy in role["Policies"] for s in policy["PolicyDocument"]["Statement"]}
    assert set(statements) == {"EcrLogin", "PullServingImage", "WriteEndpointLogs", "PutEndpointMetrics"}
    assert f":ecr:{region}:763104351884:repository/vllm" in json.dumps(statements["PullServingImage"]["Resource"])
    assert "/aws/sagemaker/Endpoints/*" in json.dumps(statements["WriteEndpointLogs"]["Resource"])
    assert statements["PutEndpointMetrics"]["Condition"] == {"StringLike": {"cloudwatch:namespace": "/aws/sagemaker/*"}}
    actions = [a for s in statements.values() for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])]
    assert all("*" not in action for action in actions)
    assert not any(a.startswith(("s3:", "sagemaker:", "iam:")) for a in actions)


def test_deploy_returns_only_after_a_chat_completion(template):
    endpoint_id = logical_id(template, "AWS::SageMaker::Endpoint")
    probe = one(template, "Custom::EndpointChatProbe")["Properties"]
    assert probe["EndpointName"] == {"Fn::GetAtt": [endpoint_id, "EndpointName"]}
    assert probe["ModelId"] == RIG.model_id
    function_id = probe["ServiceToken"]["Fn::GetAtt"][0]
    function = template["Resources"][function_id]["Properties"]
    assert int(probe["BudgetSeconds"]) < function["Timeout"] <= 900
    role = template["Resources"][function["Role"]["Fn::GetAtt"][0]]["Properties"]
    invoke = [s for p in role["Policies"] for s in p["PolicyDocument"]["Statement"]
              if s["Action"] == "sagemaker:InvokeEndpoint"]
    assert invoke == [{"Action": "sagemaker:InvokeEndpoint", "Effect": "Allow", "Resource": {"Ref": endpoint_id}}]


def test_lifetime_deletes_the_endpoint_at_a_deploy_time_deadline(template):
    endpoint_id = logical_id(template, "AWS::SageMaker::Endpoint")
    deadline = one(template, "Custom::Deadline")["Properties"]
    assert deadline["LifetimeMinutes"] == str(round(RIG.max_hours * 60))
    target = one(template, "AWS::Scheduler::Schedule")["Properties"]["Target"]
    assert target["Arn"]["Fn::Join"][1][-1] == ":scheduler:::aws-sdk:sagemaker:deleteEndpoint"
    assert target["Input"] == {"Fn::Join": ["", ['{"EndpointName":"', {"Fn::GetAtt": [endpoint_id, "EndpointName"]},
                                                 '"}']]}
    role = template["Resources"][target["RoleArn"]["Fn::GetAtt"][0]]
    policies = [p for p in resources_of(template, "AWS::IAM::Policy").values()
                if {"Ref": next(k for k, v in template["Resources"].items() if v is role)} in p["Properties"]["Roles"]]
    [statement] = [s for p in policies for s in p["Properties"]["PolicyDocument"]["Statement"]]
    assert statement["Action"] == "sagemaker:DeleteEndpoint" and statement["Resource"] == {"Ref": endpoint_id}


def test_outputs_name_the_endpoint_for_the_agent(template, region):
    outputs = Template.from_json(template)
    for key, value in {OutputKey.RIG: RIG.name, OutputKey.REGION: region, OutputKey.RUNTIME: RIG.runtime,
                       OutputKey.MODEL_ID: RIG.model_id, OutputKey.INSTANCE_TYPE: RIG.instance_type}.items():
        outputs.has_output(key, {"Value": value})
    endpoint_id = logical_id(template, "AWS::SageMaker::Endpoint")
    outputs.has_output(OutputKey.ENDPOINT_NAME, {"Value": {"Fn::GetAtt": [endpoint_id, "EndpointName"]}})
    assert OutputKey.AUTO_SCALING_GROUP not in template["Outputs"]


def test_every_resource_is_tagged_and_the_stack_is_discoverable(template, manifest):
    for type_ in ("AWS::SageMaker::Model", "AWS::SageMaker::EndpointConfig", "AWS::SageMaker::Endpoint"):
        tags = one(template, type_)["Properties"]["Tags"]
        assert {"Key": TAG_RIG, "Value": RIG.name} in tags and {"Key": TAG_MANAGED_BY, "Value": MANAGED_BY} in tags
    assert manifest["artifacts"][RIG.stack_name]["properties"]["tags"] == {TAG_MANAGED_BY: MANAGED_BY,
                                                                           TAG_RIG: RIG.name}
