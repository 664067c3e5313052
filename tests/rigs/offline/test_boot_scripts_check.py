"""The launcher's patch 11: a rig stack's boot scripts fetched from moto's S3 and checked against the sha256 its user
data carries, as the user data's bootstrap does on an instance, with the bootstrap's own refusal lines."""

from __future__ import annotations

import base64
import hashlib

import boto3
from moto import mock_aws
from moto.ec2.models import ec2_backends

from rigs.offline.moto_server import ACCOUNT, boot_scripts_refusal

SCRIPTS = b"#!/usr/bin/env bash\nmain\n"
BUCKET = "cdk-hnb659fds-assets-123456789012-us-east-1"
URL = f"s3://{BUCKET}/{'e' * 64}.sh"


def launch_template(sha256: str) -> list:
    """A launch template whose user data names the boot scripts and their hash, as a rig's does."""
    user_data = ("#!/usr/bin/env bash\nexport RIG_BOOT_SCRIPTS_SHA256=" + sha256 + f"\nexport RIG_BOOT_SCRIPTS_URL='{URL}'"
                 "\nexport RIG_NAME=g6\n# --- bootstrap.sh ---\n")
    boto3.client("ec2", region_name="us-east-1").create_launch_template(
        LaunchTemplateName="rig", LaunchTemplateData={"UserData": base64.b64encode(user_data.encode()).decode()})
    return list(ec2_backends[ACCOUNT]["us-east-1"].launch_templates.values())


def upload(data: bytes) -> None:
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket=BUCKET)
    s3.put_object(Bucket=BUCKET, Key=f"{'e' * 64}.sh", Body=data)


@mock_aws
def test_boot_scripts_with_the_hash_of_the_user_data_pass(capsys):
    upload(SCRIPTS)
    assert boot_scripts_refusal(launch_template(hashlib.sha256(SCRIPTS).hexdigest()), ACCOUNT) is None
    assert f"boot scripts {URL}: sha256 {hashlib.sha256(SCRIPTS).hexdigest()} as synthesized" in capsys.readouterr().err


@mock_aws
def test_other_boot_scripts_are_refused_with_the_bootstraps_line():
    upload(SCRIPTS + b"echo changed\n")
    got = hashlib.sha256(SCRIPTS + b"echo changed\n").hexdigest()
    wanted = hashlib.sha256(SCRIPTS).hexdigest()
    assert boot_scripts_refusal(launch_template(wanted), ACCOUNT) == (
        f"g6: boot scripts {URL} have sha256 {got}, not {wanted} as synthesized: not running them")


@mock_aws
def test_boot_scripts_never_uploaded_are_refused_naming_the_object():
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=BUCKET)
    assert boot_scripts_refusal(launch_template("0" * 64), ACCOUNT) == (
        f"g6: could not fetch the boot scripts {URL}: fatal error: An error occurred (404) when calling the HeadObject "
        "operation: Not Found ")
