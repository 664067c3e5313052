"""Our CloudFormation stacks: listed with their lifetime, deleted (rig stacks first, base stacks only with
``--all``: the order is the sweep's) and waited for with CloudFormation's waiter."""

from __future__ import annotations

from typing import Any

from rigs import aws
from rigs.contract import BASE_STACK_PREFIX, BOOTSTRAP_STACK, TAG_MANAGED_BY, OutputKey, base_stack_name
from rigs.estate.kinds.base import Deletion, Finder, Kind, Listing
from rigs.estate.resources import Outlasting, Resource, ours
from rigs.estate import resources

BUSY_SUFFIX = "_IN_PROGRESS"


def _list(finder: Finder) -> None:
    cfn = finder.clients("cloudformation", finder.region)
    for stack in aws.paginate(cfn, "describe_stacks", "Stacks"):
        if stack.get("StackStatus") == "DELETE_COMPLETE":
            continue
        if stack["StackName"] == BOOTSTRAP_STACK:
            finder.outlasting.append(Outlasting(
                "cdk-bootstrap", finder.region, BOOTSTRAP_STACK, None,
                "storage only: its S3 bucket and ECR repository hold the assets CDK apps uploaded (this "
                "app's templates and the g5g build recipe: kilobytes)",
                "shared by every CDK app of the account; delete only if none uses it: empty its bucket, then "
                f"`aws cloudformation delete-stack --stack-name {BOOTSTRAP_STACK} --region {finder.region}`"))
        if not ours(stack.get("Tags")):
            if stack["StackName"] == base_stack_name(finder.region):
                finder.notes.append(f"{finder.region}: stack {stack['StackName']} carries no {TAG_MANAGED_BY} "
                                    "tag, so it is not swept; `./scripts/cdk destroy --all` removes it")
            continue
        outputs = {o.get("OutputKey"): o.get("OutputValue") for o in stack.get("Outputs", []) or []}
        details = [stack.get("StackStatusReason", "") or ""]
        if outputs.get(OutputKey.EXPIRES_AT):
            details.append(f"lifetime ends {outputs[OutputKey.EXPIRES_AT]}")
        finder.add(STACK, stack["StackName"], stack.get("Tags"), name=stack["StackName"],
                   state=stack.get("StackStatus", ""), stack=stack["StackName"],
                   detail="; ".join(d for d in details if d), kept_by_default=stack["StackName"].startswith(BASE_STACK_PREFIX),
                   extra={"stack_id": stack.get("StackId", ""), "expires_at": outputs.get(OutputKey.EXPIRES_AT)})


def status(cfn: Any, name: str) -> str | None:
    """The stack's status; None when it does not exist."""
    try:
        stacks = aws.call(cfn.describe_stacks, StackName=name)["Stacks"]
    except Exception as exc:  # noqa: BLE001
        if aws.error_code(exc) == "ValidationError":  # CloudFormation's code for "does not exist"
            return None
        raise
    return stacks[0]["StackStatus"] if stacks else None


def settled_status(deletion: Deletion, cfn: Any, name: str) -> str | None:
    """The stack's status once no operation is in progress (a delete can only start then)."""
    return deletion.settled(lambda: status(cfn, name), lambda state: state is not None and state.endswith(
        BUSY_SUFFIX) and state != "DELETE_IN_PROGRESS", deletion.poll)


def failure(cfn: Any, stack_id: str) -> str:
    """The first failed resource of the stack's events, and why, or ``""``."""
    try:
        events = aws.call(cfn.describe_stack_events, StackName=stack_id).get("StackEvents", [])
    except Exception:  # noqa: BLE001
        return ""
    for event in events:
        if event.get("ResourceStatus", "").endswith("FAILED") and event.get("ResourceStatusReason"):
            return f"{event.get('LogicalResourceId')}: {event['ResourceStatusReason']}"
    return ""


def _delete(deletion: Deletion, stack: Resource) -> None:
    aws.call(deletion.client("cloudformation", stack).delete_stack, StackName=stack.id)


def _wait(deletion: Deletion, stack: Resource) -> None:
    deletion.waiter(deletion.client("cloudformation", stack), "stack_delete_complete",
                    StackName=stack.get("stack_id") or stack.id)


STACK = Kind(resources.STACK, Listing("CloudFormation stacks", _list), delete=_delete, wait=_wait)
"""Kept when a base stack (``InferenceBase-…``: network, security group, instance profile)."""
