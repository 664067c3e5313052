"""The role and instance profile every rig instance runs with."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from constructs import Construct

from rigs.contract import MANAGED_BY

from .checks import acknowledge

HF_TOKEN_SECRET_PREFIX = f"{MANAGED_BY}/"
"""Secrets Manager names a rig may read, e.g. ``aws-inference/hf-token``."""

RIG_LOG_GROUP_PREFIX = f"/{MANAGED_BY}/"
"""CloudWatch log groups rigs write their user-data and server logs to."""

RIG_STACK_PATTERN = "Inference*"


class RigInstanceProfile(Construct):
    """``AmazonSSMManagedInstanceCore`` plus only what a rig does at boot.

    Scoped permissions: signal its own CloudFormation stack when the server answers,
    read an optional Hugging Face token from Secrets Manager under ``aws-inference/``,
    and write its logs under ``/aws-inference/``. No ``*`` action on ``*`` resources.

    Attributes:
        role: the instance role (grant further access on it, e.g. an image repository).
        instance_profile: the profile rig instances launch with.
    """

    def __init__(self, scope: Construct, id_: str) -> None:
        super().__init__(scope, id_)
        stack = cdk.Stack.of(self)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            description="aws-inference rig instances: SSM, stack signal, HF token secret, own logs",
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name("AmazonSSMManagedInstanceCore")],
        )
        stacks_arn = stack.format_arn(service="cloudformation", resource="stack",
                                      resource_name=f"{RIG_STACK_PATTERN}/*")
        secrets_arn = stack.format_arn(service="secretsmanager", resource="secret",
                                       resource_name=f"{HF_TOKEN_SECRET_PREFIX}*",
                                       arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME)
        logs_arn = stack.format_arn(service="logs", resource="log-group",
                                    resource_name=f"{RIG_LOG_GROUP_PREFIX}*",
                                    arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME)
        self.role.add_to_policy(iam.PolicyStatement(
            sid="SignalOwnStack", actions=["cloudformation:SignalResource"], resources=[stacks_arn]))
        self.role.add_to_policy(iam.PolicyStatement(
            sid="ReadHuggingFaceToken", actions=["secretsmanager:GetSecretValue"], resources=[secrets_arn]))
        self.role.add_to_policy(iam.PolicyStatement(
            sid="WriteRigLogs",
            actions=["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
            resources=[logs_arn, f"{logs_arn}:*"]))
        self.instance_profile = iam.InstanceProfile(self, "Profile", role=self.role)

        acknowledge(self.role, "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonSSMManagedInstanceCore]",
                    "AWS's managed SSM core policy is the supported way to make an instance an SSM managed node; "
                    "rigs have no inbound port and are reached only through SSM.")
        scoped = {
            f"arn:aws:cloudformation:{stack.region}:<AWS::AccountId>:stack/{RIG_STACK_PATTERN}/*":
                "A rig signals its own stack, whose name and id are not known to the base stack; "
                "the resource is limited to this app's Inference* stacks in this region.",
            f"arn:aws:secretsmanager:{stack.region}:<AWS::AccountId>:secret:{HF_TOKEN_SECRET_PREFIX}*":
                "Secrets Manager appends a random suffix to every secret ARN; read access is limited to "
                "secrets under the aws-inference/ prefix (the optional Hugging Face token).",
            f"arn:aws:logs:{stack.region}:<AWS::AccountId>:log-group:{RIG_LOG_GROUP_PREFIX}*":
                "Each rig stack creates its own log group under /aws-inference/; writes are limited to that prefix.",
            f"arn:aws:logs:{stack.region}:<AWS::AccountId>:log-group:{RIG_LOG_GROUP_PREFIX}*:*":
                "Log streams are named per instance at boot; writes are limited to streams of /aws-inference/ groups.",
        }
        for resource, reason in scoped.items():
            acknowledge(self.role, f"AwsSolutions-IAM5[Resource::{resource}]", reason)


class HfTokenGrant(Construct):
    """A policy, owned by the rig stack, that lets the shared rig role read one SSM parameter: the Hugging Face token
    of a gated model (``-c hf_token_parameter=NAME``). Only the name is in the template; the boot script reads the
    value. A SecureString under the account's ``aws/ssm`` key needs no KMS grant (that key's policy lets the
    account's principals decrypt through SSM); one under a customer managed key needs ``kms:Decrypt`` in its key
    policy.

    Attributes:
        policy: the IAM policy attached to ``role``.
    """

    def __init__(self, scope: Construct, id_: str, *, role: iam.IRole, parameter_name: str) -> None:
        super().__init__(scope, id_)
        parameter_arn = cdk.Stack.of(self).format_arn(service="ssm", resource="parameter",
                                                      resource_name=parameter_name.lstrip("/"))
        self.policy = iam.Policy(self, "Policy", roles=[role], statements=[iam.PolicyStatement(
            sid="ReadHuggingFaceTokenParameter", actions=["ssm:GetParameter"], resources=[parameter_arn])])
