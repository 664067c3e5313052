"""EC2 instances, EBS volumes, Auto Scaling groups and launch templates of ours."""

from __future__ import annotations

from typing import Any

from rigs import aws
from rigs.estate import resources
from rigs.estate.kinds.base import Deletion, Finder, Kind, Listing, Price
from rigs.estate.resources import OUR_TAG_FILTER, Resource, ours, tag_map

LIVE_INSTANCE_STATES = ["pending", "running", "shutting-down", "stopping", "stopped"]


def _price_instance(finder: Finder, instance: dict[str, Any]) -> Price:
    """A running instance's type and public IPv4 address; a stopped one bills only for its volumes."""
    if instance.get("State", {}).get("Name", "") not in ("pending", "running"):
        return 0.0, "stopped: only its volumes bill"
    hourly, note = finder.price_instance(instance["InstanceType"])
    if instance.get("PublicIpAddress"):
        ip_hourly, _ = finder.price_unit("public-ipv4", 1)
        hourly += ip_hourly
        note += f" + public IPv4 ${ip_hourly:g}/h"
    return hourly, note


def _list_instances(finder: Finder) -> None:
    ec2 = finder.clients("ec2", finder.region)
    reservations = aws.paginate(ec2, "describe_instances", "Reservations", Filters=[
        *OUR_TAG_FILTER, {"Name": "instance-state-name", "Values": LIVE_INSTANCE_STATES}])
    for reservation in reservations:
        for instance in reservation.get("Instances", []):
            hourly, note = INSTANCE.price(finder, instance)
            tags = instance.get("Tags")
            finder.add(INSTANCE, instance["InstanceId"], tags, name=tag_map(tags).get("Name", ""),
                       state=instance.get("State", {}).get("Name", ""), hourly_usd=hourly, price_note=note,
                       detail=f"{instance['InstanceType']} in "
                              f"{instance.get('Placement', {}).get('AvailabilityZone', '?')}",
                       extra={"instance_type": instance["InstanceType"],
                              "launch_time": str(instance.get("LaunchTime", ""))})


def _terminate(deletion: Deletion, region: str, instances: list[Resource]) -> None:
    """One call for the region's instances, then one line for each once all are terminated."""
    instances = [i for i in instances if i.state != "terminated"]
    if not instances:
        return
    ids = [i.id for i in instances]
    deletion.say(f"{region}: terminating {', '.join(ids)}")
    ec2 = deletion.clients("ec2", region)
    try:
        aws.call(ec2.terminate_instances, InstanceIds=ids)
        deletion.waiter(ec2, "instance_terminated", InstanceIds=ids)
        for instance in instances:
            deletion.done(f"{region}: {instance.label()} terminated")
    except Exception as exc:  # noqa: BLE001
        deletion.fail(f"{region}: terminating {', '.join(ids)}: {aws.classify(exc)}")


INSTANCE = Kind(resources.INSTANCE, Listing("EC2 instances", _list_instances), price=_price_instance,
                together=_terminate)


def _price_volume(finder: Finder, volume: dict[str, Any]) -> Price:
    return finder.price_unit(f"ebs-{volume.get('VolumeType', 'gp3')}", volume.get("Size", 0))


def _list_volumes(finder: Finder) -> None:
    ec2 = finder.clients("ec2", finder.region)
    for volume in aws.paginate(ec2, "describe_volumes", "Volumes", Filters=OUR_TAG_FILTER):
        hourly, note = VOLUME.price(finder, volume)
        attached = [a.get("InstanceId") for a in volume.get("Attachments", []) if a.get("InstanceId")]
        finder.add(VOLUME, volume["VolumeId"], volume.get("Tags"), state=volume.get("State", ""),
                   hourly_usd=hourly, price_note=note,
                   detail=f"{volume.get('Size', 0)} GiB {volume.get('VolumeType', 'gp3')}"
                          + (f", attached to {', '.join(attached)}" if attached else ""))


def _delete_volume(deletion: Deletion, volume: Resource) -> None:
    # a volume still detaching from a terminating instance refuses deletion for a moment
    ec2 = deletion.client("ec2", volume)
    deletion.retrying(lambda: ec2.delete_volume(VolumeId=volume.id), "VolumeInUse")


def _wait_volume(deletion: Deletion, volume: Resource) -> None:
    deletion.waiter(deletion.client("ec2", volume), "volume_deleted", VolumeIds=[volume.id])


VOLUME = Kind(resources.VOLUME, Listing("EBS volumes", _list_volumes), price=_price_volume, delete=_delete_volume,
              wait=_wait_volume)


def _list_groups(finder: Finder) -> None:
    autoscaling = finder.clients("autoscaling", finder.region)
    for group in aws.paginate(autoscaling, "describe_auto_scaling_groups", "AutoScalingGroups"):
        if not ours(group.get("Tags")):
            continue
        finder.add(ASG, group["AutoScalingGroupName"], group.get("Tags"), name=group["AutoScalingGroupName"],
                   state=group.get("Status", "") or "active",
                   detail=f"desired {group.get('DesiredCapacity', 0)}, {len(group.get('Instances', []))} "
                          "instance(s); its instances are priced on their own rows")


def _delete_group(deletion: Deletion, group: Resource) -> None:
    deletion.client("autoscaling", group).delete_auto_scaling_group(AutoScalingGroupName=group.id, ForceDelete=True)


def _wait_group(deletion: Deletion, group: Resource) -> None:
    autoscaling = deletion.client("autoscaling", group)
    deletion.gone(lambda: aws.call(autoscaling.describe_auto_scaling_groups,
                                   AutoScalingGroupNames=[group.id])["AutoScalingGroups"])


ASG = Kind(resources.ASG, Listing("Auto Scaling groups", _list_groups), delete=_delete_group, wait=_wait_group)


def _list_templates(finder: Finder) -> None:
    ec2 = finder.clients("ec2", finder.region)
    for template in aws.paginate(ec2, "describe_launch_templates", "LaunchTemplates", Filters=OUR_TAG_FILTER):
        finder.add(LAUNCH_TEMPLATE, template["LaunchTemplateId"], template.get("Tags"),
                   name=template.get("LaunchTemplateName", ""), state="available")


def _delete_template(deletion: Deletion, template: Resource) -> None:
    deletion.client("ec2", template).delete_launch_template(LaunchTemplateId=template.id)


LAUNCH_TEMPLATE = Kind(resources.LAUNCH_TEMPLATE, Listing("launch templates", _list_templates),
                       delete=_delete_template)
