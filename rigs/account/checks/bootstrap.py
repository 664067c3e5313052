"""The CDK bootstrap stack of each region, and its version."""

from __future__ import annotations

from rigs import aws
from rigs.account import permissions
from rigs.account.checks.base import FAIL, OK, Check, Finding, Scope, each_region, unknown
from rigs.contract import BOOTSTRAP_STACK

BOOTSTRAP_VERSION_PARAMETER = "/cdk-bootstrap/hnb659fds/version"
"""Where the default bootstrap (qualifier ``hnb659fds``, which ``cdk.json`` keeps) records its version."""
MIN_BOOTSTRAP_VERSION = 6
"""The synthesized templates' ``CheckBootstrapVersion`` rule refuses versions 1 to 5."""
BOOTSTRAP_NOT_IN_POLICY = f"bootstrapping makes IAM roles, which {permissions.POLICY_DOC} does not allow"
"""Why a user holding only the project's policy cannot bootstrap: the bootstrap stack makes IAM roles, an S3 bucket
and an ECR repository, rights the policy (kept to what the project itself calls) does not give; with administrator
credentials ``up --bootstrap`` and ``rehearse --bootstrap`` do it too."""


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
        return [unknown("CDK bootstrap", "", region, exc, "cloudformation")]
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
        return [unknown("CDK bootstrap", "", region, exc, "ssm")]
    if version < MIN_BOOTSTRAP_VERSION:
        return [Finding("CDK bootstrap", "", region, FAIL, f"version {version}; the templates need "
                        f"{MIN_BOOTSTRAP_VERSION} or later", fix, blocks)]
    return [Finding("CDK bootstrap", "", region, OK, f"{BOOTSTRAP_STACK} {status}, version {version}")]


CHECK = Check("CDK bootstrap", each_region, bootstrap)
