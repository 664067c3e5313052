"""Sweep against moto: only what carries our tag, in dependency order, waited for, safe to run twice."""

from __future__ import annotations

import boto3
from moto import mock_aws

from rigs.catalog.pricing import PriceBook
from rigs.cli import main
from rigs.estate import inventory, resources
from rigs.estate.sweep import Sweeper

from tests.rigs import ourstuff


def kinds(inv, region=None):
    return sorted({(r.region, r.kind) for r in inv.resources if region is None or r.region == region})


def test_sweep_without_yes_only_lists(moto_estate, capsys):
    assert main(["sweep"]) == 0
    out = capsys.readouterr().out
    assert "still billing:" in out and "nothing deleted: pass --yes" in out
    # everything is still there
    assert boto3.client("cloudformation", region_name="us-east-2").describe_stacks(StackName="InferenceG6")


def test_sweep_yes_deletes_ours_in_order_and_leaves_theirs(moto_estate, capsys):
    assert main(["sweep", "--yes", "--max-wait", "1"]) == 0
    out = capsys.readouterr().out
    assert "left: nothing of ours" in out
    after = inventory.discover(boto3.Session(region_name="us-east-1"), prices=PriceBook())
    assert [r for r in after.resources if not r.kept_by_default] == []
    ourstuff.foreign_still_there(moto_estate)
    # the stack was deleted before the resources outside it (dependency order)
    lines = out.splitlines()
    stack_line = next(i for i, l in enumerate(lines) if "us-east-2: deleting stack InferenceG6" in l)
    instance_line = next(i for i, l in enumerate(lines) if l.startswith("us-east-2: terminating"))
    assert stack_line < instance_line
    # safe to run twice
    assert main(["sweep", "--yes", "--max-wait", "1"]) == 0
    assert "left: nothing of ours" in capsys.readouterr().out
    ourstuff.foreign_still_there(moto_estate)


def test_sweep_one_region_only(moto_estate, capsys):
    assert main(["sweep", "--yes", "--regions", "us-west-2", "--max-wait", "1"]) == 0
    after = inventory.discover(boto3.Session(region_name="us-east-1"), prices=PriceBook())
    regions = {r.region for r in after.resources if not r.kept_by_default}
    assert regions == {"us-east-2"}


def test_endpoint_still_creating_is_waited_for(moto_estate):
    from moto.sagemaker.models import sagemaker_backends

    endpoint = sagemaker_backends["123456789012"]["us-east-2"].endpoints["ours-endpoint-us-east-2"]
    endpoint.endpoint_status = "Creating"
    said = []

    def sleep(_seconds):  # SageMaker finishes creating while we wait
        endpoint.endpoint_status = "InService"

    sweeper = Sweeper(boto3.Session(region_name="us-east-1"), ["us-east-2"], max_wait=60, say=said.append,
                      poll=1, sleep=sleep)
    result = sweeper.run()
    assert result.clean(everything=False)
    assert any("is Creating; SageMaker refuses to delete" in line for line in said)
    assert any("is InService now; deleting it" in line for line in said)


def test_endpoint_still_creating_past_the_wait_tells_when_to_rerun(moto_estate, capsys):
    from moto.sagemaker.models import sagemaker_backends

    sagemaker_backends["123456789012"]["us-east-2"].endpoints["ours-endpoint-us-east-2"].endpoint_status = "Creating"
    assert main(["sweep", "--yes", "--regions", "us-east-2", "--max-wait", "0"]) == 1
    out = capsys.readouterr().out
    assert "still Creating; rerun `python -m rigs sweep --yes` after" in out
    # the endpoint, and what it needs, are still there; the rest of ours is gone
    after = inventory.discover(boto3.Session(region_name="us-east-1"), ["us-east-2"], prices=PriceBook())
    left = {(r.kind, r.name or r.id) for r in after.resources if not r.kept_by_default}
    assert (resources.ENDPOINT, "ours-endpoint-us-east-2") in left
    assert not after.of_kind(resources.INSTANCE)


def test_sweep_all_removes_the_network_and_iam_of_ours_only(monkeypatch, capsys):
    monkeypatch.setattr("rigs.aws.time.sleep", lambda _s: None)
    with mock_aws():
        monkeypatch.setattr("rigs.cli._session", lambda args: boto3.Session(region_name="us-east-1"))
        ec2 = boto3.client("ec2", region_name="us-west-2")
        vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16",
                             TagSpecifications=[{"ResourceType": "vpc", "Tags": ourstuff.OURS}])["Vpc"]["VpcId"]
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.9.0.0/24", TagSpecifications=[
            {"ResourceType": "subnet", "Tags": ourstuff.OURS}])["Subnet"]["SubnetId"]
        gateway = ec2.create_internet_gateway(TagSpecifications=[
            {"ResourceType": "internet-gateway", "Tags": ourstuff.OURS}])["InternetGateway"]["InternetGatewayId"]
        ec2.attach_internet_gateway(InternetGatewayId=gateway, VpcId=vpc)
        table = ec2.create_route_table(VpcId=vpc, TagSpecifications=[
            {"ResourceType": "route-table", "Tags": ourstuff.OURS}])["RouteTable"]["RouteTableId"]
        ec2.associate_route_table(RouteTableId=table, SubnetId=subnet)
        group = ec2.create_security_group(GroupName="ssm-only", Description="d", VpcId=vpc, TagSpecifications=[
            {"ResourceType": "security-group", "Tags": ourstuff.OURS}])["GroupId"]
        their_vpc = ec2.create_vpc(CidrBlock="10.8.0.0/16")["Vpc"]["VpcId"]
        iam = boto3.client("iam")
        iam.create_role(RoleName="InferenceBase-us-west-2-RigRole", AssumeRolePolicyDocument="{}",
                        Tags=ourstuff.OURS)
        iam.create_instance_profile(InstanceProfileName="InferenceBase-us-west-2-Profile")
        iam.add_role_to_instance_profile(InstanceProfileName="InferenceBase-us-west-2-Profile",
                                         RoleName="InferenceBase-us-west-2-RigRole")
        iam.create_role(RoleName="InferenceSomethingElse", AssumeRolePolicyDocument="{}")  # not tagged: kept
        cfn = boto3.client("cloudformation", region_name="us-west-2")
        cfn.create_stack(StackName="InferenceBase-us-west-2", TemplateBody=ourstuff.stack_template("base"),
                         Tags=ourstuff.OURS)

        assert main(["sweep", "--yes", "--regions", "us-west-2", "--max-wait", "1"]) == 0
        out = capsys.readouterr().out
        assert "kept without --all" in out
        assert ec2.describe_vpcs(VpcIds=[vpc])["Vpcs"]  # kept without --all
        assert cfn.describe_stacks(StackName="InferenceBase-us-west-2")["Stacks"]  # the base stack too
        assert main(["sweep", "--yes", "--all", "--regions", "us-west-2", "--max-wait", "1"]) == 0
        out = capsys.readouterr().out
        assert "left: nothing of ours" in out, out
        assert [v["VpcId"] for v in ec2.describe_vpcs()["Vpcs"] if v["VpcId"] in (vpc, their_vpc)] == [their_vpc]
        assert not [g for g in ec2.describe_security_groups()["SecurityGroups"] if g["GroupId"] == group]
        roles = [r["RoleName"] for r in iam.list_roles()["Roles"]]
        assert "InferenceBase-us-west-2-RigRole" not in roles and "InferenceSomethingElse" in roles
        assert not iam.list_instance_profiles()["InstanceProfiles"]
        assert "us-west-2: stack InferenceBase-us-west-2 deleted" in out


def test_sweep_all_keeps_a_vpc_of_ours_that_holds_an_interface_without_our_tag(monkeypatch, capsys):
    """As on AWS, where an interface someone else made keeps the VPC: the sweep says which, and exits 1."""
    monkeypatch.setattr("rigs.aws.time.sleep", lambda _s: None)
    with mock_aws():
        monkeypatch.setattr("rigs.cli._session", lambda args: boto3.Session(region_name="us-east-1"))
        ec2 = boto3.client("ec2", region_name="us-east-1")
        vpc = ec2.create_vpc(CidrBlock="10.7.0.0/16",
                             TagSpecifications=[{"ResourceType": "vpc", "Tags": ourstuff.OURS}])["Vpc"]["VpcId"]
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.7.0.0/24", TagSpecifications=[
            {"ResourceType": "subnet", "Tags": ourstuff.OURS}])["Subnet"]["SubnetId"]
        interface = ec2.create_network_interface(SubnetId=subnet)["NetworkInterface"]["NetworkInterfaceId"]

        assert main(["sweep", "--yes", "--all", "--regions", "us-east-1", "--max-wait", "1"]) == 1
        out = capsys.readouterr().out
        assert f"us-east-1: vpc {vpc} kept: it holds {interface} without our tag" in out, out
        assert ec2.describe_vpcs(VpcIds=[vpc])["Vpcs"]
        assert ec2.describe_network_interfaces(NetworkInterfaceIds=[interface])["NetworkInterfaces"]


def test_a_swept_rig_is_forgotten_by_the_placement_only_where_it_was_swept(moto_estate, capsys, tmp_path, monkeypatch):
    from rigs.placement import placement

    monkeypatch.setenv(placement.STATE_DIR_ENV, str(tmp_path))
    placement.record_deployed("g6", "us-west-2", ("us-west-2a",), "InferenceG6")
    assert main(["sweep", "--yes", "--regions", "us-east-2", "--max-wait", "1"]) == 0
    assert placement.load().deployed_region("g6") == "us-west-2"  # its region was not swept
    assert main(["sweep", "--yes", "--regions", "us-west-2", "--max-wait", "1"]) == 0
    assert "placement: g6 is gone; its record in" in capsys.readouterr().out
    assert placement.load().deployed_region("g6") is None


def running_builds_in_moto(monkeypatch, region: str = "us-east-1") -> dict[str, str]:
    """A g5g image build of ours still running after its project was deleted (the stack's deletion, before the
    handler stopped builds), and a build of someone else's. moto finishes every build the moment it is read
    (``batch_get_builds``), so reads here show each build as it stands: running until stopped."""
    from datetime import timedelta

    from moto.codebuild.models import CodeBuildBackend, codebuild_backends
    from moto.core.utils import iso_8601_datetime_with_milliseconds

    from kit import utc

    monkeypatch.setattr(CodeBuildBackend, "batch_get_builds", lambda self, ids: [
        b for history in self.build_metadata_history.values() for b in history if b["id"] in ids])
    codebuild = boto3.client("codebuild", region_name=region)
    ids = {}
    for project, group, tags in (("ProjectC78D97AD-ab12", "/aws-inference/image-build/aws-inference/vllm-sm75",
                                  [{"key": "ManagedBy", "value": "aws-inference"}]),
                                 ("their-project", "/their/builds", [])):
        codebuild.create_project(name=project, source={"type": "S3", "location": "bucket/recipe.zip"},
                                 artifacts={"type": "NO_ARTIFACTS"}, serviceRole="arn:aws:iam::123456789012:role/cb",
                                 environment={"type": "ARM_CONTAINER", "image": "x",  # moto knows no XLARGE
                                              "computeType": "BUILD_GENERAL1_LARGE"}, tags=tags)
        build = codebuild.start_build(projectName=project)["build"]["id"]
        metadata = codebuild_backends["123456789012"][region].build_metadata_history[project][-1]
        metadata["logs"]["groupName"] = group
        metadata["environment"].update(type="ARM_CONTAINER", computeType="BUILD_GENERAL1_XLARGE")
        metadata["startTime"] = iso_8601_datetime_with_milliseconds(utc.now() - timedelta(minutes=90))
        ids[project] = build
    codebuild.delete_project(name="ProjectC78D97AD-ab12")
    return ids


def test_status_lists_a_build_of_ours_running_after_its_project_was_deleted(monkeypatch):
    monkeypatch.setattr("rigs.aws.time.sleep", lambda _s: None)
    with mock_aws():
        ids = running_builds_in_moto(monkeypatch)
        found = inventory.discover(boto3.Session(region_name="us-east-1"), ["us-east-1"], PriceBook(),
                                   include_iam=False)
        (build,) = found.of_kind(resources.RUNNING_BUILD)
        assert build.id == ids["ProjectC78D97AD-ab12"] and build.billing
        assert build.detail.startswith("project ProjectC78D97AD-ab12 (deleted: it runs on), running 90 min since ")
        assert build.detail.endswith("cost so far unknown")  # prices.yaml has no CodeBuild price
        assert "no per-unit price for 'codebuild-arm1.xlarge'" in build.price_note


def test_sweep_stops_a_build_of_ours_and_leaves_theirs_running(monkeypatch, capsys):
    monkeypatch.setattr("rigs.aws.time.sleep", lambda _s: None)
    with mock_aws():
        monkeypatch.setattr("rigs.cli._session", lambda args: boto3.Session(region_name="us-east-1"))
        ids = running_builds_in_moto(monkeypatch)
        assert main(["sweep", "--yes", "--regions", "us-east-1", "--max-wait", "1"]) == 0
        out = capsys.readouterr().out
        assert f"us-east-1: stopping codebuild-build {ids['ProjectC78D97AD-ab12']}" in out
        assert f"us-east-1: codebuild-build {ids['ProjectC78D97AD-ab12']} stopped" in out
        codebuild = boto3.client("codebuild", region_name="us-east-1")
        status = {b["projectName"]: b["buildStatus"] for b in codebuild.batch_get_builds(ids=list(ids.values()))["builds"]}
        assert status == {"ProjectC78D97AD-ab12": "STOPPED", "their-project": "IN_PROGRESS"}


def test_every_kind_status_lists_is_one_the_sweep_deletes():
    """A kind added to the table is swept too: stacks in their waves, every other kind in SWEEP_ORDER."""
    from rigs.estate import kinds

    assert sorted(k.name for k in kinds.SWEEP_ORDER) == sorted(k.name for k in kinds.TABLE if k.name != resources.STACK)
    assert [k.name for k in kinds.TABLE if k.delete is None and k.together is None] == []
