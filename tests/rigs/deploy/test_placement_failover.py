"""``up``: region failover on capacity/quota codes, cleanup of each failed attempt, the timeline, the placement.

The CDK CLI is replaced by a fake runner that writes an assembly manifest and, for a region
that "works", creates the rig's Auto Scaling group in moto. Failures come back from
CloudFormation or Auto Scaling in the recorded shapes, through botocore's Stubber.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from rigs.catalog.model import load_catalog
from rigs.deploy.cdk_cli import CdkResult, stack_dependencies
from rigs.deploy.up import Up, UpSettings
from rigs.deploy.watch import WatchSettings
from rigs.placement import placement
from rigs.placement.placement import Candidate

from tests.rigs.awsfakes import StubSession

from tests.rigs.awsfakes import plain_client

CATALOG = load_catalog()
G6 = CATALOG.get("g6")


@pytest.fixture(autouse=True)
def state(tmp_path, monkeypatch):
    monkeypatch.setenv(placement.STATE_DIR_ENV, str(tmp_path / "state"))
    monkeypatch.setattr("rigs.aws.time.sleep", lambda _s: None)
    return tmp_path


class FakeCdk:
    """Writes a manifest like `cdk synth`; `deploy` fails or succeeds per region."""

    def __init__(self, outcome_by_region: dict[str, str]):
        self.outcome = outcome_by_region
        self.calls: list[tuple[str, ...]] = []

    def synth(self, outdir: Path, context, log: Path) -> CdkResult:
        rig = next(k.split(".", 1)[1] for k in context if k.startswith("region."))
        region = context[f"region.{rig}"]
        stack = CATALOG.get(rig).stack_name
        self.calls.append(("synth", rig, region, context.get(f"zones.{rig}", ""), context.get("max_hours", "")))
        outdir.mkdir(parents=True, exist_ok=True)
        base = f"InferenceBase-{region}"
        (outdir / "manifest.json").write_text(json.dumps({"artifacts": {
            base: {"type": "aws:cloudformation:stack", "environment": f"aws://unknown-account/{region}"},
            f"{stack}.assets": {"type": "cdk:asset-manifest"},
            stack: {"type": "aws:cloudformation:stack", "dependencies": [base, f"{stack}.assets"],
                    "properties": {"stackName": stack}},
        }}))
        return CdkResult(0, log)

    def deploy(self, app: Path, stacks, context, log: Path, outputs_file=None) -> CdkResult:
        (stack,) = stacks
        rig = next(k.split(".", 1)[1] for k in context if k.startswith("region."))
        region = context[f"region.{rig}"]
        self.calls.append(("deploy", stack, region))
        if stack.startswith("InferenceBase-"):
            return CdkResult(0, log)
        outcome = self.outcome[region]
        if outcome == "fail":
            return CdkResult(1, log)
        # "ok" and "group-fails": the stack deploys and names its Auto Scaling group
        group = f"{stack}-Group-{region}"
        if outcome == "ok":
            ec2 = boto3.client("ec2", region_name=region)
            template = ec2.create_launch_template(LaunchTemplateName=group, LaunchTemplateData={
                "ImageId": "ami-12c6146b", "InstanceType": "g6.xlarge"})["LaunchTemplate"]["LaunchTemplateId"]
            boto3.client("autoscaling", region_name=region).create_auto_scaling_group(
                AutoScalingGroupName=group, MinSize=1, MaxSize=1, DesiredCapacity=1,
                LaunchTemplate={"LaunchTemplateId": template}, AvailabilityZones=[f"{region}a"])
        outputs_file.write_text(json.dumps({stack: {"AutoScalingGroupName": group, "RemotePort": "8000",
                                                    "RigName": rig, "RigRegion": region}}))
        return CdkResult(0, log)

    def bootstrap(self, environments, log):
        return CdkResult(0, log)


def stack_failed_stub(region: str, reason: str) -> tuple[object, Stubber]:
    """CloudFormation in `region` reports the rig stack's failure, then deletes it on cleanup."""
    cfn = plain_client("cloudformation", region)
    stubber = Stubber(cfn)
    stubber.add_response("describe_stack_events", {"StackEvents": [
        {"StackId": "arn:stack", "EventId": "2", "StackName": "InferenceG6", "LogicalResourceId": "InferenceG6",
         "ResourceStatus": "ROLLBACK_COMPLETE", "Timestamp": datetime(2026, 11, 29, tzinfo=timezone.utc)},
        {"StackId": "arn:stack", "EventId": "1", "StackName": "InferenceG6", "LogicalResourceId": "RigGroup",
         "ResourceType": "AWS::AutoScaling::AutoScalingGroup", "ResourceStatus": "CREATE_FAILED",
         "ResourceStatusReason": reason, "Timestamp": datetime(2026, 11, 29, tzinfo=timezone.utc)},
    ]}, {"StackName": "InferenceG6"})
    stubber.add_client_error("describe_stack_resources", service_error_code="ValidationError",
                             service_message="Stack with id InferenceG6 does not exist")
    stubber.add_response("delete_stack", {}, {"StackName": "InferenceG6"})
    stubber.add_client_error("describe_stacks", service_error_code="ValidationError",
                             service_message="Stack with id InferenceG6 does not exist")
    stubber.activate()
    return cfn, stubber


CAPACITY_REASON = ("Resource handler returned message: \"We currently do not have sufficient g6.xlarge capacity in "
                   "the Availability Zone you requested (us-east-2a). Our system will be working on provisioning "
                   "additional capacity. (Service: Ec2, Status Code: 500) InsufficientInstanceCapacity\"")


def run_up(session, fake, candidates, **settings):
    said: list[str] = []
    up = Up(session, fake, UpSettings(watch=WatchSettings(poll=0, capacity_grace=0), **settings), say=said.append,
            sleep=lambda _s: None)
    results = up.run({G6.name: (G6, candidates)})
    return results[0], said, up.evidence


@mock_aws
def test_capacity_failure_cleans_up_and_fails_over_to_the_next_region():
    cfn, stubber = stack_failed_stub("us-east-2", CAPACITY_REASON)
    session = StubSession({("cloudformation", "us-east-2"): cfn})
    fake = FakeCdk({"us-east-2": "fail", "us-east-1": "ok"})
    result, said, evidence = run_up(session, fake, [Candidate(region="us-east-2", zones=("us-east-2a", "us-east-2b")),
                                                    Candidate(region="us-east-1", zones=("us-east-1a",))], max_hours=2)
    stubber.assert_no_pending_responses()
    assert result.ok and result.region == "us-east-1"
    first, second = result.attempts
    assert (first.region, first.code, first.kind, first.outcome) == ("us-east-2", "InsufficientInstanceCapacity",
                                                                     "capacity", "failover")
    assert first.next_step == "clean up, then try us-east-1"
    assert second.outcome == "up"
    lines = "\n".join(said)
    assert ("g6: attempt 1/2: us-east-2 (us-east-2a,us-east-2b): InsufficientInstanceCapacity (capacity); "
            "clean up, then try us-east-1") in lines
    assert "g6: us-east-2: InferenceG6 deleted" in lines
    assert "g6: attempt 2/2: us-east-1 (us-east-1a): up in us-east-1a; ready" in lines
    # the same lines are in the run's evidence file
    log = (evidence.directory / "up.log").read_text()
    assert "InsufficientInstanceCapacity (capacity)" in log and "attempt 2/2: us-east-1 (us-east-1a): up in" in log
    # context handed to the CDK: region, zones and the lifetime
    assert ("synth", "g6", "us-east-2", "us-east-2a,us-east-2b", "2") in fake.calls
    assert ("deploy", "InferenceBase-us-east-1", "us-east-1") in fake.calls
    # the final region is recorded for app.py
    assert placement.load().deployed_region("g6") == "us-east-1"
    timeline = json.loads((evidence.directory / "timeline-g6.json").read_text())
    assert timeline["region"] == "us-east-1" and timeline["instance_id"].startswith("i-")
    for key in ("deploy_start", "stack_complete", "instance_launched", "instance_running"):
        assert timeline[key], key
    assert any("SSM online not measurable here" in note for note in timeline["notes"])  # moto has no SSM inventory
    summary = json.loads((evidence.directory / "summary.json").read_text())
    assert [list(r) for r in summary] == [["rig", "ok", "region", "attempts", "timeline", "outputs", "reason"]]
    assert [(a["region"], a["outcome"], a["zones"]) for a in summary[0]["attempts"]] == [
        ("us-east-2", "failover", ["us-east-2a", "us-east-2b"]), ("us-east-1", "up", ["us-east-1a"])]
    assert summary[0]["timeline"] == timeline


@mock_aws
def test_unsupported_is_never_called_capacity_and_fails_over():
    reason = ("Resource handler returned message: \"Your requested instance type (trn1.2xlarge) is not supported in "
              "your requested Availability Zone (us-east-2a). (Service: Ec2, Status Code: 400) Unsupported\"")
    cfn, _ = stack_failed_stub("us-east-2", reason)
    result, said, _ = run_up(StubSession({("cloudformation", "us-east-2"): cfn}),
                             FakeCdk({"us-east-2": "fail", "us-east-1": "ok"}),
                             [Candidate(region="us-east-2", zones=("us-east-2a",)), Candidate(region="us-east-1")])
    assert result.attempts[0].kind == "unsupported"
    line = next(l for l in said if "attempt 1/2" in l and "Unsupported" in l)
    assert "(unsupported)" in line and "capacity" not in line
    assert result.ok


@mock_aws
def test_quota_failure_in_every_region_ends_with_a_clear_reason():
    quota = ("You have requested more vCPU capacity than your current vCPU limit of 0 allows for the instance "
             "bucket that the specified instance type belongs to. VcpuLimitExceeded")
    cfn2, _ = stack_failed_stub("us-east-2", quota)
    cfn1, _ = stack_failed_stub("us-east-1", quota)
    session = StubSession({("cloudformation", "us-east-2"): cfn2, ("cloudformation", "us-east-1"): cfn1})
    result, said, _ = run_up(session, FakeCdk({"us-east-2": "fail", "us-east-1": "fail"}),
                             [Candidate(region="us-east-2"), Candidate(region="us-east-1")])
    assert not result.ok
    assert [a.code for a in result.attempts] == ["VcpuLimitExceeded", "VcpuLimitExceeded"]
    assert result.attempts[1].next_step == "clean up; no region left"
    assert "every region failed for capacity or quota: us-east-2 VcpuLimitExceeded, us-east-1 VcpuLimitExceeded" \
        in result.reason
    assert placement.load().deployed_region("g6") is None


@mock_aws
def test_other_failure_stops_without_trying_more_regions():
    reason = "Resource handler returned message: \"Invalid IAM Instance Profile name (Service: Ec2)\""
    cfn = plain_client("cloudformation", "us-east-2")
    stubber = Stubber(cfn)
    rolled_back = {"Stacks": [{"StackName": "InferenceG6", "StackStatus": "ROLLBACK_COMPLETE",
                               "CreationTime": datetime(2026, 11, 29, tzinfo=timezone.utc)}]}
    stubber.add_response("describe_stacks", rolled_back, {"StackName": "InferenceG6"})
    stubber.add_response("describe_stack_events", {"StackEvents": [
        {"StackId": "s", "EventId": "1", "StackName": "InferenceG6", "LogicalResourceId": "RigGroup",
         "ResourceStatus": "CREATE_FAILED", "ResourceStatusReason": reason,
         "Timestamp": datetime(2026, 11, 29, tzinfo=timezone.utc)}]}, {"StackName": "InferenceG6"})
    stubber.add_client_error("describe_stack_resources", service_error_code="ValidationError")
    stubber.add_response("describe_stacks", rolled_back, {"StackName": "InferenceG6"})
    stubber.activate()
    fake = FakeCdk({"us-east-2": "fail", "us-east-1": "ok"})
    result, said, _ = run_up(StubSession({("cloudformation", "us-east-2"): cfn}), fake,
                             [Candidate(region="us-east-2"), Candidate(region="us-east-1")])
    stubber.assert_no_pending_responses()  # no delete_stack: the failed stack stays for inspection
    assert not result.ok and len(result.attempts) == 1
    assert result.attempts[0].outcome == "failed" and result.attempts[0].code == "StackFailed"
    assert not any(call[0] == "synth" and call[2] == "us-east-1" for call in fake.calls)
    assert "stop: not a capacity or quota failure" in said[-1]
    assert "InferenceG6 is left for inspection" in said[-1]  # it exists, in ROLLBACK_COMPLETE


@mock_aws
def test_group_whose_launches_fail_for_capacity_in_every_zone_fails_over():
    """The stack deploys, but the Auto Scaling group cannot launch: its activities carry the code."""
    autoscaling = plain_client("autoscaling", "us-east-2")
    stubber = Stubber(autoscaling)
    stubber.add_response("describe_auto_scaling_groups", {"AutoScalingGroups": [{
        "AutoScalingGroupName": "InferenceG6-Group-us-east-2", "MinSize": 1, "MaxSize": 1, "DesiredCapacity": 1,
        "DefaultCooldown": 300, "AvailabilityZones": ["us-east-2a", "us-east-2b"], "HealthCheckType": "EC2",
        "CreatedTime": datetime(2026, 11, 29, tzinfo=timezone.utc), "Instances": []}]})
    activities = []
    for index, zone in enumerate(("us-east-2a", "us-east-2b")):
        activities.append({
            "ActivityId": f"a{index}", "AutoScalingGroupName": "InferenceG6-Group-us-east-2",
            "Cause": "At 2026-11-29T18:00:00Z an instance was started in response to a difference between desired "
                     "and actual capacity", "StartTime": datetime(2026, 11, 29, tzinfo=timezone.utc),
            "StatusCode": "Failed", "Progress": 100,
            "StatusMessage": f"We currently do not have sufficient g6.xlarge capacity in the Availability Zone you "
                             f"requested ({zone}). Launching EC2 instance failed. InsufficientInstanceCapacity",
            "Details": json.dumps({"Subnet ID": "subnet-1", "Availability Zone": zone})})
    stubber.add_response("describe_scaling_activities", {"Activities": activities})
    stubber.activate()
    session = StubSession({("autoscaling", "us-east-2"): autoscaling})
    result, said, _ = run_up(session, FakeCdk({"us-east-2": "group-fails", "us-east-1": "ok"}),
                             [Candidate(region="us-east-2", zones=("us-east-2a", "us-east-2b")),
                              Candidate(region="us-east-1")])
    assert result.attempts[0].code == "InsufficientInstanceCapacity"
    assert result.ok and result.region == "us-east-1"


def test_stack_dependencies_from_the_manifest(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"artifacts": {
        "InferenceBase-us-east-1": {"type": "aws:cloudformation:stack"},
        "InferenceG5gImage": {"type": "aws:cloudformation:stack", "dependencies": ["InferenceBase-us-east-1"]},
        "InferenceG5g": {"type": "aws:cloudformation:stack",
                         "dependencies": ["InferenceG5gImage", "InferenceG5g.assets"]},
        "InferenceG5g.assets": {"type": "cdk:asset-manifest"},
    }}))
    assert stack_dependencies(tmp_path, "InferenceG5g") == (["InferenceBase-us-east-1", "InferenceG5gImage"],
                                                            "InferenceG5g")
    with pytest.raises(Exception, match="no stack 'InferenceNope'"):
        stack_dependencies(tmp_path, "InferenceNope")


# --- the placement file and app.py's view of it -------------------------------------------------


def test_placement_round_trip_and_the_recorded_context(state):
    catalog_regions = {"g6": ("us-east-2", "us-east-1", "us-west-2")}
    assert placement.recorded_context(catalog_regions) == {}  # nothing recorded
    placement.record_candidates("g6", [Candidate(region="us-east-2", zones=("us-east-2a",)),
                                       Candidate(region="us-east-1")],
                                {"us-west-1": "offers none"})
    assert placement.recorded_context(catalog_regions) == {}  # candidates alone place nothing
    placement.record_deployed("g6", "us-east-1", ("us-east-1b",), "InferenceG6")
    assert placement.recorded_context(catalog_regions) == {"recorded_region.g6": "us-east-1",
                                                           "recorded_zones.g6": "us-east-1b"}
    # preflight again keeps the deployed region
    placement.record_candidates("g6", [Candidate(region="us-west-2")], {})
    assert placement.load().deployed_region("g6") == "us-east-1"
    # a recorded region the catalog no longer lists is left out
    assert placement.recorded_context({"g6": ("us-west-2",)}) == {}


CATALOG_ORDER = ("us-east-2", "us-east-1", "us-west-2")


@pytest.mark.parametrize(
    ("kwargs", "region", "also", "why"),
    [
        ({}, "us-east-2", (), "the catalog's first region for g6"),
        ({"recorded": "us-east-1"}, "us-east-1", (), "recorded by `python -m rigs up`"),
        # CloudFormation was asked in every region and the rig is nowhere: the record is stale
        ({"recorded": "us-east-1", "looked_up": True}, "us-east-2", (), "out of date"),
        # a clone with no placement file, after a failover to us-east-1: CloudFormation wins
        ({"deployed": ("us-east-1",), "looked_up": True}, "us-east-1", (), "deployed there (CloudFormation)"),
        ({"deployed": ("us-east-1",), "recorded": "us-east-2"}, "us-east-1", (), "the placement file said us-east-2"),
        # a copy in two regions: one is the stack, the other is synthesized too (for destroy --all)
        ({"deployed": ("us-west-2", "us-east-1")}, "us-east-1", ("us-west-2",), "deployed there"),
        ({"deployed": ("us-west-2", "us-east-1"), "recorded": "us-west-2"}, "us-west-2", ("us-east-1",), "deployed"),
        # -c region.g6 wins; a deployed copy elsewhere is still synthesized
        ({"explicit": "us-west-2", "deployed": ("us-east-1",)}, "us-west-2", ("us-east-1",), "-c region.g6=us-west-2"),
    ],
)
def test_choose_region(kwargs, region, also, why):
    choice = placement.choose_region("g6", CATALOG_ORDER, **kwargs)
    assert (choice.region, choice.also_deployed) == (region, also)
    assert why in choice.why


def test_reconcile_follows_cloudformation_and_forget_clears(state):
    placement.record_deployed("g6", "us-east-2", ("us-east-2a",), "InferenceG6")
    placement.record_deployed("inf2", "us-west-2", (), "InferenceInf2")
    placement.record_deployed("trn1", "us-east-2", (), "InferenceTrn1")
    changes = placement.reconcile({"g6": ["us-east-1"], "inf2": [], "trn1": ["us-east-2"]})
    assert changes == ["g6: deployed in us-east-1, not us-east-2; record updated",
                       "inf2: not deployed in any region; cleared the record of us-west-2"]
    current = placement.load()
    assert current.deployed_region("g6") == "us-east-1"
    assert current.deployed_region("inf2") is None
    assert current.deployed_region("trn1") == "us-east-2"
    assert placement.reconcile({"g6": ["us-east-1"]}) == []  # nothing changes, nothing written
    assert placement.forget_deployed(["trn1", "inf2"]) == ["trn1"]
    assert placement.load().deployed_region("trn1") is None


def test_broken_placement_file_is_a_clear_error(state):
    path = placement.placement_path()
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    with pytest.raises(placement.PlacementError, match="not valid JSON"):
        placement.load()


def test_recorded_context_for_app_py(state):
    regions = {"g6": ("us-east-2", "us-east-1", "us-west-2"), "inf2": ("us-east-2",), "sagemaker": ("us-east-2",)}
    assert placement.recorded_context(regions) == {}
    placement.record_deployed("g6", "us-east-1", ("us-east-1a", "us-east-1b"), "InferenceG6")
    placement.record_deployed("inf2", "us-west-2", ("us-west-2a",), "InferenceInf2")  # catalog no longer lists it
    placement.record_deployed("sagemaker", "us-east-2", (), "InferenceSageMaker")
    assert placement.recorded_context(regions) == {
        "recorded_region.g6": "us-east-1", "recorded_zones.g6": "us-east-1a,us-east-1b",
        "recorded_region.sagemaker": "us-east-2"}


@mock_aws
def test_group_that_cannot_launch_is_given_up_during_the_deploy_not_at_its_timeout():
    """The rig stack waits for the instance's signal; the monitor sees the failed launches in every zone,
    signals FAILURE for the group (so CloudFormation fails now), and up moves on."""
    import threading

    signalled = threading.Event()
    cfn = plain_client("cloudformation", "us-east-2")
    cfn_stub = Stubber(cfn)
    cfn_stub.add_response("describe_stack_resources", {"StackResources": [{
        "StackName": "InferenceG6", "LogicalResourceId": "RigGroupA1B2", "PhysicalResourceId": "InferenceG6-RigGroup-X",
        "ResourceType": "AWS::AutoScaling::AutoScalingGroup", "ResourceStatus": "CREATE_IN_PROGRESS",
        "Timestamp": datetime(2026, 11, 29, tzinfo=timezone.utc)}]}, {"StackName": "InferenceG6"})
    cfn_stub.add_response("signal_resource", {}, {"StackName": "InferenceG6", "LogicalResourceId": "RigGroupA1B2",
                                                  "UniqueId": "rigs-up-failover", "Status": "FAILURE"})
    cfn_stub.add_response("delete_stack", {}, {"StackName": "InferenceG6"})
    cfn_stub.add_client_error("describe_stacks", service_error_code="ValidationError")
    autoscaling = plain_client("autoscaling", "us-east-2")
    asg_stub = Stubber(autoscaling)
    asg_stub.add_response("describe_scaling_activities", {"Activities": [{
        "ActivityId": f"a{zone}", "AutoScalingGroupName": "InferenceG6-RigGroup-X", "Cause": "launch",
        "StartTime": datetime(2026, 11, 29, tzinfo=timezone.utc), "StatusCode": "Failed",
        "StatusMessage": f"Could not launch On-Demand Instances. InsufficientInstanceCapacity - no g6.xlarge in {zone}.",
        "Details": json.dumps({"Availability Zone": zone})} for zone in ("us-east-2a", "us-east-2b")]})
    asg_stub.add_response("describe_auto_scaling_groups", {"AutoScalingGroups": [{
        "AutoScalingGroupName": "InferenceG6-RigGroup-X", "MinSize": 1, "MaxSize": 1, "DesiredCapacity": 1,
        "DefaultCooldown": 300, "AvailabilityZones": ["us-east-2a", "us-east-2b"], "HealthCheckType": "EC2",
        "CreatedTime": datetime(2026, 11, 29, tzinfo=timezone.utc), "Instances": []}]})
    cfn_stub.activate()
    asg_stub.activate()

    class HangingCdk(FakeCdk):
        def deploy(self, app, stacks, context, log, outputs_file=None):
            if stacks == ["InferenceG6"] and context["region.g6"] == "us-east-2":
                self.calls.append(("deploy", "InferenceG6", "us-east-2"))
                assert signalled.wait(10), "the monitor never gave the region up"
                return CdkResult(1, log)  # CloudFormation failed the stack after the FAILURE signal
            return super().deploy(app, stacks, context, log, outputs_file)

    session = StubSession({("cloudformation", "us-east-2"): cfn, ("autoscaling", "us-east-2"): autoscaling})
    said: list[str] = []
    up = Up(session, HangingCdk({"us-east-1": "ok"}),
            UpSettings(watch=WatchSettings(poll=0, capacity_grace=600)), say=said.append, sleep=lambda _s: None)
    original = up.diagnosis.signal_failure

    def signal_failure(*args):
        refused = original(*args)
        signalled.set()
        return refused

    up.diagnosis.signal_failure = signal_failure
    (result,) = up.run({"g6": (G6, [Candidate(region="us-east-2", zones=("us-east-2a", "us-east-2b")),
                                    Candidate(region="us-east-1")])})
    cfn_stub.assert_no_pending_responses()
    assert result.ok and result.region == "us-east-1"
    assert (result.attempts[0].code, result.attempts[0].kind) == ("InsufficientInstanceCapacity", "capacity")
    assert any("InsufficientInstanceCapacity (capacity); clean up, then try us-east-1" in line for line in said)


# --- a rig its lifetime limit released --------------------------------------------------------


class ReleasedOnce(FakeCdk):
    """The rig stack is already deployed and its lifetime limit has set its group to 0/0/0: `cdk deploy` changes
    nothing (the first deploy); once `up` has deleted the stack, the next deploy creates a group that launches."""

    def __init__(self) -> None:
        super().__init__({"us-east-2": "ok"})
        self.rig_deploys = 0

    def deploy(self, app, stacks, context, log, outputs_file=None):
        if stacks != ["InferenceG6"]:
            return super().deploy(app, stacks, context, log, outputs_file)
        self.rig_deploys += 1
        self.calls.append(("deploy", "InferenceG6", "us-east-2"))
        group = f"InferenceG6-Group-{self.rig_deploys}"
        size = 0 if self.rig_deploys == 1 else 1
        template = boto3.client("ec2", region_name="us-east-2").create_launch_template(
            LaunchTemplateName=group, LaunchTemplateData={"ImageId": "ami-12c6146b", "InstanceType": "g6.xlarge"})
        boto3.client("autoscaling", region_name="us-east-2").create_auto_scaling_group(
            AutoScalingGroupName=group, MinSize=size, MaxSize=size, DesiredCapacity=size,
            LaunchTemplate={"LaunchTemplateId": template["LaunchTemplate"]["LaunchTemplateId"]},
            AvailabilityZones=["us-east-2a"])
        outputs_file.write_text(json.dumps({"InferenceG6": {"AutoScalingGroupName": group, "RemotePort": "8000"}}))
        return CdkResult(0, log)


@mock_aws
def test_a_rig_its_lifetime_released_is_deleted_and_deployed_again_not_waited_for():
    fake = ReleasedOnce()
    result, said, _ = run_up(boto3.Session(region_name="us-east-2"), fake,
                             [Candidate(region="us-east-2", zones=("us-east-2a",))])
    assert result.ok and result.region == "us-east-2" and fake.rig_deploys == 2
    assert len(result.attempts) == 1 and result.timeline.instance_id.startswith("i-")
    line = next(l for l in said if "deleting it to deploy it again" in l)
    assert line == ("g6: attempt 1/1: us-east-2 (us-east-2a): InferenceG6 is deployed but its group "
                    "InferenceG6-Group-1 is set to 0 instances: the rig's lifetime limit released it; deleting it "
                    "to deploy it again")
    assert "g6: us-east-2: InferenceG6 deleted" in said


@mock_aws
def test_an_endpoint_its_lifetime_deleted_is_reported_released():
    from rigs import aws
    from rigs.deploy.diagnosis import RELEASED, Diagnosis
    from rigs.deploy.records import Timeline
    from rigs.deploy.watch import Watcher

    clients = aws.Clients(boto3.Session(region_name="us-east-2"))
    watcher = Watcher(clients, WatchSettings(poll=0), Diagnosis(clients), sleep=lambda _s: None)
    failure = watcher.endpoint_times("us-east-2", "InferenceSageMaker-Endpoint", Timeline(rig="sagemaker"))
    assert (failure.code, failure.kind) == ("Released", RELEASED)
    assert "its endpoint InferenceSageMaker-Endpoint does not exist" in failure.message


@mock_aws
def test_an_image_this_region_does_not_publish_fails_over_to_the_next_region():
    reason = ("Received response status [FAILED] from custom resource. Message returned: RuntimeError: "
              "ImageNotFoundException: 763104351884.dkr.ecr.us-east-2.amazonaws.com/vllm:0.30.0-gpu is not in "
              "us-east-2's registry (no such tag); deploy the rig in another of its regions, or pin a tag published here")
    cfn, _ = stack_failed_stub("us-east-2", reason)
    result, said, _ = run_up(StubSession({("cloudformation", "us-east-2"): cfn}),
                             FakeCdk({"us-east-2": "fail", "us-east-1": "ok"}),
                             [Candidate(region="us-east-2"), Candidate(region="us-east-1")])
    assert (result.attempts[0].code, result.attempts[0].kind, result.attempts[0].outcome) == (
        "ImageNotFoundException", "not-here", "failover")
    assert result.ok and result.region == "us-east-1"


@mock_aws
def test_a_free_plan_account_stops_at_once_and_is_told_to_upgrade():
    reason = ("Received response status [FAILED] from custom resource. Message returned: RuntimeError: launch failed "
              "in us-east-2a: InvalidParameterCombination: The specified instance type is not eligible for Free Tier. "
              "(a Free-plan account: upgrade the account to the Paid plan)")
    cfn = plain_client("cloudformation", "us-east-2")
    stubber = Stubber(cfn)
    stubber.add_response("describe_stacks", {"Stacks": [{"StackName": "InferenceG6", "StackStatus": "ROLLBACK_COMPLETE",
                                                         "CreationTime": datetime(2026, 11, 29, tzinfo=timezone.utc)}]})
    stubber.add_response("describe_stack_events", {"StackEvents": [
        {"StackId": "s", "EventId": "1", "StackName": "InferenceG6", "LogicalResourceId": "LaunchWatch",
         "ResourceStatus": "CREATE_FAILED", "ResourceStatusReason": reason,
         "Timestamp": datetime(2026, 11, 29, tzinfo=timezone.utc)}]})
    stubber.add_client_error("describe_stack_resources", service_error_code="ValidationError")
    stubber.add_response("describe_stacks", {"Stacks": [{"StackName": "InferenceG6", "StackStatus": "ROLLBACK_COMPLETE",
                                                         "CreationTime": datetime(2026, 11, 29, tzinfo=timezone.utc)}]})
    stubber.activate()
    fake = FakeCdk({"us-east-2": "fail", "us-east-1": "ok"})
    result, said, _ = run_up(StubSession({("cloudformation", "us-east-2"): cfn}), fake,
                             [Candidate(region="us-east-2"), Candidate(region="us-east-1")])
    assert not result.ok and len(result.attempts) == 1 and result.attempts[0].kind == "free-plan"
    assert "stop: the account is on the Free plan: upgrade the account to the Paid plan" in said[-1]
    assert "aws freetier upgrade-account-plan --account-plan-type PAID" in result.reason
    assert not any(call[0] == "synth" and call[2] == "us-east-1" for call in fake.calls)
