"""The EC2 rig stacks: what each launches, how it signals readiness, and what it never opens."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

import pytest
from aws_cdk.assertions import Match, Template

from rigs.catalog.model import load_catalog
from rigs.catalog.runtimes import runtime
from rigs.contract import HF_TOKEN_SECRET, MANAGED_BY, TAG_MANAGED_BY, TAG_RIG, OutputKey, base_stack_name
from rigs.userdata import USER_DATA_LIMIT_BYTES, load_generator
from stacks.parts.rig_instance_group import LAUNCH_BUDGET
from tests.contract.templates import WAIT_HANDLE_URL
from tests.contract.templates import boot_environment
from tests.contract.templates import boot_scripts_text
from tests.contract.templates import rig_environment
from tests.contract.templates import one
from tests.contract.templates import resources_of
from tests.contract.templates import user_data_script

CATALOG = load_catalog()
EC2_RIGS = CATALOG.ec2_rigs()
SHELLCHECK = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "shellcheck"


def rig_template(templates: dict, name: str) -> dict:
    return templates[CATALOG.get(name).stack_name]


def ecr_policies(template: dict) -> dict[str, dict]:
    """IAM policies of the stack that grant ECR access."""
    return {k: v for k, v in resources_of(template, "AWS::IAM::Policy").items()
            if any(str(s["Action"]).startswith("ecr:") for s in v["Properties"]["PolicyDocument"]["Statement"])}


@pytest.mark.parametrize("rig", EC2_RIGS, ids=lambda r: r.name)
def test_rig_stack_deploys_to_the_first_catalog_region_by_default(stack_regions, rig):
    assert stack_regions[rig.stack_name] == rig.regions[0]


@pytest.mark.parametrize("rig", EC2_RIGS, ids=lambda r: r.name)
def test_launch_template_has_the_catalog_type_ami_parameter_imdsv2_and_encrypted_root(templates, rig):
    template = rig_template(templates, rig.name)
    data = one(template, "AWS::EC2::LaunchTemplate")["Properties"]["LaunchTemplateData"]
    assert data["InstanceType"] == rig.instance_type
    parameter = template["Parameters"][data["ImageId"]["Ref"]]
    assert parameter["Type"] == "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>"
    assert parameter["Default"] == rig.ami_ssm_parameter
    assert data["MetadataOptions"] == {"HttpEndpoint": "enabled", "HttpTokens": "required"}
    # The root volume and its device come from the AMI at deploy time (Custom::RootVolume).
    [(volume_id, volume)] = resources_of(template, "Custom::RootVolume").items()
    assert data["BlockDeviceMappings"] == [{"DeviceName": {"Fn::GetAtt": [volume_id, "DeviceName"]}, "Ebs": {
        "DeleteOnTermination": True, "Encrypted": True, "VolumeSize": {"Fn::GetAtt": [volume_id, "VolumeSize"]},
        "VolumeType": "gp3"}}]
    assert {k: v for k, v in volume["Properties"].items() if k not in ("ServiceToken", "ServiceTimeout")} == {
        "ImageId": data["ImageId"], "Architecture": rig.architecture,
        "MinimumGiB": str(rig.root_volume_gib), "FreeGiB": str(rig.root_free_gib)}
    assert "KeyName" not in data and "NetworkInterfaces" not in data


@pytest.mark.parametrize("rig", EC2_RIGS, ids=lambda r: r.name)
def test_instance_and_its_volumes_carry_the_rig_tags(templates, rig):
    data = one(rig_template(templates, rig.name), "AWS::EC2::LaunchTemplate")["Properties"]["LaunchTemplateData"]
    specs = {spec["ResourceType"]: {t["Key"]: t["Value"] for t in spec["Tags"]} for spec in data["TagSpecifications"]}
    expected = {TAG_MANAGED_BY: MANAGED_BY, TAG_RIG: rig.name, "Name": f"{MANAGED_BY}-{rig.name}"}
    assert specs["instance"] == expected
    assert specs["volume"] == expected


@pytest.mark.parametrize("rig", EC2_RIGS, ids=lambda r: r.name)
def test_one_instance_group_waits_for_the_ready_signal_from_its_launch_on(templates, rig):
    template = rig_template(templates, rig.name)
    groups = resources_of(template, "AWS::AutoScaling::AutoScalingGroup")
    assert len(groups) == 1
    logical_id, group = next(iter(groups.items()))
    props = group["Properties"]
    assert (props["MinSize"], props["MaxSize"], props["DesiredCapacity"]) == ("1", "1", "1")
    seconds = rig.ready_timeout_minutes * 60
    launch_budget = int(LAUNCH_BUDGET.to_seconds())
    # The creation policy covers the launch and the readiness (it is what updates wait for).
    assert group["CreationPolicy"]["ResourceSignal"] == {"Count": 1, "Timeout": f"PT{launch_budget + seconds}S"}
    assert group["UpdatePolicy"] == {"AutoScalingReplacingUpdate": {"WillReplace": True}}
    assert {"Key": TAG_RIG, "Value": rig.name, "PropagateAtLaunch": True} in props["Tags"]
    # The readiness wait starts when the launch watch has seen the instance in service.
    [(watch_id, watch)] = resources_of(template, "Custom::LaunchWatch").items()
    wait = one(template, "AWS::CloudFormation::WaitCondition")
    assert wait["DependsOn"] == [watch_id]
    assert wait["Properties"]["Count"] == 1 and wait["Properties"]["Timeout"] == str(seconds)
    template_id = props["LaunchTemplate"]["LaunchTemplateId"]["Ref"]
    [(offered_id, _)] = resources_of(template, "Custom::OfferedSubnets").items()
    assert {k: v for k, v in watch["Properties"].items() if k not in ("ServiceToken", "ServiceTimeout")} == {
        "TagKey": TAG_RIG, "TagValue": rig.name, "LaunchTemplateId": {"Ref": template_id},
        "LaunchTemplateVersion": {"Fn::GetAtt": [template_id, "LatestVersionNumber"]},
        "Zones": {"Fn::GetAtt": [offered_id, "Zones"]}, "BudgetSeconds": str(launch_budget)}
    # It never references the group (it must run while the group waits for its signal).
    assert logical_id not in json.dumps(watch)
    # The boot script gives up five minutes before the wait condition does, with its reason.
    env = boot_environment(user_data_script(template))
    assert env["RIG_SIGNAL_RESOURCE"] == logical_id
    assert env["RIG_STACK"] == rig.stack_name
    assert env["RIG_WAIT_HANDLE"] == WAIT_HANDLE_URL
    assert env["RIG_READY_TIMEOUT_SECONDS"] == str(seconds)


@pytest.mark.parametrize("rig", EC2_RIGS, ids=lambda r: r.name)
def test_group_launches_only_in_subnets_whose_zone_offers_the_type(templates, stack_regions, rig):
    template = rig_template(templates, rig.name)
    region = stack_regions[rig.stack_name]
    offered = one(template, "Custom::OfferedSubnets")
    props = offered["Properties"]
    assert props["InstanceType"] == rig.instance_type
    assert props["AllowedZones"] == []
    assert len(props["SubnetIds"]) == CATALOG.regions[region].availability_zones
    assert all(s["Fn::GetStackOutput"]["StackName"] == base_stack_name(region) for s in props["SubnetIds"])
    logical_id = next(k for k, v in template["Resources"].items() if v is offered)
    group = one(template, "AWS::AutoScaling::AutoScalingGroup")["Properties"]
    assert group["VPCZoneIdentifier"] == {"Fn::Split": [",", {"Fn::GetAtt": [logical_id, "SubnetIds"]}]}


@pytest.mark.parametrize("rig", EC2_RIGS, ids=lambda r: r.name)
def test_rig_opens_no_port_and_uses_the_base_security_group_and_profile(templates, stack_regions, rig):
    template = rig_template(templates, rig.name)
    assert not resources_of(template, "AWS::EC2::SecurityGroup")
    assert not resources_of(template, "AWS::EC2::SecurityGroupIngress")
    data = one(template, "AWS::EC2::LaunchTemplate")["Properties"]["LaunchTemplateData"]
    base = base_stack_name(stack_regions[rig.stack_name])
    [group] = data["SecurityGroupIds"]
    assert group["Fn::GetStackOutput"]["StackName"] == base and "SsmOnly" in group["Fn::GetStackOutput"]["OutputName"]
    profile = data["IamInstanceProfile"]["Arn"]["Fn::GetStackOutput"]
    assert profile["StackName"] == base and "InstanceProfile" in profile["OutputName"]


@pytest.mark.parametrize("rig", EC2_RIGS, ids=lambda r: r.name)
def test_server_is_published_on_loopback_at_the_catalog_port(templates, assembly_dir, rig):
    template = rig_template(templates, rig.name)
    env = rig_environment(template, assembly_dir)
    assert env["RIG_PORT"] == str(rig.port)
    assert env["RIG_CONTAINER_PORT"] == str(runtime(rig.runtime).boot.container_port)
    assert '-p "127.0.0.1:$RIG_PORT:$RIG_CONTAINER_PORT"' in boot_scripts_text(template, assembly_dir)


@pytest.mark.parametrize("rig", EC2_RIGS, ids=lambda r: r.name)
def test_user_data_is_within_4_kb_and_it_and_the_boot_scripts_are_shellcheck_clean(templates, assembly_dir, rig,
                                                                                    tmp_path):
    template = rig_template(templates, rig.name)
    script = user_data_script(template)
    assert len(script.encode()) <= USER_DATA_LIMIT_BYTES == 4096
    for name, text in (("user-data.sh", script), ("boot-scripts.sh", boot_scripts_text(template, assembly_dir))):
        path = tmp_path / name
        path.write_text(text)
        result = subprocess.run([str(SHELLCHECK), str(path)], capture_output=True, text=True)
        assert result.returncode == 0, result.stdout


@pytest.mark.parametrize("rig", EC2_RIGS, ids=lambda r: r.name)
def test_the_user_data_checks_the_staged_boot_scripts_hash_and_the_role_reads_only_that_object(templates,
                                                                                               assembly_dir, rig):
    template = rig_template(templates, rig.name)
    env = boot_environment(user_data_script(template))
    staged = boot_scripts_text(template, assembly_dir).encode()  # what `cdk deploy` uploads
    assert env["RIG_BOOT_SCRIPTS_SHA256"] == hashlib.sha256(staged).hexdigest()
    assert env["RIG_BOOT_SCRIPTS_URL"].startswith("s3://cdk-hnb659fds-assets-123456789012-")
    key = env["RIG_BOOT_SCRIPTS_URL"].rsplit("/", 1)[1]
    [(policy_id, policy)] = [(k, v) for k, v in resources_of(template, "AWS::IAM::Policy").items()
                             if "ReadBootScripts" in json.dumps(v)]
    [statement] = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Action"] == "s3:GetObject"
    assert json.dumps(statement["Resource"]).endswith(f'/{key}"]]}}')  # the one object, no wildcard
    assert "*" not in json.dumps(statement["Resource"])
    assert policy_id in one(template, "AWS::AutoScaling::AutoScalingGroup")["DependsOn"]


def test_every_policy_on_the_shared_role_has_its_own_name(templates):
    """The rigs of a region share the base stack's role; two inline policies of one name would be one policy."""
    def role(stack: str, roles: list) -> str:  # the base stack whose role it is
        return roles[0]["Fn::GetStackOutput"]["StackName"] if "Fn::GetStackOutput" in roles[0] else stack

    named = [(role(stack, policy["Properties"]["Roles"]), policy["Properties"]["PolicyName"])
             for stack, template in templates.items()
             for policy in resources_of(template, "AWS::IAM::Policy").values()
             if "InstanceRole" in json.dumps(policy["Properties"]["Roles"])]
    assert len(named) > len(EC2_RIGS) and len(set(named)) == len(named), named


@pytest.mark.parametrize("rig", EC2_RIGS, ids=lambda r: r.name)
def test_hugging_face_token_is_named_never_embedded(templates, assembly_dir, rig):
    template = rig_template(templates, rig.name)
    script = user_data_script(template)
    assert boot_environment(script)["RIG_HF_TOKEN_SECRET"] == HF_TOKEN_SECRET
    commands = [line.strip() for line in (script + boot_scripts_text(template, assembly_dir)).splitlines()
                if not line.strip().startswith("#")]
    assert not [c for c in commands if re.match(r"set\s+(-\w*x|-o\s+xtrace)", c)], "tracing would print the token"
    assert not re.search(r"hf_[A-Za-z0-9]{20,}", json.dumps(template)), "a Hugging Face token in the template"
    assert not resources_of(template, "AWS::SecretsManager::Secret")


@pytest.mark.parametrize("rig", EC2_RIGS, ids=lambda r: r.name)
def test_logs_go_to_a_rig_log_group_that_is_deleted_with_the_stack(templates, assembly_dir, rig):
    template = rig_template(templates, rig.name)
    groups = {v["Properties"].get("LogGroupName"): v for v in resources_of(template, "AWS::Logs::LogGroup").values()}
    group = groups[f"/aws-inference/{rig.name}"]
    assert group["Properties"]["RetentionInDays"] == 14
    assert group["DeletionPolicy"] == "Delete"
    assert all(g["Properties"].get("RetentionInDays") for g in groups.values())
    script = user_data_script(template)
    assert boot_environment(script)["RIG_LOG_GROUP"] == f"/aws-inference/{rig.name}"
    assert "--log-driver awslogs" in boot_scripts_text(template, assembly_dir)


@pytest.mark.parametrize("rig", EC2_RIGS, ids=lambda r: r.name)
def test_lifetime_scales_the_group_to_zero_at_a_deploy_time_deadline(templates, rig):
    template = rig_template(templates, rig.name)
    deadline_id, deadline = next(iter(resources_of(template, "Custom::Deadline").items()))
    assert deadline["Properties"]["LifetimeMinutes"] == str(round(rig.max_hours * 60))
    schedule = one(template, "AWS::Scheduler::Schedule")["Properties"]
    assert schedule["ScheduleExpression"] == {"Fn::Join": ["", ["at(", {"Fn::GetAtt": [deadline_id, "At"]}, ")"]]}
    assert schedule["ScheduleExpressionTimezone"] == "Etc/UTC"
    target = schedule["Target"]
    assert target["Arn"]["Fn::Join"][1][-1] == ":scheduler:::aws-sdk:autoscaling:updateAutoScalingGroup"
    group_id = next(iter(resources_of(template, "AWS::AutoScaling::AutoScalingGroup")))
    assert target["Input"] == {"Fn::Join": ["", ['{"AutoScalingGroupName":"', {"Ref": group_id},
                                                 '","MinSize":0,"MaxSize":0,"DesiredCapacity":0}']]}
    assert target["RetryPolicy"]["MaximumRetryAttempts"] > 0


@pytest.mark.parametrize("rig", EC2_RIGS, ids=lambda r: r.name)
def test_outputs_tell_the_agent_how_to_reach_the_rig(templates, stack_regions, rig):
    template = Template.from_json(rig_template(templates, rig.name))
    literal = {OutputKey.RIG: rig.name, OutputKey.REGION: stack_regions[rig.stack_name],
               OutputKey.RUNTIME: rig.runtime, OutputKey.MODEL_ID: rig.model_id,
               OutputKey.INSTANCE_TYPE: rig.instance_type, OutputKey.REMOTE_PORT: str(rig.port)}
    for key, value in literal.items():
        template.has_output(key, {"Value": value})
    template.has_output(OutputKey.AUTO_SCALING_GROUP, {"Value": {"Ref": Match.string_like_regexp("^RigGroup")}})
    for key in (OutputKey.LOG_GROUP, OutputKey.ZONES, OutputKey.EXPIRES_AT):
        template.has_output(key, Match.any_value())


@pytest.mark.parametrize("rig", EC2_RIGS, ids=lambda r: r.name)
def test_stack_is_tagged_for_discovery(manifest, rig):
    tags = manifest["artifacts"][rig.stack_name]["properties"]["tags"]
    assert tags == {TAG_MANAGED_BY: MANAGED_BY, TAG_RIG: rig.name}


def test_neuron_rigs_pass_their_devices_and_require_completion_tokens(templates, assembly_dir):
    for name in ("inf2", "trn1"):
        rig = CATALOG.get(name)
        script = boot_scripts_text(rig_template(templates, name), assembly_dir)
        env = rig_environment(rig_template(templates, name), assembly_dir)
        assert env["RIG_RUNTIME"] == "neuronx"
        assert env["RIG_NEURON_DEVICES"].split("\n") == list(rig.neuron_devices)
        assert env["RIG_REQUIRE_COMPLETION_TOKENS"] == "true"
        assert env["RIG_IMAGE"] == f"docker.io/xbill9/gemma4-optb@{rig.image.digest}"
        assert env["RIG_SWAP_GIB"] == "16"
        assert env["RIG_SERVE_FLAGS"] == ""
        assert 'echo "--device=$d"' in script and "--gpus" not in script


def test_g6_runs_the_pinned_vllm_image_with_the_catalog_flags(templates, assembly_dir):
    rig = CATALOG.get("g6")
    env = rig_environment(rig_template(templates, "g6"), assembly_dir)
    assert env["RIG_IMAGE"] == f"vllm/vllm-openai@{rig.image.digest}"  # by the digest alone, never tag@digest
    assert env["RIG_SERVE_FLAGS"].split("\n") == list(rig.serve_flags) == [
        "--max-model-len", "8192", "--gpu-memory-utilization", "0.90",
        "--enable-auto-tool-choice", "--tool-call-parser", "gemma4"]
    assert env["RIG_MODEL_ID"] == rig.model_id
    assert env["RIG_REQUIRE_COMPLETION_TOKENS"] == "false"
    assert env["RIG_SWAP_GIB"] == "0"
    assert env["RIG_REGISTRY"] == ""


def test_g5g_pulls_the_built_image_from_its_own_ecr_with_a_scoped_grant(templates, stack_regions, assembly_dir):
    rig = CATALOG.get("g5g")
    template = rig_template(templates, "g5g")
    region = stack_regions[rig.stack_name]
    env = rig_environment(template, assembly_dir)
    registry = f"123456789012.dkr.ecr.{region}.amazonaws.com"
    assert env["RIG_REGISTRY"] == registry
    assert env["RIG_IMAGE"] == f"{registry}/{rig.image.repository}:{rig.image.tag}"
    [(policy_id, policy)] = ecr_policies(template).items()
    statements = {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}
    assert statements["EcrLogin"]["Action"] == "ecr:GetAuthorizationToken"
    assert sorted(statements["PullServerImage"]["Action"]) == [
        "ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"]
    assert f":repository/{rig.image.repository}" in str(statements["PullServerImage"]["Resource"])
    [role] = policy["Properties"]["Roles"]
    assert role["Fn::GetStackOutput"]["StackName"] == base_stack_name(region)
    group = one(template, "AWS::AutoScaling::AutoScalingGroup")
    assert policy_id in group["DependsOn"]
    # Swap where host memory is under 32 GiB: g5g.2xlarge has 16 GiB.
    assert env["RIG_SWAP_GIB"] == "16"


def test_public_image_rigs_get_no_registry_grant(templates):
    for name in ("g6", "inf2", "trn1"):
        assert ecr_policies(rig_template(templates, name)) == {}


@pytest.mark.parametrize("rig", EC2_RIGS, ids=lambda r: r.name)
def test_the_rigs_load_generator_is_staged_with_its_sha256_and_the_bucket_is_the_bases(templates, assembly_dir,
                                                                                      stack_regions, rig):
    outputs = {k: v["Value"] for k, v in rig_template(templates, rig.name)["Outputs"].items()}
    url = outputs[OutputKey.LOAD_GENERATOR_URL]["Fn::Sub"]  # the account filled in at deploy time
    assert url.startswith("s3://cdk-hnb659fds-assets-${AWS::AccountId}-") and url.endswith(".zip")
    staged = (assembly_dir / f"asset.{url.rsplit('/', 1)[1]}").read_bytes()  # what `cdk deploy` uploads
    assert outputs[OutputKey.LOAD_GENERATOR_SHA256] == hashlib.sha256(staged).hexdigest() == load_generator.sha256()
    assert base_stack_name(stack_regions[rig.stack_name]) in json.dumps(outputs[OutputKey.LOAD_RESULTS_BUCKET])
