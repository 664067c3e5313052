"""Deploy-time facts as custom resources: offered subnets, a lifetime deadline, a chat probe.

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
        provider = InlineFunction(
            self,
            "Provider",
            handler="offered_subnets",
            timeout=cdk.Duration.minutes(2),
            description="aws-inference: subnets whose zone offers the rig's instance type",
            statements=[iam.PolicyStatement(
                actions=["ec2:DescribeSubnets", "ec2:DescribeInstanceTypeOfferings"], resources=["*"])],
        )
        acknowledge(provider, "AwsSolutions-IAM5[Resource::*]",
                    "ec2:DescribeSubnets and ec2:DescribeInstanceTypeOfferings are read-only and support "
                    "no resource-level permissions; IAM requires Resource * for them.")
        resource = cdk.CustomResource(
            self,
            "Resource",
            service_token=provider.function.function_arn,
            resource_type="Custom::OfferedSubnets",
            properties={"SubnetIds": list(subnet_ids), "InstanceType": instance_type,
                        "AllowedZones": list(allowed_zones)},
        )
        self.subnet_ids: list[str] = cdk.Fn.split(",", resource.get_att_string("SubnetIds"))
        self.zones: str = resource.get_att_string("Zones")


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
        provider = InlineFunction(
            self,
            "Provider",
            handler="deadline",
            timeout=cdk.Duration.seconds(30),
            description="aws-inference: the moment a rig's lifetime ends (reads the clock at deploy)",
            statements=[],
        )
        resource = cdk.CustomResource(
            self,
            "Resource",
            service_token=provider.function.function_arn,
            resource_type="Custom::Deadline",
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
        provider = InlineFunction(
            self,
            "Provider",
            handler="endpoint_probe",
            timeout=budget.plus(cdk.Duration.minutes(2)),
            description="aws-inference: one chat completion from the SageMaker endpoint before deploy returns",
            statements=[iam.PolicyStatement(actions=["sagemaker:InvokeEndpoint"], resources=[endpoint_arn])],
        )
        resource = cdk.CustomResource(
            self,
            "Resource",
            service_token=provider.function.function_arn,
            resource_type="Custom::EndpointChatProbe",
            properties={"EndpointName": endpoint_name, "ModelId": model_id,
                        "BudgetSeconds": str(int(budget.to_seconds()))},
        )
        self.reply: str = resource.get_att_string("Reply")
