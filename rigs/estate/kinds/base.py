"""What an entry of the table of resource kinds is (:class:`Kind`, :class:`Listing`), and the two things its
functions are given: a :class:`Finder` (listing one region for ``status`` and ``sweep``) and a
:class:`Deletion` (the sweep deleting, printing each step and waiting for it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from kit.waiting import WaitTimeout, poll_until
from rigs import aws
from rigs.catalog.pricing import PriceBook, PriceError
from rigs.contract import TAG_RIG
from rigs.estate.resources import GLOBAL, STACK_TAG, Outlasting, Resource, tag_map

REGIONAL = "regional"
Price = tuple[float, str]
"""USD per hour, and where the price comes from (or why it is unknown)."""


@dataclass(frozen=True, slots=True)
class Listing:
    """One listing call set: ``lists`` adds what it finds to the :class:`Finder`; a failure is one problem,
    ``{region}: could not list {what} ({code})``. Kinds listed by the same calls share one listing."""

    what: str
    lists: Callable[["Finder"], None]
    scope: str = REGIONAL
    """:data:`REGIONAL`: run in every region; :data:`~rigs.estate.resources.GLOBAL`: once (IAM)."""


@dataclass(frozen=True, slots=True)
class Kind:
    """One kind of resource of ours: what lists it, its price, whether it is kept, how it is deleted, how its
    deletion is waited for, and the error codes that mean it is gone already."""

    name: str
    listing: Listing
    price: Callable[["Finder", Any], Price] | None = None
    """Its hourly price from what its lister read (None: free)."""
    kept: bool = False
    """Long-lived and free: kept by ``sweep`` unless ``--all``."""
    delete: Callable[["Deletion", Resource], Any] | None = None
    wait: Callable[["Deletion", Resource], Any] | None = None
    """Returns once the deletion is done, raises when it is not confirmed (None: done when asked)."""
    gone_codes: tuple[str, ...] = ()
    """Error codes of the delete call that mean it is gone (besides every code :func:`rigs.aws.classify` calls
    not-found)."""
    verbs: tuple[str, str] = ("deleting", "deleted")
    keep_because: Callable[["Deletion", Resource], str] | None = None
    """Why it must stay although it is ours (``""``: it goes); asked before it is deleted."""
    together: Callable[["Deletion", str, list[Resource]], None] | None = None
    """Deletes a region's resources of this kind in one call, saying so itself (instead of ``delete``)."""
    with_its_stack: bool = True
    """Left while the stack that holds it waits for an endpoint still being created."""
    bills_unpriced: bool = False
    """It bills while it exists even when its price is not known."""


class Finder:
    """Lists our resources in one region (or :data:`GLOBAL`); each listing appends to ``found`` or notes a
    problem."""

    def __init__(self, clients: aws.Clients, region: str, prices: PriceBook) -> None:
        self.clients = clients
        self.region = region
        self.prices = prices
        self.found: list[Resource] = []
        self.problems: list[str] = []
        self.notes: list[str] = []
        self.outlasting: list[Outlasting] = []

    def run(self, listing: Listing) -> None:
        try:
            listing.lists(self)
        except Exception as exc:  # noqa: BLE001 - reported, never hidden
            failure = aws.classify(exc)
            if failure.kind == aws.CREDENTIALS:
                raise aws.CredentialsError(failure.code) from None
            self.problems.append(f"{self.region}: could not list {listing.what} ({failure.code})")

    def add(self, kind: Kind, id_: str, tags: Any = None, **fields: Any) -> None:
        tags_ = tag_map(tags)
        fields.setdefault("rig", tags_.get(TAG_RIG))
        fields.setdefault("stack", tags_.get(STACK_TAG))
        fields.setdefault("kept_by_default", kind.kept)
        extra = fields.pop("extra", {})
        self.found.append(Resource(kind=kind.name, region=self.region, id=id_, extra=tuple(sorted(extra.items())),
                                   bills_unpriced=kind.bills_unpriced, **fields))

    def price_instance(self, instance_type: str) -> Price:
        try:
            price = self.prices.instance_hourly_price(instance_type, self.region)
        except PriceError as exc:
            return 0.0, f"price unknown: {exc}"
        return price.usd_per_hour, price.describe()

    def price_unit(self, item: str, quantity: float = 1.0, per_minute: bool = False) -> Price:
        """``quantity`` of a price file item an hour; ``per_minute``: the item is a rate per minute of use."""
        try:
            price = self.prices.unit_price(item, self.region)
        except PriceError as exc:
            return 0.0, f"price unknown: {exc}"
        hourly = (price.usd * 60 if price.unit == "minute" else price.usd) if per_minute else price.hourly(quantity)
        return hourly, f"${price.usd:g}/{price.unit} ({price.source}, as of {price.as_of})"


class Deletion:
    """The sweep's deleting: each deletion said, done or failed, and waited for within ``max_wait`` seconds."""

    def __init__(self, clients: aws.Clients, *, max_wait: float, poll: float, say: Callable[[str], None],
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.clients = clients
        self.max_wait = max_wait
        self.poll = poll
        self.say = say
        self.sleep = sleep
        self.deleted: list[str] = []
        self.failed: list[str] = []

    def delete(self, resource: Resource, kind: Kind) -> None:
        """Delete ``resource`` as its kind says, wait for it, and say how it went."""
        region, label = resource.region, resource.label()
        reason = kind.keep_because(self, resource) if kind.keep_because else ""
        if reason:
            self.fail(f"{region}: {label} kept: {reason}")
            return
        self.say(f"{region}: {kind.verbs[0]} {label}")
        try:
            aws.call(kind.delete, self, resource)
        except Exception as exc:  # noqa: BLE001
            failure = aws.classify(exc)
            if failure.kind == aws.NOT_FOUND or failure.code in kind.gone_codes:
                self.done(f"{region}: {label} already gone")
                return
            self.fail(f"{region}: {label}: {failure}")
            return
        if kind.wait is not None:
            try:
                kind.wait(self, resource)
            except Exception as exc:  # noqa: BLE001
                self.fail(f"{region}: {label}: not confirmed {kind.verbs[1]} ({aws.classify(exc)})")
                return
        self.done(f"{region}: {label} {kind.verbs[1]}")

    def client(self, service: str, resource: Resource) -> Any:
        return self.clients(service, None if resource.region == GLOBAL else resource.region)

    def waiter(self, client_: Any, waiter: str, **kwargs: Any) -> None:
        """boto3's waiter, asking every ``poll`` seconds for up to ``max_wait``."""
        client_.get_waiter(waiter).wait(**kwargs, WaiterConfig={
            "Delay": max(1, int(self.poll)), "MaxAttempts": max(1, int(self.max_wait / max(1, self.poll)))})

    def gone(self, probe: Callable[[], list]) -> None:
        """Return once ``probe`` finds nothing; ``TimeoutError("still there")`` after ``max_wait``."""
        try:
            poll_until(lambda: None if probe() else True, timeout_s=self.max_wait, interval_s=self.poll,
                       what="still there", sleep=self.sleep)
        except WaitTimeout:
            raise TimeoutError("still there") from None

    def retrying(self, operation: Callable[[], Any], code: str) -> None:
        """``operation`` again while it fails with ``code`` (a volume still detaching, a network still draining),
        for up to 5 minutes; then its last error."""
        refusal: list[Exception] = []

        def attempt() -> bool | None:
            try:
                aws.call(operation)
            except Exception as exc:  # noqa: BLE001
                if aws.error_code(exc) != code:
                    raise
                refusal[:] = [exc]
                return None
            return True

        try:
            poll_until(attempt, timeout_s=min(self.max_wait, 300), interval_s=self.poll, what=code, sleep=self.sleep)
        except WaitTimeout:
            raise refusal[0] from None

    def settled(self, read: Callable[[], Any], busy: Callable[[Any], bool], interval_s: float) -> Any:
        """What ``read`` answers once ``busy`` says it is no longer, or its last answer after ``max_wait``."""
        seen: list[Any] = []

        def check() -> list[Any] | None:
            seen[:] = [read()]
            return None if busy(seen[0]) else seen

        try:
            return poll_until(check, timeout_s=self.max_wait, interval_s=interval_s, what="settled",
                              sleep=self.sleep)[0]
        except WaitTimeout:
            return seen[0]

    def done(self, message: str) -> None:
        self.say(message)
        self.deleted.append(message)

    def fail(self, message: str) -> None:
        self.say(message)
        self.failed.append(message)


def unless_gone(detach: Callable[[], Any], *also: str) -> None:
    """``detach()`` (a role from a profile, a gateway from its VPC), where what is already gone (a not-found
    code, or one of ``also``) is no failure."""
    try:
        aws.call(detach)
    except Exception as exc:  # noqa: BLE001
        if aws.classify(exc).kind != aws.NOT_FOUND and aws.error_code(exc) not in also:
            raise
