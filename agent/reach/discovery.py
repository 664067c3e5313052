"""Finds this app's deployed rigs and checks each one is really there.

For every region: CloudFormation ``describe_stacks``, kept when tagged
``ManagedBy=aws-inference``; each rig stack's outputs are read with the shared contract
(:meth:`rigs.contract.RigOutputs.parse`). An EC2 rig counts only when its Auto Scaling
group has an instance that is running and SSM-``Online``; a SageMaker rig only when
its endpoint is ``InService``. Every rig that is not used is reported with the reason.

All AWS calls go through one injected ``boto3.Session``; each client is created once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from rigs import aws
from rigs.contract import MANAGED_BY, REGIONS, TAG_MANAGED_BY, TAG_RIG, ContractError, OutputKey, RigOutputs

if TYPE_CHECKING:
    from rigs.catalog.model import Catalog

logger = logging.getLogger(__name__)

CLIENT_CONFIG = Config(connect_timeout=5, read_timeout=20, retries={"total_max_attempts": 4, "mode": "standard"})
"""Timeouts and retries of every discovery call (also recorded in docs/agent.md)."""

USABLE_STACK_STATES = ("CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE")


class AwsClients:
    """One boto3 client per (service, region) for the whole run, from one session."""

    def __init__(self, session: Any, config: Config = CLIENT_CONFIG) -> None:
        self.session = session
        self.config = config
        self._clients: dict[tuple[str, str], Any] = {}

    def get(self, service: str, region: str) -> Any:
        key = (service, region)
        if key not in self._clients:
            self._clients[key] = self.session.client(service, region_name=region, config=self.config)
        return self._clients[key]


@dataclass(frozen=True, slots=True)
class FoundRig:
    """A deployed rig that passed every check.

    ``instance_id`` is set for EC2 rigs (reached through an SSM port forward),
    ``outputs.endpoint_name`` for SageMaker rigs.
    """

    name: str
    region: str
    stack_name: str
    outputs: RigOutputs
    instance_id: str | None = None
    metadata: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def describe(self) -> str:
        if self.instance_id:
            return (f"{self.instance_id} ({self.outputs.instance_type}, {self.region}) port "
                    f"{self.outputs.remote_port}, via an SSM port forward")
        return f"SageMaker endpoint {self.outputs.endpoint_name} ({self.outputs.instance_type}, {self.region})"


@dataclass(frozen=True, slots=True)
class Skipped:
    """Something that will not be used, and why."""

    name: str
    reason: str

    def __str__(self) -> str:
        return f"{self.name}: {self.reason}"


@dataclass(slots=True)
class Discovery:
    """What discovery found in the regions it searched."""

    regions: tuple[str, ...]
    rigs: list[FoundRig] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    def get(self, name: str) -> FoundRig | None:
        return next((rig for rig in self.rigs if rig.name == name), None)


class CallFailed(Exception):
    """A discovery call failed; ``str()`` names the call (``ssm DescribeInstanceInformation``) and a readable reason."""

    def __init__(self, service: str, error: Exception) -> None:
        self.service = service
        self.error = error
        super().__init__(aws.describe_error(error, service))


def _stacks(cfn: Any) -> Iterable[dict]:
    for page in cfn.get_paginator("describe_stacks").paginate():
        yield from page.get("Stacks", [])


def _tags(stack: Mapping[str, Any]) -> dict[str, str]:
    return {tag["Key"]: tag["Value"] for tag in stack.get("Tags", [])}


def _outputs(stack: Mapping[str, Any]) -> dict[str, str]:
    return {out["OutputKey"]: out.get("OutputValue", "") for out in stack.get("Outputs", [])}


class Discoverer:
    """Runs discovery with injected clients (so tests can stub single services)."""

    def __init__(self, clients: AwsClients, catalog: Catalog) -> None:
        self.clients = clients
        self.catalog = catalog

    def _call(self, service: str, region: str, operation: str, **kwargs: Any) -> Any:
        """One AWS call; a failure is raised as CallFailed, which names the call."""
        try:
            return getattr(self.clients.get(service, region), operation)(**kwargs)
        except (ClientError, BotoCoreError) as exc:
            raise CallFailed(service, exc) from exc

    def discover(self, regions: Iterable[str] = REGIONS, names: Iterable[str] | None = None) -> Discovery:
        """Search ``regions`` for rig stacks; keep only the rigs in ``names`` (None: all)."""
        regions = tuple(regions)
        wanted = set(names) if names is not None else None
        deployable = [rig.name for rig in self.catalog.deployable()
                      if wanted is None or rig.name in wanted]
        result = Discovery(regions=regions)
        seen: set[str] = set()
        for region in regions:
            for candidate in self._region(region, result):
                if wanted is not None and candidate[0] not in wanted:
                    continue
                name, stack_name, outputs = candidate
                if name in seen:
                    result.skipped.append(Skipped(name, f"stack {stack_name} in {region} not used: "
                                                        f"{result.get(name).describe()} is used"))  # type: ignore[union-attr]
                    continue
                found = self._check(name, stack_name, outputs, result)
                if found is not None:
                    result.rigs.append(found)
                    seen.add(name)
        reported = {skip.name for skip in result.skipped} | seen
        for name in deployable:
            if name not in reported:
                result.skipped.append(Skipped(name, f"no deployed stack found in {', '.join(regions)}"))
        return result

    def _region(self, region: str, result: Discovery) -> list[tuple[str, str, RigOutputs]]:
        """Rig stacks of this app in ``region``: (rig name, stack name, outputs)."""
        cfn = self.clients.get("cloudformation", region)
        found = []
        try:
            stacks = list(_stacks(cfn))
        except (ClientError, BotoCoreError) as exc:
            result.skipped.append(Skipped(region, str(CallFailed("cloudformation", exc))))
            return found
        for stack in stacks:
            tags = _tags(stack)
            if tags.get(TAG_MANAGED_BY) != MANAGED_BY:
                continue
            outputs = _outputs(stack)
            stack_name = stack["StackName"]
            name = tags.get(TAG_RIG) or outputs.get(OutputKey.RIG)
            if not name:
                continue  # a base or image stack: not a rig
            status = stack.get("StackStatus", "")
            if status not in USABLE_STACK_STATES:
                result.skipped.append(Skipped(name, f"stack {stack_name} in {region} is {status}"))
                continue
            try:
                parsed = RigOutputs.parse(outputs)
            except ContractError as exc:
                result.skipped.append(Skipped(name, f"stack {stack_name} in {region}: {exc}"))
                continue
            if parsed.rig not in self.catalog.rigs:
                result.skipped.append(Skipped(parsed.rig, f"stack {stack_name} in {region}: rig "
                                                          f"{parsed.rig!r} is not in the catalog"))
                continue
            found.append((parsed.rig, stack_name, parsed))
        return found

    def _check(self, name: str, stack_name: str, outputs: RigOutputs, result: Discovery) -> FoundRig | None:
        rig = self.catalog.get(name)
        try:
            if outputs.endpoint_name and rig.on_endpoint:
                return self._check_endpoint(name, stack_name, outputs, result)
            if outputs.auto_scaling_group and rig.on_instances:
                return self._check_instance(name, stack_name, outputs, result)
        except CallFailed as exc:
            result.skipped.append(Skipped(name, f"{outputs.region}: {exc}"))
            return None
        result.skipped.append(Skipped(name, f"stack {stack_name}: outputs do not match a {rig.kind} rig"))
        return None

    def _check_endpoint(self, name: str, stack_name: str, outputs: RigOutputs,
                        result: Discovery) -> FoundRig | None:
        try:
            endpoint = self._call("sagemaker", outputs.region, "describe_endpoint", EndpointName=outputs.endpoint_name)
        except CallFailed as exc:
            if aws.error_code(exc.error) == "ValidationException":
                result.skipped.append(Skipped(name, f"endpoint {outputs.endpoint_name} not found in "
                                                    f"{outputs.region}"))
                return None
            raise
        status = endpoint.get("EndpointStatus", "unknown")
        if status != "InService":
            reason = endpoint.get("FailureReason")
            result.skipped.append(Skipped(name, f"endpoint {outputs.endpoint_name} in {outputs.region} is "
                                                f"{status}" + (f" ({reason})" if reason else "")))
            return None
        metadata = {"region": outputs.region, "instance_type": outputs.instance_type,
                    "endpoint": outputs.endpoint_name or "", "stack": stack_name,
                    "runtime": outputs.runtime, **_lifetime(outputs)}
        return FoundRig(name=name, region=outputs.region, stack_name=stack_name, outputs=outputs,
                        metadata=MappingProxyType(metadata))

    def _check_instance(self, name: str, stack_name: str, outputs: RigOutputs,
                        result: Discovery) -> FoundRig | None:
        region = outputs.region
        asg_name = outputs.auto_scaling_group
        groups = self._call("autoscaling", region, "describe_auto_scaling_groups",
                            AutoScalingGroupNames=[asg_name]).get("AutoScalingGroups", [])
        if not groups:
            result.skipped.append(Skipped(name, f"Auto Scaling group {asg_name} not found in {region}"))
            return None
        group = groups[0]
        members = [i["InstanceId"] for i in group.get("Instances", []) if i.get("LifecycleState") == "InService"]
        if not members:
            if group.get("DesiredCapacity", 0) == 0:
                reason = f"Auto Scaling group {asg_name} in {region} is scaled to zero (rig stopped)"
            else:
                reason = f"no InService instance in Auto Scaling group {asg_name} in {region} yet"
            result.skipped.append(Skipped(name, reason))
            return None
        reservations = self._call("ec2", region, "describe_instances", InstanceIds=members)["Reservations"]
        instances = [i for r in reservations for i in r["Instances"]]
        running = [i for i in instances if i.get("State", {}).get("Name") == "running"]
        if not running:
            states = ", ".join(f"{i['InstanceId']} {i.get('State', {}).get('Name')}" for i in instances)
            result.skipped.append(Skipped(name, f"no running instance in {region} ({states or 'none'})"))
            return None
        ids = [i["InstanceId"] for i in running]
        info = self._call("ssm", region, "describe_instance_information",
                          Filters=[{"Key": "InstanceIds", "Values": ids}]).get("InstanceInformationList", [])
        ping = {item["InstanceId"]: item.get("PingStatus", "unknown") for item in info}
        online = [i for i in running if ping.get(i["InstanceId"]) == "Online"]
        if not online:
            instance_id = ids[0]
            status = ping.get(instance_id)
            why = f"SSM PingStatus {status}" if status else "not registered with SSM yet"
            result.skipped.append(Skipped(name, f"{instance_id} in {region} is not on SSM ({why})"))
            return None
        instance = online[0]
        metadata = {
            "region": region,
            "availability_zone": instance.get("Placement", {}).get("AvailabilityZone", ""),
            "instance_type": instance.get("InstanceType", outputs.instance_type),
            "instance_id": instance["InstanceId"],
            "ami_id": instance.get("ImageId", ""),
            "stack": stack_name,
            "runtime": outputs.runtime,
            **_lifetime(outputs),
        }
        launched = instance.get("LaunchTime")
        if launched is not None:
            metadata["launch_time"] = launched.isoformat() if hasattr(launched, "isoformat") else str(launched)
        return FoundRig(name=name, region=region, stack_name=stack_name, outputs=outputs,
                        instance_id=instance["InstanceId"],
                        metadata=MappingProxyType({k: v for k, v in metadata.items() if v}))


def _lifetime(outputs: RigOutputs) -> dict[str, str]:
    """Log group and expiry, where the stack reports them (read defensively: optional outputs)."""
    extra = {}
    if outputs.log_group:
        extra["log_group"] = outputs.log_group
    expires = getattr(outputs, "expires_at", None)
    if expires:
        extra["expires_at"] = str(expires)
    return extra


def discover(session: Any, catalog: Catalog, regions: Iterable[str] = REGIONS,
             names: Iterable[str] | None = None) -> Discovery:
    """Discovery with a fresh set of clients from ``session`` (see :class:`Discoverer`)."""
    return Discoverer(AwsClients(session), catalog).discover(regions, names)
