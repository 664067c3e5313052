"""One rig instance: a launch template and a one-instance Auto Scaling group that must signal."""

from __future__ import annotations

from typing import Sequence

import aws_cdk as cdk
from aws_cdk import aws_autoscaling as autoscaling
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from constructs import Construct

from .checks import acknowledge

ROOT_DEVICE = "/dev/sda1"
"""The root device of the Ubuntu Deep Learning AMIs the catalog uses."""


class RigInstanceGroup(Construct):
    """A launch template and a one-instance Auto Scaling group over the offered subnets.

    The group holds one instance and tries another of its zones when one has no
    capacity (``InsufficientInstanceCapacity``). CloudFormation waits for the boot
    script's signal: a creation policy on the group (one SUCCESS within
    ``ready_timeout``), plus a wait condition whose handle carries the reason of a
    FAILURE into the stack events. A change to the launch template replaces the group
    and again waits for the new instance's signal.

    Props:
        instance_type, machine_image, root_volume_gib: what to launch.
        security_group, instance_profile: from the region's base stack.
        subnet_ids: the subnets to launch in (zones that offer the type).
        user_data: the boot script (the caller adds its lines; it may use the
            ``signal_resource`` and ``wait_handle_url`` attributes).
        ready_timeout: how long the boot script has to report readiness.

    Attributes:
        launch_template, group: the template and the L1 Auto Scaling group.
        group_name: the group's name (a deploy-time string).
        signal_resource: the group's logical id, for ``cloudformation signal-resource``.
        wait_handle_url: the wait-condition handle URL.

    Secure defaults: IMDSv2 required, encrypted gp3 root volume deleted with the
    instance, no key pair, no inbound rule (the base security group), tags on the
    instance and its volumes.
    """

    def __init__(self, scope: Construct, id_: str, *, instance_type: str, machine_image: ec2.IMachineImage,
                 root_volume_gib: int, security_group: ec2.ISecurityGroup, instance_profile: iam.IInstanceProfile,
                 subnet_ids: Sequence[str], user_data: ec2.UserData, ready_timeout: cdk.Duration) -> None:
        super().__init__(scope, id_)
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
                device_name=ROOT_DEVICE,
                volume=ec2.BlockDeviceVolume.ebs(root_volume_gib, volume_type=ec2.EbsDeviceVolumeType.GP3,
                                                 encrypted=True, delete_on_termination=True),
            )],
        )
        handle = cdk.CfnWaitConditionHandle(self, "ReadyHandle")
        seconds = int(ready_timeout.to_seconds())
        cdk.CfnWaitCondition(self, "Ready", handle=handle.ref, timeout=str(seconds), count=1)
        self.wait_handle_url: str = handle.ref

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
        self.group.cfn_options.creation_policy = cdk.CfnCreationPolicy(
            resource_signal=cdk.CfnResourceSignal(count=1, timeout=f"PT{seconds}S"),
            auto_scaling_creation_policy=cdk.CfnResourceAutoScalingCreationPolicy(min_successful_instances_percent=100),
        )
        self.group.cfn_options.update_policy = cdk.CfnUpdatePolicy(
            auto_scaling_replacing_update=cdk.CfnAutoScalingReplacingUpdate(will_replace=True))
        self.group_name: str = self.group.ref
        self.signal_resource: str = cdk.Stack.of(self).get_logical_id(self.group)
        acknowledge(self.group, "AwsSolutions-AS3",
                    "A one-instance rig group: its launch outcome is reported by the boot script's "
                    "CloudFormation signal (with the failure reason) and its logs, not by scaling notifications.")
