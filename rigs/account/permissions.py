"""What the caller's IAM policy must allow, and which statement of the project's policy allows it.

``docs/iam-policy.json`` is the least-privilege policy a user (or role) needs to run this project:
one statement per job (read-only checks, deploy and reach, the sweep's deletions), each named by
its ``Sid``. A call is allowed by the action ``<prefix>:<Operation>``, the prefix being the
service's signing name in botocore's model (``servicequotas`` for ``service-quotas``,
``sagemaker`` for ``sagemaker-runtime``), except where IAM names it otherwise
(:data:`ACTIONS`). ``tests/test_iam_policy.py`` walks the code's AWS calls and fails when one is
not in the policy, and checks every action the policy names against the Service Authorization
Reference's lists (:data:`REFERENCE_PATH`, :func:`unlisted`); the doctor uses :func:`refused_action`
and :func:`hint` to say, for a refused check, which action was refused and which statement grants it.
"""

from __future__ import annotations

import fnmatch
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

POLICY_PATH = Path(__file__).resolve().parents[2] / "docs" / "iam-policy.json"
POLICY_DOC = "docs/iam-policy.json"
REFERENCE_PATH = Path(__file__).with_name("iam-actions.json")
"""The actions AWS's Service Authorization Reference lists for each service prefix the policy uses, dated, with
each list's page (the file says how it was made)."""

ACCESS_DENIED_CODES = frozenset({"AccessDenied", "AccessDeniedException", "UnauthorizedOperation"})
"""How AWS APIs say the caller's policy does not allow the call (EC2 says ``UnauthorizedOperation``)."""

ACTIONS: dict[tuple[str, str], str | None] = {
    ("bedrock-runtime", "Converse"): "bedrock:InvokeModel",
    ("bedrock-runtime", "ConverseStream"): "bedrock:InvokeModelWithResponseStream",
    ("sagemaker-runtime", "InvokeEndpointWithResponseStream"): "sagemaker:InvokeEndpoint",
    ("sts", "GetCallerIdentity"): None,
    ("s3", "DeleteObjects"): "s3:DeleteObject",
}
"""Calls IAM authorizes under another action than ``<prefix>:<Operation>``; None: no permission needed
(STS answers ``GetCallerIdentity`` to any valid credentials). SageMaker's streamed invocation: the API reference of
``InvokeEndpointWithResponseStream`` says the caller's permissions must allow ``sagemaker:InvokeEndpoint`` (the
Service Authorization Reference also lists an action of the stream's name; which one IAM checks is unverified)."""


MANTLE_INFERENCE = "bedrock-mantle:CreateInference"
MANTLE_CALLS: dict[str, tuple[str, ...]] = {
    "bedrock-mantle POST /v1/chat/completions and GET /v1/models, SigV4": (
        MANTLE_INFERENCE, "bedrock-mantle:ListModels", "bedrock-mantle:GetProject", "bedrock-mantle:ListProjects"),
    "bedrock-mantle, a Bedrock API key (AWS_BEARER_TOKEN_BEDROCK)": ("bedrock-mantle:CallWithBearerToken",),
}
"""The calls to Bedrock's OpenAI-compatible endpoint (plain HTTP, no boto3 operation: the benchmark's requests, what
served it, the doctor's model check) and the actions AWS names for them in the Service Authorization Reference's page
for the ``bedrock-mantle`` prefix (docs.aws.amazon.com service-authorization/latest/reference/
list_amazonbedrockpoweredbyawsmantle.html): ``CreateInference`` ("a chat completion inference request") and
``ListModels`` ("list all available models in a project"), both on ``project/*``; ``GetProject`` and ``ListProjects``,
which AWS's minimal policy for inference on this endpoint lists with ``CreateInference`` (Amazon Bedrock User Guide,
"Making inference requests", docs.aws.amazon.com bedrock/latest/userguide/inference.html), on ``project/*`` too (the
reference's resource type for both); for a Bedrock API key, ``CallWithBearerToken``, as the managed policy
``AmazonBedrockMantleInferenceAccess`` grants it (docs.aws.amazon.com aws-managed-policy/latest/reference/
AmazonBedrockMantleInferenceAccess.html)."""
MANTLE_DENIED_STATUS = (401, 403)
"""How the endpoint refuses a caller (HTTP status, there being no AWS error code on this path)."""


def action(service: str, operation: str) -> str | None:
    """The IAM action a botocore ``operation`` of ``service`` needs (None: none)."""
    if (service, operation) in ACTIONS:
        return ACTIONS[(service, operation)]
    return f"{_prefix(service)}:{operation}"


@lru_cache(maxsize=None)
def _model(service: str) -> Any:
    import botocore.session

    return botocore.session.get_session().get_service_model(service)


def _prefix(service: str) -> str:
    model = _model(service)
    return model.signing_name or model.endpoint_prefix


@lru_cache(maxsize=1)
def policy(path: Path = POLICY_PATH) -> dict[str, Any]:
    """The project's policy document; empty when the file is not there (an installed copy without docs)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"Statement": []}


def _listed(value: str | list[str] | None) -> list[str]:
    return [value] if isinstance(value, str) else list(value or [])


def granting(wanted: str, document: dict[str, Any] | None = None) -> list[str]:
    """The ``Sid`` of each Allow statement whose actions match ``wanted`` (IAM's case-insensitive wildcards)."""
    document = policy() if document is None else document
    return [statement.get("Sid", "?") for statement in document.get("Statement", [])
            if statement.get("Effect") == "Allow"
            and any(fnmatch.fnmatchcase(wanted.lower(), pattern.lower())
                    for pattern in _listed(statement.get("Action")))]


def denied(exc: BaseException) -> bool:
    """Whether an AWS error says the caller's policy does not allow the call."""
    response = getattr(exc, "response", None)
    return isinstance(response, dict) and response.get("Error", {}).get("Code") in ACCESS_DENIED_CODES


def refused_action(services: str, exc: BaseException) -> str | None:
    """The IAM action a refused call needed, or None when the error is no refusal (or names no known call).

    ``services`` names the client's service (``ec2``), or several that may have made the call
    (``ssm/ec2``): the one whose model has the refused operation is taken.
    """
    if not denied(exc):
        return None
    operation = getattr(exc, "operation_name", None) or "?"
    for service in services.split("/"):
        try:
            known = operation in _model(service).operation_names
        except Exception:  # noqa: BLE001 - not a service botocore knows: no action from it
            known = False
        if known:
            return action(service, operation)
    return None


def hint(wanted: str) -> str:
    """For a refused ``wanted`` action: the statement of the project's policy that grants it."""
    statements = granting(wanted)
    where = (f"statement {', '.join(repr(s) for s in statements)} of {POLICY_DOC} grants it" if statements
             else f"{POLICY_DOC} does not grant it")
    return f"the caller's IAM policy does not allow {wanted}: {where}"


@lru_cache(maxsize=1)
def reference(path: Path = REFERENCE_PATH) -> dict[str, frozenset[str]]:
    """Service prefix -> the actions the Service Authorization Reference lists for it (:data:`REFERENCE_PATH`)."""
    services = json.loads(path.read_text(encoding="utf-8"))["services"]
    return {prefix: frozenset(entry["actions"]) for prefix, entry in services.items()}


def unlisted(document: dict[str, Any]) -> list[str]:
    """The actions ``document``'s statements name that the Service Authorization Reference does not list (an
    action IAM would not know: a typo, or a name that is an API operation and no action), in order."""
    listed = reference()
    named = [action for statement in document.get("Statement", []) for action in _listed(statement.get("Action"))]
    return [action for action in named
            if action.partition(":")[2] not in listed.get(action.partition(":")[0], frozenset())]
