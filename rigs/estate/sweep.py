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
   What each kind is, how it is deleted and waited for, and the order, are the table of
   :mod:`rigs.estate.kinds`.
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
from typing import AbstractSet, Any, Callable, Sequence

from kit import utc
from rigs import aws
from rigs.catalog.pricing import PriceBook
from rigs.contract import BASE_STACK_PREFIX, REGIONS
from rigs.estate import kinds
from rigs.estate.inventory import discover
from rigs.estate.kinds import stacks
from rigs.estate.kinds.base import REGIONAL, Deletion, Kind
from rigs.estate.resources import ENDPOINT, GLOBAL, STACK, Inventory, Resource
from rigs.placement import placement

Say = Callable[[str], None]

ENDPOINT_BUSY = ("Creating", "Updating", "SystemUpdating", "RollingBack", "UpdateRollbackFailed")
TYPICAL_ENDPOINT_MINUTES = 10
CAPACITY_WAIT_MINUTES = 31
MAX_WAIT_MINUTES = 15.0
"""How long a sweep waits, by default, for an endpoint still Creating and for each deletion (``--max-wait``)."""
POLL_S = 5.0
"""How often a sweep asks whether a deletion is done."""
ENDPOINT_POLL_S = 1.0
"""The same against a custom endpoint (``AWS_ENDPOINT_URL``: moto's server answers at once)."""

LEFTOVERS = tuple(kind for kind in kinds.SWEEP_ORDER if not kind.kept)
"""What a sweep deletes outside stacks in every region."""
NETWORK = tuple(kind for kind in kinds.SWEEP_ORDER if kind.kept and kind.listing.scope == REGIONAL)
"""What it deletes in every region only with ``--all``."""
IAM = tuple(kind for kind in kinds.SWEEP_ORDER if kind.listing.scope == GLOBAL)
"""What it deletes once, after the regions, only with ``--all``."""


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


class Sweeper(Deletion):
    def __init__(self, session: Any, regions: Sequence[str] = REGIONS, everything: bool = False,
                 max_wait: float = MAX_WAIT_MINUTES * 60, say: Say = print, poll: float = POLL_S,
                 sleep: Callable[[float], None] = time.sleep, prices: PriceBook | None = None) -> None:
        super().__init__(aws.Clients(session), max_wait=max_wait, poll=poll, say=say, sleep=sleep)
        self.session = session
        self.regions = tuple(regions)
        self.everything = everything
        self.prices = prices or PriceBook(session)
        self.result: SweepResult | None = None

    def inventory(self, regions: Sequence[str] | None = None) -> Inventory:
        """Everything of ours in the sweep's regions with IAM; in ``regions`` only, without it."""
        return discover(self.session, regions or self.regions, self.prices, include_iam=regions is None,
                        clients=self.clients)

    # --- the whole sweep -----------------------------------------------------------

    def run(self) -> SweepResult:
        before = self.inventory()
        self.deleted, self.failed = [], []
        result = self.result = SweepResult(before, deleted=self.deleted, failed=self.failed)
        with ThreadPoolExecutor(max_workers=max(1, len(self.regions))) as pool:
            list(pool.map(lambda region: self._sweep_region(region, before.in_region(region)), self.regions))
        if self.everything:
            self._delete_kinds(GLOBAL, self.inventory(), IAM)
        result.after = self.inventory()
        return result

    def _sweep_region(self, region: str, inventory: Inventory) -> None:
        blocked_stacks = self._settle_endpoints(region, inventory)
        self._delete_stacks(region, inventory, blocked_stacks)
        # Re-list: stack deletion removed most; what is left was made outside a stack or survived it.
        leftovers = self.inventory((region,))
        self._delete_kinds(region, leftovers, LEFTOVERS, blocked_stacks)
        if self.everything:
            self._delete_kinds(region, leftovers, NETWORK)
            retry = [s for s in self.inventory((region,)).of_kind(STACK) if s.id not in blocked_stacks]
            if retry:  # a stack whose resources were in the way can go now
                self._delete_stacks(region, Inventory(tuple(retry)), blocked_stacks)
                self._delete_kinds(region, self.inventory((region,)), NETWORK)

    def _delete_kinds(self, region: str, inventory: Inventory, kinds_: Sequence[Kind],
                      blocked: AbstractSet[str] = frozenset()) -> None:
        """Each resource of ``kinds_`` in their order, but what waits with a ``blocked`` stack or endpoint."""
        def free(resource: Resource) -> bool:
            return resource.stack not in blocked and f"endpoint:{resource.name}" not in blocked

        for kind in kinds_:
            found = [r for r in inventory.of_kind(kind.name) if not kind.with_its_stack or free(r)]
            if kind.together is not None:
                kind.together(self, region, found)
                continue
            for resource in found:
                self.delete(resource, kind)

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
            status = self._endpoint_settled(sagemaker, endpoint.name)
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

    def _endpoint_settled(self, sagemaker: Any, name: str) -> str:
        def status() -> str:
            try:
                return aws.call(sagemaker.describe_endpoint, EndpointName=name)["EndpointStatus"]
            except Exception as exc:  # noqa: BLE001
                # SageMaker answers ValidationException for an endpoint that no longer exists
                if aws.error_code(exc) in ("ValidationException", "ResourceNotFound"):
                    return "Deleted"
                raise

        return self.settled(status, lambda state: state in ENDPOINT_BUSY, self.poll * 6)

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
        """Rig stacks first, then (with ``--all``) base stacks; a wave's deletions start together."""
        cfn = self.clients("cloudformation", region)
        found = [s for s in inventory.of_kind(STACK) if s.id not in blocked]
        rig_stacks = [s for s in found if not s.id.startswith(BASE_STACK_PREFIX)]
        base_stacks = [s for s in found if s.id.startswith(BASE_STACK_PREFIX)]
        for wave in (rig_stacks, base_stacks if self.everything else []):
            started = []
            for stack in wave:
                status = stacks.settled_status(self, cfn, stack.id)
                if status in (None, "DELETE_COMPLETE"):
                    self.done(f"{region}: stack {stack.id} already gone")
                    continue
                self.say(f"{region}: deleting stack {stack.id} ({status})")
                try:
                    stacks.STACK.delete(self, stack)
                    started.append(stack)
                except Exception as exc:  # noqa: BLE001
                    self.fail(f"{region}: stack {stack.id}: delete refused ({aws.classify(exc)})")
            for stack in started:
                self._wait_stack_deleted(cfn, region, stack)

    def _wait_stack_deleted(self, cfn: Any, region: str, stack: Resource) -> None:
        stack_id = stack.get("stack_id") or stack.id
        try:
            stacks.STACK.wait(self, stack)
            self.done(f"{region}: stack {stack.id} deleted")
        except Exception as exc:  # noqa: BLE001
            status = stacks.status(cfn, stack_id)
            if status in (None, "DELETE_COMPLETE"):
                self.done(f"{region}: stack {stack.id} deleted")
                return
            reason = stacks.failure(cfn, stack_id)
            self.fail(f"{region}: stack {stack.id} is {status}: {reason or aws.classify(exc)}")
