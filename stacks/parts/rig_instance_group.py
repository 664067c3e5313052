"""One rig instance: a launch template and a one-instance Auto Scaling group that must signal."""

from __future__ import annotations

from typing import Sequence

import aws_cdk as cdk
from aws_cdk import aws_autoscaling as autoscaling
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from constructs import Construct

from .checks import acknowledge
from .custom_resources import LaunchWatch, RootVolume

LAUNCH_BUDGET = cdk.Duration.minutes(13)
"""How long the group may take to put an instance in service before the deploy fails with the
last launch error (the watch runs in one Lambda invocation, at most 15 minutes)."""


class RigInstanceGroup(Construct):
    """A launch template and a one-instance Auto Scaling group over the offered subnets.

    The group holds one instance and tries another of its zones when one has no
    capacity (``InsufficientInstanceCapacity``). Deploy-time parts around it:

    - the root volume is sized from the AMI (``RootVolume``): never below its snapshot;
    - ``LaunchWatch`` ends the deploy within minutes, with AWS's error code and message in
      the stack events, when the group cannot launch (any launch error, not only capacity);
    - the readiness wait starts with the instance: a wait condition that depends on the
      launch watch, ``ready_timeout`` long, whose handle carries the boot script's reason
      (SUCCESS or FAILURE) into the stack events. The boot script gives up five minutes
      before it, so a slow start fails with the script's reason, not a bare timeout.

    The group's creation policy (one SUCCESS signal within the launch budget plus
    ``ready_timeout``) also holds for updates: a change to the launch template or the
    zones replaces the group and waits for the new instance's signal.

    Props:
        instance_type, architecture, machine_image: what to launch.
        root_volume_gib, root_free_gib: the smallest root volume, and what the rig needs
            free beyond the AMI's snapshot.
        security_group, instance_profile: from the region's base stack.
        subnet_ids, zones: the subnets to launch in (zones that offer the type), and their
            zones comma-separated.
        rig_tag: (key, value) of the tag that marks the rig's group.
        user_data: the boot script (the caller adds its lines; it may use the
            ``signal_resource`` and ``wait_handle_url`` attributes).
        ready_timeout: how long the boot script has, from launch, to report readiness.

    Attributes:
        launch_template, group: the template and the L1 Auto Scaling group.
        group_name: the group's name (a deploy-time string).
        signal_resource: the group's logical id, for ``cloudformation signal-resource``.
        wait_handle_url: the wait-condition handle URL.
        root_volume: the deploy-time root volume size and device.

    Secure defaults: IMDSv2 required, encrypted gp3 root volume deleted with the
    instance, no key pair, no inbound rule (the base security group), tags on the
    instance and its volumes.
    """

    def __init__(self, scope: Construct, id_: str, *, instance_type: str, architecture: str,
                 machine_image: ec2.IMachineImage, root_volume_gib: int, root_free_gib: int,
                 security_group: ec2.ISecurityGroup, instance_profile: iam.IInstanceProfile,
                 subnet_ids: Sequence[str], zones: str, rig_tag: tuple[str, str], user_data: ec2.UserData,
                 ready_timeout: cdk.Duration) -> None:
        super().__init__(scope, id_)
        self.root_volume = RootVolume(self, "RootVolume", image_id=machine_image.get_image(self).image_id,
                                      architecture=architecture, minimum_gib=root_volume_gib,
                                      free_gib=root_free_gib)
        self.launch_template = ec2.LaunchTemplate(
            self,
            "LaunchTemplate",
            instance_type=ec2.InstanceType(instance_type),
            machine_image=machine_image,
            user_data=user_data,
            security_group=security_group,
            instance_profile=instance_profile,
            http_endpoint=True,
            http_tokens=ec2.LaunchTemplateHttpTokens.REQUIRED,
            block_devices=[ec2.BlockDevice(
                device_name=self.root_volume.device_name,
                volume=ec2.BlockDeviceVolume.ebs(self.root_volume.volume_gib, volume_type=ec2.EbsDeviceVolumeType.GP3,
                                                 encrypted=True, delete_on_termination=True),
            )],
        )
        ready_seconds = int(ready_timeout.to_seconds())
        self.group = autoscaling.CfnAutoScalingGroup(
            self,
            "Group",
            min_size="1",
            max_size="1",
            desired_capacity="1",
            launch_template=autoscaling.CfnAutoScalingGroup.LaunchTemplateSpecificationProperty(
                launch_template_id=self.launch_template.launch_template_id,
                version=self.launch_template.latest_version_number,
            ),
            vpc_zone_identifier=list(subnet_ids),
            health_check_type="EC2",
            health_check_grace_period=300,
        )
        backstop = int(LAUNCH_BUDGET.to_seconds()) + ready_seconds
        self.group.cfn_options.creation_policy = cdk.CfnCreationPolicy(
            resource_signal=cdk.CfnResourceSignal(count=1, timeout=f"PT{backstop}S"),
            auto_scaling_creation_policy=cdk.CfnResourceAutoScalingCreationPolicy(min_successful_instances_percent=100),
        )
        self.group.cfn_options.update_policy = cdk.CfnUpdatePolicy(
            auto_scaling_replacing_update=cdk.CfnAutoScalingReplacingUpdate(will_replace=True))
        self.group_name: str = self.group.ref
        self.signal_resource: str = cdk.Stack.of(self).get_logical_id(self.group)
        acknowledge(self.group, "AwsSolutions-AS3",
                    "A one-instance rig group: its launch outcome is reported by the launch watch and the boot "
                    "script's CloudFormation signal (with the failure reason) and its logs, not by scaling "
                    "notifications.")

        # After the group in the template: moto's CloudFormation creates resources in template
        # order, and the watch must find the group there (rigs/offline/moto_server.py).
        launched = LaunchWatch(self, "Launched", tag_key=rig_tag[0], tag_value=rig_tag[1],
                               launch_template_id=self.launch_template.launch_template_id,
                               launch_template_version=self.launch_template.latest_version_number,
                               zones=zones, budget=LAUNCH_BUDGET)
        handle = cdk.CfnWaitConditionHandle(self, "ReadyHandle")
        ready = cdk.CfnWaitCondition(self, "Ready", handle=handle.ref, timeout=str(ready_seconds), count=1)
        ready.node.add_dependency(launched.resource)
        self.wait_handle_url: str = handle.ref
