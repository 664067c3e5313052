"""What moto (the pinned version) does that the offline tests rely on or work around.

Each test states one behaviour that docs/offline-testing.md describes. When one fails after a
moto upgrade, the behaviour changed: update that page, and drop the workaround if it is no longer
needed.
"""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.server import ThreadedMotoServer

REGION = "us-east-1"
DLAMI_PARAMETER = "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"


@pytest.fixture
def aws():
    with mock_aws():
        yield lambda service: boto3.client(service, region_name=REGION)


def error_code(call) -> str:
    with pytest.raises(ClientError) as caught:
        call()
    return caught.value.response["Error"]["Code"]


def test_service_quotas_has_no_ec2_codes_and_no_listing(aws):
    quotas = aws("service-quotas")
    assert error_code(lambda: quotas.get_service_quota(ServiceCode="ec2", QuotaCode="L-DB2E81BA")) \
        == "NoSuchResourceException"
    with pytest.raises(NotImplementedError):
        quotas.list_service_quotas(ServiceCode="ec2")


def test_pricing_is_not_implemented(aws):
    with pytest.raises(ClientError, match="Not yet implemented"):
        aws("pricing").get_products(ServiceCode="AmazonEC2")


def test_ssm_sessions_are_not_implemented(aws):
    with pytest.raises(NotImplementedError, match="start_session"):
        aws("ssm").start_session(Target="i-0123456789abcdef0")


def test_sagemaker_runtime_answers_any_endpoint_and_does_not_stream(aws):
    runtime = aws("sagemaker-runtime")
    assert runtime.invoke_endpoint(EndpointName="no-such-endpoint", Body=b"{}")["Body"].read() == b"body"
    with pytest.raises(ClientError, match="Not yet implemented"):
        runtime.invoke_endpoint_with_response_stream(EndpointName="no-such-endpoint", Body=b"{}")


def test_sagemaker_rejects_current_instance_types(aws):
    sagemaker = aws("sagemaker")
    variant = {"VariantName": "AllTraffic", "ModelName": "m", "InitialInstanceCount": 1, "InstanceType": "ml.g6.xlarge"}
    with pytest.raises(ClientError, match="ml.g6.xlarge' at 'instanceType' failed to satisfy constraint"):
        sagemaker.create_endpoint_config(EndpointConfigName="c", ProductionVariants=[variant])


def test_public_ami_parameters_are_absent_and_reserved(aws):
    ssm = aws("ssm")
    assert error_code(lambda: ssm.get_parameter(Name=DLAMI_PARAMETER)) == "ParameterNotFound"
    with pytest.raises(ClientError, match="No access to reserved parameter name"):
        ssm.put_parameter(Name=DLAMI_PARAMETER, Value="ami-12345678", Type="String")


def test_deleting_a_network_stack_fails_drops_the_stack_and_keeps_the_vpc(aws):
    cloudformation, ec2 = aws("cloudformation"), aws("ec2")
    template = {"Resources": {
        "Vpc": {"Type": "AWS::EC2::VPC", "Properties": {"CidrBlock": "10.0.0.0/16"}},
        "Gateway": {"Type": "AWS::EC2::InternetGateway"},
        "Attachment": {"Type": "AWS::EC2::VPCGatewayAttachment",
                       "Properties": {"VpcId": {"Ref": "Vpc"}, "InternetGatewayId": {"Ref": "Gateway"}}},
        "Routes": {"Type": "AWS::EC2::RouteTable", "Properties": {"VpcId": {"Ref": "Vpc"}}},
    }}
    cloudformation.create_stack(StackName="net", TemplateBody=json.dumps(template))
    with pytest.warns(UserWarning):  # moto: the error code is in neither service's model
        assert error_code(lambda: cloudformation.delete_stack(StackName="net")) == "DependencyViolation"
    assert error_code(lambda: cloudformation.describe_stacks(StackName="net")) == "ValidationError"
    assert [v for v in ec2.describe_vpcs()["Vpcs"] if not v["IsDefault"]] != []


def test_a_stack_made_through_a_change_set_has_no_outputs_or_exports(aws):
    cloudformation = aws("cloudformation")
    template = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
                "Outputs": {"TopicArn": {"Value": {"Ref": "Topic"}, "Export": {"Name": "Exported"}}}}
    cloudformation.create_change_set(StackName="by-change-set", ChangeSetName="c1", ChangeSetType="CREATE",
                                     TemplateBody=json.dumps(template))
    cloudformation.execute_change_set(StackName="by-change-set", ChangeSetName="c1")
    assert "Outputs" not in cloudformation.describe_stacks(StackName="by-change-set")["Stacks"][0]
    assert cloudformation.list_exports()["Exports"] == []
    cloudformation.create_stack(StackName="direct", TemplateBody=json.dumps(template))
    assert [o["OutputKey"] for o in cloudformation.describe_stacks(StackName="direct")["Stacks"][0]["Outputs"]] \
        == ["TopicArn"]
    assert [e["Name"] for e in cloudformation.list_exports()["Exports"]] == ["Exported"]


def test_template_urls_must_name_localhost():
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        _, port = server.get_host_and_port()
        endpoint = f"http://localhost:{port}"
        s3 = boto3.client("s3", region_name=REGION, endpoint_url=endpoint)
        s3.create_bucket(Bucket="assets")
        s3.put_object(Bucket="assets", Key="t.json", Body=json.dumps({"Resources": {"T": {"Type": "AWS::SNS::Topic"}}}))
        cloudformation = boto3.client("cloudformation", region_name=REGION, endpoint_url=endpoint)
        assert error_code(lambda: cloudformation.create_stack(
            StackName="by-ip", TemplateURL=f"http://127.0.0.1:{port}/assets/t.json")) == "NoSuchBucket"
        cloudformation.create_stack(StackName="by-name", TemplateURL=f"http://localhost:{port}/assets/t.json")
    finally:
        server.stop()


def test_ecr_keeps_a_repository_under_another_registry_id(aws):
    """The launcher's stand-in for AWS's SageMaker image registry (account 763104351884)."""
    ecr = aws("ecr")
    ecr.create_repository(repositoryName="vllm", registryId="763104351884")
    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                           "config": {"digest": "sha256:" + "0" * 64}, "layers": []})
    pushed = ecr.put_image(registryId="763104351884", repositoryName="vllm", imageManifest=manifest,
                           imageTag="t")["image"]["imageId"]["imageDigest"]
    [found] = ecr.describe_images(registryId="763104351884", repositoryName="vllm",
                                  imageIds=[{"imageTag": "t"}])["imageDetails"]
    assert found["imageDigest"] == pushed
    assert error_code(lambda: ecr.describe_images(repositoryName="vllm")) == "RepositoryNotFoundException"


CODEBUILD_PROJECT = {"Type": "AWS::CodeBuild::Project", "Properties": {
    "Artifacts": {"Type": "NO_ARTIFACTS"}, "ServiceRole": "arn:aws:iam::123456789012:role/r",
    "Environment": {"Type": "LINUX_CONTAINER", "ComputeType": "BUILD_GENERAL1_SMALL", "Image": "image"},
    "Source": {"Type": "NO_SOURCE", "BuildSpec": "version: 0.2"}}}


@pytest.mark.filterwarnings("ignore:Tried to parse AWS.+CodeBuild.+Project:UserWarning")
def test_cloudformation_makes_no_codebuild_project_a_ref_to_one_deploys_a_getatt_does_not(aws):
    cloudformation = aws("cloudformation")

    def template(value: dict) -> str:
        return json.dumps({"Resources": {"Project": CODEBUILD_PROJECT}, "Outputs": {"Out": {"Value": value}}})

    cloudformation.create_stack(StackName="by-ref", TemplateBody=template({"Ref": "Project"}))
    assert cloudformation.describe_stacks(StackName="by-ref")["Stacks"][0]["StackStatus"] == "CREATE_COMPLETE"
    assert aws("codebuild").list_projects()["projects"] == []
    with pytest.raises(AttributeError, match="has_cfn_attr"):  # the server: "Fn::GetAtt references undefined resource"
        cloudformation.create_stack(StackName="by-getatt", TemplateBody=template({"Fn::GetAtt": ["Project", "Arn"]}))


def test_a_terminated_instance_keeps_its_network_interface(aws):
    """On AWS an instance's primary interface goes with it; moto keeps it, in use, in the instance's subnet,
    so a VPC a rig ran in holds an interface without our tag after everything else is gone."""
    ec2 = aws("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.0.0/24")["Subnet"]["SubnetId"]
    instance = ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1, SubnetId=subnet,
                                 InstanceType="t3.micro")["Instances"][0]["InstanceId"]
    ec2.terminate_instances(InstanceIds=[instance])
    left = ec2.describe_network_interfaces(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["NetworkInterfaces"]
    assert [(n["Status"], n.get("TagSet", [])) for n in left] == [("in-use", [])]


def test_codebuild_finishes_a_build_when_it_is_read_and_knows_no_xlarge(aws):
    codebuild = aws("codebuild")
    project = {"name": "image", "source": {"type": "S3", "location": "bucket/key.zip"},
               "artifacts": {"type": "NO_ARTIFACTS"}, "serviceRole": "arn:aws:iam::123456789012:role/r"}
    assert error_code(lambda: codebuild.create_project(**project, environment={
        "type": "ARM_CONTAINER", "image": "x", "computeType": "BUILD_GENERAL1_XLARGE"})) == "InvalidInputException"
    codebuild.create_project(**project, environment={"type": "ARM_CONTAINER", "image": "x",
                                                     "computeType": "BUILD_GENERAL1_LARGE"})
    build = codebuild.start_build(projectName="image")["build"]
    assert build["buildStatus"] == "IN_PROGRESS"
    assert codebuild.batch_get_builds(ids=[build["id"]])["builds"][0]["buildStatus"] == "SUCCEEDED"


def test_there_is_no_free_tier_api():
    from moto.backends import list_of_moto_modules

    assert "freetier" not in set(list_of_moto_modules())
