"""What every check of the doctor is given (:class:`Scope`) and gives (:class:`Finding`, :class:`Outcome`), its
entry in the registry (:class:`Check`), what it runs for (the account, each region, each rig in each of its
regions), and the rows a check writes when it could not be made (:func:`unknown`, :func:`refused`)."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from botocore.config import Config

from rigs import aws
from rigs.account import permissions
from rigs.catalog.model import Catalog, DeployableRig, Rig
from rigs.contract import REGIONS

OK, WARN, FAIL = "ok", "warn", "FAIL"

DOCTOR_CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": 3},
    connect_timeout=3,
    read_timeout=10,
)
"""Every call after the identity check: three tries, short timeouts (a check never waits minutes)."""

NOT_SERVED_FIX = "none: not a permission; AWS serves this call, so the check runs against AWS"
"""The fix of a check whose call the endpoint does not serve (moto's server has no Free Tier API)."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One check's result for one subject in one region (None: not regional).

    ``fix`` may hold ``{region}``: it is filled with the region of the row, or with
    ``<region>`` when one row stands for several. ``blocks`` names the rigs this failure
    stops from deploying in ``region``.
    """

    check: str
    subject: str
    region: str | None
    status: str
    detail: str
    fix: str = ""
    blocks: tuple[str, ...] = ()
    denied: str = ""
    """The IAM action the caller's policy refused, when that is why the check could not be made."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """A check's findings, and what it gives the checks after it (:meth:`Scope.result`)."""

    findings: list[Finding]
    given: Any = None


@dataclass(frozen=True, slots=True)
class Check:
    """One check: the name of its rows, what it runs for (each subject one call of ``run`` in the pool, in
    the order given) and how; ``rows`` when it writes rows of other names."""

    name: str
    subjects: Callable[[Scope], Iterable[tuple]]
    run: Callable[..., list[Finding] | Outcome]
    rows: tuple[str, ...] = ()


# --- what a check asks of a rig ----------------------------------------------------------------------

def deployed(rig: Rig) -> bool:
    return rig.deployed


def on_instances(rig: Rig) -> bool:
    return rig.on_instances


def on_endpoint(rig: Rig) -> bool:
    return rig.on_endpoint


def builds_own_image(rig: Rig) -> bool:
    return rig.deployed and rig.builds_own_image


class Scope:
    """What every check is given: the clients, the account, the rigs and the regions each may use, the catalog;
    and the outcome of a check that ran before (:meth:`result`)."""

    def __init__(self, clients: aws.Clients, account: str, rigs: Sequence[DeployableRig], catalog: Catalog,
                 rig_regions: Mapping[str, tuple[str, ...]] | None = None, session: Any = None) -> None:
        self.clients = clients
        self.account = account
        self.rigs = list(rigs)
        self.catalog = catalog
        self.rig_regions = rig_regions if rig_regions is not None else {r.name: tuple(r.regions) for r in self.rigs}
        self.session = session
        self.outcomes: dict[tuple[str, tuple], Future] = {}
        self._shared: dict[Any, Future] = {}
        self._lock = threading.Lock()

    def rigs_in(self, region: str, which: Callable[[Rig], bool] = deployed) -> list[DeployableRig]:
        """The rigs that answer ``which`` (by default: every rig a stack deploys) and may use ``region``."""
        return [r for r in self.rigs if which(r) and region in r.regions]

    def names_in(self, region: str, which: Callable[[Rig], bool] = deployed) -> tuple[str, ...]:
        return tuple(r.name for r in self.rigs_in(region, which))

    def regions(self) -> list[str]:
        """The regions any rig checked may use, in the project's order."""
        return [r for r in REGIONS if any(r in regions for regions in self.rig_regions.values())]

    def result(self, check: Check, *subject: Any) -> Any:
        """What ``check`` gave for ``subject`` besides its findings (a check scheduled before: waits for it)."""
        return self.outcomes[(check.name, subject_key(subject))].result().given

    def once(self, key: Any, make: Callable[[], Any]) -> Any:
        """``make()``, called once for ``key`` whichever check asks first; the others wait for it."""
        with self._lock:
            future = self._shared.get(key)
            first = future is None
            if first:
                future = self._shared[key] = Future()
        if first:
            try:
                future.set_result(make())
            except BaseException as exc:  # noqa: BLE001 - raised again to every caller
                future.set_exception(exc)
        return future.result()


def subject_key(subject: tuple) -> tuple:
    """A subject as a key: a rig by its name."""
    return tuple(getattr(part, "name", part) for part in subject)


# --- what a check runs for ---------------------------------------------------------------------------


def the_account(_scope: Scope) -> list[tuple]:
    return [()]


def each_region(scope: Scope) -> list[tuple]:
    return [(region,) for region in scope.regions()]


def each_rig(which: Callable[[Rig], bool]) -> Callable[[Scope], list[tuple]]:
    """Each rig that answers ``which`` (:func:`on_instances`, :func:`on_endpoint`, ...) in each region it may use."""
    return lambda scope: [(rig, region) for rig in scope.rigs if which(rig) for region in scope.rig_regions[rig.name]]



# --- a check that could not be made ------------------------------------------------------------------


def unknown(check: str, subject: str, region: str | None, exc: BaseException, service: str,
            fix: str = "") -> Finding:
    """A check that could not be made: a warning with the call and a readable reason."""
    failure = aws.classify(exc)
    if failure.kind == aws.CREDENTIALS:
        raise aws.CredentialsError(failure.code) from None
    if failure.kind == aws.NOT_SERVED:
        call = " ".join(part for part in (service, getattr(exc, "operation_name", None)) if part)
        return Finding(check, subject, region, WARN, f"not available here: this endpoint does not serve {call} "
                       f"(HTTP {failure.code})", fix or NOT_SERVED_FIX)
    refused_action = permissions.refused_action(service, exc)
    if refused_action:
        return Finding(check, subject, region, WARN, f"not checked: {aws.describe_error(exc, service)}",
                       permissions.hint(refused_action), denied=refused_action)
    return Finding(check, subject, region, WARN, f"not checked: {aws.describe_error(exc, service)}",
                   fix or "rerun `python -m rigs doctor`; if it persists, check the permissions for this call")


def refused(finding: Finding, code: str | None, wanted: str) -> Finding:
    """``finding`` saying which statement grants ``wanted`` when ``code`` is a refusal of the caller's policy."""
    if code not in permissions.ACCESS_DENIED_CODES:
        return finding
    return Finding(finding.check, finding.subject, finding.region, finding.status, finding.detail,
                   permissions.hint(wanted), finding.blocks, denied=wanted)


def short(zones: Iterable[str], region: str) -> str:
    """``us-east-2a, us-east-2b`` -> ``a, b`` (the region is in the row)."""
    return ", ".join(z[len(region):] if z.startswith(region) else z for z in zones)
