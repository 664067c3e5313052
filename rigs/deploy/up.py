"""``up``: deploy rigs through the CDK CLI with region failover, and measure launch to ready.

For each rig, in parallel with the others:

1. The regions to try come from the recorded placement (``python -m rigs preflight``;
   run for the rig first when nothing is recorded: :mod:`.sequence`).
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
   ``timeline-<rig>.json`` (:mod:`.records`). The final region is recorded in the placement, so ``app.py``
   synthesizes the rig there from then on (``cdk destroy --all`` reaches it).

The CDK CLI is called as a subprocess (``./scripts/cdk``, :mod:`.cdk_cli`); tests inject a fake
runner. Errors are decided on AWS error codes (:mod:`rigs.aws`, :mod:`.diagnosis`), never on the
CLI's log text; the compute is watched by :mod:`.watch`.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from kit import utc
from rigs import aws

from rigs.catalog.model import DeployableRig
from rigs.contract import BOOTSTRAP_STACK, OutputKey
from rigs.deploy.cdk_cli import CdkRunner, cli_failure, stack_dependencies
from rigs.deploy.diagnosis import FAILOVER_KINDS, RELEASED, Diagnosis
from rigs.deploy.records import Attempt, Evidence, RigResult, Timeline, UpSummary, default_evidence_dir
from rigs.deploy.watch import DeployMonitor, Watcher, WatchSettings
from rigs.placement import placement


def _seconds(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    return round((utc.parse(end) - utc.parse(start)).total_seconds(), 1)


@dataclass
class UpSettings:
    max_hours: float | None = None
    context: Mapping[str, str] = field(default_factory=dict)
    watch: WatchSettings = field(default_factory=WatchSettings)
    evidence_dir: Path | None = None
    placement_file: Path | None = None
    """Where the region a rig came up in is recorded (None: the user's placement file)."""


class Up:
    def __init__(self, session: Any, runner: CdkRunner, settings: UpSettings, say: Callable[[str], None] = print,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.session = session
        self.clients = aws.Clients(session)
        self.runner = runner
        self.settings = settings
        self.evidence = Evidence(settings.evidence_dir or default_evidence_dir(), say)
        self.diagnosis = Diagnosis(self.clients)
        self.watcher = Watcher(self.clients, settings.watch, self.diagnosis, sleep)
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
        self.evidence.write_json("summary.json", UpSummary(results))
        return results

    def _context(self, rig: DeployableRig, candidate: placement.Candidate) -> dict[str, str]:
        context = dict(self.settings.context)
        context[f"region.{rig.name}"] = candidate.region
        if candidate.zones and rig.on_instances:
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
                        failure = self.diagnosis.stack_failure(region, dependency)
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
        timeline = Timeline(rig=rig.name)
        if not candidates:
            reason = "no region to try: run `python -m rigs preflight` to see why"
            self.evidence.line(f"{rig.name}: {reason}")
            return RigResult(rig=rig.name, ok=False, region=None, attempts=attempts, timeline=timeline,
                             reason=reason)
        for number, candidate in enumerate(candidates, start=1):
            following = candidates[number] if number < len(candidates) else None
            attempt = Attempt(rig=rig.name, number=number, region=candidate.region, zones=candidate.zones,
                              started=utc.iso_seconds())
            attempts.append(attempt)
            zones = ",".join(candidate.zones) or "any zone"
            head = f"{rig.name}: attempt {number}/{len(candidates)}: {candidate.region} ({zones})"
            self.evidence.line(f"{head}: deploying {rig.stack_name}")
            timeline = Timeline(rig=rig.name, region=candidate.region)
            failure, outputs = self._attempt(rig, candidate, number, timeline)
            if failure is not None and failure.kind == RELEASED:  # the stack is there, its compute is not
                self.evidence.line(f"{head}: {rig.stack_name} is deployed but {failure.message}; deleting it to "
                                   "deploy it again")
                self._clean_up(rig, candidate.region)
                timeline = Timeline(rig=rig.name, region=candidate.region)
                failure, outputs = self._attempt(rig, candidate, number, timeline)
            attempt.ended = utc.iso_seconds()
            if failure is None:
                attempt.outcome = "up"
                placement.record_deployed(rig.name, candidate.region, candidate.zones, rig.stack_name,
                                          self.settings.placement_file)
                timeline.launch_to_ready_seconds = _seconds(timeline.instance_launched, timeline.ready)
                timeline.deploy_to_ready_seconds = _seconds(timeline.deploy_start, timeline.ready)
                self.evidence.write_json(f"timeline-{rig.name}.json", timeline)
                ready = (f"ready {timeline.ready} (launch to ready {timeline.launch_to_ready_seconds}s)"
                         if timeline.ready else "ready not measured" + (
                             f": {'; '.join(timeline.notes)}" if timeline.notes else ""))
                self.evidence.line(f"{head}: up in {timeline.zone or candidate.region}; {ready}")
                return RigResult(rig=rig.name, ok=True, region=candidate.region, attempts=attempts, timeline=timeline,
                                 outputs=outputs)
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
            why = (f"the account is on the Free plan: {aws.FREE_PLAN_FIX}" if failure.kind == aws.FREE_PLAN
                   else "not a capacity or quota failure, another region would not fix it")
            attempt.next_step = f"stop: {why}; {left}"
            self.evidence.line(f"{head}: {failure.code} ({failure.kind}): {failure.message[:600]}; "
                               f"{attempt.next_step}")
            self.evidence.write_json(f"timeline-{rig.name}.json", timeline)
            fix = f"; {aws.FREE_PLAN_FIX}" if failure.kind == aws.FREE_PLAN else ""
            return RigResult(rig=rig.name, ok=False, region=None, attempts=attempts, timeline=timeline,
                             reason=f"{failure}{fix}")
        reason = "every region failed for capacity or quota: " + ", ".join(
            f"{a.region} {a.code}" for a in attempts)
        self.evidence.line(f"{rig.name}: {reason}")
        self.evidence.write_json(f"timeline-{rig.name}.json", timeline)
        return RigResult(rig=rig.name, ok=False, region=None, attempts=attempts, timeline=timeline, reason=reason)

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
        if rig.on_instances:
            monitor = DeployMonitor(self.diagnosis, candidate.region, cfn_name, candidate.zones,
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
            return self.diagnosis.stack_failure(candidate.region, cfn_name), {}
        timeline.stack_complete = utc.iso_seconds()
        outputs = self._outputs(outputs_file, rig.stack_name) or self._stack_outputs(candidate.region, cfn_name)
        if rig.on_endpoint:
            endpoint = outputs.get(OutputKey.ENDPOINT_NAME)
            if not endpoint:
                return aws.AwsFailure("NoEndpointOutput", aws.OTHER, f"{rig.stack_name} has no EndpointName output"), outputs
            return self.watcher.endpoint_times(candidate.region, endpoint, timeline), outputs
        group = outputs.get(OutputKey.AUTO_SCALING_GROUP)
        if not group:
            return aws.AwsFailure("NoGroupOutput", aws.OTHER,
                                  f"{rig.stack_name} has no {OutputKey.AUTO_SCALING_GROUP} output"), outputs
        port = int(outputs[OutputKey.REMOTE_PORT]) if outputs.get(OutputKey.REMOTE_PORT, "").isdigit() else rig.port
        failure = self.watcher.watch_group(candidate.region, group, candidate.zones, timeline, rig)
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
