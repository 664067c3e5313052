"""A maximum lifetime: at a deploy-time deadline, EventBridge Scheduler releases the compute.

Synth never reads the clock. The :class:`Deadline` custom resource reads it at deploy
time; a one-time ``at()`` schedule then calls the AWS API that releases the rig's
compute (a universal target), with retries for a day. Nobody has to run a command.
See docs/lifetime.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import aws_cdk as cdk
from aws_cdk import aws_autoscaling as autoscaling
from aws_cdk import aws_iam as iam
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as targets
from constructs import Construct

from .checks import acknowledge
from .custom_resources import Deadline


@dataclass(frozen=True)
class ReleaseAction:
    """The API call that releases a rig's compute, and the permission it needs."""

    service: str
    action: str
    input: Mapping[str, Any]
    statements: Sequence[iam.PolicyStatement]
    summary: str
    acknowledgments: Mapping[str, str] = field(default_factory=dict)
    """cdk-nag findings the statements raise, with the reason each is acceptable."""

    @classmethod
    def scale_group_to_zero(cls, group: autoscaling.CfnAutoScalingGroup) -> "ReleaseAction":
        """``UpdateAutoScalingGroup`` to 0/0/0: the instance terminates and is not replaced."""
        stack = cdk.Stack.of(group)
        group_arn = stack.format_arn(service="autoscaling", resource="autoScalingGroup",
                                     resource_name=f"*:autoScalingGroupName/{group.ref}",
                                     arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME)
        logical_id = stack.resolve(stack.get_logical_id(group))
        finding = (f"AwsSolutions-IAM5[Resource::arn:aws:autoscaling:{stack.region}:<AWS::AccountId>:"
                   f"autoScalingGroup:*:autoScalingGroupName/<{logical_id}>]")
        return cls(
            service="autoscaling",
            action="updateAutoScalingGroup",
            input={"AutoScalingGroupName": group.ref, "MinSize": 0, "MaxSize": 0, "DesiredCapacity": 0},
            statements=[iam.PolicyStatement(actions=["autoscaling:UpdateAutoScalingGroup"], resources=[group_arn])],
            summary="scales the rig's Auto Scaling group to zero",
            acknowledgments={finding: "An Auto Scaling group ARN embeds a generated UUID; the statement names the "
                                      "rig's one group by name and allows only UpdateAutoScalingGroup on it."},
        )

    @classmethod
    def delete_endpoint(cls, *, endpoint_name: str, endpoint_arn: str) -> "ReleaseAction":
        """``DeleteEndpoint``: the instance behind it is released; model and config stay (free)."""
        return cls(
            service="sagemaker",
            action="deleteEndpoint",
            input={"EndpointName": endpoint_name},
            statements=[iam.PolicyStatement(actions=["sagemaker:DeleteEndpoint"], resources=[endpoint_arn])],
            summary="deletes the SageMaker endpoint",
        )


class Lifetime(Construct):
    """Release a rig's compute ``lifetime_minutes`` after its deploy, with nobody running a command.

    Props:
        lifetime_minutes: the maximum lifetime.
        release: the API call that releases the compute.
        revision: changes when the compute is re-created; a change restarts the lifetime.

    Attributes:
        expires_at: the deadline, ISO 8601 UTC (a deploy-time string).
        schedule: the one-time EventBridge Scheduler schedule.
    """

    def __init__(self, scope: Construct, id_: str, *, lifetime_minutes: int, release: ReleaseAction,
                 revision: str = "") -> None:
        super().__init__(scope, id_)
        deadline = Deadline(self, "Deadline", lifetime_minutes=lifetime_minutes, revision=revision)
        self.expires_at = deadline.iso
        role = iam.Role(
            self,
            "ReleaseRole",
            assumed_by=iam.ServicePrincipal(
                "scheduler.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": cdk.Aws.ACCOUNT_ID}}),
            description=f"aws-inference lifetime: {release.summary}",
        )
        for rule, reason in release.acknowledgments.items():
            acknowledge(role, rule, reason)
        self.schedule = scheduler.Schedule(
            self,
            "Release",
            schedule=scheduler.ScheduleExpression.expression(f"at({deadline.at})", cdk.TimeZone.ETC_UTC),
            description=f"aws-inference lifetime: {release.summary} after {lifetime_minutes} minutes",
            target=targets.Universal(
                service=release.service,
                action=release.action,
                input=scheduler.ScheduleTargetInput.from_object(dict(release.input)),
                policy_statements=list(release.statements),
                role=role,
                retry_attempts=185,
                max_event_age=cdk.Duration.hours(24),
            ),
        )
