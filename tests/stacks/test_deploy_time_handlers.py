"""The deploy-time handlers against moto: the base network's zones, the root volume, the launch watch.

The launch watch is driven with launch errors injected into moto's Auto Scaling the way AWS
reports them (``rigs/offline/moto_server.py`` ``failing_launches``); its sleep and clock are
fakes, so a test never waits and its pass never depends on speed.
"""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws
from moto.ec2.models import ec2_backends

from rigs import aws

from rigs.account.checks import zones as zones_check
from rigs.account.checks.base import Scope
from rigs.catalog.model import load_catalog
from rigs.contract import base_stack_name
from stacks.parts.handlers import launch_watch, root_volume, usable_zones
from rigs.offline.moto_server import failing_launches

ACCOUNT = "123456789012"
CATALOG = load_catalog()
RIG_TYPES = sorted({rig.instance_type for rig in CATALOG.ec2_rigs()})


@pytest.fixture
def moto():
    with mock_aws():
        yield


def ec2(region: str):
    return boto3.client("ec2", region_name=region)


def zones_for(region: str, slots: int, types=RIG_TYPES, named=()) -> str:
    return usable_zones.compute({"Slots": str(slots), "InstanceTypes": list(types), "Zones": list(named)},
                                ec2=ec2(region))["Zones"]


# --- the base network's zones -------------------------------------------------------------


def test_zones_are_those_available_that_offer_a_rig_type(moto):
    # moto's us-east-1e offers none of the four rig types (as on AWS): it is never chosen.
    assert zones_for("us-east-1", 5) == "us-east-1a,us-east-1b,us-east-1c,us-east-1d,us-east-1f"


def test_zones_do_not_depend_on_the_default_vpc(moto):
    """Fn::GetAZs lists only zones with a default subnet when an account has any; this does not."""
    client = ec2("us-east-1")
    for subnet in client.describe_subnets(Filters=[{"Name": "default-for-az", "Values": ["true"]}])["Subnets"]:
        if subnet["AvailabilityZone"] not in ("us-east-1a", "us-east-1b"):
            client.delete_subnet(SubnetId=subnet["SubnetId"])
    assert zones_for("us-east-1", 5) == "us-east-1a,us-east-1b,us-east-1c,us-east-1d,us-east-1f"


def test_fewer_slots_take_the_zones_offering_the_most_rig_types(moto):
    # us-east-1c offers all four types; a, b and f three each; d two.
    assert zones_for("us-east-1", 2) == "us-east-1a,us-east-1c"


def test_more_slots_than_usable_zones_repeat_zones(moto):
    assert zones_for("us-east-2", 4) == "us-east-2a,us-east-2b,us-east-2c,us-east-2a"


def test_a_zone_that_is_not_available_is_never_chosen(moto):
    [zone] = [z for z in ec2_backends[ACCOUNT]["us-east-2"].zones["us-east-2"] if z.name == "us-east-2b"]
    zone.state = "impaired"
    assert zones_for("us-east-2", 2) == "us-east-2a,us-east-2c"


def test_named_zones_are_used_as_named_and_skip_a_bad_middle_zone(moto):
    assert zones_for("us-east-1", 2, named=["us-east-1a", "us-east-1c"]) == "us-east-1a,us-east-1c"


def test_a_named_zone_the_account_cannot_use_fails_with_the_usable_ones(moto):
    with pytest.raises(RuntimeError, match=r"-c zones.us-east-1: us-east-1g not available to this account; "
                                           r"available zones: us-east-1a, us-east-1b, .*us-east-1f"):
        zones_for("us-east-1", 2, named=["us-east-1a", "us-east-1g"])


def test_a_region_where_no_zone_offers_a_rig_type_fails_with_the_reason(moto):
    with pytest.raises(RuntimeError, match=r"no zone of us-east-2 .* offers any of g5g.2xlarge"):
        zones_for("us-east-2", 3, types=["g5g.2xlarge"])


# --- the doctor and the deployed handler choose the same zones ---------------------------------------


def deployed_usable_zones(template: dict) -> tuple[dict, dict]:
    """The UsableZones resource's properties and its Lambda's inline code, run as Lambda runs it."""
    [resource] = [r for r in template["Resources"].values() if r["Type"] == "Custom::UsableZones"]
    function_id = resource["Properties"]["ServiceToken"]["Fn::GetAtt"][0]
    namespace: dict = {}
    exec(compile(template["Resources"][function_id]["Properties"]["Code"]["ZipFile"], "index.py", "exec"), namespace)
    return resource["Properties"], namespace


def doctors_zones(region: str, clients) -> str:
    return ",".join(zones_check.zones(Scope(clients, ACCOUNT, CATALOG.deployable(), CATALOG), region).given)


@pytest.mark.parametrize("region", CATALOG.rig_regions())
@pytest.mark.parametrize("change", ["none", "a zone impaired, another a local zone"])
def test_the_doctor_and_the_deployed_handler_choose_the_same_zones(templates, moto, region, change):
    properties, handler = deployed_usable_zones(templates[base_stack_name(region)])
    if change != "none":
        first, second = sorted(ec2_backends[ACCOUNT][region].zones[region], key=lambda z: z.name)[1:3]
        first.state, second.zone_type = "impaired", "local-zone"
    deployed = handler["compute"](properties, ec2=ec2(region))["Zones"]
    assert doctors_zones(region, aws.Clients(boto3.Session(region_name=region))) == deployed
    assert len(deployed.split(",")) == CATALOG.regions[region].availability_zones


ZONES = [  # (name, state, opt-in status, zone type, how many of the region's rig types it offers)
    ("a", "available", "opt-in-not-required", "availability-zone", 2), ("b", "impaired", "opt-in-not-required",
    "availability-zone", 4), ("c", "available", "opted-in", "availability-zone", 1), ("d", "available",
    "not-opted-in", "availability-zone", 4), ("e", "available", "opt-in-not-required", "local-zone", 4),
    ("f", "available", "opt-in-not-required", "availability-zone", 0), ("g", "available", "opt-in-not-required",
    "availability-zone", 3), ("h", "available", "opt-in-not-required", "availability-zone", 2)]


@pytest.mark.parametrize("region", CATALOG.rig_regions())
@pytest.mark.parametrize("usable", [8, 3, 1, 0])
def test_the_doctor_and_the_deployed_handler_rank_zones_alike(templates, region, usable):
    """The same answers (zones in every state, more or fewer usable than the network's slots) to both."""
    from botocore.stub import Stubber

    properties, handler = deployed_usable_zones(templates[base_stack_name(region)])
    types = properties["InstanceTypes"]
    zones = ZONES[:usable] + [(name, "impaired", *rest) for name, _, *rest in ZONES[usable:]]
    described = {"AvailabilityZones": [{"ZoneName": f"{region}{name}", "State": state, "OptInStatus": opt_in,
                                        "ZoneType": kind, "RegionName": region} for name, state, opt_in, kind, _ in zones]}
    offered = {"InstanceTypeOfferings": [{"InstanceType": types[n % len(types)], "LocationType": "availability-zone",
                                          "Location": f"{region}{name}"} for name, *_, count in zones
                                         for n in range(min(count, len(types)))]}
    client = boto3.client("ec2", region_name=region)
    answers = Stubber(client)
    for _ in ("handler", "doctor"):
        answers.add_response("describe_availability_zones", described)
        answers.add_response("describe_instance_type_offerings", offered)
    with answers:
        deployed = handler["compute"](properties, ec2=client)["Zones"] if usable else ""
        if not usable:
            with pytest.raises(RuntimeError, match="no zone of"):
                handler["compute"](properties, ec2=client)
        assert doctors_zones(region, lambda service, where: client) == deployed
    answers.assert_no_pending_responses()


# --- the root volume ------------------------------------------------------------------------


def moto_image(region: str, architecture: str) -> str:
    """One of moto's own AMIs in ``region`` for ``architecture``, with an EBS root. Read from moto's backend:
    ``describe_images(Owners=["amazon"])`` would serialize every one of them, seconds of CPU per call."""
    return next(image.id for image in ec2_backends[ACCOUNT][region].amis.values()
                if image.architecture == architecture and image.root_device_type == "ebs")


def volume(region: str, image_id: str, architecture: str = "x86_64", minimum: int = 100, free: int = 40) -> dict:
    return root_volume.compute({"ImageId": image_id, "Architecture": architecture, "MinimumGiB": str(minimum),
                                "FreeGiB": str(free)}, ec2=ec2(region))


def test_root_volume_is_the_snapshot_plus_the_rigs_need_when_that_is_larger(moto):
    image = moto_image("us-east-2", "x86_64")
    described = ec2("us-east-2").describe_images(ImageIds=[image])["Images"][0]
    snapshot = described["BlockDeviceMappings"][0]["Ebs"]["VolumeSize"]  # moto's AMIs: 15 GiB
    assert volume("us-east-2", image, minimum=8, free=40) == {
        "VolumeSize": str(snapshot + 40), "DeviceName": described["RootDeviceName"], "SnapshotGiB": str(snapshot)}
    assert volume("us-east-2", image, minimum=100, free=40)["VolumeSize"] == "100"


def test_a_missing_ami_fails_at_once_with_its_code(moto):
    with pytest.raises(RuntimeError, match=r"InvalidAMIID.NotFound: AMI ami-0123456789abcdef0 in us-east-2 "
                                           r"does not exist"):
        volume("us-east-2", "ami-0123456789abcdef0")


def test_an_ami_for_another_architecture_fails_at_once(moto):
    with pytest.raises(RuntimeError, match=r"is arm64, the rig's instance type is x86_64"):
        volume("us-east-1", moto_image("us-east-1", "arm64"), architecture="x86_64")


class OneImage:
    """An EC2 client that knows one AMI with a root snapshot of ``snapshot_gib``."""

    meta = type("Meta", (), {"region_name": "us-east-2"})

    def __init__(self, snapshot_gib: int) -> None:
        self.snapshot_gib = snapshot_gib

    def describe_images(self, ImageIds):  # noqa: N803 (boto3 naming)
        return {"Images": [{"ImageId": ImageIds[0], "Architecture": "x86_64", "RootDeviceType": "ebs",
                            "RootDeviceName": "/dev/sda1", "BlockDeviceMappings": [
                                {"DeviceName": "/dev/sda1", "Ebs": {"VolumeSize": self.snapshot_gib}}]}]}


@pytest.mark.parametrize("rig", CATALOG.ec2_rigs(), ids=lambda r: r.name)
@pytest.mark.parametrize("snapshot", [8, 75, 95, 160, 400])
def test_deploy_time_sizing_is_the_catalogs_rule(rig, snapshot):
    """The handler (inline Lambda code) and Ec2Rig.root_volume_gib_for (for doctor) agree."""
    answer = root_volume.compute({"ImageId": "ami-1", "Architecture": "x86_64", "MinimumGiB": str(rig.root_volume_gib),
                                  "FreeGiB": str(rig.root_free_gib)}, ec2=OneImage(snapshot))
    assert int(answer["VolumeSize"]) == rig.root_volume_gib_for(snapshot) >= snapshot + rig.root_free_gib


def test_a_volume_over_gp3s_limit_fails_at_once():
    with pytest.raises(RuntimeError, match=r"16380 GiB snapshot plus 40 GiB is over gp3's 16384 GiB"):
        root_volume.compute({"ImageId": "ami-1", "Architecture": "x86_64", "MinimumGiB": "100", "FreeGiB": "40"},
                            ec2=OneImage(16380))


# --- the launch watch ---------------------------------------------------------------------------


class FakeTime:
    """Sleep and monotonic clock for the watch: sleeping moves the clock, nothing waits."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps = 0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.now += seconds


def make_group(region: str, instance_type: str, rig: str = "g6") -> dict:
    """A launch template and a one-instance group over the region's default subnets, tagged as a rig's."""
    client = ec2(region)
    image = moto_image(region, "x86_64")
    template = client.create_launch_template(LaunchTemplateName=f"{rig}-{instance_type}", LaunchTemplateData={
        "ImageId": image, "InstanceType": instance_type})["LaunchTemplate"]
    subnets = client.describe_subnets(Filters=[{"Name": "default-for-az", "Values": ["true"]}])["Subnets"]
    boto3.client("autoscaling", region_name=region).create_auto_scaling_group(
        AutoScalingGroupName=f"Inference-{rig}-{instance_type}", MinSize=1, MaxSize=1, DesiredCapacity=1,
        LaunchTemplate={"LaunchTemplateId": template["LaunchTemplateId"], "Version": "1"},
        VPCZoneIdentifier=",".join(s["SubnetId"] for s in subnets),
        Tags=[{"Key": "Rig", "Value": rig, "PropagateAtLaunch": True}])
    return {"TagKey": "Rig", "TagValue": rig, "LaunchTemplateId": template["LaunchTemplateId"],
            "LaunchTemplateVersion": "1", "Zones": ",".join(sorted(s["AvailabilityZone"] for s in subnets)),
            "BudgetSeconds": "780"}


def watch(region: str, properties: dict, time: FakeTime) -> dict:
    return launch_watch.compute(properties, autoscaling=boto3.client("autoscaling", region_name=region),
                                sleep=time.sleep, clock=time.clock)


@pytest.fixture
def inject():
    undo = []

    def fail(instance_type: str, region: str, code: str, message: str = "") -> None:
        undo.append(failing_launches({(instance_type, region): (code, message)}))

    yield fail
    for step in reversed(undo):
        step()


def test_an_instance_in_service_ends_the_watch_at_once(moto):
    time = FakeTime()
    answer = watch("us-east-2", make_group("us-east-2", "g6.xlarge"), time)
    assert answer["InstanceId"].startswith("i-") and answer["Zone"].startswith("us-east-2")
    assert time.sleeps == 0


LAUNCH_ERRORS = [
    ("InvalidBlockDeviceMapping", "Volume of size 100GB is smaller than snapshot 'snap-0f1e2d3c4b5a69788', "
                                  "expect size >= 140GB."),
    ("InvalidAMIID.NotFound", "The image id '[ami-0123456789abcdef0]' does not exist."),
    ("InvalidParameterValue", "Value (arn:aws:iam::123456789012:instance-profile/gone) for parameter "
                              "iamInstanceProfile.arn is invalid. Invalid IAM Instance Profile ARN."),
    ("VcpuLimitExceeded", "You have requested more vCPU capacity than your current vCPU limit of 0 allows for "
                          "the instance bucket that the specified instance type belongs to."),
]


@pytest.mark.parametrize("code, message", LAUNCH_ERRORS, ids=[code for code, _ in LAUNCH_ERRORS])
def test_a_launch_error_no_zone_changes_ends_the_deploy_at_once_with_its_code(moto, inject, code, message):
    inject("g6.xlarge", "us-east-2", code, message)
    time = FakeTime()
    with pytest.raises(RuntimeError) as failed:
        watch("us-east-2", make_group("us-east-2", "g6.xlarge"), time)
    assert str(failed.value) == f"launch failed in us-east-2a: {code}: {message}"
    assert time.sleeps == 0
    # What `python -m rigs up` reads back from the stack event: the code, not a bare "StackFailed".
    event = f"Received response status [FAILED] from custom resource. Message returned: {failed.value} (RequestId: x)"
    assert aws.classify_message(event).code == code


def test_capacity_in_every_zone_ends_the_deploy_as_a_capacity_failure(moto, inject):
    inject("g6.xlarge", "us-east-2", "InsufficientInstanceCapacity")
    time = FakeTime()
    with pytest.raises(RuntimeError, match=r"^launch failed in us-east-2\w: InsufficientInstanceCapacity: "
                                           r"We currently do not have sufficient g6.xlarge capacity") as failed:
        watch("us-east-2", make_group("us-east-2", "g6.xlarge"), time)
    assert time.sleeps == 0
    assert aws.classify_message(str(failed.value)).kind == aws.CAPACITY


def test_capacity_in_some_zones_waits_for_the_others_then_fails_with_the_last_error(moto, inject):
    inject("g6.xlarge", "us-east-2", "InsufficientInstanceCapacity")
    properties = make_group("us-east-2", "g6.xlarge")
    properties.update(Zones=properties["Zones"] + ",us-east-2d", BudgetSeconds="60")  # a zone not yet tried
    time = FakeTime()
    with pytest.raises(RuntimeError, match=r"no instance in service after 1 minutes; last: launch failed in "
                                           r"us-east-2\w: InsufficientInstanceCapacity"):
        watch("us-east-2", properties, time)
    assert time.sleeps == 4 and time.now == 60


def test_the_watch_follows_its_own_launch_template_not_another_group_of_the_rig(moto, inject):
    """On an update the rig has two groups for a while; only the new one's launches count."""
    make_group("us-east-2", "g6.xlarge")  # the old group: an instance in service
    inject("g6.2xlarge", "us-east-2", "InvalidBlockDeviceMapping", "Volume of size 8GB is smaller than snapshot.")
    time = FakeTime()
    with pytest.raises(RuntimeError, match="InvalidBlockDeviceMapping"):
        watch("us-east-2", make_group("us-east-2", "g6.2xlarge"), time)


class PendingThenInService:
    """Auto Scaling as it looks while a retry launches: capacity failed in every zone earlier, an
    instance now pending, then in service."""

    def __init__(self, properties: dict) -> None:
        self.properties = properties
        self.reads = 0

    def get_paginator(self, name):
        assert name == "describe_auto_scaling_groups"
        self.reads += 1
        state = "Pending" if self.reads == 1 else "InService"
        group = {"AutoScalingGroupName": "g", "LaunchTemplate": {
            "LaunchTemplateId": self.properties["LaunchTemplateId"], "Version": "1"},
            "Instances": [{"InstanceId": "i-1", "AvailabilityZone": "us-east-2b", "LifecycleState": state}]}
        return type("Pages", (), {"paginate": lambda _self, Filters: [{"AutoScalingGroups": [group]}]})()

    def describe_scaling_activities(self, AutoScalingGroupName):  # noqa: N803 (boto3 naming)
        return {"Activities": [{"StatusCode": "Failed", "Details": json.dumps({"Availability Zone": zone}),
                                "StatusMessage": "Could not launch On-Demand Instances. InsufficientInstanceCapacity"
                                                 " - No capacity. Launching EC2 instance failed."}
                               for zone in ("us-east-2a", "us-east-2b")]}


def test_a_pending_launch_is_waited_for_even_after_capacity_failed_in_every_zone():
    properties = {"TagKey": "Rig", "TagValue": "g6", "LaunchTemplateId": "lt-1", "LaunchTemplateVersion": "1",
                  "Zones": "us-east-2a,us-east-2b", "BudgetSeconds": "780"}
    time = FakeTime()
    answer = launch_watch.compute(properties, autoscaling=PendingThenInService(properties), sleep=time.sleep,
                                  clock=time.clock)
    assert answer == {"InstanceId": "i-1", "Zone": "us-east-2b"} and time.sleeps == 1


UNCODED = ("Could not launch On-Demand Instances. The requested configuration is currently not supported. Please "
           "check the documentation for supported configurations. Launching EC2 instance failed.")
CAPACITY = ("Could not launch On-Demand Instances. InsufficientInstanceCapacity - We currently do not have sufficient "
            "g6.xlarge capacity in the Availability Zone you requested (us-east-2b). Launching EC2 instance failed.")


class FailingLaunches:
    """Auto Scaling as a group with no instance shows it: on each read, the failed launch activities of
    ``reads`` (zone, message), newest first; after the last read, an instance in service if ``then_up``."""

    def __init__(self, properties: dict, reads: list[list[tuple[str, str]]], then_up: bool = False) -> None:
        self.properties, self.reads, self.then_up, self.read = properties, reads, then_up, 0

    def get_paginator(self, name):
        assert name == "describe_auto_scaling_groups"
        self.read += 1
        up = self.then_up and self.read > len(self.reads)
        group = {"AutoScalingGroupName": "g", "LaunchTemplate": {
            "LaunchTemplateId": self.properties["LaunchTemplateId"], "Version": "1"},
            "Instances": [{"InstanceId": "i-1", "AvailabilityZone": "us-east-2c", "LifecycleState": "InService"}]
            if up else []}
        return type("Pages", (), {"paginate": lambda _self, Filters: [{"AutoScalingGroups": [group]}]})()

    def describe_scaling_activities(self, AutoScalingGroupName):  # noqa: N803 (boto3 naming)
        failures = self.reads[min(self.read, len(self.reads)) - 1]
        return {"Activities": [{"StatusCode": "Failed", "Details": json.dumps({"Availability Zone": zone}),
                                "StatusMessage": message} for zone, message in failures]}


THREE_ZONES = {"TagKey": "Rig", "TagValue": "g6", "LaunchTemplateId": "lt-1", "LaunchTemplateVersion": "1",
               "Zones": "us-east-2a,us-east-2b,us-east-2c", "BudgetSeconds": "780"}


def test_a_failure_without_a_code_in_one_zone_leaves_the_others_to_try():
    """A message without a code may be one zone's shortage: the group's next launch goes to another zone."""
    time = FakeTime()
    reads = [[("us-east-2a", UNCODED)], [("us-east-2b", UNCODED), ("us-east-2a", UNCODED)]]
    answer = launch_watch.compute(THREE_ZONES, autoscaling=FailingLaunches(THREE_ZONES, reads, then_up=True),
                                  sleep=time.sleep, clock=time.clock)
    assert answer == {"InstanceId": "i-1", "Zone": "us-east-2c"} and time.sleeps == 2


def test_failures_without_a_code_in_every_zone_end_the_deploy():
    time = FakeTime()
    reads = [[("us-east-2a", UNCODED)], [("us-east-2b", UNCODED), ("us-east-2a", UNCODED)],
             [("us-east-2c", UNCODED), ("us-east-2b", UNCODED), ("us-east-2a", UNCODED)]]
    with pytest.raises(RuntimeError) as failed:
        launch_watch.compute(THREE_ZONES, autoscaling=FailingLaunches(THREE_ZONES, reads), sleep=time.sleep,
                             clock=time.clock)
    assert str(failed.value) == f"launch failed in us-east-2c: LaunchFailed: {UNCODED}"
    assert time.sleeps == 2


def test_when_every_zone_failed_a_coded_failure_is_the_reason_given():
    """`rigs up` fails over on the code (capacity), so a coded failure is reported before an uncoded one."""
    time = FakeTime()
    reads = [[("us-east-2c", UNCODED), ("us-east-2b", CAPACITY), ("us-east-2a", UNCODED)]]
    with pytest.raises(RuntimeError) as failed:
        launch_watch.compute(THREE_ZONES, autoscaling=FailingLaunches(THREE_ZONES, reads), sleep=time.sleep,
                             clock=time.clock)
    assert str(failed.value).startswith("launch failed in us-east-2b: InsufficientInstanceCapacity: We currently")
    assert aws.classify_message(str(failed.value)).kind == aws.CAPACITY and time.sleeps == 0


def test_a_failure_without_a_code_in_some_zones_waits_out_the_budget_with_it_as_the_last_error():
    time = FakeTime()
    properties = {**THREE_ZONES, "BudgetSeconds": "60"}
    with pytest.raises(RuntimeError, match=r"^no instance in service after 1 minutes; last: launch failed in "
                                           r"us-east-2a: LaunchFailed: Could not launch"):
        launch_watch.compute(properties, autoscaling=FailingLaunches(properties, [[("us-east-2a", UNCODED)]]),
                             sleep=time.sleep, clock=time.clock)
    assert time.now == 60


def test_an_activity_without_a_code_is_reported_whole():
    activity = {"StatusCode": "Failed", "Details": '{"Availability Zone": "us-west-1a"}',
                "StatusMessage": "The requested configuration is currently not supported. Please check the "
                                 "documentation for supported configurations. Launching EC2 instance failed."}
    assert launch_watch.failure_of(activity) == (
        "us-west-1a", "LaunchFailed", activity["StatusMessage"])


FREE_PLAN = ("The specified instance type is not eligible for Free Tier. For a list of Free Tier instance types, run "
             "'describe-instance-types' with the filter 'free-tier-eligible=true'. Launching EC2 instance failed.")
"""EC2's InvalidParameterCombination message on a Free-plan account (public reports, e.g.
nilbuild/developer-roadmap#10171), as an Auto Scaling activity shows it: no zone would change it."""


def test_a_free_plan_refusal_ends_the_deploy_at_the_first_launch_and_names_the_fix():
    time = FakeTime()
    with pytest.raises(RuntimeError) as failed:
        launch_watch.compute(THREE_ZONES, autoscaling=FailingLaunches(THREE_ZONES, [[("us-east-2a", FREE_PLAN)]]),
                             sleep=time.sleep, clock=time.clock)
    message = str(failed.value)
    assert message.startswith("launch failed in us-east-2a: InvalidParameterCombination: The specified instance type")
    assert message.endswith("(a Free-plan account: upgrade the account to the Paid plan)") and time.sleeps == 0
    failure = aws.classify_message(f"Received response status [FAILED] from custom resource. Message returned: "
                                   f"RuntimeError: {message}")
    assert (failure.code, failure.kind) == ("InvalidParameterCombination", aws.FREE_PLAN)


def test_the_handlers_per_zone_codes_are_the_librarys_capacity_and_unsupported_codes():
    assert launch_watch.PER_ZONE <= aws.CAPACITY_CODES | aws.UNSUPPORTED_CODES
