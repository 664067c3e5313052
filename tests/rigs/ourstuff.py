"""Builds a small estate in moto: resources tagged ours in several regions, and look-alikes without our tag."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import boto3

from rigs.contract import MANAGED_BY, TAG_MANAGED_BY, TAG_RIG

OURS = [{"Key": TAG_MANAGED_BY, "Value": MANAGED_BY}]
ROLE_ARN = "arn:aws:iam::123456789012:role/sm"

def stack_template(name: str) -> str:
    return json.dumps({
        "Resources": {"Param": {"Type": "AWS::SSM::Parameter",
                                "Properties": {"Name": f"/test/{name}", "Type": "String", "Value": "x"}}},
        "Outputs": {"RigName": {"Value": "g6"}},
    })


@dataclass
class Estate:
    ours: dict[str, list[str]] = field(default_factory=dict)
    foreign: dict[str, list[str]] = field(default_factory=dict)

    def add(self, bucket: str, region: str, kind: str, ident: str) -> None:
        getattr(self, bucket).setdefault(region, []).append(f"{kind}:{ident}")


def tags(rig: str | None = None, extra: list[dict] | None = None) -> list[dict]:
    out = list(OURS)
    if rig:
        out.append({"Key": TAG_RIG, "Value": rig})
    return out + (extra or [])


def build(regions=("us-east-2", "us-west-2")) -> Estate:
    estate = Estate()
    for region in regions:
        ec2 = boto3.client("ec2", region_name=region)
        # ours: a running g6 instance with a tagged volume, a launch template, an ASG
        instance = ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1, InstanceType="g6.xlarge",
                                     TagSpecifications=[{"ResourceType": "instance", "Tags": tags("g6")}])
        estate.add("ours", region, "instance", instance["Instances"][0]["InstanceId"])
        volume = ec2.create_volume(AvailabilityZone=f"{region}a", Size=100, VolumeType="gp3",
                                   TagSpecifications=[{"ResourceType": "volume", "Tags": tags("g6")}])
        estate.add("ours", region, "volume", volume["VolumeId"])
        template = ec2.create_launch_template(
            LaunchTemplateName=f"ours-{region}", LaunchTemplateData={"ImageId": "ami-12c6146b",
                                                                     "InstanceType": "inf2.xlarge"},
            TagSpecifications=[{"ResourceType": "launch-template", "Tags": tags("inf2")}])
        estate.add("ours", region, "launch-template", template["LaunchTemplate"]["LaunchTemplateId"])
        autoscaling = boto3.client("autoscaling", region_name=region)
        autoscaling.create_auto_scaling_group(
            AutoScalingGroupName=f"ours-asg-{region}", MinSize=1, MaxSize=1, DesiredCapacity=1,
            LaunchTemplate={"LaunchTemplateId": template["LaunchTemplate"]["LaunchTemplateId"]},
            AvailabilityZones=[f"{region}a"],
            Tags=[{"Key": t["Key"], "Value": t["Value"], "PropagateAtLaunch": True} for t in tags("inf2")])
        estate.add("ours", region, "asg", f"ours-asg-{region}")
        # ours: SageMaker model, config, endpoint
        sm = boto3.client("sagemaker", region_name=region)
        sm_tags = [{"Key": t["Key"], "Value": t["Value"]} for t in tags("sagemaker")]
        sm.create_model(ModelName=f"ours-model-{region}", ExecutionRoleArn=ROLE_ARN,
                        PrimaryContainer={"Image": "img"}, Tags=sm_tags)
        sm.create_endpoint_config(EndpointConfigName=f"ours-config-{region}", Tags=sm_tags, ProductionVariants=[{
            "VariantName": "AllTraffic", "ModelName": f"ours-model-{region}", "InstanceType": "ml.m5.large",
            "InitialInstanceCount": 1}])
        sm.create_endpoint(EndpointName=f"ours-endpoint-{region}", EndpointConfigName=f"ours-config-{region}",
                           Tags=sm_tags)
        estate.add("ours", region, "endpoint", f"ours-endpoint-{region}")
        # ours: ECR repository, CloudFormation stack
        ecr = boto3.client("ecr", region_name=region)
        ecr.create_repository(repositoryName=f"ours-repo-{region}",
                              tags=[{"Key": TAG_MANAGED_BY, "Value": MANAGED_BY}])
        estate.add("ours", region, "repository", f"ours-repo-{region}")
        cfn = boto3.client("cloudformation", region_name=region)
        cfn.create_stack(StackName="InferenceG6", TemplateBody=stack_template("ours"), Tags=tags("g6"))
        estate.add("ours", region, "stack", "InferenceG6")

        # not ours: same kinds, no ManagedBy tag (or another value)
        other = ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1, InstanceType="g6.xlarge",
                                  TagSpecifications=[{"ResourceType": "instance", "Tags": [
                                      {"Key": TAG_MANAGED_BY, "Value": "someone-else"}]}])
        estate.add("foreign", region, "instance", other["Instances"][0]["InstanceId"])
        volume = ec2.create_volume(AvailabilityZone=f"{region}a", Size=10)
        estate.add("foreign", region, "volume", volume["VolumeId"])
        sm.create_model(ModelName=f"their-model-{region}", ExecutionRoleArn=ROLE_ARN, PrimaryContainer={"Image": "i"})
        sm.create_endpoint_config(EndpointConfigName=f"their-config-{region}", ProductionVariants=[{
            "VariantName": "AllTraffic", "ModelName": f"their-model-{region}", "InstanceType": "ml.m5.large",
            "InitialInstanceCount": 1}])
        sm.create_endpoint(EndpointName=f"their-endpoint-{region}", EndpointConfigName=f"their-config-{region}")
        estate.add("foreign", region, "endpoint", f"their-endpoint-{region}")
        ecr.create_repository(repositoryName=f"their-repo-{region}")
        estate.add("foreign", region, "repository", f"their-repo-{region}")
        cfn.create_stack(StackName="TheirStack", TemplateBody=stack_template("theirs"))
        estate.add("foreign", region, "stack", "TheirStack")
    return estate


def foreign_still_there(estate: Estate) -> None:
    """Assert every resource without our tag is untouched."""
    for region, items in estate.foreign.items():
        ec2 = boto3.client("ec2", region_name=region)
        sm = boto3.client("sagemaker", region_name=region)
        for item in items:
            kind, ident = item.split(":", 1)
            if kind == "instance":
                state = ec2.describe_instances(InstanceIds=[ident])["Reservations"][0]["Instances"][0]["State"]
                assert state["Name"] == "running", item
            elif kind == "volume":
                assert ec2.describe_volumes(VolumeIds=[ident])["Volumes"], item
            elif kind == "endpoint":
                assert sm.describe_endpoint(EndpointName=ident)["EndpointStatus"] == "InService", item
            elif kind == "repository":
                boto3.client("ecr", region_name=region).describe_repositories(repositoryNames=[ident])
            elif kind == "stack":
                status = boto3.client("cloudformation", region_name=region).describe_stacks(
                    StackName=ident)["Stacks"][0]["StackStatus"]
                assert status == "CREATE_COMPLETE", item
