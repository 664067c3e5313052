"""``up``: deploy rigs through the CDK CLI with region failover, and measure launch to ready.

For each rig, in parallel with the others:

1. The regions to try come from the recorded placement (``python -m rigs preflight``;
   run here for the rig when nothing is recorded).
2. Per region: ``cdk synth`` with ``-c region.<rig>=R -c zones.<rig>=a,b`` (and
   ``-c max_hours=N``) into a per-attempt assembly; the stacks the rig stack depends on
   (the region's base stack) are deployed first, one at a time across rigs; then
   ``cdk deploy <RigStack> --exclusively --require-approval never --outputs-file ...``.
3. The compute is watched until it runs: the Auto Scaling group's instance (its scaling
   activities carry the launch error codes), or the SageMaker endpoint (CloudFormation
   waits for InService; a failure carries the code in its reason). The EC2 rig stacks
   wait for the instance's readiness signal (a creation policy), so the group is watched
   *during* the deploy too: when its launches fail for capacity or quota in every zone it
   may use, the group's creation is signalled FAILURE and the region given up at once,
   instead of at the creation policy's timeout.
4. A **capacity**, **quota** or **unsupported** failure cleans up the attempt (the rig
   stack is deleted and the deletion waited for) and moves on to the next region. Any
   other failure stops that rig: it is not something another region fixes.
5. One line per attempt (rig, region, zones, error code, what happens next) goes to the
   screen and to ``up.log`` in the run's evidence directory, with the timeline
   (deploy start, stack complete, instance running, SSM online, ready) in
   ``timeline-<rig>.json``. The final region is recorded in the placement, so ``app.py``
   synthesizes the rig there from then on (``cdk destroy --all`` reaches it).

The CDK CLI is called as a subprocess (``./scripts/cdk``); tests inject a fake runner.
Errors are decided on AWS error codes (:mod:`rigs.aws`), never on the CLI's log text.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence

from . import aws, placement, utc, whereabouts
from .catalog import DeployableRig, Ec2Rig, SageMakerRig
from .contract import OutputKey

PROJECT_DIR = placement.PROJECT_DIR
CDK = str(PROJECT_DIR / "scripts" / "cdk")
FAILOVER_KINDS = (aws.CAPACITY, aws.QUOTA, aws.UNSUPPORTED)
BOOTSTRAP_STACK = "CDKToolkit"


# --- the CDK CLI ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CdkResult:
    returncode: int
    log: Path | None = None


class CdkRunner(Protocol):
    def synth(self, outdir: Path, context: Mapping[str, str], log: Path) -> CdkResult: ...

    def deploy(self, app: Path, stacks: Sequence[str], context: Mapping[str, str], log: Path,
               outputs_file: Path | None = None) -> CdkResult: ...

    def bootstrap(self, environments: Sequence[str], log: Path) -> CdkResult: ...


class CdkCli:
    """Runs the project-pinned CDK CLI (``scripts/cdk``); output goes to a log file per call.

    Its synths tell the app that this command placed the rigs (:data:`rigs.whereabouts.SKIP_LOOKUP_ENV`).
    """

    ENV = {"CI": "true", whereabouts.SKIP_LOOKUP_ENV: "1"}

    def __init__(self, method: str | None = None, extra_args: Sequence[str] = (), cdk: str = CDK) -> None:
        self.method = method
        self.extra_args = tuple(extra_args)
        self.cdk = cdk

    @staticmethod
    def _context_args(context: Mapping[str, str]) -> list[str]:
        args: list[str] = []
        for key, value in sorted(context.items()):
            args += ["-c", f"{key}={value}"]
        return args

    def _run(self, args: list[str], log: Path) -> CdkResult:
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a", encoding="utf-8") as handle:
            handle.write(f"$ {' '.join(args)}\n")
            handle.flush()
            completed = subprocess.run(args, stdout=handle, stderr=subprocess.STDOUT, cwd=PROJECT_DIR,
                                       env={**os.environ, **self.ENV}, check=False)
        return CdkResult(completed.returncode, log)

    def synth(self, outdir: Path, context: Mapping[str, str], log: Path) -> CdkResult:
        return self._run([self.cdk, "synth", "--quiet", "--output", str(outdir), *self._context_args(context),
                          *self.extra_args], log)

    def deploy(self, app: Path, stacks: Sequence[str], context: Mapping[str, str], log: Path,
               outputs_file: Path | None = None) -> CdkResult:
        args = [self.cdk, "deploy", "--app", str(app), *stacks, "--exclusively", "--require-approval", "never",
                "--progress", "events", *self._context_args(context)]
        if outputs_file is not None:
            args += ["--outputs-file", str(outputs_file)]
        if self.method:
            args.append(f"--method={self.method}")
        return self._run(args + list(self.extra_args), log)

    def bootstrap(self, environments: Sequence[str], log: Path) -> CdkResult:
        return self._run([self.cdk, "bootstrap", *environments], log)


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_ERRORISH = re.compile(r"error|failed|unable|denied|expired|not found|invalid", re.IGNORECASE)
_CAUSE = re.compile(r"^‣ (?P<name>[A-Za-z][A-Za-z0-9_.]*): ")


def cli_failure(log: Path | None, what: str) -> aws.AwsFailure:
    """The CDK CLI's own error, from its log: the line that says what failed, its error name, and the log path.

    The CLI prints its error message, then one ``‣ Name: message`` line per cause (the
    deepest is the AWS error, such as ``ExpiredToken`` or ``AccessDenied``), or a ``❌``
    line for a stack that failed. The line shown is the ``❌`` line, else the first cause,
    else the last line that reads like an error; the code is the deepest cause's name.
    """
    lines: list[str] = []
    if log is not None:
        try:
            lines = [_ANSI.sub("", line).strip() for line in log.read_text(encoding="utf-8", errors="replace")
                     .splitlines()]
        except OSError:
            lines = []
    lines = [line for line in lines if line and not line.startswith("$ ")]
    causes = [line for line in lines if _CAUSE.match(line)]
    shown = (next((line for line in lines if "❌" in line), None) or (causes[0] if causes else None)
             or next((line for line in reversed(lines) if _ERRORISH.search(line)), None)
             or (lines[-1] if lines else "no output"))
    shown = shown.replace("❌", "").removeprefix("‣ ").strip()
    code = _CAUSE.match(causes[-1]).group("name") if causes else "CdkCliFailed"
    where = f" (log: {log})" if log is not None else ""
    return aws.AwsFailure(code, aws.classify_code(code), f"{what}: {aws.readable(shown)}{where}")


def stack_dependencies(assembly: Path, stack: str) -> tuple[list[str], str]:
    """The stacks ``stack`` depends on (transitively, in deploy order) and its CloudFormation name."""
    manifest = json.loads((assembly / "manifest.json").read_text(encoding="utf-8"))
    artifacts = manifest.get("artifacts", {})
    if stack not in artifacts:
        known = sorted(k for k, v in artifacts.items() if v.get("type") == "aws:cloudformation:stack")
        raise aws.RigsError(f"the app has no stack {stack!r} (stacks: {', '.join(known)})")
    order: list[str] = []

    def visit(name: str) -> None:
        for dependency in artifacts.get(name, {}).get("dependencies", []):
            if artifacts.get(dependency, {}).get("type") == "aws:cloudformation:stack" and dependency not in order:
                visit(dependency)
                order.append(dependency)

    visit(stack)
    cfn_name = artifacts[stack].get("properties", {}).get("stackName") or stack
    return order, cfn_name


# --- records -----------------------------------------------------------------------------


@dataclass
class Attempt:
    rig: str
    number: int
    region: str
    zones: tuple[str, ...]
    started: str | None = None
    ended: str | None = None
    outcome: str = "pending"
    """``up``, ``failover``, ``failed``."""
    code: str = ""
    kind: str = ""
    message: str = ""
    next_step: str = ""


@dataclass
class Timeline:
    rig: str
    region: str | None = None
    zone: str | None = None
    instance_id: str | None = None
    endpoint: str | None = None
    deploy_start: str | None = None
    stack_complete: str | None = None
    instance_launched: str | None = None
    instance_running: str | None = None
    ssm_online: str | None = None
    ready: str | None = None
    launch_to_ready_seconds: float | None = None
    deploy_to_ready_seconds: float | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class RigResult:
    rig: str
    ok: bool
    region: str | None
    attempts: list[Attempt]
    timeline: Timeline
    outputs: dict[str, str] = field(default_factory=dict)
    reason: str = ""


class Evidence:
    """The run's evidence directory: ``up.log`` (one line per attempt) and per-rig files."""

    def __init__(self, directory: Path, say: Callable[[str], None] = print) -> None:
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self.log = directory / "up.log"
        self._say = say
        self._lock = threading.Lock()

    def line(self, text: str) -> None:
        with self._lock:
            self._say(text)
            with self.log.open("a", encoding="utf-8") as handle:
                handle.write(f"{utc.iso_seconds()} {text}\n")

    def write_json(self, name: str, data: Any) -> Path:
        path = self.directory / name
        path.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
        return path


def default_evidence_dir() -> Path:
    return placement.state_dir() / "runs" / f"{utc.folder_stamp()}-up"


# --- the watcher: what happened to the compute ------------------------------------------------


@dataclass(frozen=True, slots=True)
class WatchSettings:
    poll: float = 10.0
    capacity_grace: float = 300.0
    """How long a group whose launches fail for capacity gets before the region is given up."""
    ready_timeout: float | None = None
    """Seconds to wait for the server to answer (None: the catalog's ready_timeout_minutes)."""
    wait_ready: bool = True


class Watcher:
    """Reads the state of a deployed rig from AWS (tests use moto or stubs)."""

    def __init__(self, clients: aws.Clients, settings: WatchSettings, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], datetime] = utc.now) -> None:
        self.clients = clients
        self.settings = settings
        self.sleep = sleep
        self.clock = clock

    # diagnosis of a failed deploy

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
        group = self._group_failure(region, stack)
        if group is not None:
            candidates.insert(0, group)
        for failure in candidates:
            if failure.kind in FAILOVER_KINDS:
                return failure
        if candidates:
            first = candidates[-1]  # events come newest first: the last is the first failure
            return aws.AwsFailure(first.code if first.code != "Unknown" else "StackFailed", first.kind, first.message)
        return aws.AwsFailure("DeployFailed", aws.OTHER, "the CDK CLI failed before CloudFormation reported a cause")

    def _group_failure(self, region: str, stack: str) -> aws.AwsFailure | None:
        cfn = self.clients("cloudformation", region)
        try:
            resources = aws.call(cfn.describe_stack_resources, StackName=stack).get("StackResources", [])
        except Exception:  # noqa: BLE001
            return None
        for resource in resources:
            if resource.get("ResourceType") == "AWS::AutoScaling::AutoScalingGroup" and resource.get("PhysicalResourceId"):
                failures = self._scaling_failures(region, resource["PhysicalResourceId"])
                if failures:
                    return failures[0][1]
        return None

    def _scaling_failures(self, region: str, group: str) -> list[tuple[str | None, aws.AwsFailure]]:
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
            if resource.get("ResourceType") == "AWS::AutoScaling::AutoScalingGroup" and \
                    resource.get("PhysicalResourceId"):
                return resource["LogicalResourceId"], resource["PhysicalResourceId"]
        return None

    def group_has_instance(self, region: str, group: str) -> bool:
        try:
            groups = aws.call(self.clients("autoscaling", region).describe_auto_scaling_groups,
                              AutoScalingGroupNames=[group]).get("AutoScalingGroups", [])
        except Exception:  # noqa: BLE001
            return False
        return any(i.get("LifecycleState", "").startswith(("InService", "Pending"))
                   for g in groups for i in g.get("Instances", []))

    def signal_failure(self, region: str, stack: str, logical_id: str) -> str | None:
        """Fail the group's creation policy now (instead of at its timeout); returns an error code if refused."""
        try:
            aws.call(self.clients("cloudformation", region).signal_resource, StackName=stack,
                     LogicalResourceId=logical_id, UniqueId="rigs-up-failover", Status="FAILURE")
        except Exception as exc:  # noqa: BLE001 - the deploy then ends at its own pace
            return aws.classify(exc).code
        return None

    # watching a deployed EC2 rig

    def watch_group(self, region: str, group: str, zones: Sequence[str], timeline: Timeline,
                    rig: Ec2Rig, port: int | None) -> aws.AwsFailure | None:
        """Wait for the group's instance; return a failure when its launches fail for capacity/quota."""
        autoscaling = self.clients("autoscaling", region)
        ec2 = self.clients("ec2", region)
        first_failure: float | None = None
        deadline = time.monotonic() + rig.ready_timeout_minutes * 60
        while True:
            groups = aws.call(autoscaling.describe_auto_scaling_groups,
                              AutoScalingGroupNames=[group]).get("AutoScalingGroups", [])
            instances = groups[0].get("Instances", []) if groups else []
            live = [i for i in instances if i.get("LifecycleState", "").startswith(("InService", "Pending"))]
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
                    return None
            failures = [(zone, f) for zone, f in self._scaling_failures(region, group) if f.kind in FAILOVER_KINDS]
            if failures and not live:
                first_failure = first_failure or time.monotonic()
                tried = {zone for zone, _ in failures if zone}
                if (zones and set(zones) <= tried) or time.monotonic() - first_failure >= self.settings.capacity_grace:
                    return failures[0][1]
            if time.monotonic() >= deadline:
                return aws.AwsFailure("InstanceTimeout", aws.OTHER,
                                      f"no running instance after {rig.ready_timeout_minutes} min")
            self.sleep(self.settings.poll)

    def wait_ssm_and_ready(self, region: str, timeline: Timeline, rig: Ec2Rig, port: int | None) -> None:
        """Record when the instance's SSM agent is online and when the server answers /health."""
        ssm = self.clients("ssm", region)
        timeout = self.settings.ready_timeout or rig.ready_timeout_minutes * 60
        deadline = time.monotonic() + timeout
        instance_id = timeline.instance_id
        while not timeline.ssm_online:
            try:
                info = aws.call(ssm.describe_instance_information,
                                Filters=[{"Key": "InstanceIds", "Values": [instance_id]}])
            except Exception as exc:  # noqa: BLE001
                timeline.notes.append(f"SSM online not measurable here ({aws.classify(exc).code})")
                break
            if any(i.get("PingStatus") == "Online" for i in info.get("InstanceInformationList", [])):
                timeline.ssm_online = utc.iso_seconds(self.clock())
                break
            if time.monotonic() >= deadline:
                timeline.notes.append("SSM agent not online before the ready timeout")
                return
            self.sleep(self.settings.poll)
        if port is None:
            timeline.notes.append("no RemotePort output: readiness not checked")
            return
        command = f"curl -sf -o /dev/null --max-time 10 http://127.0.0.1:{port}/health"
        while True:
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
                    return
                status = "Pending"
            if status == "Success":
                timeline.ready = utc.iso_seconds(self.clock())
                return
            if time.monotonic() >= deadline:
                timeline.notes.append(f"server did not answer /health within {timeout / 60:.0f} min")
                return
            self.sleep(max(self.settings.poll, 20.0))

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
        described = aws.call(sagemaker.describe_endpoint, EndpointName=endpoint)
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

    def __init__(self, watcher: Watcher, region: str, stack: str, zones: Sequence[str], grace: float,
                 poll: float) -> None:
        self.watcher, self.region, self.stack, self.zones = watcher, region, stack, tuple(zones)
        self.grace, self.poll = grace, max(poll, 0.05)
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
        first_failure: float | None = None
        while not self._stop.wait(self.poll):
            group = self.watcher.group_of(self.region, self.stack)
            if group is None:
                continue
            logical_id, name = group
            failures = [(zone, f) for zone, f in self.watcher._scaling_failures(self.region, name)
                        if f.kind in FAILOVER_KINDS]
            if not failures or self.watcher.group_has_instance(self.region, name):
                continue
            first_failure = first_failure or time.monotonic()
            tried = {zone for zone, _ in failures if zone}
            if (self.zones and set(self.zones) <= tried) or time.monotonic() - first_failure >= self.grace:
                self.failure = failures[0][1]
                self.signal_refused = self.watcher.signal_failure(self.region, self.stack, logical_id)
                return


def _seconds(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    return round((utc.parse(end) - utc.parse(start)).total_seconds(), 1)


# --- the orchestration ----------------------------------------------------------------------


@dataclass
class UpSettings:
    max_hours: float | None = None
    context: Mapping[str, str] = field(default_factory=dict)
    watch: WatchSettings = field(default_factory=WatchSettings)
    evidence_dir: Path | None = None


class Up:
    def __init__(self, session: Any, runner: CdkRunner, settings: UpSettings, say: Callable[[str], None] = print,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.session = session
        self.clients = aws.Clients(session)
        self.runner = runner
        self.settings = settings
        self.evidence = Evidence(settings.evidence_dir or default_evidence_dir(), say)
        self.watcher = Watcher(self.clients, settings.watch, sleep)
        self.sleep = sleep
        self._dep_locks: dict[str, threading.Lock] = {}
        self._deps_done: set[str] = set()
        self._locks_lock = threading.Lock()

    def missing_bootstrap(self, regions: Sequence[str]) -> list[str]:
        """Regions among ``regions`` without the CDK bootstrap stack."""
        missing = []
        for region in regions:
            try:
                aws.call(self.clients("cloudformation", region).describe_stacks, StackName=BOOTSTRAP_STACK)
            except Exception as exc:  # noqa: BLE001
                if aws.error_code(exc) == "ValidationError":
                    missing.append(region)
                else:
                    raise
        return missing

    def bootstrap(self, account: str, regions: Sequence[str]) -> aws.AwsFailure | None:
        """``cdk bootstrap`` in ``regions``; the CLI's error (with the log path) when it fails."""
        log = self.evidence.directory / "cdk-bootstrap.log"
        environments = [f"aws://{account}/{region}" for region in regions]
        self.evidence.line(f"bootstrapping {', '.join(regions)} (log: {log})")
        result = self.runner.bootstrap(environments, log)
        return None if result.returncode == 0 else cli_failure(result.log or log, "cdk bootstrap failed")

    def run(self, plans: Mapping[str, tuple[DeployableRig, Sequence[placement.Candidate]]]) -> list[RigResult]:
        with ThreadPoolExecutor(max_workers=max(1, len(plans))) as pool:
            futures = [pool.submit(self.up_one, rig, candidates) for rig, candidates in plans.values()]
            results = [f.result() for f in futures]
        self.evidence.write_json("summary.json", [asdict(r) for r in results])
        return results

    def _context(self, rig: DeployableRig, candidate: placement.Candidate) -> dict[str, str]:
        context = dict(self.settings.context)
        context[f"region.{rig.name}"] = candidate.region
        if candidate.zones and isinstance(rig, Ec2Rig):
            context[f"zones.{rig.name}"] = ",".join(candidate.zones)
        if self.settings.max_hours is not None:
            context["max_hours"] = f"{self.settings.max_hours:g}"
        return context

    def _deploy_dependencies(self, rig: DeployableRig, assembly: Path, dependencies: Sequence[str],
                             context: Mapping[str, str], region: str) -> aws.AwsFailure | None:
        for dependency in dependencies:
            with self._locks_lock:
                lock = self._dep_locks.setdefault(dependency, threading.Lock())
            with lock:
                if dependency in self._deps_done:
                    continue
                log = self.evidence.directory / f"cdk-{dependency}.log"
                self.evidence.line(f"{rig.name}: deploying {dependency} first (log: {log.name})")
                result = self.runner.deploy(assembly, [dependency], context, log)
                if result.returncode != 0:
                    if self._stack_exists(region, dependency):
                        failure = self.watcher.stack_failure(region, dependency)
                        return aws.AwsFailure(failure.code, failure.kind,
                                              f"{dependency}: {failure.message} (log: {result.log or log})")
                    return cli_failure(result.log or log, f"cdk deploy {dependency} failed before CloudFormation "
                                                          "created it")
                self._deps_done.add(dependency)
        return None

    def _stack_exists(self, region: str, stack: str) -> bool:
        """Whether CloudFormation has the stack (any state but deleted); True when that cannot be told."""
        try:
            aws.call(self.clients("cloudformation", region).describe_stacks, StackName=stack)
        except Exception as exc:  # noqa: BLE001
            return aws.error_code(exc) != "ValidationError"
        return True

    def up_one(self, rig: DeployableRig, candidates: Sequence[placement.Candidate]) -> RigResult:
        attempts: list[Attempt] = []
        timeline = Timeline(rig.name)
        if not candidates:
            reason = "no region to try: run `python -m rigs preflight` to see why"
            self.evidence.line(f"{rig.name}: {reason}")
            return RigResult(rig.name, False, None, attempts, timeline, reason=reason)
        for number, candidate in enumerate(candidates, start=1):
            following = candidates[number] if number < len(candidates) else None
            attempt = Attempt(rig.name, number, candidate.region, tuple(candidate.zones), started=utc.iso_seconds())
            attempts.append(attempt)
            zones = ",".join(candidate.zones) or "any zone"
            head = f"{rig.name}: attempt {number}/{len(candidates)}: {candidate.region} ({zones})"
            self.evidence.line(f"{head}: deploying {rig.stack_name}")
            timeline = Timeline(rig.name, region=candidate.region)
            failure, outputs = self._attempt(rig, candidate, number, timeline)
            attempt.ended = utc.iso_seconds()
            if failure is None:
                attempt.outcome = "up"
                placement.record_deployed(rig.name, candidate.region, candidate.zones, rig.stack_name)
                timeline.launch_to_ready_seconds = _seconds(timeline.instance_launched, timeline.ready)
                timeline.deploy_to_ready_seconds = _seconds(timeline.deploy_start, timeline.ready)
                self.evidence.write_json(f"timeline-{rig.name}.json", asdict(timeline))
                ready = (f"ready {timeline.ready} (launch to ready {timeline.launch_to_ready_seconds}s)"
                         if timeline.ready else "ready not measured" + (
                             f": {'; '.join(timeline.notes)}" if timeline.notes else ""))
                self.evidence.line(f"{head}: up in {timeline.zone or candidate.region}; {ready}")
                return RigResult(rig.name, True, candidate.region, attempts, timeline, outputs)
            attempt.code, attempt.kind, attempt.message = failure.code, failure.kind, failure.message
            if failure.kind in FAILOVER_KINDS:
                attempt.outcome = "failover"
                attempt.next_step = (f"clean up, then try {following.region}" if following
                                     else "clean up; no region left")
                self.evidence.line(f"{head}: {failure.code} ({failure.kind}); {attempt.next_step}")
                self._clean_up(rig, candidate.region)
                continue
            attempt.outcome = "failed"
            left = (f"{rig.stack_name} is left for inspection (`python -m rigs sweep --yes` removes it)"
                    if self._stack_exists(candidate.region, rig.stack_name)
                    else f"{rig.stack_name} was not created in {candidate.region}: nothing to clean up")
            attempt.next_step = f"stop: not a capacity or quota failure, another region would not fix it; {left}"
            self.evidence.line(f"{head}: {failure.code} ({failure.kind}): {failure.message[:600]}; "
                               f"{attempt.next_step}")
            self.evidence.write_json(f"timeline-{rig.name}.json", asdict(timeline))
            return RigResult(rig.name, False, None, attempts, timeline, reason=str(failure))
        reason = "every region failed for capacity or quota: " + ", ".join(
            f"{a.region} {a.code}" for a in attempts)
        self.evidence.line(f"{rig.name}: {reason}")
        self.evidence.write_json(f"timeline-{rig.name}.json", asdict(timeline))
        return RigResult(rig.name, False, None, attempts, timeline, reason=reason)

    def _attempt(self, rig: DeployableRig, candidate: placement.Candidate, number: int,
                 timeline: Timeline) -> tuple[aws.AwsFailure | None, dict[str, str]]:
        context = self._context(rig, candidate)
        assembly = self.evidence.directory / "assembly" / f"{rig.name}-{candidate.region}"
        log = self.evidence.directory / f"cdk-{rig.name}-{number}.log"
        synth = self.runner.synth(assembly, context, log)
        if synth.returncode != 0:
            failure = cli_failure(synth.log or log, "cdk synth failed")
            return aws.AwsFailure("SynthFailed", aws.OTHER, failure.message), {}
        dependencies, cfn_name = stack_dependencies(assembly, rig.stack_name)
        failure = self._deploy_dependencies(rig, assembly, dependencies, context, candidate.region)
        if failure is not None:
            return failure, {}
        outputs_file = self.evidence.directory / f"outputs-{rig.name}.json"
        timeline.deploy_start = utc.iso_seconds()
        monitor = None
        if isinstance(rig, Ec2Rig):
            monitor = DeployMonitor(self.watcher, candidate.region, cfn_name, candidate.zones,
                                    self.settings.watch.capacity_grace, self.settings.watch.poll).start()
        try:
            result = self.runner.deploy(assembly, [rig.stack_name], context, log, outputs_file)
        finally:
            early = monitor.stop() if monitor is not None else None
        if early is not None:  # the group could not launch anywhere it may: this region is given up
            if monitor.signal_refused:
                timeline.notes.append(f"signalling the group's failure was refused ({monitor.signal_refused})")
            return early, {}
        if result.returncode != 0:
            if not self._stack_exists(candidate.region, cfn_name):
                return cli_failure(result.log or log, f"cdk deploy {rig.stack_name} failed before CloudFormation "
                                                      "created it"), {}
            return self.watcher.stack_failure(candidate.region, cfn_name), {}
        timeline.stack_complete = utc.iso_seconds()
        outputs = self._outputs(outputs_file, rig.stack_name) or self._stack_outputs(candidate.region, cfn_name)
        if isinstance(rig, SageMakerRig):
            endpoint = outputs.get(OutputKey.ENDPOINT_NAME)
            if not endpoint:
                return aws.AwsFailure("NoEndpointOutput", aws.OTHER, f"{rig.stack_name} has no EndpointName output"), outputs
            return self.watcher.endpoint_times(candidate.region, endpoint, timeline), outputs
        group = outputs.get(OutputKey.AUTO_SCALING_GROUP)
        if not group:
            return aws.AwsFailure("NoGroupOutput", aws.OTHER,
                                  f"{rig.stack_name} has no {OutputKey.AUTO_SCALING_GROUP} output"), outputs
        port = int(outputs[OutputKey.REMOTE_PORT]) if outputs.get(OutputKey.REMOTE_PORT, "").isdigit() else rig.port
        failure = self.watcher.watch_group(candidate.region, group, candidate.zones, timeline, rig, port)
        if failure is None and self.settings.watch.wait_ready:
            self.watcher.wait_ssm_and_ready(candidate.region, timeline, rig, port)
        elif failure is None:
            timeline.notes.append("--no-wait: SSM and readiness not awaited")
        return failure, outputs

    @staticmethod
    def _outputs(path: Path, stack: str) -> dict[str, str]:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return {}
        return {str(k): str(v) for k, v in (data.get(stack) or {}).items()}

    def _stack_outputs(self, region: str, stack: str) -> dict[str, str]:
        try:
            described = aws.call(self.clients("cloudformation", region).describe_stacks, StackName=stack)
        except Exception:  # noqa: BLE001
            return {}
        return {o["OutputKey"]: o.get("OutputValue", "") for o in described["Stacks"][0].get("Outputs", [])}

    def _clean_up(self, rig: DeployableRig, region: str) -> None:
        """Delete the failed attempt's rig stack and wait: nothing of it may stay billing."""
        cfn = self.clients("cloudformation", region)
        try:
            aws.call(cfn.delete_stack, StackName=rig.stack_name)
            cfn.get_waiter("stack_delete_complete").wait(StackName=rig.stack_name,
                                                         WaiterConfig={"Delay": 5, "MaxAttempts": 360})
            self.evidence.line(f"{rig.name}: {region}: {rig.stack_name} deleted")
        except Exception as exc:  # noqa: BLE001
            self.evidence.line(f"{rig.name}: {region}: cleaning up {rig.stack_name} failed ({aws.classify(exc)}); "
                               "run `python -m rigs sweep --yes`")
