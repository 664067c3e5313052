"""AWS sessions, the credential check, retries and error classification.

Every AWS call of the library (and of the agent) goes through a session made here, from
the standard SDK configuration: ``AWS_PROFILE``/``--profile``, the region, and
``AWS_ENDPOINT_URL`` (so the whole library runs against moto's server exactly as against
AWS). The region is read the way the CDK CLI reads it: ``AWS_REGION`` first, then
``AWS_DEFAULT_REGION`` (boto3 alone reads only the second), then the profile's. Nothing
here exits the process: problems are raised as typed exceptions that the commands turn
into one line and one exit code, the same in ``python -m rigs``, ``python -m agent.run``
and ``./scripts/cdk`` (:func:`rigs.aws.outcome`).

Errors are classified by their **error code**, never by free text:

- ``capacity``: AWS has no capacity for the type right now (``InsufficientInstanceCapacity``);
  trying another zone or region may work.
- ``unsupported``: the type is not offered where it was asked for (``Unsupported``,
  ``InvalidParameterValue`` naming an unoffered type). Never a capacity failure.
- ``quota``: an account limit (``VcpuLimitExceeded``, ``ResourceLimitExceeded``,
  ``InstanceLimitExceeded``, ...). A quota of 0 is reported as such.
- ``throttled``: the API asked us to slow down; retried with backoff, never fatal at the
  first try.
- ``credentials``: no credentials, or an expired session.
- ``unreachable``: no answer from the endpoint at all (offline, DNS, a proxy, a misspelt
  region); :func:`unreachable_error` names the endpoint and the likely cause.
- ``free-plan``: the account is on AWS's Free plan, which launches only Free Tier instance
  types (``InvalidParameterCombination`` whose message says ``not eligible for Free Tier``: the
  code alone covers many other mistakes, so AWS's message tells this one apart); no region
  fixes it, upgrading the account to the Paid plan does (:data:`FREE_PLAN_FIX`).
- ``not-here``: what the rig needs is not published in this region (the SageMaker image's tag
  missing from the region's registry, as the stack's ``Custom::ImageDigest`` reports it with
  ``ImageNotFoundException``); another region may have it.
- ``not-served``: the endpoint answered, but not as an AWS API does: no error code, only an HTTP status
  and an HTML page (what a local emulator answers for a service it does not implement, e.g. moto's
  server for the Free Tier API); nothing the caller's permissions would change.
- ``other``: anything else.

Failures that arrive asynchronously (an Auto Scaling activity, a CloudFormation event, a
SageMaker ``FailureReason``) carry the code inside their message; :func:`code_in_message`
finds it as a whole token from the known list, so the decision is still made on the code.
"""

from __future__ import annotations

import difflib
import hashlib
import html
import urllib.parse
import os
import random
import re
import socket
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, TypeVar

import botocore.exceptions
import botocore.session
from botocore.config import Config

from kit.command import EXIT_CREDENTIALS, EXIT_FAILED, EXIT_UNREACHABLE, EXIT_USAGE, Outcome, UsageError

if TYPE_CHECKING:  # boto3 is imported where a session is made: `--help` and offline paths never load it
    import boto3

T = TypeVar("T")

LOGIN_HINT = ("run `aws configure` or `aws sso login` (or `aws login`), or set AWS_PROFILE to a profile "
              "with credentials")

NO_CREDENTIALS = "no credentials found"

CAPACITY = "capacity"
UNSUPPORTED = "unsupported"
QUOTA = "quota"
THROTTLED = "throttled"
CREDENTIALS = "credentials"
UNREACHABLE = "unreachable"
NOT_FOUND = "not-found"
FREE_PLAN = "free-plan"
NOT_HERE = "not-here"
NOT_SERVED = "not-served"
OTHER = "other"

FREE_PLAN_FIX = ("upgrade the account to the Paid plan (the Free plan launches only Free Tier instance types): in the "
                 "Billing and Cost Management console, or `aws freetier upgrade-account-plan --account-plan-type PAID`")
"""What a Free-plan account must do before any rig can launch."""

CAPACITY_CODES = frozenset({
    "InsufficientInstanceCapacity",
    "InsufficientCapacity",
    "InsufficientHostCapacity",
    "InsufficientReservedInstanceCapacity",
    "InsufficientCapacityOnHost",
    "SpotMaxPriceTooLow",
    "InsufficientInstanceCapacityException",
    "CapacityError",
    "EC2InsufficientCapacityError",
})
UNSUPPORTED_CODES = frozenset({
    "Unsupported",
    "UnsupportedOperation",
    "UnsupportedInstanceType",
    "InvalidInstanceType",
})
QUOTA_CODES = frozenset({
    "VcpuLimitExceeded",
    "InstanceLimitExceeded",
    "ResourceLimitExceeded",
    "MaxSpotInstanceCountExceeded",
    "LimitExceeded",
    "LimitExceededException",
    "ServiceQuotaExceededException",
    "ServiceLimitExceeded",
})
THROTTLE_CODES = frozenset({
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "TooManyRequestsException",
    "RequestLimitExceeded",
    "RequestThrottled",
    "RequestThrottledException",
    "SlowDown",
    "EC2ThrottledException",
    "ProvisionedThroughputExceededException",
})
CREDENTIAL_CODES = frozenset({
    "ExpiredToken",
    "ExpiredTokenException",
    "InvalidClientTokenId",
    "UnrecognizedClientException",
    "AuthFailure",
    "InvalidSignatureException",
    "SignatureDoesNotMatch",
    "RequestExpired",
})
NOT_FOUND_CODES = frozenset({
    "NoSuchEntity",
    "NoSuchResourceException",
    "ResourceNotFound",
    "ResourceNotFoundException",
    "InvalidInstanceID.NotFound",
    "InvalidVolume.NotFound",
    "InvalidLaunchTemplateId.NotFound",
    "InvalidLaunchTemplateName.NotFoundException",
    "RepositoryNotFoundException",
    "ImageNotFoundException",
})

_KNOWN_IN_MESSAGES = sorted(CAPACITY_CODES | UNSUPPORTED_CODES | QUOTA_CODES, key=len, reverse=True)
_CODE_TOKEN = re.compile(r"\b(" + "|".join(re.escape(c) for c in _KNOWN_IN_MESSAGES) + r")\b")
_LAUNCH_FAILURE = re.compile(r"\blaunch failed in \S+: ([A-Za-z][A-Za-z0-9]*(?:\.[A-Za-z0-9]+)*): ")
"""The rig stacks' launch watch reports ``launch failed in <zone>: <Code>: <message>``
(``stacks/parts/handlers/launch_watch.py``): any code there is the launch's own."""
_FREE_TIER = re.compile(r"\bnot eligible for Free Tier\b")
"""EC2's message for a launch a Free-plan account may not make (``InvalidParameterCombination``)."""
_NOT_IN_REGISTRY = re.compile(r"\b(ImageNotFoundException|RepositoryNotFoundException|ImageNotFound): \S+ is not in "
                              r"[a-z0-9-]+'s registry")
"""``Custom::ImageDigest``'s failure for a tag the stack's region does not publish (``image_digest.py``)."""


class RigsError(Exception):
    """Base of the library's errors; the CLI prints ``str(error)`` as one line."""


class CredentialsError(RigsError):
    """No usable AWS credentials: missing, expired or rejected. ``cause`` and ``fix`` make the one line."""

    def __init__(self, detail: str, cause: str | None = None, fix: str = LOGIN_HINT) -> None:
        self.detail = detail
        self.cause = cause or ("no AWS credentials found" if detail in (NO_CREDENTIALS, "NoCredentials")
                               else f"AWS rejected the credentials ({detail})")
        self.fix = fix
        super().__init__(f"{self.cause}: {self.fix}")


class ProfileNotFoundError(CredentialsError):
    """The AWS profile asked for (``--profile`` or ``AWS_PROFILE``) is not configured."""

    def __init__(self, profile: str, source: str) -> None:
        self.profile = profile
        unset = "unset AWS_PROFILE" if source == "AWS_PROFILE" else f"leave out {source}"
        super().__init__("ProfileNotFound", f"AWS profile {profile!r} (from {source}) is not in the AWS config files",
                         f"pick one from `aws configure list-profiles`, or {unset} to use the default credentials")


class UnreachableError(RigsError):
    """AWS (or the configured endpoint) did not answer at all; the message names the endpoint and the likely cause."""

    def __init__(self, endpoint: str, cause: str) -> None:
        self.endpoint = endpoint
        self.cause = cause
        self.fix = "fix the connection (or the region), then run the command again"
        super().__init__(f"cannot reach AWS at {endpoint}: {cause}")


@dataclass(frozen=True, slots=True)
class AwsFailure:
    """One classified AWS error: its code, its class and AWS's message."""

    code: str
    kind: str
    message: str

    def __str__(self) -> str:
        return f"{self.code}: {self.message}" if self.message else self.code


def classify_code(code: str | None) -> str:
    """The class of an AWS error code (see the module docstring)."""
    if not code:
        return OTHER
    if code in CAPACITY_CODES:
        return CAPACITY
    if code in UNSUPPORTED_CODES:
        return UNSUPPORTED
    if code in QUOTA_CODES:
        return QUOTA
    if code in THROTTLE_CODES:
        return THROTTLED
    if code in CREDENTIAL_CODES:
        return CREDENTIALS
    if code in NOT_FOUND_CODES or code.endswith(".NotFound") or code.endswith("NotFoundException"):
        return NOT_FOUND
    return OTHER


def error_code(exc: BaseException) -> str | None:
    """The AWS error code of a botocore ClientError, else None."""
    if isinstance(exc, botocore.exceptions.ClientError):
        return exc.response.get("Error", {}).get("Code")
    return None


def classify(exc: BaseException) -> AwsFailure:
    """Classify an exception raised by a boto3 call."""
    if isinstance(exc, (botocore.exceptions.NoCredentialsError, botocore.exceptions.PartialCredentialsError)):
        return AwsFailure("NoCredentials", CREDENTIALS, str(exc))
    if isinstance(exc, botocore.exceptions.TokenRetrievalError) or type(exc).__name__ in {
            "SSOTokenLoadError", "UnauthorizedSSOTokenError", "TokenRetrievalError"}:
        return AwsFailure("ExpiredToken", CREDENTIALS, str(exc))
    if isinstance(exc, botocore.exceptions.ProfileNotFound):
        return AwsFailure("ProfileNotFound", CREDENTIALS, str(exc))
    if isinstance(exc, (botocore.exceptions.CredentialRetrievalError, botocore.exceptions.NoAuthTokenError)):
        return AwsFailure("CredentialRetrieval", CREDENTIALS, str(exc))
    if isinstance(exc, botocore.exceptions.ClientError):
        err = exc.response.get("Error", {})
        code = err.get("Code") or str(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))
        message = err.get("Message", "")
        kind = FREE_PLAN if _FREE_TIER.search(message or "") else classify_code(code)
        if code.isdigit() and html_page(message):
            kind = NOT_SERVED
        return AwsFailure(code, kind, readable(message))
    if isinstance(exc, botocore.exceptions.WaiterError):
        reason = getattr(exc, "last_response", {}) or {}
        code = reason.get("Error", {}).get("Code") if isinstance(reason, dict) else None
        return AwsFailure(code or "WaiterError", classify_code(code), str(exc))
    if isinstance(exc, (botocore.exceptions.ConnectionError, botocore.exceptions.HTTPClientError)):
        return AwsFailure(type(exc).__name__, UNREACHABLE, str(exc))
    if isinstance(exc, CredentialsError):
        return AwsFailure(exc.detail, CREDENTIALS, str(exc))
    return AwsFailure(type(exc).__name__, OTHER, str(exc))


def code_in_message(message: str | None) -> str | None:
    """The first known capacity/unsupported/quota error code named in an asynchronous failure message.

    Auto Scaling activities, CloudFormation events and SageMaker failure reasons report the
    failed call's code inside their text (e.g. ``... InsufficientInstanceCapacity error``).
    Only whole known codes count; loose phrases such as "no capacity" never do.
    """
    if not message:
        return None
    match = _CODE_TOKEN.search(message)
    return match.group(1) if match else None


def classify_message(message: str | None) -> AwsFailure:
    """The failure an asynchronous message reports: its code, and its class (see the module docstring)."""
    text = (message or "").strip()
    launch = _LAUNCH_FAILURE.search(text)
    missing = _NOT_IN_REGISTRY.search(text)
    code = (launch.group(1) if launch else None) or (missing.group(1) if missing else None) or code_in_message(text)
    if _FREE_TIER.search(text):
        return AwsFailure(code or "InvalidParameterCombination", FREE_PLAN, text)
    if missing:
        return AwsFailure(code or missing.group(1), NOT_HERE, text)
    return AwsFailure(code or "Unknown", classify_code(code), text)


_TAG = re.compile(r"<[^>]+>")
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
MESSAGE_LIMIT = 300


def html_page(message: str | None) -> bool:
    """Whether an error's message is an HTML page (a proxy's, a captive portal's, an emulator's), not AWS's words."""
    text = (message or "").strip().lower()
    return text.startswith(("<!doctype html", "<html")) or "</html>" in text


def readable(message: str | None) -> str:
    """An error message fit for one line: an HTML error page becomes its title, long text is cut.

    Some endpoints (a proxy, a captive portal, a local emulator's unimplemented call) answer
    with an HTML page that botocore puts in the error message whole.
    """
    text = (message or "").strip()
    if html_page(text):
        title = _TITLE.search(text)
        body = title.group(1) if title else _TAG.sub(" ", text)
        text = f"an HTML page: {' '.join(html.unescape(body).split())}"
    text = " ".join(text.split())
    return text if len(text) <= MESSAGE_LIMIT else text[:MESSAGE_LIMIT - 1] + "…"


def describe_error(exc: BaseException, service: str | None = None) -> str:
    """One readable line for a failed call: the call's name (``cloudformation DescribeStacks``) and why."""
    failure = classify(exc)
    if failure.kind == UNREACHABLE:
        return str(unreachable_error(exc))
    reason = str(failure) if failure.message else failure.code
    if failure.code.isdigit():
        reason = f"HTTP {reason}"
    call = " ".join(part for part in (service, getattr(exc, "operation_name", None)) if part)
    return f"{call} failed: {reason}" if call else reason


def _chain(exc: BaseException | None) -> list[BaseException]:
    """The exception, what it wraps (botocore's ``error``) and its causes, outermost first."""
    seen: list[BaseException] = []
    while exc is not None and exc not in seen and len(seen) < 10:
        seen.append(exc)
        inner = getattr(exc, "kwargs", {}).get("error") if isinstance(getattr(exc, "kwargs", None), dict) else None
        exc = inner if isinstance(inner, BaseException) else (exc.__cause__ or exc.__context__)
    return seen


def known_regions() -> list[str]:
    """Every region botocore knows (from its bundled endpoint data; no network)."""
    session = botocore.session.get_session()
    return sorted({region for partition in session.get_available_partitions()
                   for region in session.get_available_regions("ec2", partition)})


def region_hint(region: str | None) -> str:
    """``'us-est-1' is not an AWS region (did you mean us-east-1?)``, or "" for a known region."""
    if not region:
        return ""
    regions = known_regions()
    if region in regions:
        return ""
    close = sorted(difflib.get_close_matches(region, regions, n=2))
    return f"{region!r} is not an AWS region" + (f" (did you mean {' or '.join(close)}?)" if close else "")


def unreachable_error(exc: BaseException, region: str | None = None, endpoint: str | None = None) -> UnreachableError:
    """The endpoint a call could not reach (``endpoint`` when the error does not say) and the likely cause."""
    kwargs = getattr(exc, "kwargs", {}) if isinstance(getattr(exc, "kwargs", None), dict) else {}
    endpoint = str(kwargs.get("endpoint_url") or endpoint or endpoint_url() or "the AWS endpoint").rstrip("/")
    region = region or _region_of(endpoint)
    custom = endpoint_url()
    chain = _chain(exc)
    names = {type(e).__name__ for e in chain}
    if isinstance(exc, botocore.exceptions.ProxyConnectionError):
        proxy = kwargs.get("proxy_url") or os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy") or "?"
        cause = f"the proxy {proxy} did not answer: check HTTPS_PROXY (or HTTP_PROXY) and that the proxy is up"
    elif isinstance(exc, botocore.exceptions.SSLError):
        cause = "TLS verification failed: a proxy that inspects TLS needs its certificate in AWS_CA_BUNDLE"
    elif any(isinstance(e, socket.gaierror) for e in chain) or "NameResolutionError" in names:
        hint = "" if custom else region_hint(region)
        cause = "the name did not resolve: " + (hint or (
            "check AWS_ENDPOINT_URL" if custom else "offline, or DNS is failing (a proxy may be needed: HTTPS_PROXY)"))
    elif any(isinstance(e, ConnectionRefusedError) for e in chain):
        cause = "connection refused: nothing listens there" + (" (check AWS_ENDPOINT_URL)" if custom else
                                                                 " (a firewall, or a proxy is needed: HTTPS_PROXY)")
    elif isinstance(exc, botocore.exceptions.ConnectTimeoutError):
        cause = "no answer to connect: offline, a firewall, or a proxy is needed (HTTPS_PROXY)"
    elif isinstance(exc, botocore.exceptions.ReadTimeoutError):
        cause = "connected, but no answer in time: a firewall or proxy is holding the connection"
    else:
        cause = f"{type(exc).__name__}: offline, DNS, or a proxy problem"
    return UnreachableError(endpoint, cause)


def _region_of(url: str) -> str | None:
    """``https://sts.us-east-7.amazonaws.com/`` -> ``us-east-7``."""
    match = re.match(r"^https?://[a-z0-9-]+\.([a-z0-9-]+)\.amazonaws\.com", url)
    return match.group(1) if match else None


# --- sessions ---------------------------------------------------------------------

RETRY_CONFIG = Config(
    retries={"mode": "adaptive", "max_attempts": 3},
    connect_timeout=10,
    read_timeout=60,
)
"""Adaptive client-side rate limiting and two botocore retries.

Throttling gets more patience from :func:`call` (six rounds of jittered exponential
backoff); other server errors stay bounded, so an endpoint that does not implement an
optional API (moto's server answers 500 for Pricing) costs seconds, not minutes.
"""


PROBE_CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": 2},
    connect_timeout=3,
    read_timeout=4,
)
"""The first call of every command (``sts get_caller_identity``): two tries with short timeouts.

A machine that cannot reach AWS hears so within about 15 s even when every packet is
dropped (2 x (3 s connect + 4 s read) plus one short backoff), not after minutes of retries.
"""


def region_from_env(env: Mapping[str, str] | None = None) -> str | None:
    """The region the environment names, read as the CDK CLI reads it: ``AWS_REGION``, then ``AWS_DEFAULT_REGION``."""
    env = os.environ if env is None else env
    return env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None


def _profile_source(profile: str | None) -> tuple[str, str]:
    if profile:
        return profile, "--profile"
    for variable in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
        if os.environ.get(variable):
            return os.environ[variable], variable
    return "default", "the AWS config"


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A custom endpoint with the credentials it takes (moto's server in an offline rehearsal), passed down to
    what calls AWS: the sessions made here (:func:`make_session`) and, as :meth:`environment`, the commands run
    (the CDK CLI, the agent). Never put into this process's environment."""

    url: str
    region: str = "us-east-1"
    credentials: tuple[str, str, str] = ("testing", "testing", "testing")
    """Access key id, secret access key and session token."""

    def environment(self) -> dict[str, str]:
        """The variables a command run against this endpoint gets (added to, and replacing, the caller's)."""
        key, secret, token = self.credentials
        return {"AWS_ENDPOINT_URL": self.url, "AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret,
                "AWS_SESSION_TOKEN": token, "AWS_REGION": self.region, "AWS_DEFAULT_REGION": self.region,
                "AWS_EC2_METADATA_DISABLED": "true"}


def _endpoint_session(endpoint: Endpoint, region: str | None) -> boto3.Session:
    """A session whose every client calls ``endpoint`` with its credentials, whatever the environment says."""
    import boto3

    class EndpointSession(boto3.Session):
        def client(self, *args: Any, **kwargs: Any) -> Any:
            kwargs.setdefault("endpoint_url", endpoint.url)
            return super().client(*args, **kwargs)

        def resource(self, *args: Any, **kwargs: Any) -> Any:
            kwargs.setdefault("endpoint_url", endpoint.url)
            return super().resource(*args, **kwargs)

    core = botocore.session.Session()
    core.get_component("config_store").set_config_variable("profile", None)  # AWS_PROFILE is not read
    key, secret, token = endpoint.credentials
    return EndpointSession(aws_access_key_id=key, aws_secret_access_key=secret, aws_session_token=token,
                           region_name=region or endpoint.region, botocore_session=core)


def make_session(profile: str | None = None, region: str | None = None,
                 endpoint: Endpoint | None = None) -> boto3.Session:
    """A boto3 session from the standard configuration; ``profile``/``region`` override it.

    The region is ``region``, else ``AWS_REGION``, else ``AWS_DEFAULT_REGION``, else the
    profile's. ``AWS_ENDPOINT_URL`` (and the per-service ``AWS_ENDPOINT_URL_<SERVICE>``) is
    honoured by botocore itself for every client made from this session. With ``endpoint``, every
    client calls it with its credentials instead (the profile is not read).

    Raises:
        ProfileNotFoundError: the profile asked for does not exist (the message names it and where it came from).
    """
    import boto3

    if endpoint is not None:
        return _endpoint_session(endpoint, region)
    try:
        return boto3.Session(profile_name=profile or None, region_name=region or region_from_env())
    except botocore.exceptions.ProfileNotFound:
        raise ProfileNotFoundError(*_profile_source(profile)) from None


def client(session: boto3.Session, service: str, region: str | None = None, config: Config = RETRY_CONFIG) -> Any:
    """A client with the library's retry configuration."""
    return session.client(service, region_name=region, config=config)


def caller_identity(session: boto3.Session, region: str | None = None) -> dict[str, str]:
    """``sts get_caller_identity`` with short timeouts: the credential and reachability check of every command.

    Raises:
        CredentialsError: no credentials, or AWS refused them (expired, invalid); one line says how to log in.
        UnreachableError: no answer from the endpoint; one line names it and the likely cause.
    """
    region = region or session.region_name or "us-east-1"
    sts = None
    try:
        if session.get_credentials() is None:
            raise CredentialsError(NO_CREDENTIALS)
        sts = client(session, "sts", region, PROBE_CONFIG)
        return call(sts.get_caller_identity)
    except CredentialsError:
        raise
    except botocore.exceptions.ProfileNotFound as exc:
        raise ProfileNotFoundError(str(getattr(exc, "kwargs", {}).get("profile", "?")), "a source_profile") from None
    except botocore.exceptions.InvalidRegionError:
        raise RigsError(f"{region!r} is not a region name ({region_hint(region) or 'check AWS_REGION'}); "
                        "set AWS_REGION to one of us-east-1, us-east-2, us-west-1, us-west-2") from None
    except Exception as exc:  # noqa: BLE001 - classified below
        failure = classify(exc)
        if failure.kind == CREDENTIALS:
            raise CredentialsError(failure.code, None if failure.code == "NoCredentials" else
                                   f"AWS rejected the credentials ({failure})") from None
        if failure.kind == UNREACHABLE:
            raise unreachable_error(exc, region, sts.meta.endpoint_url if sts is not None else None) from None
        raise


def check_credentials(session: boto3.Session, region: str | None = None) -> str:
    """Fail fast with one clear line when credentials are missing or expired, or AWS cannot be reached.

    Returns the account id. Raises CredentialsError or UnreachableError; any other error is re-raised.
    """
    return caller_identity(session, region)["Account"]


def endpoint_url() -> str | None:
    """The custom endpoint in use (moto's server in tests), if any."""
    return os.environ.get("AWS_ENDPOINT_URL") or None


# --- retries ------------------------------------------------------------------------


def call(fn: Callable[..., T], *args: Any, attempts: int = 6, base_delay: float = 0.5,
         sleep: Callable[[float], None] = time.sleep, **kwargs: Any) -> T:
    """Call a boto3 operation, retrying throttling codes with jittered exponential backoff.

    botocore's adaptive mode already retries; this outer loop covers bursts that outlast
    it (Service Quotas throttles parallel callers hard). Other errors are raised at once.
    """
    for attempt in range(1, attempts + 1):
        try:
            return fn(*args, **kwargs)
        except botocore.exceptions.ClientError as exc:
            if classify_code(error_code(exc)) != THROTTLED or attempt == attempts:
                raise
            sleep(min(20.0, base_delay * 2 ** (attempt - 1)) * (1 + random.random()))
    raise AssertionError("unreachable")


def paginate(client_: Any, operation: str, key: str, **kwargs: Any) -> list[Any]:
    """Items under ``key`` of every page of a paginated operation.

    A throttled page restarts the listing (a paginator cannot resume after an error).
    """
    def collect() -> list[Any]:
        return [item for page in client_.get_paginator(operation).paginate(**kwargs)
                for item in page.get(key, [])]
    return call(collect)


class Clients:
    """Clients of one session, made once per (service, region) and shared between threads.

    boto3 sessions are not thread-safe but clients are, so clients are made under a lock.
    """

    def __init__(self, session: Any, config: Config = RETRY_CONFIG) -> None:
        self.session = session
        self.config = config
        self._clients: dict[tuple[str, str | None], Any] = {}
        self._lock = threading.Lock()

    def __call__(self, service: str, region: str | None = None) -> Any:
        key = (service, region)
        with self._lock:
            if key not in self._clients:
                self._clients[key] = client(self.session, service, region, self.config)
            return self._clients[key]


# --- Bedrock's OpenAI-compatible endpoint: AWS's authentication over plain HTTP -----------------------------------

MANTLE_SERVICE = "bedrock-mantle"
"""The SigV4 service name (and IAM prefix) of Bedrock's OpenAI-compatible endpoint; the openai SDK's Bedrock provider
signs with it (``openai/lib/_bedrock_auth.py``)."""
MANTLE_BASE_URL_VAR = "AWS_BEDROCK_BASE_URL"
"""Replaces the endpoint with a whole base URL, route included, used as given (the openai SDK's Bedrock-provider
convention): tests, private endpoints."""
MANTLE_ENDPOINT_VAR = "AWS_ENDPOINT_URL_BEDROCK_MANTLE"
"""Replaces the endpoint's scheme, host and port only; the model's route is appended (botocore's service-specific
endpoint variable, ``AWS_ENDPOINT_URL_<SERVICE>``: docs.aws.amazon.com sdkref/latest/guide/
feature-ss-endpoints.html)."""
MANTLE_ROUTES: tuple[str, ...] = ("/v1", "/openai/v1")
"""The path prefixes the endpoint serves models under: "the path prefix varies by model", most under ``/v1``, some
under ``/openai/v1`` (docs.aws.amazon.com bedrock/latest/userguide/inference-responses-api.html)."""
DEFAULT_MANTLE_ROUTE = MANTLE_ROUTES[0]
"""The route of a model the catalog says nothing of: the one most models are served under."""
ROUTE_REFUSED = "isn't supported on this route"
"""How the endpoint refuses a model asked for under the wrong route: "model `<model-id>` isn't supported on this
route" (docs.aws.amazon.com bedrock/latest/userguide/inference-responses-api.html)."""
MANTLE_TOKEN_VAR = "AWS_BEARER_TOKEN_BEDROCK"
"""A Bedrock API key, sent as a bearer token instead of a SigV4 signature."""
BEARER, SIGNED = "bearer", "sigv4"
_AUTH_HEADERS = ("authorization", "x-amz-date", "x-amz-security-token", "x-amz-content-sha256")


def mantle_host(region: str) -> str:
    """The endpoint's scheme and host in ``region`` (its regional endpoints: docs.aws.amazon.com
    bedrock/latest/userguide/bedrock-mantle.html)."""
    return f"https://bedrock-mantle.{region}.api.aws"


def endpoint_root(text: str) -> str:
    """``text`` as an endpoint's scheme, host and port (``AWS_ENDPOINT_URL_BEDROCK_MANTLE``); ValueError naming the
    fix for anything more (a path, a query) or less (no scheme or host)."""
    parts = urllib.parse.urlsplit(text.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{MANTLE_ENDPOINT_VAR}={text!r} is not an http(s) URL; give scheme, host and port "
                         "(https://bedrock-mantle.us-east-1.api.aws)")
    if parts.path.strip("/") or parts.query or parts.fragment:
        raise ValueError(f"{MANTLE_ENDPOINT_VAR}={text!r} has a path; it takes scheme, host and port only (the "
                         "model's route, /v1 or /openai/v1, is appended): a whole base URL goes in "
                         f"{MANTLE_BASE_URL_VAR}")
    return f"{parts.scheme}://{parts.netloc}"


def other_route(route: str) -> str:
    """The route of :data:`MANTLE_ROUTES` that ``route`` is not (``/v1`` for anything else)."""
    return next((r for r in MANTLE_ROUTES if r != route), DEFAULT_MANTLE_ROUTE)


def route_refused(text: str) -> bool:
    """Whether an answer's text is the endpoint's refusal of a model under the wrong route."""
    return ROUTE_REFUSED in text


WRONG_ROUTE = "Bedrock's OpenAI-compatible endpoint does not serve "
"""How :func:`wrong_route`'s line begins."""


def wrong_route(model_id: str, url: str, route: str) -> str:
    """The one line for a model refused (or not listed) under ``route`` at ``url``, naming the other route."""
    return (f"{WRONG_ROUTE}{model_id} under {route} ({url}): its route is another, likely {other_route(route)}; fix "
            f"the route in the catalog's models entry (bedrock_endpoint.route) or give the whole base URL in "
            f"{MANTLE_BASE_URL_VAR}")


def mantle_region(url: str) -> str | None:
    """The region of a regional endpoint URL (``https://bedrock-mantle.us-east-2.api.aws/v1`` -> ``us-east-2``)."""
    found = re.match(r"^https://bedrock-mantle\.([a-z0-9-]+)\.api\.aws(?:/|$)", url)
    return found.group(1) if found else None


class MantleAuth:
    """How a request to Bedrock's OpenAI-compatible endpoint says who sends it, as AWS documents: the Bedrock API
    key in ``AWS_BEARER_TOKEN_BEDROCK`` as a bearer token, or SigV4 (:data:`MANTLE_SERVICE`, ``region``) from the
    credentials of the usual chain, read again for every request (botocore refreshes temporary ones).

    Args:
        region: The region requests are signed for.
        token: The API key; None signs with ``credentials`` instead.
        credentials: botocore credentials (``session.get_credentials()``); needed without ``token``.
    """

    def __init__(self, region: str, token: str | None = None, credentials: Any = None) -> None:
        if token is None and credentials is None:
            raise CredentialsError(NO_CREDENTIALS, f"no AWS credentials to sign requests to {MANTLE_SERVICE} and no "
                                                   f"{MANTLE_TOKEN_VAR}")
        self.region = region
        self.token = token
        self.credentials = credentials

    @classmethod
    def of(cls, mode: str, region: str, session: Callable[[], Any], env: Mapping[str, str] | None = None
           ) -> "MantleAuth":
        """The auth ``mode`` (:data:`BEARER` or :data:`SIGNED`) names: the token from ``env`` (``os.environ``), or
        the credentials of ``session()``."""
        env = os.environ if env is None else env
        if mode == BEARER:
            token = env.get(MANTLE_TOKEN_VAR, "").strip()
            if not token:
                raise CredentialsError(NO_CREDENTIALS, f"{MANTLE_TOKEN_VAR} is not set")
            return cls(region, token=token)
        return cls(region, credentials=session().get_credentials())

    @property
    def mode(self) -> str:
        return BEARER if self.token is not None else SIGNED

    def headers(self, method: str, url: str, body: bytes = b"", headers: Mapping[str, str] | None = None
                ) -> dict[str, str]:
        """``headers`` with this request's authentication (a signature covers the method, URL, body and headers)."""
        kept = {k: v for k, v in (headers or {}).items() if k.lower() not in _AUTH_HEADERS}
        if self.token is not None:
            return {**kept, "Authorization": f"Bearer {self.token}"}
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        frozen = getattr(self.credentials, "get_frozen_credentials", None)
        credentials = frozen() if callable(frozen) else self.credentials
        kept["X-Amz-Content-SHA256"] = hashlib.sha256(body).hexdigest()
        request = AWSRequest(method=method, url=url, data=body, headers=kept)
        SigV4Auth(credentials, MANTLE_SERVICE, self.region).add_auth(request)
        return dict(request.headers.items())


def outcome(exc: BaseException) -> Outcome | None:
    """The exit code and line for ``exc``; None for an error the kit does not know (the command re-raises it).

    Bad input (:class:`UsageError`, which an unknown rig and an unreadable placement file are) is 2; credentials 3; an
    unreachable AWS 4; any other error of the library (:class:`RigsError`) or AWS error with a code is 1.
    """
    if isinstance(exc, UsageError):
        return Outcome(EXIT_USAGE, str(exc))
    if isinstance(exc, CredentialsError):
        return Outcome(EXIT_CREDENTIALS, str(exc))
    if isinstance(exc, UnreachableError):
        return Outcome(EXIT_UNREACHABLE, str(exc))
    if isinstance(exc, RigsError):
        return Outcome(EXIT_FAILED, str(exc))
    if not isinstance(exc, Exception):
        return None
    failure = classify(exc)
    if failure.kind == CREDENTIALS:
        return Outcome(EXIT_CREDENTIALS, str(CredentialsError(failure.code)))
    if failure.kind == UNREACHABLE:
        return Outcome(EXIT_UNREACHABLE, str(unreachable_error(exc)))
    if failure.code == type(exc).__name__:
        return None
    return Outcome(EXIT_FAILED, describe_error(exc))
