"""A rig's boot scripts as a CDK S3 asset its role may read, and the synth-time bound on its user data."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct

from rigs.catalog.model import Ec2Rig
from rigs.userdata import UserDataError, boot_scripts, boot_scripts_sha256, check_size

WAIT_HANDLE_URL_BYTES = 1024
"""The longest a wait-condition handle's URL is taken to be: CloudFormation hands out a pre-signed S3 URL of about
500 to 700 bytes (the tests' stand-in, with a session token, is 657); an allowance, not a documented limit."""
PSEUDO_PARAMETER_BYTES = {"AWS::AccountId": 12, "AWS::Region": 14, "AWS::URLSuffix": 16, "AWS::Partition": 10}
"""The longest each pseudo parameter resolves to: 12 digits; ``ap-southeast-5``; ``amazonaws.com.cn``;
``aws-us-gov``."""
LOG_GROUP_NAME_BYTES = 512
"""CloudWatch Logs' longest log group name, for a group whose name the template does not fix."""


class BootScripts(Construct):
    """The rig's boot scripts (``rigs.userdata.boot_scripts``) as one S3 object, and read access to exactly it.

    The object is a CDK file asset: staged at synth, uploaded by ``cdk deploy`` to the environment's bootstrap
    bucket (``cdk bootstrap`` makes it), under a key that is the hash of its content. The policy lives in the rig's
    stack, as the image pull's does, so the base stack's shared role never depends on a rig.

    Attributes:
        url: ``s3://bucket/key`` of the object (deploy-time tokens for the bucket).
        sha256: the sha256 of its bytes, for the user data's bootstrap to check before they run.
        policy: ``s3:GetObject`` on that one object, attached to ``role``.
    """

    def __init__(self, scope: Construct, id_: str, *, rig: Ec2Rig, role: iam.IRole) -> None:
        super().__init__(scope, id_)
        with tempfile.TemporaryDirectory(prefix="boot-scripts-") as folder:
            path = Path(folder) / f"{rig.runtime}.sh"
            path.write_text(boot_scripts(rig), encoding="utf-8")
            # Staged (copied into the cloud assembly) as the construct is made; the key is the content's hash.
            asset = s3_assets.Asset(self, "Asset", path=str(path))
        self.url: str = asset.s3_object_url
        self.sha256 = boot_scripts_sha256(rig)
        # Named with the stack's id: the rigs of one region share the base stack's role, and an inline policy's name
        # is unique on its role (the same name from two stacks replaces the first, and deleting one drops both).
        self.policy = iam.Policy(self, "Policy", policy_name=cdk.Names.unique_id(self), roles=[role],
                                 statements=[iam.PolicyStatement(
            sid="ReadBootScripts", actions=["s3:GetObject"],
            resources=[asset.bucket.arn_for_objects(asset.s3_object_key)])])


def check_user_data(stack: cdk.Stack, rig_name: str, user_data: ec2.UserData) -> int:
    """The longest ``user_data`` can be once deployed, in bytes, every deploy-time value at its longest.

    Raises:
        UserDataError: over ``rigs.userdata.USER_DATA_LIMIT_BYTES`` (the one-line refusal), or a deploy-time
            value this has no bound for.
    """
    bounds = dict(PSEUDO_PARAMETER_BYTES)
    for child in stack.node.find_all():
        if isinstance(child, cdk.CfnWaitConditionHandle):
            bounds[stack.resolve(child.logical_id)] = WAIT_HANDLE_URL_BYTES
        elif isinstance(child, logs.CfnLogGroup):
            name = child.log_group_name
            bounds[stack.resolve(child.logical_id)] = len(name.encode("utf-8")) if name else LOG_GROUP_NAME_BYTES
    size = _longest(stack.resolve(user_data.render()), bounds)
    check_size(rig_name, size)
    return size


def _longest(node: Any, bounds: dict[str, int]) -> int:
    """The longest ``node`` (a resolved CloudFormation value) can be, in bytes, with references bounded by
    ``bounds`` (logical id or pseudo parameter -> bytes)."""
    if isinstance(node, str):
        return len(node.encode("utf-8"))
    if isinstance(node, dict) and "Fn::Join" in node:
        separator, parts = node["Fn::Join"]
        return sum(_longest(part, bounds) for part in parts) + len(separator.encode("utf-8")) * max(0, len(parts) - 1)
    names: list[str] = []
    fixed = 0
    if isinstance(node, dict) and isinstance(node.get("Ref"), str):
        names = [node["Ref"]]
    elif isinstance(node, dict) and isinstance(node.get("Fn::Sub"), str):
        names = re.findall(r"\$\{([^}]+)\}", node["Fn::Sub"])
        fixed = len(re.sub(r"\$\{[^}]+\}", "", node["Fn::Sub"]).encode("utf-8"))
    else:
        raise UserDataError(f"no bound on the deploy-time value {node} in a rig's user data: give it one in "
                            "stacks/parts/boot_scripts.py")
    unbounded = [name for name in names if name not in bounds]
    if unbounded:
        raise UserDataError(f"no bound on {', '.join(unbounded)} in a rig's user data: give it one in "
                            "stacks/parts/boot_scripts.py")
    return fixed + sum(bounds[name] for name in names)
