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
  endpoint lists the model (``GET /v1/models``, signed with the caller's credentials; ``AWS_BEDROCK_BASE_URL``
  names another endpoint; left out where AWS is a custom endpoint, such as moto's server offline, unless that
  variable names one). A warning only: the benchmark's ``bedrock-mantle`` backend fails there, no rig does.

A failure ``blocks`` the rigs it stops from deploying in its region. A rig *can deploy*
where nothing blocks it; the exit status is 0 when every rig named can deploy somewhere.

Each check is one entry of :data:`CHECKS` (its name, what it runs for, how); one runner starts them in
parallel (a bounded pool), gathers their findings in that order and reports. Calls have short timeouts
and bounded retries
(:data:`DOCTOR_CONFIG`); the first call (who am I?) uses :data:`rigs.aws.PROBE_CONFIG`, so a
machine that cannot reach AWS hears so in seconds.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from botocore.config import Config

from rigs import aws, local_tools

from rigs.account import permissions

from rigs.catalog import pins
from rigs.catalog.model import MAX_ROOT_VOLUME_GIB, BedrockBackend, Catalog, DeployableRig, Ec2Rig, SageMakerRig, \
    load_catalog
from rigs.account.preflight import EC2_QUOTAS, NOT_LISTED, OK as PREFLIGHT_OK, RegionCheck, quota_class
from rigs.account.preflight import check as preflight_check
from rigs.catalog.images import OWN_IMAGE_PREFIX, ecr_image
from rigs.catalog.pricing import PriceBook
from rigs.catalog.runtimes import BEDROCK_MANTLE, runtime
from rigs.contract import BOOTSTRAP_STACK, HF_TOKEN_SECRET, REGIONS
from rigs.placement.zones import choose_zones, offer_counts, usable_zones

OK, WARN, FAIL = "ok", "warn", "FAIL"

DOCTOR_CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": 3},
    connect_timeout=3,
    read_timeout=10,
)
"""Every call after the identity check: three tries, short timeouts (a check never waits minutes)."""
MAX_WORKERS = 16
"""Calls in flight at once: enough to overlap network latency, few enough not to be throttled."""

BOOTSTRAP_VERSION_PARAMETER = "/cdk-bootstrap/hnb659fds/version"
"""Where the default bootstrap (qualifier ``hnb659fds``, which ``cdk.json`` keeps) records its version."""
MIN_BOOTSTRAP_VERSION = 6
"""The synthesized templates' ``CheckBootstrapVersion`` rule refuses versions 1 to 5."""
BOOTSTRAP_NOT_IN_POLICY = f"bootstrapping makes IAM roles, which {permissions.POLICY_DOC} does not allow"
"""Why a user holding only the project's policy cannot bootstrap: the bootstrap stack makes IAM roles, an S3 bucket
and an ECR repository, rights the policy (kept to what the project itself calls) does not give; with administrator
credentials ``up --bootstrap`` and ``rehearse --bootstrap`` do it too."""

G5G_BUILD_QUOTA = "Concurrently running builds for ARM/XLarge environment"
"""The CodeBuild quota the g5g image build counts against, as AWS's naming of the other ARM build quotas
suggests: an ARM container on ``BUILD_GENERAL1_XLARGE`` (``stacks/parts/images/build.py``; a test keeps the
two in step). The exact name is not in public quota lists, so the doctor lists the ARM build quotas by
:data:`ARM_BUILD_QUOTAS` and takes the XLarge one among them (:data:`XLARGE`)."""
ARM_BUILD_QUOTAS = re.compile(r"^Concurrently running builds for (?!.*Lambda).*\bARM\b", re.IGNORECASE)
"""CodeBuild's quotas on concurrent ARM container builds (its ARM Lambda builds are another kind)."""
XLARGE = re.compile(r"\bXLarge\b", re.IGNORECASE)

NOT_SERVED_FIX = "none: not a permission; AWS serves this call, so the check runs against AWS"
"""The fix of a check whose call the endpoint does not serve (moto's server has no Free Tier API)."""

LOCAL_CHECKS = ("AWS CLI v2", "Session Manager plugin")
ACCOUNT_PLAN = "Account plan"
SKIPPABLE = {"account-plan": ACCOUNT_PLAN}
"""The checks ``up --doctor`` and ``rehearse`` pass by name (``--skip-check NAME``), as ``--bootstrap`` passes "CDK
bootstrap": the account plan, whose answer for some accounts is not published (a wrong FAIL there would block every
rig everywhere)."""

FREE_TIER_REGION = "us-east-1"
"""Where the Free Tier API answers for the account (``freetier``, a global service)."""


def ignored_checks(bootstrap: bool, skipped: Sequence[str] = ()) -> tuple[str, ...]:
    """The checks whose failures stop no rig: "CDK bootstrap" when ``up``/``rehearse`` bootstrap (``--bootstrap``),
    and the :data:`SKIPPABLE` ones named (``--skip-check``)."""
    return (("CDK bootstrap",) if bootstrap else ()) + tuple(SKIPPABLE[name] for name in skipped)


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


# --- the checks ------------------------------------------------------------------------------------


def check_local_tools(which: Callable[[str], str | None] | None = None) -> list[Finding]:
    """AWS CLI v2 and the Session Manager plugin: warnings, since only the agent's port forwards need them."""
    tools = local_tools.ssm_tools(which) if which else local_tools.ssm_tools()
    findings = []
    for tool in tools:
        if tool.ok:
            findings.append(Finding(tool.name, "", None, OK, tool.version or "installed"))
        else:
            findings.append(Finding(tool.name, "", None, WARN, tool.problem, tool.fix))
    return findings


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

    def rigs_in(self, region: str, kind: type | tuple[type, ...] = (Ec2Rig, SageMakerRig)) -> list[DeployableRig]:
        return [r for r in self.rigs if isinstance(r, kind) and region in r.regions]

    def names_in(self, region: str, kind: type | tuple[type, ...] = (Ec2Rig, SageMakerRig)) -> tuple[str, ...]:
        return tuple(r.name for r in self.rigs_in(region, kind))

    def regions(self) -> list[str]:
        """The regions any rig checked may use, in the project's order."""
        return [r for r in REGIONS if any(r in regions for regions in self.rig_regions.values())]

    def result(self, check: "Check", *subject: Any) -> Any:
        """What ``check`` gave for ``subject`` besides its findings (a check scheduled before: waits for it)."""
        return self.outcomes[(check.name, _key(subject))].result().given

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


def account_plan(scope: Scope) -> list[Finding]:
    """The Free Tier API's account plan: a Free-plan account launches only Free Tier instance types, so no rig.

    Only an answer that is certain blocks: ``FREE`` with credits left or an expiry date (a Free plan that is
    running). What the API answers for other accounts (those made before the plans, for one) is not
    published, so ``FREE`` without either is a warning with the fix, and ``up``/``rehearse`` can pass the row
    by name (``--skip-check account-plan``).
    """
    try:
        state = aws.call(scope.clients("freetier", FREE_TIER_REGION).get_account_plan_state, attempts=3)
    except Exception as exc:  # noqa: BLE001 - classified below
        if aws.error_code(exc) == "ResourceNotFoundException":
            return [Finding(ACCOUNT_PLAN, "", None, OK, "no Free Tier account plan (an account from before "
                            "the Free and Paid plans)")]
        if permissions.denied(exc) and not _names_an_iam_refusal(exc):
            return [_billing_access_off(exc)]
        return [_unknown(ACCOUNT_PLAN, "", None, exc, "freetier")]
    plan, status = state.get("accountPlanType", "?"), state.get("accountPlanStatus", "?")
    if plan != "FREE":
        return [Finding(ACCOUNT_PLAN, "", None, OK, f"{plan.title()} plan ({status.lower()})")]
    credits = state.get("accountPlanRemainingCredits") or {}
    expires = state.get("accountPlanExpirationDate")
    known = [f"{credits['amount']:g} {credits.get('unit', 'USD')} of credits left"] if "amount" in credits else []
    known += [f"ends {_day(expires)}"] if expires else []
    if not known:
        return [Finding(ACCOUNT_PLAN, "", None, WARN,
                        f"Free plan ({status.lower()}) without credits or an end date: not certain, so it blocks "
                        "nothing; on the Free plan launches fail with InvalidParameterCombination (not eligible for "
                        "Free Tier)", f"check the plan in the Billing and Cost Management console; if it is Free, "
                        f"{aws.FREE_PLAN_FIX}")]
    return [Finding(ACCOUNT_PLAN, "", None, FAIL,
                    f"Free plan ({status.lower()}, {', '.join(known)}): it launches only Free Tier instance types, "
                    "none of the rigs' (launches fail with InvalidParameterCombination: not eligible for Free Tier)",
                    f"{aws.FREE_PLAN_FIX}; if the account is on the Paid plan after all, `up --doctor` and "
                    "`rehearse` pass this row with `--skip-check account-plan`",
                    tuple(r.name for r in scope.rigs))]


def _day(value: Any) -> str:
    """A timestamp botocore parsed (a datetime) or left as text, as its UTC day."""
    return value.date().isoformat() if hasattr(value, "date") else str(value)[:10]


def _names_an_iam_refusal(exc: BaseException) -> bool:
    """Whether an access denial says the caller's IAM policy refused the action (``not authorized to perform``)."""
    message = str(getattr(exc, "response", {}).get("Error", {}).get("Message") or "")
    return "not authorized to perform" in message.lower()


def _billing_access_off(exc: BaseException) -> Finding:
    """A refusal of the Free Tier API that names no IAM action: as when the account's IAM access to billing
    information is off (then no IAM policy lets a user or role read the plan, and attaching one would not help)."""
    return Finding(ACCOUNT_PLAN, "", None, WARN,
                   f"not checked: {aws.describe_error(exc, 'freetier')} (a refusal naming no IAM action, as when IAM "
                   "access to billing information is off for the account)",
                   "the root user turns on 'IAM user and role access to Billing information' (the account menu, "
                   "Account); until then the plan is unknown, and this row blocks nothing")


def bootstrap(scope: Scope, region: str) -> list[Finding]:
    blocks = scope.names_in(region)
    fix = f"an administrator runs `./scripts/cdk bootstrap aws://{scope.account}/{{region}}`"
    cfn = scope.clients("cloudformation", region)
    try:
        stack = aws.call(cfn.describe_stacks, StackName=BOOTSTRAP_STACK, attempts=3)["Stacks"][0]
    except Exception as exc:  # noqa: BLE001 - classified below
        if aws.error_code(exc) == "ValidationError":
            return [Finding("CDK bootstrap", "", region, FAIL, f"not bootstrapped (no {BOOTSTRAP_STACK} stack): "
                            f"{BOOTSTRAP_NOT_IN_POLICY}", fix, blocks)]
        return [_unknown("CDK bootstrap", "", region, exc, "cloudformation")]
    status = stack.get("StackStatus", "?")
    if status.endswith(("FAILED", "ROLLBACK_COMPLETE")) or status.startswith("DELETE"):
        return [Finding("CDK bootstrap", "", region, FAIL, f"{BOOTSTRAP_STACK} is {status}",
                        f"delete the {BOOTSTRAP_STACK} stack in {{region}}, then {fix}", blocks)]
    try:
        value = aws.call(scope.clients("ssm", region).get_parameter, Name=BOOTSTRAP_VERSION_PARAMETER,
                         attempts=3)["Parameter"]["Value"]
        version = int(value)
    except Exception as exc:  # noqa: BLE001
        if aws.error_code(exc) == "ParameterNotFound":
            return [Finding("CDK bootstrap", "", region, FAIL, f"{BOOTSTRAP_STACK} {status} but no "
                            f"{BOOTSTRAP_VERSION_PARAMETER} parameter (a custom qualifier?)", fix, blocks)]
        return [_unknown("CDK bootstrap", "", region, exc, "ssm")]
    if version < MIN_BOOTSTRAP_VERSION:
        return [Finding("CDK bootstrap", "", region, FAIL, f"version {version}; the templates need "
                        f"{MIN_BOOTSTRAP_VERSION} or later", fix, blocks)]
    return [Finding("CDK bootstrap", "", region, OK, f"{BOOTSTRAP_STACK} {status}, version {version}")]

def zones(scope: Scope, region: str) -> Outcome:
    """The region's zones; gives the zones the base network gets, as its deploy-time custom resource
    chooses them (:mod:`rigs.placement.zones`, which that handler inlines)."""
    blocks = scope.names_in(region, Ec2Rig)
    if not blocks:
        return Outcome([], ())
    ec2 = scope.clients("ec2", region)
    types = sorted({rig.instance_type for rig in scope.catalog.ec2_rigs() if region in rig.regions})
    try:
        zones = aws.call(ec2.describe_availability_zones, attempts=3)["AvailabilityZones"]
        offers = aws.paginate(ec2, "describe_instance_type_offerings", "InstanceTypeOfferings",
                              LocationType="availability-zone",
                              Filters=[{"Name": "instance-type", "Values": types}])
    except Exception as exc:  # noqa: BLE001
        return Outcome([_unknown("Zones", "", region, exc, "ec2")], ())
    available = usable_zones(zones)
    impaired = sorted(z["ZoneName"] for z in zones if z.get("State") != "available")
    spec = scope.catalog.regions.get(region)
    network = choose_zones(offer_counts(zones, offers), spec.availability_zones if spec else len(available))
    if not network:
        return Outcome([Finding("Zones", "", region, FAIL,
                        f"no available zone offers any of {', '.join(types)} (available: "
                        f"{_short(available, region) or 'none'})",
                        "none here: `up` tries the rig's other regions", blocks)], network)
    detail = f"base network in {_short(sorted(set(network)), region)}"
    if impaired:
        detail += f"; not available: {_short(impaired, region)}"
    return Outcome([Finding("Zones", "", region, OK if not impaired else WARN, detail)], network)

def sagemaker_image(scope: Scope, rig: SageMakerRig, region: str) -> list[Finding]:
    """The digest the deploy will run in ``region``: the catalog's pin, checked in that region's registry, or
    (no pin) the one the image's tag points to there, which the stack reads at deploy time."""
    image = ecr_image(rig.image.reference(region))
    digest = rig.image.digest_for(region)
    if image is None:
        return [Finding("SageMaker image", rig.name, region, FAIL, f"{rig.image.repository} is not an ECR "
                        "repository", "fix the image in rigs/catalog.yaml", (rig.name,))]
    if not digest:
        return _unpinned_image(scope, rig, region)
    tag = image.ref.partition("@")[0].lstrip(":")
    fix = (f"pin this region's digest of the tag: `aws ecr describe-images --registry-id {image.account} "
           f"--repository-name {image.repository} --image-ids imageTag={tag} --region {{region}}`")
    try:
        found = aws.call(scope.clients("ecr", region).describe_images, registryId=image.account,
                         repositoryName=image.repository, imageIds=[{"imageDigest": digest}],
                         attempts=3)["imageDetails"]
    except Exception as exc:  # noqa: BLE001
        code = aws.error_code(exc)
        if code in ("ImageNotFoundException", "RepositoryNotFoundException"):
            what = "digest" if code == "ImageNotFoundException" else f"repository {image.repository}"
            return [Finding("SageMaker image", rig.name, region, FAIL,
                            f"the pinned {what} is not in {image.account}'s registry ({code})", fix,
                            (rig.name,))]
        return [_unknown("SageMaker image", rig.name, region, exc, "ecr")]
    tags = sorted({t for detail in found for t in detail.get("imageTags", [])})
    if tag not in tags:
        return [Finding("SageMaker image", rig.name, region, WARN,
                        f"{_short_digest(digest)} exists but is no longer tagged :{tag} "
                        f"(tags: {', '.join(tags) or 'none'})", fix)]
    return [Finding("SageMaker image", rig.name, region, OK, f"{_short_digest(digest)}: pinned, tagged here")]

def _unpinned_image(scope: Scope, rig: SageMakerRig, region: str) -> list[Finding]:
    found = pins.check_region(rig.name, rig.image, region, scope.clients("ecr", region))
    name = f"{rig.image.repository_in(region).rpartition('/')[2]}:{rig.image.tag}"
    if found.digest:
        return [Finding("SageMaker image", rig.name, region, OK,
                        f"{_short_digest(found.digest)}: the tag's digest here, read at deploy")]
    if found.missing:
        return [Finding("SageMaker image", rig.name, region, FAIL,
                        f"the tag {name} is not in this region's registry ({found.error}): the deploy would "
                        "fail here", "none here: `up` tries the rig's other regions", (rig.name,))]
    return [_refused(Finding("SageMaker image", rig.name, region, WARN, f"not checked: ecr DescribeImages failed: "
                             f"{found.error}", "rerun `python -m rigs doctor`; if it persists, check the "
                             "permissions for this call"), found.error, "ecr:DescribeImages")]

def hf_secret(scope: Scope, region: str) -> list[Finding]:
    needing = [r for r in scope.rigs_in(region, Ec2Rig) if getattr(r, "hf_token_required", False)]
    if not needing:
        return []
    names = tuple(r.name for r in needing)
    try:
        aws.call(scope.clients("secretsmanager", region).describe_secret, SecretId=HF_TOKEN_SECRET, attempts=3)
    except Exception as exc:  # noqa: BLE001
        if aws.error_code(exc) == "ResourceNotFoundException":
            return [Finding("HF token secret", ", ".join(names), region, FAIL,
                            f"{HF_TOKEN_SECRET} is missing; the model is gated on the Hugging Face Hub",
                            f"`aws secretsmanager create-secret --name {HF_TOKEN_SECRET} --secret-string "
                            "<token> --region {region}`", names)]
        return [_unknown("HF token secret", ", ".join(names), region, exc, "secretsmanager")]
    return [Finding("HF token secret", ", ".join(names), region, OK, f"{HF_TOKEN_SECRET} exists")]


def bedrock_model(scope: Scope, rig: BedrockBackend, region: str) -> list[Finding]:
    """Bedrock's OpenAI-compatible endpoint lists ``rig``'s model in ``region`` (``GET /v1/models``, signed as the
    benchmark signs its requests)."""

    def row(status: str, detail: str, fix: str = "rerun `python -m rigs doctor`", denied: str = "") -> list[Finding]:
        return [Finding("Bedrock model", "", region, status, f"{rig.name}: {detail}", fix, denied=denied)]

    given = os.environ.get(aws.MANTLE_BASE_URL_VAR, "").strip().rstrip("/")
    aws_at = scope.clients("sts", region).meta.endpoint_url
    if not given and not re.match(r"^https://[^/]*\.amazonaws\.com(/|$)", aws_at):
        return []  # AWS is a custom endpoint (moto's server offline), which has no Bedrock OpenAI-compatible one
    url = f"{given or aws.mantle_url(region)}/models"
    try:
        auth = aws.MantleAuth(region, credentials=scope.session.get_credentials())
        request = urllib.request.Request(url, headers=auth.headers("GET", url))
        with urllib.request.urlopen(request, timeout=DOCTOR_CONFIG.read_timeout) as reply:  # noqa: S310
            listed = {str(m.get("id")) for m in json.loads(reply.read()).get("data") or [] if isinstance(m, dict)}
    except urllib.error.HTTPError as exc:
        if exc.code in permissions.MANTLE_DENIED_STATUS:
            return row(WARN, f"not checked: GET {url} answered HTTP {exc.code}",
                       permissions.hint(permissions.MANTLE_INFERENCE), permissions.MANTLE_INFERENCE)
        return row(WARN, f"not checked: GET {url} answered HTTP {exc.code}")
    except (OSError, ValueError, AttributeError) as exc:
        return row(WARN, f"not checked: GET {url}: {type(exc).__name__}: {str(exc)[:120]}")
    if rig.model_id in listed:
        return row(OK, f"{rig.model_id} listed by its endpoint", "")
    return row(WARN, f"{rig.model_id} is not among the {len(listed)} models its endpoint lists here: the benchmark's "
               f"{rig.name} fails in this region", f"run the benchmark with --region one of {', '.join(rig.regions)} "
               "where it is listed")


def own_image(scope: Scope, rig: Ec2Rig, region: str) -> Outcome:
    """The g5g image in the account's ECR; gives whether it is built (None: unknown)."""
    fix = (f"`./scripts/cdk deploy {rig.stack_name}Image -c region.{rig.name}={{region}}`, then run its "
           "StartBuildCommand output (a build takes hours)")
    try:
        aws.call(scope.clients("ecr", region).describe_images, repositoryName=rig.image.repository,
                 imageIds=[{"imageTag": rig.image.tag}], attempts=3)
    except Exception as exc:  # noqa: BLE001
        code = aws.error_code(exc)
        if code == "RepositoryNotFoundException":
            return Outcome([Finding("g5g image", rig.name, region, FAIL, f"no ECR repository {rig.image.repository} "
                            f"(the {rig.stack_name}Image stack is not deployed here)", fix, (rig.name,))], False)
        if code == "ImageNotFoundException":
            return Outcome([Finding("g5g image", rig.name, region, FAIL,
                            f"{rig.image.repository}:{rig.image.tag} is not built yet", fix, (rig.name,))], False)
        return Outcome([_unknown("g5g image", rig.name, region, exc, "ecr")], None)
    return Outcome([Finding("g5g image", rig.name, region, OK, f"{rig.image.repository}:{rig.image.tag} built")], True)


def codebuild_quota(scope: Scope, rig: Ec2Rig, region: str) -> list[Finding]:
    """The CodeBuild quota the g5g image's build counts against: needed only while the image is not built."""
    built = scope.result(G5G_IMAGE, rig, region)
    try:
        quotas = aws.paginate(scope.clients("service-quotas", region), "list_service_quotas", "Quotas",
                              ServiceCode="codebuild")
    except Exception as exc:  # noqa: BLE001
        return [_unknown("CodeBuild quota", rig.name, region, exc, "service-quotas",
                         f"check {G5G_BUILD_QUOTA!r} in the Service Quotas console")]
    arm = sorted((q for q in quotas if ARM_BUILD_QUOTAS.search(q.get("QuotaName", ""))),
                 key=lambda q: q.get("QuotaName", ""))
    found = ", ".join(f"{_build_size(q)} {float(q.get('Value', 0)):g} ({q.get('QuotaCode', '?')})" for q in arm)
    match = next((q for q in arm if XLARGE.search(q.get("QuotaName", ""))), None)
    if match is None:
        return [Finding("CodeBuild quota", rig.name, region, WARN,
                        f"no ARM XLarge build quota listed here; ARM build quotas: {found or 'none'}",
                        f"check {G5G_BUILD_QUOTA!r} in the CodeBuild quotas of {{region}}")]
    code, value = match.get("QuotaCode", "?"), float(match.get("Value", 0))
    if value >= 1:
        return [Finding("CodeBuild quota", rig.name, region, OK, f"ARM XLarge builds at once: {value:g} ({code}); "
                        f"ARM build quotas: {found}")]
    needed = built is not True
    return [Finding("CodeBuild quota", rig.name, region, FAIL if needed else WARN,
                    f"{match.get('QuotaName')} is 0 ({code}): request an increase"
                    + ("" if needed else " (the image is built; only a rebuild needs it)"),
                    "`aws service-quotas request-service-quota-increase --service-code codebuild --quota-code "
                    f"{code} --desired-value 1 --region {{region}}`", (rig.name,) if needed else ())]


def ami(scope: Scope, rig: Ec2Rig, region: str) -> list[Finding]:
    """The rig's AMI parameter resolves, and the root volume it needs (each parameter read once a region)."""
    resolved = scope.once(("ami", rig.ami_ssm_parameter, region),
                          lambda: resolve_ami(scope.clients, rig.ami_ssm_parameter, region))
    return _ami_findings(rig, region, resolved)


def offerings_and_quotas(scope: Scope, region: str) -> Outcome:
    """Preflight's checks of the region's rigs (:mod:`rigs.account.preflight`: offerings, quotas), against the
    zones of the base network; gives those checks (the placement is recorded from them)."""
    checks = preflight_check(scope.rigs_in(region), scope.session, [region], PriceBook(None), scope.clients,
                             images=False)
    placed = [check for check in checks if check.in_catalog and check.region in scope.rig_regions.get(check.rig, ())]
    network = scope.result(ZONES, region) or None
    return Outcome([_preflight_findings(check, network if check.kind == "ec2" else None) for check in placed], placed)


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


def _account(_scope: Scope) -> list[tuple]:
    return [()]


def _regions(scope: Scope) -> list[tuple]:
    return [(region,) for region in scope.regions()]


def _rigs(kind: type, only: Callable[[Any], bool] = lambda rig: True) -> Callable[[Scope], list[tuple]]:
    """Each rig of ``kind`` (and ``only``) in each region it may use."""
    return lambda scope: [(rig, region) for rig in scope.rigs if isinstance(rig, kind) and only(rig)
                          for region in scope.rig_regions[rig.name]]


def _own_image(rig: Ec2Rig) -> bool:
    return rig.image.repository.startswith(OWN_IMAGE_PREFIX)


def _openai_endpoint_models(scope: Scope) -> list[tuple]:
    """The catalog's Bedrock OpenAI-compatible entry in each region checked that it lists."""
    return [(rig, region) for rig in scope.catalog.rigs.values() if runtime(rig.runtime) is BEDROCK_MANTLE
            for region in scope.regions() if region in rig.regions]


ZONES = Check("Zones", _regions, zones)
OFFERINGS = Check("Offerings and quotas", _regions, offerings_and_quotas, rows=("Type and quota", "Endpoint quota"))
G5G_IMAGE = Check("g5g image", _rigs(Ec2Rig, _own_image), own_image)
CHECKS = (
    Check(ACCOUNT_PLAN, _account, account_plan),
    Check("CDK bootstrap", _regions, bootstrap),
    ZONES,
    Check("AMI", _rigs(Ec2Rig), ami),
    OFFERINGS,
    Check("SageMaker image", _rigs(SageMakerRig), sagemaker_image),
    Check("HF token secret", _regions, hf_secret),
    G5G_IMAGE,
    Check("CodeBuild quota", _rigs(Ec2Rig, _own_image), codebuild_quota),
    Check("Bedrock model", _openai_endpoint_models, bedrock_model),
)
"""The doctor's AWS checks, in the order their findings are reported; a check that reads another's outcome
comes after it (the pool starts them in this order, so the one waited for is running or done)."""
CHECK_ORDER = (*LOCAL_CHECKS, "Credentials", *(row for check in CHECKS for row in check.rows or (check.name,)),
               "IAM permissions", "Can deploy")


def _build_size(quota: Mapping[str, Any]) -> str:
    """``Concurrently running builds for ARM/XLarge environment`` -> ``ARM/XLarge``."""
    name = str(quota.get("QuotaName", ""))
    return name.removeprefix("Concurrently running builds for ").removesuffix(" environment") or name


def _ami_findings(rig: Ec2Rig, region: str, resolved: tuple[str, int | None] | Exception) -> list[Finding]:
    """The rig's AMI in ``region``: the parameter resolves, and the root volume the deploy will size for it.

    The stacks size the root volume from the AMI at deploy time (``Custom::RootVolume``, the rule of
    :meth:`rigs.catalog.model.Ec2Rig.root_volume_gib_for`), so a snapshot larger than the catalog's floor is no
    failure: only one no gp3 volume could hold is.
    """
    fix_param = (f"use another AMI: `-c ami.{rig.name}=ami-...` (or change ami_ssm_parameter in rigs/catalog.yaml)")
    if isinstance(resolved, Exception):
        code = aws.error_code(resolved)
        if code in ("ParameterNotFound", "InvalidAMIID.NotFound", "InvalidAMIID.Malformed", "AmiNotFound"):
            what = (f"{rig.ami_ssm_parameter} does not resolve here" if code == "ParameterNotFound"
                    else f"the AMI {rig.ami_ssm_parameter} names is not available here ({code})")
            return [Finding("AMI", rig.name, region, FAIL, what, fix_param, (rig.name,))]
        return [_unknown("AMI", rig.name, region, resolved, "ssm/ec2")]
    ami, root_gib = resolved
    if root_gib is None:
        return [Finding("AMI", rig.name, region, WARN, f"{ami}: root snapshot size unknown",
                        "the deploy fails at once if the AMI has no EBS root volume")]
    volume = rig.root_volume_gib_for(root_gib)
    if volume > MAX_ROOT_VOLUME_GIB:
        return [Finding("AMI", rig.name, region, FAIL,
                        f"{ami}: root snapshot {root_gib} GiB + {rig.root_free_gib} GiB free needs a {volume} GiB "
                        f"root volume, more than a gp3 volume holds ({MAX_ROOT_VOLUME_GIB} GiB)", fix_param,
                        (rig.name,))]
    sized = (f"the floor; snapshot {root_gib} GiB" if volume == rig.root_volume_gib
             else f"snapshot {root_gib} + {rig.root_free_gib} GiB free")
    return [Finding("AMI", rig.name, region, OK, f"root volume {volume} GiB ({sized})")]


def resolve_ami(clients: aws.Clients, parameter: str, region: str) -> tuple[str, int | None] | Exception:
    """(AMI id, root snapshot GiB) for an SSM AMI parameter, or the exception that stopped it."""
    try:
        ami = aws.call(clients("ssm", region).get_parameter, Name=parameter, attempts=3)["Parameter"]["Value"]
        images = aws.call(clients("ec2", region).describe_images, ImageIds=[ami], attempts=3)["Images"]
    except Exception as exc:  # noqa: BLE001 - the caller turns it into a finding
        return exc
    if not images:
        return _client_error("AmiNotFound", f"{ami} not found")
    image = images[0]
    root = image.get("RootDeviceName")
    for mapping in image.get("BlockDeviceMappings", []):
        if mapping.get("DeviceName") == root and "Ebs" in mapping:
            size = mapping["Ebs"].get("VolumeSize")
            return ami, int(size) if size is not None else None
    return ami, None


def _preflight_findings(check: RegionCheck, network: tuple[str, ...] | None) -> Finding:
    """Offerings and quotas of one rig in one region, from :mod:`rigs.account.preflight`."""
    rig, region = check.rig, check.region
    if check.kind == "sagemaker":
        quota = check.endpoint_quota
        free = quota is not None and quota.known and quota.value and (quota.used is None or quota.value - quota.used >= 1)
        if free:  # the quota row speaks of the quota only (an unpinned image is the SageMaker image row)
            used = f", {quota.used:g} in use" if quota.used else ""
            return Finding("Endpoint quota", rig, region, OK,
                           f"{check.instance_type}: {quota.value:g} instance(s){used} ({quota.code})")
        if check.verdict == PREFLIGHT_OK:
            return _refused(Finding("Endpoint quota", rig, region, WARN,
                                    f"{check.instance_type}: not readable ({_why(quota)})",
                                    f"check '{check.instance_type} for endpoint usage' in Service Quotas"),
                            _why(quota), "servicequotas:ListServiceQuotas")
        code = quota.code if quota and quota.code else ""
        fix = ("`aws service-quotas request-service-quota-increase --service-code sagemaker --quota-code "
               f"{code} --desired-value 1 --region {{region}}`" if code and quota and quota.value == 0 else
               "none here: `up` tries the rig's other regions" if not code else
               "delete an endpoint that holds one, or request an increase")
        return Finding("Endpoint quota", rig, region, FAIL, check.reason, fix, (rig,))
    check_name = "Type and quota"
    if not check.zones:
        if check.reason.startswith("offerings unknown"):
            return _refused(Finding(check_name, rig, region, WARN, check.reason, "run `python -m rigs doctor` again"),
                            check.reason.removeprefix("offerings unknown (").rstrip(")"),
                            "ec2:DescribeInstanceTypeOfferings")
        return Finding(check_name, rig, region, FAIL, f"{check.instance_type} is offered in no zone",
                       "none here: `up` tries the rig's other regions", (rig,))
    if network is not None and not set(check.zones) & set(network):
        return Finding(check_name, rig, region, FAIL,
                       f"offered only in {_short(check.zones, region)}, outside the base network's zones "
                       f"({_short(sorted(set(network)), region)})", "deploy the base network over more zones "
                       "(`-c az_count.{region}=N`) or name them (`-c zones.{region}=a,b`)", (rig,))
    codes = EC2_QUOTAS.get(quota_class(check.instance_type), {})
    od_code = codes.get("on-demand", ("?", ""))[0]
    od, spot, needs = check.on_demand, check.spot, check.vcpus or 0
    spot_text = f"; spot {spot.short()} ({spot.code})" if spot is not None and spot.known else ""
    if check.verdict not in (PREFLIGHT_OK, NOT_LISTED):
        desired = needs + int(od.used or 0) if od is not None and od.known else needs
        return Finding(check_name, rig, region, FAIL, f"offered; {check.reason}{spot_text}",
                       f"`aws service-quotas request-service-quota-increase --service-code ec2 --quota-code {od_code} "
                       f"--desired-value {max(desired, needs)} --region {{region}}`", (rig,))
    if od is None or not od.known:
        return _refused(Finding(check_name, rig, region, WARN,
                                f"offered; on-demand quota not readable ({_why(od)}), needs {needs} vCPU{spot_text}",
                                f"check {od_code} in Service Quotas"), _why(od), "servicequotas:GetServiceQuota")
    used = f", {od.used:g} in use" if od.used else ""
    return Finding(check_name, rig, region, OK,
                   f"offered; on-demand {od.value:g} vCPU{used} ({od_code}), needs {needs}{spot_text}")


def _why(quota: Any) -> str:
    reason = (getattr(quota, "unknown_reason", "") or "unknown").removeprefix("Service Quotas: ")
    return f"HTTP {reason}" if reason.isdigit() else reason


def _unknown(check: str, subject: str, region: str | None, exc: BaseException, service: str,
             fix: str = "") -> Finding:
    """A check that could not be made: a warning with the call and a readable reason."""
    failure = aws.classify(exc)
    if failure.kind == aws.CREDENTIALS:
        raise aws.CredentialsError(failure.code) from None
    if failure.kind == aws.NOT_SERVED:
        call = " ".join(part for part in (service, getattr(exc, "operation_name", None)) if part)
        return Finding(check, subject, region, WARN, f"not available here: this endpoint does not serve {call} "
                       f"(HTTP {failure.code})", fix or NOT_SERVED_FIX)
    refused = permissions.refused_action(service, exc)
    if refused:
        return Finding(check, subject, region, WARN, f"not checked: {aws.describe_error(exc, service)}",
                       permissions.hint(refused), denied=refused)
    return Finding(check, subject, region, WARN, f"not checked: {aws.describe_error(exc, service)}",
                   fix or "rerun `python -m rigs doctor`; if it persists, check the permissions for this call")


def _refused(finding: Finding, code: str | None, wanted: str) -> Finding:
    """``finding`` saying which statement grants ``wanted`` when ``code`` is a refusal of the caller's policy."""
    if code not in permissions.ACCESS_DENIED_CODES:
        return finding
    return Finding(finding.check, finding.subject, finding.region, finding.status, finding.detail,
                   permissions.hint(wanted), finding.blocks, denied=wanted)


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


def _client_error(code: str, message: str) -> Exception:
    import botocore.exceptions

    return botocore.exceptions.ClientError({"Error": {"Code": code, "Message": message}}, "DescribeImages")


def _short(zones: Iterable[str], region: str) -> str:
    """``us-east-2a, us-east-2b`` -> ``a, b`` (the region is in the row)."""
    return ", ".join(z[len(region):] if z.startswith(region) else z for z in zones)


def _short_digest(digest: str) -> str:
    return digest[:19] + "…"


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
        tools = tools_pool.submit(check_local_tools, which) if any(isinstance(r, Ec2Rig) for r in rigs) else None
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
    placed = [check for outcome in _outcomes(scope, OFFERINGS) for check in outcome.given]
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
                scope.outcomes[(check.name, _key(subject))] = pool.submit(_outcome, check, scope, subject)
        return [finding for future in scope.outcomes.values() for finding in future.result().findings]


def _outcome(check: Check, scope: Scope, subject: tuple) -> Outcome:
    found = check.run(scope, *subject)
    return found if isinstance(found, Outcome) else Outcome(found)


def _key(subject: tuple) -> tuple:
    """A subject as a key: a rig by its name."""
    return tuple(getattr(part, "name", part) for part in subject)


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
