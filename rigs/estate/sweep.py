"""Sweep: delete everything of ours in the four regions, in dependency order, and prove it is gone.

Without ``yes`` it only lists (what bills, and its $/h). With ``yes``:

1. SageMaker endpoints still ``Creating``/``Updating`` cannot be deleted: it says so and
   waits (up to ``max_wait`` seconds), else tells the user when to rerun; the stack that
   holds such an endpoint is left for that rerun.
2. Our CloudFormation stacks, rig stacks first, base stacks (network, security group,
   instance profile) only with ``everything``; each deletion is waited for.
3. What is left outside stacks (a stack that failed to delete, resources made by hand or by
   an interrupted run): endpoints, endpoint configs, models, Auto Scaling groups,
   instances, launch templates, volumes, builds still running (stopped), build projects,
   ECR repositories; with
   ``everything`` also security groups, the network and our IAM roles and instance
   profiles. Each deletion is waited for (boto3 waiters or polling).
4. It lists again and prints what is left: nothing, or each leftover and why.

Only resources carrying ``ManagedBy=aws-inference`` are ever touched (see
:mod:`rigs.estate.inventory`). Every step is idempotent: a second run, or a run after an
interrupted one, deletes what is still there and reports "not found" as done.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Sequence

from rigs import aws, utc

from rigs.estate import builds

from rigs.deploy import placement
from rigs.contract import BASE_STACK_PREFIX, REGIONS
from rigs.estate.inventory import (ASG, BUILD_PROJECT, ENDPOINT, ENDPOINT_CONFIG, GLOBAL, INSTANCE, INSTANCE_PROFILE,
                        INTERNET_GATEWAY, LAUNCH_TEMPLATE, MODEL, REPOSITORY, ROLE, ROUTE_TABLE, RUNNING_BUILD,
                        SECURITY_GROUP, STACK, SUBNET, VOLUME, VPC, Inventory, Resource, discover)
from rigs.catalog.pricing import PriceBook

Say = Callable[[str], None]

ENDPOINT_BUSY = ("Creating", "Updating", "SystemUpdating", "RollingBack", "UpdateRollbackFailed")
STACK_BUSY_SUFFIX = "_IN_PROGRESS"
TYPICAL_ENDPOINT_MINUTES = 10
CAPACITY_WAIT_MINUTES = 31
MAX_WAIT_MINUTES = 15.0
"""How long a sweep waits, by default, for an endpoint still Creating and for each deletion (``--max-wait``)."""
POLL_S = 5.0
"""How often a sweep asks whether a deletion is done."""
ENDPOINT_POLL_S = 1.0
"""The same against a custom endpoint (``AWS_ENDPOINT_URL``: moto's server answers at once)."""


def default_poll_s() -> float:
    return ENDPOINT_POLL_S if aws.endpoint_url() else POLL_S


@dataclass
class SweepResult:
    before: Inventory
    after: Inventory | None = None
    deleted: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)
    """Things that could not be deleted yet (an endpoint still Creating) with when to rerun."""

    def leftovers(self, everything: bool) -> list[Resource]:
        if self.after is None:
            return []
        return [r for r in self.after.resources if everything or not r.kept_by_default]

    def clean(self, everything: bool) -> bool:
        return self.after is not None and not self.leftovers(everything) and not self.after.problems

    def forget_swept(self, regions: Sequence[str], stacks: dict[str, str]) -> list[str]:
        """Clear the placement record of each rig whose stack the sweep left nowhere in ``regions``.

        Args:
            regions: The regions swept.
            stacks: Rig name -> its stack name.

        Returns:
            The rigs whose record was cleared; none when the final listing was incomplete.
        """
        if self.after is None or self.after.problems:
            return []
        recorded = placement.load()
        remaining = {(s.region, s.id) for s in self.after.of_kind(STACK)}
        gone = [rig for rig, stack in stacks.items()
                if (region := recorded.deployed_region(rig)) in regions and (region, stack) not in remaining]
        return placement.forget_deployed(gone)


class Sweeper:
    def __init__(self, session: Any, regions: Sequence[str] = REGIONS, everything: bool = False,
                 max_wait: float = MAX_WAIT_MINUTES * 60, say: Say = print, poll: float = POLL_S,
                 sleep: Callable[[float], None] = time.sleep, prices: PriceBook | None = None) -> None:
        self.session = session
        self.clients = aws.Clients(session)
        self.regions = tuple(regions)
        self.everything = everything
        self.max_wait = max_wait
        self.say = say
        self.poll = poll
        self.sleep = sleep
        self.prices = prices or PriceBook(session)
        self.result: SweepResult | None = None

    # --- listing ---------------------------------------------------------------

    def inventory(self) -> Inventory:
        return discover(self.session, self.regions, self.prices, include_iam=True, clients=self.clients)

    # --- the whole sweep -----------------------------------------------------------

    def run(self) -> SweepResult:
        before = self.inventory()
        result = self.result = SweepResult(before)
        with ThreadPoolExecutor(max_workers=max(1, len(self.regions))) as pool:
            list(pool.map(lambda region: self._sweep_region(region, before.in_region(region)), self.regions))
        if self.everything:
            self._sweep_iam(self.inventory())
        result.after = self.inventory()
        return result

    def _sweep_region(self, region: str, inventory: Inventory) -> None:
        blocked_stacks = self._settle_endpoints(region, inventory)
        self._delete_stacks(region, inventory, blocked_stacks)
        # Re-list: stack deletion removed most; what is left was made outside a stack or survived it.
        leftovers = discover(self.session, (region,), self.prices, include_iam=False, clients=self.clients)
        self._delete_leftovers(region, leftovers, blocked_stacks)
        if self.everything:
            retry = [s for s in discover(self.session, (region,), self.prices, include_iam=False,
                                         clients=self.clients).of_kind(STACK) if s.id not in blocked_stacks]
            if retry:  # a stack whose resources were in the way can go now
                self._delete_stacks(region, Inventory(tuple(retry)), blocked_stacks)
                self._delete_network(region, discover(self.session, (region,), self.prices, include_iam=False,
                                                      clients=self.clients))

    # --- endpoints that cannot be deleted yet ----------------------------------------

    def _settle_endpoints(self, region: str, inventory: Inventory) -> set[str]:
        """Wait for busy endpoints; return the stacks that must be left for a rerun."""
        blocked: set[str] = set()
        sagemaker = self.clients("sagemaker", region)
        for endpoint in inventory.of_kind(ENDPOINT):
            if endpoint.state not in ENDPOINT_BUSY:
                continue
            self.say(f"{region}: endpoint {endpoint.name} is {endpoint.state}; SageMaker refuses to delete an "
                     f"endpoint until it is InService or Failed. Waiting up to {self.max_wait / 60:.0f} min.")
            status = self._wait_endpoint_settled(sagemaker, endpoint.name)
            if status in ENDPOINT_BUSY:
                rerun = self._rerun_time(endpoint)
                message = (f"{region}: endpoint {endpoint.name} is still {status}; rerun "
                           f"`python -m rigs sweep --yes` after {rerun} (endpoints usually settle within "
                           f"{TYPICAL_ENDPOINT_MINUTES} min; a capacity failure surfaces after about "
                           f"{CAPACITY_WAIT_MINUTES} min)")
                self.say(message)
                self.result.deferred.append(message)
                if endpoint.stack:
                    blocked.add(endpoint.stack)
                blocked.add(f"endpoint:{endpoint.name}")
            else:
                self.say(f"{region}: endpoint {endpoint.name} is {status} now; deleting it")
        return blocked

    def _wait_endpoint_settled(self, sagemaker: Any, name: str) -> str:
        deadline = time.monotonic() + self.max_wait
        while True:
            try:
                status = aws.call(sagemaker.describe_endpoint, EndpointName=name)["EndpointStatus"]
            except Exception as exc:  # noqa: BLE001
                # SageMaker answers ValidationException for an endpoint that no longer exists
                if aws.error_code(exc) in ("ValidationException", "ResourceNotFound"):
                    return "Deleted"
                raise
            if status not in ENDPOINT_BUSY or time.monotonic() >= deadline:
                return status
            self.sleep(min(self.poll * 6, max(self.poll, deadline - time.monotonic())))

    @staticmethod
    def _rerun_time(endpoint: Resource) -> str:
        created = endpoint.get("created")
        try:
            started = datetime.fromisoformat(str(created))
        except (TypeError, ValueError):
            started = utc.now()
        if started.tzinfo is None:
            started = started.replace(tzinfo=timezone.utc)
        at = max(started + timedelta(minutes=CAPACITY_WAIT_MINUTES), utc.now() + timedelta(minutes=5))
        return at.strftime("%H:%M UTC")

    # --- stacks ------------------------------------------------------------------------

    def _delete_stacks(self, region: str, inventory: Inventory, blocked: set[str]) -> None:
        cfn = self.clients("cloudformation", region)
        stacks = [s for s in inventory.of_kind(STACK) if s.id not in blocked]
        rig_stacks = [s for s in stacks if not s.id.startswith(BASE_STACK_PREFIX)]
        base_stacks = [s for s in stacks if s.id.startswith(BASE_STACK_PREFIX)]
        for wave in (rig_stacks, base_stacks if self.everything else []):
            started = []
            for stack in wave:
                status = self._settled_stack_status(cfn, stack.id)
                if status in (None, "DELETE_COMPLETE"):
                    self._done(f"{region}: stack {stack.id} already gone")
                    continue
                self.say(f"{region}: deleting stack {stack.id} ({status})")
                try:
                    aws.call(cfn.delete_stack, StackName=stack.id)
                    started.append(stack)
                except Exception as exc:  # noqa: BLE001
                    self._fail(f"{region}: stack {stack.id}: delete refused ({aws.classify(exc)})")
            for stack in started:
                self._wait_stack_deleted(cfn, region, stack)

    def _settled_stack_status(self, cfn: Any, name: str) -> str | None:
        """The stack's status once no operation is in progress (a delete can only start then)."""
        deadline = time.monotonic() + self.max_wait
        while True:
            status = self._stack_status(cfn, name)
            if status is None or not status.endswith(STACK_BUSY_SUFFIX) or status == "DELETE_IN_PROGRESS" \
                    or time.monotonic() >= deadline:
                return status
            self.sleep(self.poll)

    @staticmethod
    def _stack_status(cfn: Any, name: str) -> str | None:
        try:
            stacks = aws.call(cfn.describe_stacks, StackName=name)["Stacks"]
        except Exception as exc:  # noqa: BLE001
            if aws.error_code(exc) == "ValidationError":  # CloudFormation's code for "does not exist"
                return None
            raise
        return stacks[0]["StackStatus"] if stacks else None

    def _wait_stack_deleted(self, cfn: Any, region: str, stack: Resource) -> None:
        stack_id = stack.get("stack_id") or stack.id
        try:
            cfn.get_waiter("stack_delete_complete").wait(
                StackName=stack_id, WaiterConfig={"Delay": max(1, int(self.poll)),
                                                  "MaxAttempts": max(1, int(self.max_wait / max(1, self.poll)))})
            self._done(f"{region}: stack {stack.id} deleted")
        except Exception as exc:  # noqa: BLE001
            status = self._stack_status(cfn, stack_id)
            if status in (None, "DELETE_COMPLETE"):
                self._done(f"{region}: stack {stack.id} deleted")
                return
            reason = self._stack_failure(cfn, stack_id)
            self._fail(f"{region}: stack {stack.id} is {status}: {reason or aws.classify(exc)}")

    @staticmethod
    def _stack_failure(cfn: Any, stack_id: str) -> str:
        try:
            events = aws.call(cfn.describe_stack_events, StackName=stack_id).get("StackEvents", [])
        except Exception:  # noqa: BLE001
            return ""
        for event in events:
            if event.get("ResourceStatus", "").endswith("FAILED") and event.get("ResourceStatusReason"):
                return f"{event.get('LogicalResourceId')}: {event['ResourceStatusReason']}"
        return ""

    # --- leftovers outside stacks -------------------------------------------------------

    def _delete_leftovers(self, region: str, inventory: Inventory, blocked: set[str]) -> None:
        def free(resource: Resource) -> bool:
            return resource.stack not in blocked and f"endpoint:{resource.name}" not in blocked

        sagemaker = self.clients("sagemaker", region)
        ec2 = self.clients("ec2", region)
        autoscaling = self.clients("autoscaling", region)

        for endpoint in filter(free, inventory.of_kind(ENDPOINT)):
            self._delete(region, endpoint, lambda e=endpoint: sagemaker.delete_endpoint(EndpointName=e.name),
                         lambda e=endpoint: self._wait(sagemaker, "endpoint_deleted", EndpointName=e.name))
        for config in filter(free, inventory.of_kind(ENDPOINT_CONFIG)):
            self._delete(region, config, lambda c=config: sagemaker.delete_endpoint_config(EndpointConfigName=c.name))
        for model in filter(free, inventory.of_kind(MODEL)):
            self._delete(region, model, lambda m=model: sagemaker.delete_model(ModelName=m.name))

        groups = list(filter(free, inventory.of_kind(ASG)))
        for group in groups:
            self._delete(region, group,
                         lambda g=group: autoscaling.delete_auto_scaling_group(AutoScalingGroupName=g.id,
                                                                               ForceDelete=True),
                         lambda g=group: self._poll_gone(lambda: aws.call(
                             autoscaling.describe_auto_scaling_groups,
                             AutoScalingGroupNames=[g.id])["AutoScalingGroups"]))
        instances = [i for i in filter(free, inventory.of_kind(INSTANCE)) if i.state != "terminated"]
        if instances:
            ids = [i.id for i in instances]
            self.say(f"{region}: terminating {', '.join(ids)}")
            try:
                aws.call(ec2.terminate_instances, InstanceIds=ids)
                self._wait(ec2, "instance_terminated", InstanceIds=ids)
                for instance in instances:
                    self._done(f"{region}: {instance.label()} terminated")
            except Exception as exc:  # noqa: BLE001
                self._fail(f"{region}: terminating {', '.join(ids)}: {aws.classify(exc)}")
        for template in filter(free, inventory.of_kind(LAUNCH_TEMPLATE)):
            self._delete(region, template, lambda t=template: ec2.delete_launch_template(LaunchTemplateId=t.id))
        for volume in filter(free, inventory.of_kind(VOLUME)):
            self._delete(region, volume, lambda v=volume: self._delete_volume(ec2, v.id),
                         lambda v=volume: self._wait(ec2, "volume_deleted", VolumeIds=[v.id]))
        codebuild = self.clients("codebuild", region)
        for build in inventory.of_kind(RUNNING_BUILD):  # a deleted project's build runs on, billed, up to 8 hours
            self._delete(region, build, lambda b=build: codebuild.stop_build(id=b.id),
                         lambda b=build: self._poll_gone(lambda: builds.in_progress(codebuild, [b.id])),
                         verbs=("stopping", "stopped"))
        for project in filter(free, inventory.of_kind(BUILD_PROJECT)):
            self._delete(region, project, lambda p=project: codebuild.delete_project(name=p.name))
        ecr = self.clients("ecr", region)
        for repository in filter(free, inventory.of_kind(REPOSITORY)):
            self._delete(region, repository,
                         lambda r=repository: ecr.delete_repository(repositoryName=r.name, force=True))
        if self.everything:
            self._delete_network(region, inventory)

    def _delete_volume(self, ec2: Any, volume_id: str) -> None:
        # a volume still detaching from a terminating instance refuses deletion for a moment
        deadline = time.monotonic() + min(self.max_wait, 300)
        while True:
            try:
                aws.call(ec2.delete_volume, VolumeId=volume_id)
                return
            except Exception as exc:  # noqa: BLE001
                if aws.error_code(exc) != "VolumeInUse" or time.monotonic() >= deadline:
                    raise
                self.sleep(self.poll)

    def _delete_network(self, region: str, inventory: Inventory) -> None:
        """Security groups, subnets, route tables, gateways, VPCs: ours only, dependents first."""
        ec2 = self.clients("ec2", region)
        ours_in_vpc: dict[str, set[str]] = {}
        for resource in inventory.resources:
            vpc = resource.get("vpc")
            if vpc:
                ours_in_vpc.setdefault(vpc, set()).add(resource.id)
        for group in inventory.of_kind(SECURITY_GROUP):
            self._delete(region, group, lambda g=group: self._retry_dependency(
                lambda: ec2.delete_security_group(GroupId=g.id)))
        for gateway in inventory.of_kind(INTERNET_GATEWAY):
            def remove_gateway(g: Resource = gateway) -> None:
                for vpc in g.get("vpcs", ()):
                    try:
                        aws.call(ec2.detach_internet_gateway, InternetGatewayId=g.id, VpcId=vpc)
                    except Exception as exc:  # noqa: BLE001
                        if aws.classify(exc).kind != aws.NOT_FOUND and aws.error_code(exc) != "Gateway.NotAttached":
                            raise
                aws.call(ec2.delete_internet_gateway, InternetGatewayId=g.id)
            self._delete(region, gateway, remove_gateway)
        for table in inventory.of_kind(ROUTE_TABLE):
            def remove_table(t: Resource = table) -> None:
                for association in t.get("associations", ()):
                    try:
                        aws.call(ec2.disassociate_route_table, AssociationId=association)
                    except Exception as exc:  # noqa: BLE001
                        if aws.classify(exc).kind != aws.NOT_FOUND:
                            raise
                if t.state != "main":  # the main table goes with its VPC
                    aws.call(ec2.delete_route_table, RouteTableId=t.id)
            self._delete(region, table, remove_table)
        for subnet in inventory.of_kind(SUBNET):
            self._delete(region, subnet, lambda s=subnet: self._retry_dependency(
                lambda: ec2.delete_subnet(SubnetId=s.id)))
        for vpc in inventory.of_kind(VPC):
            foreign = self._foreign_in_vpc(ec2, vpc.id)
            if foreign:
                self._fail(f"{region}: {vpc.label()} kept: it holds {', '.join(foreign)} without our tag")
                continue
            self._delete(region, vpc, lambda v=vpc: self._retry_dependency(lambda: ec2.delete_vpc(VpcId=v.id)))

    def _foreign_in_vpc(self, ec2: Any, vpc_id: str) -> list[str]:
        """What in the VPC is not ours (by tag): then the VPC must stay, and this says why."""
        from rigs.estate.inventory import ours
        in_vpc = [{"Name": "vpc-id", "Values": [vpc_id]}]
        foreign: list[str] = []
        reservations = aws.paginate(ec2, "describe_instances", "Reservations", Filters=[
            *in_vpc, {"Name": "instance-state-name", "Values": ["pending", "running", "stopping", "stopped"]}])
        for reservation in reservations:
            foreign += [i["InstanceId"] for i in reservation.get("Instances", []) if not ours(i.get("Tags"))]
        foreign += [s["SubnetId"] for s in aws.paginate(ec2, "describe_subnets", "Subnets", Filters=in_vpc)
                    if not ours(s.get("Tags"))]
        foreign += [t["RouteTableId"] for t in aws.paginate(ec2, "describe_route_tables", "RouteTables",
                                                             Filters=in_vpc)
                    if not ours(t.get("Tags")) and not any(a.get("Main") for a in t.get("Associations", []))]
        foreign += [g["InternetGatewayId"] for g in aws.paginate(
            ec2, "describe_internet_gateways", "InternetGateways",
            Filters=[{"Name": "attachment.vpc-id", "Values": [vpc_id]}]) if not ours(g.get("Tags"))]
        foreign += [g["GroupId"] for g in aws.paginate(ec2, "describe_security_groups", "SecurityGroups",
                                                        Filters=in_vpc)
                    if g.get("GroupName") != "default" and not ours(g.get("Tags"))]
        foreign += [n["NetworkInterfaceId"] for n in aws.paginate(ec2, "describe_network_interfaces",
                                                                   "NetworkInterfaces", Filters=in_vpc)
                    if not ours(n.get("TagSet"))]
        return foreign

    def _retry_dependency(self, operation: Callable[[], Any]) -> Any:
        """Network deletions fail with DependencyViolation while ENIs and instances drain: retry a while."""
        deadline = time.monotonic() + min(self.max_wait, 300)
        while True:
            try:
                return aws.call(operation)
            except Exception as exc:  # noqa: BLE001
                if aws.error_code(exc) != "DependencyViolation" or time.monotonic() >= deadline:
                    raise
                self.sleep(self.poll)

    def _sweep_iam(self, inventory: Inventory) -> None:
        iam = self.clients("iam", None)
        for profile in inventory.of_kind(INSTANCE_PROFILE):
            def remove_profile(p: Resource = profile) -> None:
                for role in p.get("roles", ()):
                    try:
                        aws.call(iam.remove_role_from_instance_profile, InstanceProfileName=p.id, RoleName=role)
                    except Exception as exc:  # noqa: BLE001
                        if aws.classify(exc).kind != aws.NOT_FOUND:
                            raise
                aws.call(iam.delete_instance_profile, InstanceProfileName=p.id)
            self._delete(GLOBAL, profile, remove_profile)
        for role in inventory.of_kind(ROLE):
            def remove_role(r: Resource = role) -> None:
                for profile in aws.paginate(iam, "list_instance_profiles_for_role", "InstanceProfiles", RoleName=r.id):
                    aws.call(iam.remove_role_from_instance_profile,
                             InstanceProfileName=profile["InstanceProfileName"], RoleName=r.id)
                for policy in aws.paginate(iam, "list_attached_role_policies", "AttachedPolicies", RoleName=r.id):
                    aws.call(iam.detach_role_policy, RoleName=r.id, PolicyArn=policy["PolicyArn"])
                for name in aws.paginate(iam, "list_role_policies", "PolicyNames", RoleName=r.id):
                    aws.call(iam.delete_role_policy, RoleName=r.id, PolicyName=name)
                aws.call(iam.delete_role, RoleName=r.id)
            self._delete(GLOBAL, role, remove_role)

    # --- helpers -----------------------------------------------------------------------

    def _delete(self, region: str, resource: Resource, delete: Callable[[], Any],
                wait: Callable[[], Any] | None = None, verbs: tuple[str, str] = ("deleting", "deleted")) -> None:
        self.say(f"{region}: {verbs[0]} {resource.label()}")
        try:
            aws.call(delete)
        except Exception as exc:  # noqa: BLE001
            failure = aws.classify(exc)
            if failure.kind == aws.NOT_FOUND or failure.code in ("InvalidGroup.NotFound", "InvalidSubnetID.NotFound",
                                                                  "InvalidVpcID.NotFound",
                                                                  "InvalidInternetGatewayID.NotFound",
                                                                  "InvalidRouteTableID.NotFound"):
                self._done(f"{region}: {resource.label()} already gone")
                return
            self._fail(f"{region}: {resource.label()}: {failure}")
            return
        if wait is not None:
            try:
                wait()
            except Exception as exc:  # noqa: BLE001
                self._fail(f"{region}: {resource.label()}: not confirmed {verbs[1]} ({aws.classify(exc)})")
                return
        self._done(f"{region}: {resource.label()} {verbs[1]}")

    def _wait(self, client_: Any, waiter: str, **kwargs: Any) -> None:
        client_.get_waiter(waiter).wait(**kwargs, WaiterConfig={
            "Delay": max(1, int(self.poll)), "MaxAttempts": max(1, int(self.max_wait / max(1, self.poll)))})

    def _poll_gone(self, probe: Callable[[], list]) -> None:
        deadline = time.monotonic() + self.max_wait
        while probe():
            if time.monotonic() >= deadline:
                raise TimeoutError("still there")
            self.sleep(self.poll)

    def _done(self, message: str) -> None:
        self.say(message)
        self.result.deleted.append(message)

    def _fail(self, message: str) -> None:
        self.say(message)
        self.result.failed.append(message)
