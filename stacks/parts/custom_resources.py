"""Deploy-time facts as custom resources: usable zones, offered subnets, the root volume, the
first launch, a lifetime deadline, a chat probe, an image's digest; and one deletion-time step,
stopping an image build's running builds.

Each needs something synth must not do (an AWS call, the clock), so each runs in a small
inline Lambda at deploy time and hands the result back as attributes.
"""

from __future__ import annotations

from typing import Sequence

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from constructs import Construct

from .checks import acknowledge
from .inline_function import InlineFunction

SERVICE_TIMEOUT_MARGIN = cdk.Duration.minutes(2)
"""How much longer than its function CloudFormation waits for a custom resource's answer. A handler
that dies without answering (a timeout, out of memory, a failed upload of its answer) then fails
the stack within minutes, not after CloudFormation's default hour. Lambda's asynchronous invocation
starts the function within seconds; the margin covers that and a retry of the answer's upload."""


def _read_only(actions: Sequence[str]) -> str:
    """The cdk-nag reason for describe calls that IAM only grants on ``Resource *``."""
    one = len(actions) == 1
    return (f"{' and '.join(actions)} {'is' if one else 'are'} read-only and support{'s' if one else ''} no "
            f"resource-level permissions; IAM requires Resource * for {'it' if one else 'them'}.")


def deploy_time_resource(scope: Construct, *, handler: str, resource_type: str, properties: dict,
                         timeout: cdk.Duration, description: str, read_only_actions: Sequence[str] = (),
                         statements: Sequence[iam.PolicyStatement] = ()) -> cdk.CustomResource:
    """``handlers/<handler>.py`` as the provider (``Provider``) of one custom resource (``Resource``).

    ``read_only_actions`` are describe calls granted on ``Resource *`` (they support no
    resource-level permissions; the cdk-nag finding is acknowledged with that reason);
    ``statements`` are any other permissions the handler needs. CloudFormation gives up on
    the resource ``SERVICE_TIMEOUT_MARGIN`` after the function's ``timeout``.
    """
    if read_only_actions:
        statements = [iam.PolicyStatement(actions=list(read_only_actions), resources=["*"]), *statements]
    provider = InlineFunction(scope, "Provider", handler=handler, timeout=timeout, description=description,
                              statements=statements)
    if read_only_actions:
        acknowledge(provider, "AwsSolutions-IAM5[Resource::*]", _read_only(read_only_actions))
    return cdk.CustomResource(scope, "Resource", service_token=provider.function.function_arn,
                              resource_type=resource_type, properties=properties,
                              service_timeout=timeout.plus(SERVICE_TIMEOUT_MARGIN))


class UsableZones(Construct):
    """The zones a region's base network puts its ``slots`` subnets in, chosen at deploy time.

    ``Fn::GetAZs`` lists only the zones with a default subnet when an account has any, and
    some accounts cannot create subnets in every listed zone, so zones are never taken by
    index. At deploy time the handler takes the zones available to the account that offer
    the most of ``instance_types`` (a zone offering none is never used), or exactly
    ``named_zones`` (checked to be available). With fewer usable zones than slots, slots
    repeat zones (a second subnet in a zone costs nothing).

    Attributes:
        zones: one zone per slot (deploy-time strings, in slot order).
        zone_list: the same, comma-separated (a deploy-time string).
    """

    def __init__(self, scope: Construct, id_: str, *, slots: int, instance_types: Sequence[str],
                 named_zones: Sequence[str] = ()) -> None:
        super().__init__(scope, id_)
        if named_zones and len(named_zones) != slots:
            raise ValueError(f"{len(named_zones)} named zones for {slots} subnets")
        resource = deploy_time_resource(
            self,
            handler="usable_zones",
            resource_type="Custom::UsableZones",
            timeout=cdk.Duration.minutes(2),
            description="aws-inference: the zones the rig network uses (available and offering a rig type)",
            read_only_actions=["ec2:DescribeAvailabilityZones", "ec2:DescribeInstanceTypeOfferings"],
            properties={"Slots": str(slots), "InstanceTypes": sorted(instance_types), "Zones": list(named_zones)},
        )
        self.zone_list: str = resource.get_att_string("Zones")
        self.zones: list[str] = cdk.Fn.split(",", self.zone_list, slots)


class OfferedSubnets(Construct):
    """The subnets whose zone offers ``instance_type``, optionally only in ``allowed_zones``.

    A zone that does not offer the type is never given to the Auto Scaling group, so a
    launch is never tried there; the group fails over only between zones that can
    launch the type. Deploy fails, with the offered zones in the message, when none can.

    Attributes:
        subnet_ids: the chosen subnets (a deploy-time list).
        zones: the chosen zones, comma-separated (a deploy-time string).
    """

    def __init__(self, scope: Construct, id_: str, *, subnet_ids: Sequence[str], instance_type: str,
                 allowed_zones: Sequence[str] = ()) -> None:
        super().__init__(scope, id_)
        resource = deploy_time_resource(
            self,
            handler="offered_subnets",
            resource_type="Custom::OfferedSubnets",
            timeout=cdk.Duration.minutes(2),
            description="aws-inference: subnets whose zone offers the rig's instance type",
            read_only_actions=["ec2:DescribeSubnets", "ec2:DescribeInstanceTypeOfferings"],
            properties={"SubnetIds": list(subnet_ids), "InstanceType": instance_type,
                        "AllowedZones": list(allowed_zones)},
        )
        self.subnet_ids: list[str] = cdk.Fn.split(",", resource.get_att_string("SubnetIds"))
        self.zones: str = resource.get_att_string("Zones")


class RootVolume(Construct):
    """A rig's root volume sized from its AMI at deploy time: never smaller than the AMI's snapshot.

    A volume below the AMI's root snapshot fails every launch with
    ``InvalidBlockDeviceMapping``, and the AMI behind an SSM parameter changes over time.
    The handler reads the AMI and answers ``max(minimum_gib, snapshot + free_gib)``
    (:meth:`rigs.catalog.model.Ec2Rig.root_volume_gib_for`) and the AMI's root device name; it
    fails the deploy at once, with the reason, when the AMI is missing, built for another
    architecture, or has no EBS root.

    Attributes:
        volume_gib: the volume size (a deploy-time number).
        device_name: the AMI's root device (a deploy-time string).
        snapshot_gib: the AMI's root snapshot size (a deploy-time string).
    """

    def __init__(self, scope: Construct, id_: str, *, image_id: str, architecture: str, minimum_gib: int,
                 free_gib: int) -> None:
        super().__init__(scope, id_)
        resource = deploy_time_resource(
            self,
            handler="root_volume",
            resource_type="Custom::RootVolume",
            timeout=cdk.Duration.minutes(1),
            description="aws-inference: the rig's root volume, sized from its AMI's root snapshot",
            read_only_actions=["ec2:DescribeImages"],
            properties={"ImageId": image_id, "Architecture": architecture, "MinimumGiB": str(minimum_gib),
                        "FreeGiB": str(free_gib)},
        )
        self.volume_gib: int = cdk.Token.as_number(resource.get_att("VolumeSize"))
        self.device_name: str = resource.get_att_string("DeviceName")
        self.snapshot_gib: str = resource.get_att_string("SnapshotGiB")


class LaunchWatch(Construct):
    """Ends the deploy within minutes, with AWS's error code, when a rig group cannot launch.

    A one-instance group whose launches fail retries while CloudFormation waits out the
    group's creation policy (the whole readiness time) for a signal that cannot come. This
    custom resource does not reference the group, so CloudFormation starts it beside the
    group; the handler finds the group by its tag and launch template version and reads its
    scaling activities every 15 s:

    - an instance in service: success (the readiness wait, a wait condition that depends
      on this resource, starts now, with the instance); while an instance is pending,
      earlier launch failures are not judged (a retry is under way);
    - a failed launch that another zone would not change (``InvalidBlockDeviceMapping``, an
      AMI or instance profile that does not exist, ``VcpuLimitExceeded``): failure at once;
    - ``InsufficientInstanceCapacity``, ``Unsupported`` or a message without an error code
      (``LaunchFailed``; it may be one zone's shortage): failure once every zone of the group
      has failed so, with a coded failure as the reason when there is one;
    - nothing in service within ``budget``: failure with the last launch error.

    A failure's reason, ``launch failed in <zone>: <Code>: <message>``, is in the stack
    events; CloudFormation cancels the group and rolls the stack back. A new launch
    template version or zone list (a replaced group) runs it again.

    Attributes:
        resource: the custom resource (the readiness wait depends on it).
        instance_id, zone: the first instance in service and its zone (deploy-time strings).
    """

    def __init__(self, scope: Construct, id_: str, *, tag_key: str, tag_value: str, launch_template_id: str,
                 launch_template_version: str, zones: str, budget: cdk.Duration) -> None:
        super().__init__(scope, id_)
        resource = deploy_time_resource(
            self,
            handler="launch_watch",
            resource_type="Custom::LaunchWatch",
            timeout=budget.plus(cdk.Duration.minutes(1)),
            description="aws-inference: the rig group's first launch, or its launch error within minutes",
            read_only_actions=["autoscaling:DescribeAutoScalingGroups", "autoscaling:DescribeScalingActivities"],
            properties={"TagKey": tag_key, "TagValue": tag_value, "LaunchTemplateId": launch_template_id,
                        "LaunchTemplateVersion": launch_template_version, "Zones": zones,
                        "BudgetSeconds": str(int(budget.to_seconds()))},
        )
        self.resource = resource
        self.instance_id: str = resource.get_att_string("InstanceId")
        self.zone: str = resource.get_att_string("Zone")


class Deadline(Construct):
    """The end of a lifetime: ``lifetime_minutes`` after the deploy that created or changed it.

    ``revision`` is any string that changes when the compute is re-created (a launch
    template version, a subnet list): a change restarts the lifetime from that deploy.

    Attributes:
        at: ``yyyy-mm-ddThh:mm:ss`` in UTC, for an ``at()`` schedule expression.
        iso: the same moment as ISO 8601 with ``Z``.
    """

    def __init__(self, scope: Construct, id_: str, *, lifetime_minutes: int, revision: str = "") -> None:
        super().__init__(scope, id_)
        resource = deploy_time_resource(
            self,
            handler="deadline",
            resource_type="Custom::Deadline",
            timeout=cdk.Duration.seconds(30),
            description="aws-inference: the moment a rig's lifetime ends (reads the clock at deploy)",
            properties={"LifetimeMinutes": str(lifetime_minutes), "Revision": revision},
        )
        self.at: str = resource.get_att_string("At")
        self.iso: str = resource.get_att_string("Iso")


class EndpointChatProbe(Construct):
    """Deploy succeeds only when the SageMaker endpoint answers a chat request with text.

    Attributes:
        reply: the first 200 characters of the answer.
    """

    def __init__(self, scope: Construct, id_: str, *, endpoint_name: str, endpoint_arn: str, model_id: str,
                 budget: cdk.Duration = cdk.Duration.minutes(10)) -> None:
        super().__init__(scope, id_)
        resource = deploy_time_resource(
            self,
            handler="endpoint_probe",
            resource_type="Custom::EndpointChatProbe",
            timeout=budget.plus(cdk.Duration.minutes(2)),
            description="aws-inference: one chat completion from the SageMaker endpoint before deploy returns",
            statements=[iam.PolicyStatement(actions=["sagemaker:InvokeEndpoint"], resources=[endpoint_arn])],
            properties={"EndpointName": endpoint_name, "ModelId": model_id,
                        "BudgetSeconds": str(int(budget.to_seconds()))},
        )
        self.reply: str = resource.get_att_string("Reply")


class ImageDigest(Construct):
    """The digest ``repository:tag`` points to in the stack's region, read from its registry at deploy time.

    For a registry that is separate in every region (AWS's SageMaker containers, account
    763104351884), where the same tag has another digest in each. The handler reads it with
    ``ecr:DescribeImages`` (``ecr:BatchGetImage`` where the registry allows pulls only), granted on
    the one repository; the deploy fails at once, with the image and region in the reason, when
    the tag is not in that region's registry. A changed tag reads again; the same tag keeps the
    digest read at the first deploy.

    Attributes:
        digest: ``sha256:…`` (a deploy-time string).
    """

    def __init__(self, scope: Construct, id_: str, *, registry_id: str, repository: str, tag: str,
                 repository_arn: str) -> None:
        super().__init__(scope, id_)
        resource = deploy_time_resource(
            self,
            handler="image_digest",
            resource_type="Custom::ImageDigest",
            timeout=cdk.Duration.minutes(1),
            description="aws-inference: the digest of the serving image's tag in this region's registry",
            statements=[iam.PolicyStatement(actions=["ecr:DescribeImages", "ecr:BatchGetImage"],
                                            resources=[repository_arn])],
            properties={"RegistryId": registry_id, "RepositoryName": repository, "ImageTag": tag},
        )
        self.digest: str = resource.get_att_string("Digest")


class BuildStop(Construct):
    """Stops a CodeBuild project's running builds when the stack is deleted.

    Deleting a project leaves its builds running until their timeout (hours, billed). This
    resource references the project, so CloudFormation deletes it before the project; its
    handler then stops every build of the project still in progress, with
    ``codebuild:ListBuildsForProject``, ``BatchGetBuilds`` and ``StopBuild`` on that project only.
    """

    def __init__(self, scope: Construct, id_: str, *, project_name: str, project_arn: str) -> None:
        super().__init__(scope, id_)
        deploy_time_resource(
            self,
            handler="build_stop",
            resource_type="Custom::BuildStop",
            timeout=cdk.Duration.minutes(1),
            description="aws-inference: stop the image build's running builds when its stack is deleted",
            statements=[iam.PolicyStatement(actions=["codebuild:ListBuildsForProject", "codebuild:BatchGetBuilds",
                                                     "codebuild:StopBuild"], resources=[project_arn])],
            properties={"ProjectName": project_name},
        )
