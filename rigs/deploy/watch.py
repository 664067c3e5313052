"""Watching a rig's compute come up: the group's instance, SSM online, the server's /health, an endpoint.

:class:`Watcher` waits for a deployed rig and fills its :class:`~rigs.deploy.records.Timeline`;
:class:`DeployMonitor` watches an EC2 rig's group *while* ``cdk deploy`` runs, so a region whose
launches fail for capacity or quota in every allowed zone is given up at once rather than at the
creation policy's timeout. Both give a region up by the same rule (:class:`LaunchGrace`).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Sequence

from kit import utc
from kit.waiting import WaitTimeout, poll_until
from rigs import aws
from rigs.catalog.model import Ec2Rig
from rigs.deploy.diagnosis import FAILOVER_KINDS, RELEASED, Diagnosis, live_instances, released_group
from rigs.deploy.records import Timeline

CAPACITY_GRACE_MINUTES = 5.0
"""How long a group whose launches fail for capacity gets before the next region, by default (``--capacity-grace``)."""
POLL_S = 10.0
"""How often AWS is asked how a rig is doing."""
ENDPOINT_POLL_S = 2.0
"""The same against a custom endpoint (``AWS_ENDPOINT_URL``: moto's server on loopback answers in milliseconds)."""


_RUNNING = object()
"""What :meth:`Watcher.watch_group` waits for: the group's instance is running."""


def default_poll_s() -> float:
    return ENDPOINT_POLL_S if aws.endpoint_url() else POLL_S


@dataclass(frozen=True, slots=True)
class WatchSettings:
    poll: float = POLL_S
    capacity_grace: float = CAPACITY_GRACE_MINUTES * 60
    """How long a group whose launches fail for capacity gets before the region is given up."""
    ready_timeout: float | None = None
    """Seconds to wait for the server to answer (None: the catalog's ready_timeout_minutes)."""
    wait_ready: bool = True


class LaunchGrace:
    """When a group with no live instance gives its region up: its launches failed for capacity, quota or
    an unsupported zone in every zone it may use, or for ``grace_s`` seconds since the first such failure."""

    def __init__(self, zones: Sequence[str], grace_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.zones = set(zones)
        self.grace_s = grace_s
        self.clock = clock
        self.first_failure: float | None = None

    def lost(self, failures: Sequence[tuple[str | None, aws.AwsFailure]]) -> aws.AwsFailure | None:
        """The failure that gives the region up (the newest), or None while there is still hope."""
        failures = [(zone, f) for zone, f in failures if f.kind in FAILOVER_KINDS]
        if not failures:
            return None
        self.first_failure = self.first_failure or self.clock()
        tried = {zone for zone, _ in failures if zone}
        if (self.zones and self.zones <= tried) or self.clock() - self.first_failure >= self.grace_s:
            return failures[0][1]
        return None


class Watcher:
    """Reads the state of a deployed rig from AWS (tests use moto or stubs)."""

    def __init__(self, clients: aws.Clients, settings: WatchSettings, diagnosis: Diagnosis,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], datetime] = utc.now) -> None:
        self.clients = clients
        self.settings = settings
        self.diagnosis = diagnosis
        self.sleep = sleep
        self.clock = clock

    def watch_group(self, region: str, group: str, zones: Sequence[str], timeline: Timeline,
                    rig: Ec2Rig) -> aws.AwsFailure | None:
        """Wait for the group's instance; return a failure when its launches fail for capacity/quota."""
        autoscaling = self.clients("autoscaling", region)
        ec2 = self.clients("ec2", region)
        grace = LaunchGrace(zones, self.settings.capacity_grace)

        def state() -> aws.AwsFailure | object | None:
            groups = aws.call(autoscaling.describe_auto_scaling_groups,
                              AutoScalingGroupNames=[group]).get("AutoScalingGroups", [])
            if released_group(groups):
                return aws.AwsFailure("Released", RELEASED, f"its group {group} is set to 0 instances: the rig's "
                                                            "lifetime limit released it")
            live = live_instances(groups)
            if live:
                instance_id = live[0]["InstanceId"]
                described = aws.call(ec2.describe_instances, InstanceIds=[instance_id])
                instance = described["Reservations"][0]["Instances"][0]
                timeline.instance_id = instance_id
                timeline.zone = instance.get("Placement", {}).get("AvailabilityZone")
                launched = instance.get("LaunchTime")
                if launched and not timeline.instance_launched:
                    timeline.instance_launched = utc.iso_seconds(launched)
                if instance.get("State", {}).get("Name") == "running":
                    timeline.instance_running = timeline.instance_running or utc.iso_seconds(self.clock())
                    return _RUNNING
            failures = self.diagnosis.scaling_failures(region, group)
            return None if live else grace.lost(failures)

        try:
            outcome = poll_until(state, timeout_s=rig.ready_timeout_minutes * 60, interval_s=self.settings.poll,
                                 what=f"an instance of {group}", sleep=self.sleep)
        except WaitTimeout:
            return aws.AwsFailure("InstanceTimeout", aws.OTHER,
                                  f"no running instance after {rig.ready_timeout_minutes} min")
        return None if outcome is _RUNNING else outcome

    def wait_ssm_and_ready(self, region: str, timeline: Timeline, rig: Ec2Rig, port: int | None) -> None:
        """Record when the instance's SSM agent is online and when the server answers /health."""
        ssm = self.clients("ssm", region)
        timeout = self.settings.ready_timeout or rig.ready_timeout_minutes * 60
        deadline = time.monotonic() + timeout
        instance_id = timeline.instance_id

        def online() -> bool | None:
            try:
                info = aws.call(ssm.describe_instance_information,
                                Filters=[{"Key": "InstanceIds", "Values": [instance_id]}])
            except Exception as exc:  # noqa: BLE001
                timeline.notes.append(f"SSM online not measurable here ({aws.classify(exc).code})")
                return False
            if any(i.get("PingStatus") == "Online" for i in info.get("InstanceInformationList", [])):
                timeline.ssm_online = utc.iso_seconds(self.clock())
                return True
            return None

        if not timeline.ssm_online:
            try:
                poll_until(online, timeout_s=timeout, interval_s=self.settings.poll, what="the SSM agent",
                           sleep=self.sleep)
            except WaitTimeout:
                timeline.notes.append("SSM agent not online before the ready timeout")
                return
        if port is None:
            timeline.notes.append("no RemotePort output: readiness not checked")
            return
        command = f"curl -sf -o /dev/null --max-time 10 http://127.0.0.1:{port}/health"

        def answered() -> bool | None:
            try:
                sent = aws.call(ssm.send_command, InstanceIds=[instance_id], DocumentName="AWS-RunShellScript",
                                Parameters={"commands": [command]}, TimeoutSeconds=60,
                                Comment=f"aws-inference readiness of {rig.name}")
                command_id = sent["Command"]["CommandId"]
                status = self._command_status(ssm, command_id, instance_id)
            except Exception as exc:  # noqa: BLE001
                failure = aws.classify(exc)
                if failure.code not in ("InvalidInstanceId", "InvocationDoesNotExist"):
                    timeline.notes.append(f"readiness not measurable here ({failure.code})")
                    return False
                status = "Pending"
            if status == "Success":
                timeline.ready = utc.iso_seconds(self.clock())
                return True
            return None

        try:
            poll_until(answered, timeout_s=max(0.0, deadline - time.monotonic()),
                       interval_s=max(self.settings.poll, 20.0), what="/health", sleep=self.sleep)
        except WaitTimeout:
            timeline.notes.append(f"server did not answer /health within {timeout / 60:.0f} min")

    def _command_status(self, ssm: Any, command_id: str, instance_id: str) -> str:
        for _ in range(30):
            try:
                invocation = aws.call(ssm.get_command_invocation, CommandId=command_id, InstanceId=instance_id)
            except Exception as exc:  # noqa: BLE001
                if aws.error_code(exc) == "InvocationDoesNotExist":
                    self.sleep(1.0)
                    continue
                raise
            status = invocation.get("Status", "")
            if status not in ("Pending", "InProgress", "Delayed"):
                return status
            self.sleep(2.0)
        return "Pending"

    # watching a SageMaker endpoint

    def endpoint_times(self, region: str, endpoint: str, timeline: Timeline) -> aws.AwsFailure | None:
        sagemaker = self.clients("sagemaker", region)
        try:
            described = aws.call(sagemaker.describe_endpoint, EndpointName=endpoint)
        except Exception as exc:  # noqa: BLE001 - SageMaker answers ValidationException for an endpoint that is gone
            if aws.error_code(exc) != "ValidationException":
                raise
            return aws.AwsFailure("Released", RELEASED, f"its endpoint {endpoint} does not exist: the rig's lifetime "
                                                        "limit deleted it")
        timeline.endpoint = endpoint
        status = described.get("EndpointStatus")
        created = described.get("CreationTime")
        if created:
            timeline.instance_launched = utc.iso_seconds(created)
        if status == "InService":
            modified = described.get("LastModifiedTime")
            timeline.ready = utc.iso_seconds(modified) if modified else utc.iso_seconds(self.clock())
            timeline.notes.append("SageMaker: ready = InService; SSM does not apply")
            return None
        if status == "Failed":
            return aws.classify_message(described.get("FailureReason"))
        return aws.AwsFailure("EndpointNotInService", aws.OTHER, f"endpoint is {status}")


class DeployMonitor:
    """Watches an EC2 rig's group while ``cdk deploy`` runs, to give a region up early.

    The rig stack's group has a creation policy: CloudFormation waits up to the rig's ready
    timeout (40 minutes) for the instance's signal, also when no instance can launch. When
    the group's launches fail for capacity, quota or an unsupported zone in every allowed
    zone (or for ``grace`` seconds), the monitor records that failure and signals FAILURE
    for the group, so CloudFormation fails the stack now and the next region is tried.
    """

    def __init__(self, diagnosis: Diagnosis, region: str, stack: str, zones: Sequence[str], grace: float,
                 poll: float) -> None:
        self.diagnosis, self.region, self.stack = diagnosis, region, stack
        self.grace = LaunchGrace(zones, grace)
        self.poll = max(poll, 0.05)
        self.failure: aws.AwsFailure | None = None
        self.signal_refused: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"monitor-{stack}-{region}", daemon=True)

    def start(self) -> "DeployMonitor":
        self._thread.start()
        return self

    def stop(self) -> aws.AwsFailure | None:
        self._stop.set()
        self._thread.join()
        return self.failure

    def _run(self) -> None:
        while not self._stop.wait(self.poll):
            group = self.diagnosis.group_of(self.region, self.stack)
            if group is None:
                continue
            logical_id, name = group
            failures = [(zone, f) for zone, f in self.diagnosis.scaling_failures(self.region, name)
                        if f.kind in FAILOVER_KINDS]
            if not failures or self.diagnosis.group_has_instance(self.region, name):
                continue
            lost = self.grace.lost(failures)
            if lost is not None:
                self.failure = lost
                self.signal_refused = self.diagnosis.signal_failure(self.region, self.stack, logical_id)
                return
