"""``python -m rigs doctor``: check the account before spending anything.

Read-only: every call is a ``Describe``/``Get``/``List`` call; nothing is created, nothing
costs money, nothing local is written. For the rigs named (default: every deployable
rig) and each region a rig may use (its catalog regions), one table, check by check,
with the fix for each failure:

- local: AWS CLI v2 and the Session Manager plugin (the agent's SSM port forwards need
  both; they do not block a deploy, so a problem there is a warning);
- the credentials and the caller identity (nothing else runs without them), and the account's
  plan (the Free Tier API: a Free-plan account launches no rig until it is upgraded to the Paid plan);
- per region: the CDK bootstrap stack and its version; the zones (the available zones that
  offer the most of the region's rig types, as the base network chooses them at deploy time);
- per rig and region: its AMI's SSM parameter resolves, and the root volume the deploy
  will size for it (snapshot plus what the rig needs free, never below the catalog's floor;
  a failure only where no gp3 volume could hold it); the zones offering the instance type (and whether the base
  network has a subnet in one of them); the vCPU quotas (on-demand, which rigs use, and
  spot) or the SageMaker endpoint quota against what the rig needs, by quota code, a
  quota of 0 reported as "request an increase" (:mod:`rigs.account.preflight` does these); the
  digest the SageMaker deploy will run in that region (the catalog's pin, checked in the
  region's registry, else the one the tag points to there); the Hugging Face token
  secret when the rig's model needs one; for g5g, its image in the account's ECR and the
  CodeBuild quota its build needs;
- per region checked where the catalog's Bedrock OpenAI-compatible entry (``bedrock-mantle``) runs: that its
  endpoint lists the model under the route the catalog names for it (``GET <route>/models``, ``/v1`` or
  ``/openai/v1``, signed with the caller's credentials; ``AWS_BEDROCK_BASE_URL`` names another whole base URL,
  ``AWS_ENDPOINT_URL_BEDROCK_MANTLE`` another host; left out where AWS is a custom endpoint, such as moto's server
  offline, unless one of those variables names one). A warning only: the benchmark's ``bedrock-mantle`` backend
  fails there, no rig does.

A failure ``blocks`` the rigs it stops from deploying in its region. A rig *can deploy*
where nothing blocks it; the exit status is 0 when every rig named can deploy somewhere.

Each check is one module of :mod:`rigs.account.checks` (its function and its entry: its name, what it runs
for, how), in the shape of cdk-nag's rules; here are the registry, :data:`CHECKS`, in the order findings are
reported, and the one runner that starts them in parallel (a bounded pool), gathers their findings in that order
and renders them. Calls have short timeouts and bounded retries
(:data:`DOCTOR_CONFIG`); the first call (who am I?) uses :data:`rigs.aws.PROBE_CONFIG`, so a
machine that cannot reach AWS hears so in seconds.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from rigs import aws

from rigs.account import permissions
from rigs.account.checks import account_plan, ami, bedrock_model, bootstrap, codebuild_quota, g5g_image, \
    hf_secret, offerings, sagemaker_image, zones
from rigs.account.checks.base import DOCTOR_CONFIG, FAIL, OK, WARN, Check, Finding, Outcome, Scope, subject_key
from rigs.account.checks.tools import LOCAL_CHECKS, check_local_tools
from rigs.account.preflight import RegionCheck
from rigs.catalog.model import Catalog, DeployableRig, load_catalog
from rigs.contract import REGIONS

MAX_WORKERS = 16
"""Calls in flight at once: enough to overlap network latency, few enough not to be throttled."""

SKIPPABLE = {"account-plan": account_plan.ACCOUNT_PLAN}
"""The checks ``up --doctor`` and ``rehearse`` pass by name (``--skip-check NAME``), as ``--bootstrap`` passes "CDK
bootstrap": the account plan, whose answer for some accounts is not published (a wrong FAIL there would block every
rig everywhere)."""


def ignored_checks(bootstrap: bool, skipped: Sequence[str] = ()) -> tuple[str, ...]:
    """The checks whose failures stop no rig: "CDK bootstrap" when ``up``/``rehearse`` bootstrap (``--bootstrap``),
    and the :data:`SKIPPABLE` ones named (``--skip-check``)."""
    return (("CDK bootstrap",) if bootstrap else ()) + tuple(SKIPPABLE[name] for name in skipped)


@dataclass(frozen=True, slots=True)
class DoctorReport:
    """Every finding, and for each rig checked the regions it may use (its catalog order)."""

    findings: tuple[Finding, ...]
    rig_regions: Mapping[str, tuple[str, ...]]
    account: str | None = None
    seconds: float = 0.0
    stopped: aws.RigsError | None = None
    """Why the AWS checks did not run (no usable credentials, or AWS unreachable), or None."""
    preflight: tuple[RegionCheck, ...] = ()
    """Preflight's checks of each rig in each region checked (offerings, quotas): the placement they give
    is recorded from them (:func:`rigs.account.preflight.place`) without asking AWS again."""

    def deployable(self, rig: str, ignore: Iterable[str] = ()) -> list[str]:
        """The regions ``rig`` can deploy in: nothing blocks it there (catalog order).

        ``ignore`` names checks whose failures do not count (``up --bootstrap`` fixes "CDK bootstrap").
        """
        if self.stopped is not None:
            return []
        ignored = set(ignore)
        blocked = {f.region for f in self.findings if f.status == FAIL and rig in f.blocks
                   and f.check not in ignored}
        if None in blocked:  # an account-wide failure (the Free plan) blocks the rig everywhere
            return []
        return [region for region in self.rig_regions.get(rig, ()) if region not in blocked]

    def blockers(self, rig: str, region: str) -> list[Finding]:
        """The failures that stop ``rig`` in ``region``: that region's, and the account's."""
        return [f for f in self.findings if f.status == FAIL and rig in f.blocks and f.region in (region, None)]

    @property
    def ok(self) -> bool:
        """Every rig checked can deploy somewhere (and the account could be checked)."""
        return self.stopped is None and all(self.deployable(rig) for rig in self.rig_regions)


# --- the registry ----------------------------------------------------------------------------------

CHECKS: tuple[Check, ...] = (
    account_plan.CHECK,
    bootstrap.CHECK,
    zones.CHECK,
    ami.CHECK,
    offerings.CHECK,
    sagemaker_image.CHECK,
    hf_secret.CHECK,
    g5g_image.CHECK,
    codebuild_quota.CHECK,
    bedrock_model.CHECK,
)
"""The doctor's AWS checks, in the order their findings are reported; a check that reads another's outcome
comes after it (the pool starts them in this order, so the one waited for is running or done)."""
CHECK_ORDER = (*LOCAL_CHECKS, "Credentials", *(row for check in CHECKS for row in check.rows or (check.name,)),
               "IAM permissions", "Can deploy")


# --- running ---------------------------------------------------------------------------------------


def run_doctor(rigs: Sequence[DeployableRig], session: Callable[[], Any], regions: Sequence[str] | None = None,
               catalog: Catalog | None = None, which: Callable[[str], str | None] | None = None,
               clients: aws.Clients | None = None) -> DoctorReport:
    """Run every check for ``rigs`` in their catalog regions (limited to ``regions`` if given).

    ``session`` makes the boto3 session (a bad profile is then a row of the table too).
    """
    started = time.monotonic()
    catalog = catalog or load_catalog()
    wanted = set(regions or REGIONS)
    rig_regions = {rig.name: tuple(r for r in rig.regions if r in wanted) for rig in rigs}
    identity: dict[str, str] | None = None
    stopped: aws.CredentialsError | aws.UnreachableError | None = None
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="doctor-tools") as tools_pool:
        # the local tools (a subprocess each) are checked while the identity call waits on the network
        tools = tools_pool.submit(check_local_tools, which) if any(r.on_instances for r in rigs) else None
        try:
            session = session()
            identity = aws.caller_identity(session)
        except (aws.CredentialsError, aws.UnreachableError) as exc:
            stopped = exc
        findings = tools.result() if tools is not None else []
    if stopped is not None or identity is None:  # identity is None only when the check stopped
        detail = stopped.cause if isinstance(stopped, aws.CredentialsError) else str(stopped)
        findings.append(Finding("Credentials", "", None, FAIL, detail, stopped.fix))
        return DoctorReport(tuple(findings), rig_regions, None, time.monotonic() - started, stopped=stopped)
    account = identity["Account"]
    findings.append(Finding("Credentials", "", None, OK, identity.get("Arn", f"account {account}")))

    scope = Scope(clients or aws.Clients(session, DOCTOR_CONFIG), account, rigs, catalog, rig_regions, session)
    findings += _run_checks(scope)
    placed = [check for outcome in _outcomes(scope, offerings.CHECK) for check in outcome.given]
    findings += _permissions_summary(findings)
    report = DoctorReport(tuple(findings), rig_regions, account, 0.0)
    for rig in rigs:
        findings.append(_verdict(report, rig.name))
    return DoctorReport(tuple(findings), rig_regions, account, time.monotonic() - started, preflight=tuple(placed))


def _run_checks(scope: Scope) -> list[Finding]:
    """Start every check for each of its subjects in a bounded pool, in :data:`CHECKS`' order; their findings
    in that order."""
    with ThreadPoolExecutor(max_workers=MAX_WORKERS, thread_name_prefix="doctor") as pool:
        for check in CHECKS:
            for subject in check.subjects(scope):
                scope.outcomes[(check.name, subject_key(subject))] = pool.submit(_outcome, check, scope, subject)
        return [finding for future in scope.outcomes.values() for finding in future.result().findings]


def _outcome(check: Check, scope: Scope, subject: tuple) -> Outcome:
    found = check.run(scope, *subject)
    return found if isinstance(found, Outcome) else Outcome(found)


def _outcomes(scope: Scope, check: Check) -> list[Outcome]:
    return [future.result() for (name, _), future in scope.outcomes.items() if name == check.name]


def _verdict(report: DoctorReport, rig: str) -> Finding:
    regions = report.rig_regions.get(rig, ())
    deployable = report.deployable(rig)
    if deployable:
        return Finding("Can deploy", rig, None, OK, "in " + ", ".join(deployable) + " (the order `up` tries)")
    if not regions:
        return Finding("Can deploy", rig, None, FAIL, "none of its catalog regions was checked",
                       "leave out --regions, or name one of its regions")
    checks = sorted({f.check for region in regions for f in report.blockers(rig, region)}, key=CHECK_ORDER.index)
    return Finding("Can deploy", rig, None, FAIL, f"nowhere: blocked by {', '.join(checks)}",
                   "fix those rows in one of its regions")


def _permissions_summary(findings: Sequence[Finding]) -> list[Finding]:
    """One row naming every check the caller's policy refused, and the statements that grant them."""
    refused = [f for f in findings if f.denied]
    if not refused:
        return []
    actions = sorted({f.denied for f in refused})
    statements = sorted({sid for action in actions for sid in permissions.granting(action)})
    checks = ", ".join(sorted({f.check for f in refused}, key=lambda c: CHECK_ORDER.index(c)
                              if c in CHECK_ORDER else 99))
    return [Finding("IAM permissions", "", None, WARN, f"refused: {checks} ({', '.join(actions)})",
                    f"attach {permissions.POLICY_DOC} to the caller (statements "
                    f"{', '.join(statements) or 'none: it lacks them'})")]


# --- rendering -------------------------------------------------------------------------------------


@dataclass(slots=True)
class Row:
    check: str
    subject: str
    regions: list[str] = field(default_factory=list)
    status: str = OK
    detail: str = ""
    fix: str = ""


def rows(report: DoctorReport) -> list[Row]:
    """Findings merged into rows: one per check and outcome, its regions (then its rigs) listed together."""
    by_outcome: dict[tuple[str, str, str, str, str], Row] = {}
    for finding in report.findings:
        key = (finding.check, finding.subject, finding.status, finding.detail, finding.fix)
        row = by_outcome.setdefault(key, Row(finding.check, finding.subject, status=finding.status,
                                             detail=finding.detail, fix=finding.fix))
        if finding.region and finding.region not in row.regions:
            row.regions.append(finding.region)
    region_order = {name: index for index, name in enumerate(REGIONS)}
    subject_order = {name: index for index, name in enumerate(load_catalog().rigs)}
    merged: dict[tuple[str, str, str, str, tuple[str, ...]], Row] = {}
    for row in by_outcome.values():
        row.regions.sort(key=lambda r: region_order.get(r, 99))
        key = (row.check, row.status, row.detail, row.fix, tuple(row.regions))
        if key in merged and row.subject:
            merged[key].subject += f", {row.subject}"
        else:
            merged[key] = row
    for row in merged.values():
        if "{region}" in row.fix:
            row.fix = (row.fix.replace("{region}", row.regions[0]) if len(row.regions) == 1
                       else "in each region: " + row.fix.replace("{region}", "<region>"))
    order = {name: index for index, name in enumerate(CHECK_ORDER)}
    return sorted(merged.values(), key=lambda r: (order.get(r.check, 99),
                                                  subject_order.get(r.subject.split(",")[0], -1),
                                                  region_order.get(r.regions[0], -1) if r.regions else -1))


def render(report: DoctorReport) -> Any:
    """One rich Table: check, where, result, fix."""
    from rich.markup import escape
    from rich.table import Table

    who = f"account {report.account}" if report.account else "no account"
    table = Table(title=f"Doctor: {who}, {report.seconds:.1f} s (read-only)", header_style="bold",
                  show_lines=False)
    for column, ratio in (("Check", None), ("Rig", None), ("Where", None), ("Result", 3), ("Fix", 3)):
        table.add_column(column, overflow="fold", ratio=ratio)
    styles = {OK: "green", WARN: "yellow", FAIL: "red"}
    table.caption = ("FAIL stops the rig deploying in that region; warn does not. "
                     "all: every region the rig may use (its catalog regions).")
    for row in rows(report):
        names = row.subject.split(", ") if row.subject else list(report.rig_regions)
        every = {region for name in names for region in report.rig_regions.get(name, ())}
        where = ("all" if row.regions and len(row.regions) > 1 and set(row.regions) == every else
                 ", ".join(row.regions) if row.regions else ("local" if row.check in LOCAL_CHECKS else ""))
        status = f"[{styles[row.status]}]{row.status}[/]"
        table.add_row(escape(row.check), escape(row.subject), escape(where), f"{status} {escape(row.detail)}",
                      escape(row.fix))
    return table
