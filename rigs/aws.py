"""AWS sessions, the credential check, retries and error classification.

Every AWS call of the library goes through a session made here, from the standard SDK
configuration: ``AWS_PROFILE``/``--profile``, ``AWS_REGION``, and ``AWS_ENDPOINT_URL``
(so the whole library runs against moto's server exactly as against AWS). Nothing here
exits the process: problems are raised as typed exceptions that the CLI turns into one
line and an exit code.

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
- ``other``: anything else.

Failures that arrive asynchronously (an Auto Scaling activity, a CloudFormation event, a
SageMaker ``FailureReason``) carry the code inside their message; :func:`code_in_message`
finds it as a whole token from the known list, so the decision is still made on the code.
"""

from __future__ import annotations

import os
import random
import re
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

import boto3
import botocore.exceptions
from botocore.config import Config

T = TypeVar("T")

LOGIN_HINT = "run `aws sso login` (or `aws login`), or set AWS_PROFILE to a profile with credentials"

CAPACITY = "capacity"
UNSUPPORTED = "unsupported"
QUOTA = "quota"
THROTTLED = "throttled"
CREDENTIALS = "credentials"
NOT_FOUND = "not-found"
OTHER = "other"

CAPACITY_CODES = frozenset({
    "InsufficientInstanceCapacity",
    "InsufficientCapacity",
    "InsufficientHostCapacity",
    "InsufficientReservedInstanceCapacity",
    "InsufficientCapacityOnHost",
    "SpotMaxPriceTooLow",
    "InsufficientInstanceCapacityException",
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


class RigsError(Exception):
    """Base of the library's errors; the CLI prints ``str(error)`` as one line."""


class CredentialsError(RigsError):
    """No usable AWS credentials: missing, expired or rejected."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(f"AWS credentials are missing or expired ({detail}): {LOGIN_HINT}")


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
    if isinstance(exc, botocore.exceptions.ClientError):
        err = exc.response.get("Error", {})
        code = err.get("Code") or str(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))
        return AwsFailure(code, classify_code(code), err.get("Message", ""))
    if isinstance(exc, botocore.exceptions.WaiterError):
        reason = getattr(exc, "last_response", {}) or {}
        code = reason.get("Error", {}).get("Code") if isinstance(reason, dict) else None
        return AwsFailure(code or "WaiterError", classify_code(code), str(exc))
    if isinstance(exc, botocore.exceptions.EndpointConnectionError):
        return AwsFailure("EndpointConnectionError", OTHER, str(exc))
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
    launch = _LAUNCH_FAILURE.search(message or "")
    code = (launch.group(1) if launch else None) or code_in_message(message)
    return AwsFailure(code or "Unknown", classify_code(code), (message or "").strip())


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


def make_session(profile: str | None = None, region: str | None = None) -> boto3.Session:
    """A boto3 session from the standard configuration; ``profile``/``region`` override it.

    ``AWS_ENDPOINT_URL`` (and the per-service ``AWS_ENDPOINT_URL_<SERVICE>``) is honoured by
    botocore itself for every client made from this session.
    """
    try:
        return boto3.Session(profile_name=profile or None, region_name=region or None)
    except botocore.exceptions.ProfileNotFound as exc:
        raise CredentialsError(str(exc)) from None


def client(session: boto3.Session, service: str, region: str | None = None) -> Any:
    """A client with the library's retry configuration."""
    return session.client(service, region_name=region, config=RETRY_CONFIG)


def check_credentials(session: boto3.Session, region: str | None = None) -> str:
    """Fail fast with one clear line when credentials are missing or expired.

    Returns the account id. Raises CredentialsError; any other error is re-raised.
    """
    try:
        if session.get_credentials() is None:
            raise CredentialsError("no credentials found")
        identity = call(client(session, "sts", region or session.region_name or "us-east-1").get_caller_identity)
    except CredentialsError:
        raise
    except Exception as exc:  # noqa: BLE001 - classified below
        failure = classify(exc)
        if failure.kind == CREDENTIALS:
            raise CredentialsError(failure.code) from None
        raise
    return identity["Account"]


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

    def __init__(self, session: Any) -> None:
        self.session = session
        self._clients: dict[tuple[str, str | None], Any] = {}
        self._lock = threading.Lock()

    def __call__(self, service: str, region: str | None = None) -> Any:
        key = (service, region)
        with self._lock:
            if key not in self._clients:
                self._clients[key] = client(self.session, service, region)
            return self._clients[key]
