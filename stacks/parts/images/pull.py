"""Lets rig instances pull one private ECR repository."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from constructs import Construct

from rigs.catalog.images import ServerImage

from ..checks import acknowledge


def ecr_repository_arn(*, repository: str, account: str | None = None, region: str | None = None) -> str:
    """The ARN of an ECR repository; account and region default to the stack's."""
    return cdk.Fn.join("", ["arn:", cdk.Aws.PARTITION, ":ecr:", region or cdk.Aws.REGION, ":",
                            account or cdk.Aws.ACCOUNT_ID, ":repository/", repository])


class ServerImageLocation:
    """Where a rig pulls its server image from, resolved for the stack's account and region.

    Attributes:
        reference: the pull reference (deploy-time for the account's own ECR).
        registry: the ECR registry host to log in to; empty for a public image.
        repository_arn: the ECR repository to grant pulls on; None for a public image.
    """

    def __init__(self, scope: Construct, image: ServerImage) -> None:
        self.reference: str = image.public or ""
        self.registry = ""
        self.repository_arn: str | None = None
        if image.ecr is not None:
            ecr = image.ecr
            self.registry = f"{ecr.account or cdk.Aws.ACCOUNT_ID}.dkr.ecr.{ecr.region or cdk.Stack.of(scope).region}" \
                            f".{cdk.Aws.URL_SUFFIX}"
            self.reference = f"{self.registry}/{ecr.repository}{ecr.ref}"
            self.repository_arn = ecr_repository_arn(repository=ecr.repository, account=ecr.account, region=ecr.region)


class EcrPullGrant(Construct):
    """A policy, owned by the rig stack, that lets the shared rig role pull one repository.

    The policy lives in the rig's stack (not the base stack's role policy), so it comes
    and goes with the rig and the base stack never depends on a rig or image stack.

    Attributes:
        policy: the IAM policy attached to ``role``.
    """

    def __init__(self, scope: Construct, id_: str, *, role: iam.IRole, repository_arn: str) -> None:
        super().__init__(scope, id_)
        self.policy = iam.Policy(
            self,
            "Policy",
            roles=[role],
            statements=[
                iam.PolicyStatement(sid="EcrLogin", actions=["ecr:GetAuthorizationToken"], resources=["*"]),
                iam.PolicyStatement(sid="PullServerImage", resources=[repository_arn], actions=[
                    "ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"]),
            ],
        )
        acknowledge(self.policy, "AwsSolutions-IAM5[Resource::*]",
                    "ecr:GetAuthorizationToken issues a registry login token and supports no resource-level "
                    "permissions; image pulls themselves are limited to the one server repository.")
