"""What went wrong with a deploy, read from CloudFormation and Auto Scaling, by AWS error code.

A failed rig stack's most telling cause (a capacity, quota or unsupported-zone failure of its
group's launches first, else the first failed resource); the launch failures of a group by
zone; and the signal that fails a group's creation policy at once instead of at its timeout.
"""

from __future__ import annotations

import json
from typing import Any

from rigs import aws

FAILOVER_KINDS = (aws.CAPACITY, aws.QUOTA, aws.UNSUPPORTED, aws.NOT_HERE)
"""Failures another region may not have: ``up`` cleans up and tries the next region."""
GROUP_TYPE = "AWS::AutoScaling::AutoScalingGroup"
RELEASED = "released"
"""A deployed rig whose compute its lifetime limit released (group at 0, endpoint deleted): a redeploy of the
unchanged stack does not bring it back (CloudFormation compares templates, not the group's size or whether the
endpoint exists), so ``up`` deletes the rig stack and deploys it again."""


def released_group(groups: list[dict[str, Any]]) -> bool:
    """Whether ``DescribeAutoScalingGroups``' group is set to 0 as the lifetime limit leaves it (max and desired 0)."""
    return bool(groups) and groups[0].get("MaxSize") == 0 and groups[0].get("DesiredCapacity") == 0


def live_instances(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The instances of ``DescribeAutoScalingGroups``' groups that are in service or on their way."""
    return [i for g in groups for i in g.get("Instances", [])
            if i.get("LifecycleState", "").startswith(("InService", "Pending"))]


class Diagnosis:
    """Reads why a rig's deploy failed, or is failing (tests use moto or stubs)."""

    def __init__(self, clients: aws.Clients) -> None:
        self.clients = clients

    def stack_failure(self, region: str, stack: str) -> aws.AwsFailure:
        """The most telling failure among the stack's events (capacity/quota/unsupported first)."""
        cfn = self.clients("cloudformation", region)
        try:
            events = aws.paginate(cfn, "describe_stack_events", "StackEvents", StackName=stack)
        except Exception as exc:  # noqa: BLE001
            failure = aws.classify(exc)
            return aws.AwsFailure("StackNotFound" if failure.code == "ValidationError" else failure.code,
                                  aws.OTHER, f"no stack events for {stack} ({failure.code})")
        candidates = []
        for event in events:
            status = event.get("ResourceStatus", "")
            reason = event.get("ResourceStatusReason") or ""
            if status.endswith("FAILED") and reason and "cancelled" not in reason.lower():
                candidates.append(aws.classify_message(reason))
        group = self.group_of(region, stack)
        launches = self.scaling_failures(region, group[1]) if group is not None else []
        if launches:
            candidates.insert(0, launches[0][1])
        for failure in candidates:
            if failure.kind in FAILOVER_KINDS:
                return failure
        if candidates:
            first = candidates[-1]  # events come newest first: the last is the first failure
            return aws.AwsFailure(first.code if first.code != "Unknown" else "StackFailed", first.kind, first.message)
        return aws.AwsFailure("DeployFailed", aws.OTHER, "the CDK CLI failed before CloudFormation reported a cause")

    def scaling_failures(self, region: str, group: str) -> list[tuple[str | None, aws.AwsFailure]]:
        """(zone, failure) for each failed launch activity, newest first."""
        autoscaling = self.clients("autoscaling", region)
        try:
            activities = aws.call(autoscaling.describe_scaling_activities, AutoScalingGroupName=group,
                                  MaxRecords=50).get("Activities", [])
        except Exception:  # noqa: BLE001
            return []
        out = []
        for activity in activities:
            if activity.get("StatusCode") not in ("Failed", "Cancelled"):
                continue
            zone = None
            try:
                zone = json.loads(activity.get("Details") or "{}").get("Availability Zone")
            except (TypeError, ValueError):
                pass
            out.append((zone, aws.classify_message(activity.get("StatusMessage") or activity.get("Description"))))
        return out

    def group_of(self, region: str, stack: str) -> tuple[str, str] | None:
        """(logical id, name) of the stack's Auto Scaling group, once CloudFormation created it."""
        try:
            resources = aws.call(self.clients("cloudformation", region).describe_stack_resources,
                                 StackName=stack).get("StackResources", [])
        except Exception:  # noqa: BLE001 - the stack may not exist yet
            return None
        for resource in resources:
            if resource.get("ResourceType") == GROUP_TYPE and resource.get("PhysicalResourceId"):
                return resource["LogicalResourceId"], resource["PhysicalResourceId"]
        return None

    def group_has_instance(self, region: str, group: str) -> bool:
        try:
            groups = aws.call(self.clients("autoscaling", region).describe_auto_scaling_groups,
                              AutoScalingGroupNames=[group]).get("AutoScalingGroups", [])
        except Exception:  # noqa: BLE001
            return False
        return bool(live_instances(groups))

    def signal_failure(self, region: str, stack: str, logical_id: str) -> str | None:
        """Fail the group's creation policy now (instead of at its timeout); returns an error code if refused."""
        try:
            aws.call(self.clients("cloudformation", region).signal_resource, StackName=stack,
                     LogicalResourceId=logical_id, UniqueId="rigs-up-failover", Status="FAILURE")
        except Exception as exc:  # noqa: BLE001 - the deploy then ends at its own pace
            return aws.classify(exc).code
        return None
