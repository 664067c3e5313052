"""The per-region base stacks: network, SSM-only security group, instance profile, tags."""

from __future__ import annotations

import json

import pytest
from aws_cdk.assertions import Match, Template

from rigs.catalog.model import load_catalog
from rigs.contract import MANAGED_BY, REGIONS, TAG_MANAGED_BY, base_stack_name

CATALOG = load_catalog()
BASE_REGIONS = CATALOG.rig_regions()


def resources(template: dict, type_: str) -> dict[str, dict]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == type_}


def test_one_base_stack_per_region_that_can_host_a_rig(templates):
    base = sorted(name for name in templates if name.startswith("InferenceBase-"))
    assert base == sorted(base_stack_name(r) for r in BASE_REGIONS)
    # us-west-1 offers none of the rig instance types, so no rig lists it.
    assert "us-west-1" not in BASE_REGIONS
    assert set(BASE_REGIONS) <= set(REGIONS)


def test_base_stacks_deploy_to_their_own_region(stack_regions):
    for region in BASE_REGIONS:
        assert stack_regions[base_stack_name(region)] == region


def usable_zones(template: dict) -> tuple[str, dict]:
    [(logical_id, resource)] = resources(template, "Custom::UsableZones").items()
    return logical_id, resource["Properties"]


@pytest.mark.parametrize("region", BASE_REGIONS)
def test_network_has_a_public_subnet_in_each_zone_chosen_at_deploy_time_and_no_nat(templates, region):
    template = templates[base_stack_name(region)]
    slots = CATALOG.regions[region].availability_zones
    Template.from_json(template).resource_count_is("AWS::EC2::Subnet", slots)
    Template.from_json(template).resource_count_is("AWS::EC2::NatGateway", 0)
    logical_id, props = usable_zones(template)
    # Chosen among the zones offering this region's rig types; none named at synth.
    assert props["Slots"] == str(slots) and props["Zones"] == []
    assert props["InstanceTypes"] == sorted({r.instance_type for r in CATALOG.ec2_rigs() if region in r.regions})
    subnets = resources(template, "AWS::EC2::Subnet")
    zones = [s["Properties"]["AvailabilityZone"] for s in subnets.values()]
    # Zones resolve at deploy time from the custom resource, never from Fn::GetAZs indexes or dummy names.
    split = {"Fn::Split": [",", {"Fn::GetAtt": [logical_id, "Zones"]}]}
    assert sorted(zones, key=lambda z: z["Fn::Select"][0]) == [{"Fn::Select": [i, split]} for i in range(slots)]
    assert '"Fn::GetAZs"' not in json.dumps(template)  # as an intrinsic (the handler's docstring names it)
    assert all(s["Properties"]["MapPublicIpOnLaunch"] is True for s in subnets.values())


def test_zones_can_be_named_per_region_to_skip_a_zone_the_account_cannot_use(tmp_path):
    from tests.conftest import synth

    out = synth(tmp_path, context={"zones.us-east-1": "us-east-1c, us-east-1a"})
    template = json.loads((out / f"{base_stack_name('us-east-1')}.template.json").read_text())
    Template.from_json(template).resource_count_is("AWS::EC2::Subnet", 2)
    _, props = usable_zones(template)
    assert (props["Slots"], props["Zones"]) == ("2", ["us-east-1a", "us-east-1c"])


@pytest.mark.parametrize("context, message", [
    ({"zones.us-east-2": "us-east-1a"}, r"zones.us-east-2: 'us-east-1a' is not a zone of us-east-2"),
    ({"zones.us-east-2": "us-east-2a", "az_count.us-east-2": "2"}, r"both given: the named zones set the count"),
])
def test_bad_named_zones_are_refused_with_the_fix(tmp_path, context, message):
    from app import build_app
    from rigs.context_keys import OptionsError

    with pytest.raises(OptionsError, match=message):
        build_app(context=context, outdir=str(tmp_path))


def test_no_template_has_any_inbound_rule(templates):
    for name, template in templates.items():
        assert not resources(template, "AWS::EC2::SecurityGroupIngress"), name
        for group in resources(template, "AWS::EC2::SecurityGroup").values():
            assert not group["Properties"].get("SecurityGroupIngress"), name


@pytest.mark.parametrize("region", BASE_REGIONS)
def test_security_group_allows_only_web_egress(templates, region):
    groups = resources(templates[base_stack_name(region)], "AWS::EC2::SecurityGroup")
    assert len(groups) == 1
    egress = next(iter(groups.values()))["Properties"]["SecurityGroupEgress"]
    assert sorted((rule["IpProtocol"], rule["FromPort"], rule["ToPort"]) for rule in egress) == [
        ("tcp", 80, 80), ("tcp", 443, 443)]


@pytest.mark.parametrize("region", BASE_REGIONS)
def test_instance_role_is_ssm_core_plus_scoped_statements(templates, region):
    template = templates[base_stack_name(region)]
    Template.from_json(template).has_resource_properties("AWS::IAM::Role", {
        "AssumeRolePolicyDocument": {"Statement": [Match.object_like({
            "Principal": {"Service": "ec2.amazonaws.com"}})]},
        "ManagedPolicyArns": [{"Fn::Join": ["", Match.array_with([
            Match.string_like_regexp("iam::aws:policy/AmazonSSMManagedInstanceCore")])]}],
    })
    Template.from_json(template).resource_count_is("AWS::IAM::InstanceProfile", 1)
    statements = [s for policy in resources(template, "AWS::IAM::Policy").values()
                  for s in policy["Properties"]["PolicyDocument"]["Statement"]]
    by_sid = {s.get("Sid"): s for s in statements}
    assert by_sid["SignalOwnStack"]["Action"] == "cloudformation:SignalResource"
    assert by_sid["ReadHuggingFaceToken"]["Action"] == "secretsmanager:GetSecretValue"
    assert "secret:aws-inference/*" in str(by_sid["ReadHuggingFaceToken"]["Resource"])
    assert sorted(by_sid["WriteRigLogs"]["Action"]) == [
        "logs:CreateLogStream", "logs:DescribeLogStreams", "logs:PutLogEvents"]
    for statement in statements:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        assert all("*" not in action for action in actions), statement
        assert statement["Resource"] != "*", statement


def test_every_taggable_resource_carries_the_managed_by_tag(templates):
    taggable = ("AWS::EC2::VPC", "AWS::EC2::Subnet", "AWS::EC2::SecurityGroup", "AWS::EC2::RouteTable",
                "AWS::EC2::InternetGateway", "AWS::IAM::Role", "AWS::Logs::LogGroup", "AWS::EC2::FlowLog")
    for name, template in templates.items():
        for logical_id, resource in template["Resources"].items():
            tags = resource.get("Properties", {}).get("Tags")
            if resource["Type"] in taggable:
                assert tags is not None, f"{name}/{logical_id} has no tags"
            if tags is not None and isinstance(tags, list):
                # Auto Scaling group tags also carry PropagateAtLaunch.
                pairs = [{"Key": tag["Key"], "Value": tag["Value"]} for tag in tags]
                assert {"Key": TAG_MANAGED_BY, "Value": MANAGED_BY} in pairs, f"{name}/{logical_id}"


def test_az_count_can_be_overridden_per_region(tmp_path):
    from tests.conftest import synth

    out = synth(tmp_path, context={"az_count.us-east-1": "2"})
    template = json.loads((out / f"{base_stack_name('us-east-1')}.template.json").read_text())
    Template.from_json(template).resource_count_is("AWS::EC2::Subnet", 2)
    assert usable_zones(template)[1]["Slots"] == "2"


def test_a_bad_az_count_override_is_refused_with_the_fix(tmp_path):
    from app import build_app

    with pytest.raises(ValueError, match=r"az_count.us-east-2=.*1 to 6"):
        build_app(context={"az_count.us-east-2": "nine"}, outdir=str(tmp_path))


def test_every_stack_carries_the_managed_by_stack_tag(manifest):
    """Stack-level tags let discovery, status and sweep find every stack of ours by tag."""
    stacks = {name: artifact for name, artifact in manifest["artifacts"].items()
              if artifact["type"] == "aws:cloudformation:stack"}
    assert stacks
    for name, artifact in stacks.items():
        assert artifact["properties"].get("tags", {}).get(TAG_MANAGED_BY) == MANAGED_BY, name


@pytest.mark.parametrize("region", BASE_REGIONS)
def test_load_jobs_pass_through_a_private_encrypted_bucket_that_expires_them_and_goes_with_the_stack(templates,
                                                                                                     region):
    template = Template.from_json(templates[base_stack_name(region)])
    template.has_resource("AWS::S3::Bucket", {
        "DeletionPolicy": "Delete",
        "Properties": {
            "BucketEncryption": {"ServerSideEncryptionConfiguration": [
                {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]},
            "PublicAccessBlockConfiguration": {"BlockPublicAcls": True, "BlockPublicPolicy": True,
                                               "IgnorePublicAcls": True, "RestrictPublicBuckets": True},
            "LifecycleConfiguration": {"Rules": [Match.object_like({"ExpirationInDays": 1, "Status": "Enabled"})]}}})
    policy = json.dumps(template.find_resources("AWS::S3::BucketPolicy"))
    assert '"aws:SecureTransport": "false"' in policy and '"Effect": "Deny"' in policy
