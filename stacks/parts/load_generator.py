"""``--load-from rig``: the rig's load generator as a CDK S3 asset, and the base stack's bucket its jobs and results
pass through."""

from __future__ import annotations

import tempfile
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct

from rigs.userdata import load_generator

from .checks import acknowledge, skip_checkov

RESULTS_EXPIRE_DAYS = 1
"""Load jobs and results live a day at most: the agent deletes each pair once read; this rule removes what a stopped
run left (S3 applies expiration rules once a day, so an object may outlive its day by up to one more)."""


class LoadGenerator(Construct):
    """The load generator's zip (:func:`rigs.userdata.load_generator.bundle`) as one S3 object.

    Staged at synth, uploaded by ``cdk deploy`` to the bootstrap bucket under its content's hash: a changed load
    generator is a new object, and its sha256 (an output) is checked on the instance before it runs. The agent reads
    it through a pre-signed URL, so the instance role gets no permission for it.

    Attributes:
        url: ``s3://bucket/key`` of the object.
        sha256: the zip's sha256.
    """

    def __init__(self, scope: Construct, id_: str) -> None:
        super().__init__(scope, id_)
        with tempfile.TemporaryDirectory(prefix="load-generator-") as folder:
            path = Path(folder) / "load_generator.zip"
            path.write_bytes(load_generator.bundle())
            asset = s3_assets.Asset(self, "Asset", path=str(path))
        self.url: str = asset.s3_object_url
        self.sha256 = load_generator.sha256()


class LoadResults(Construct):
    """The region's bucket for load jobs and their results: encrypted (S3-managed keys), TLS only, no public access,
    everything expired after :data:`RESULTS_EXPIRE_DAYS`, deleted with the base stack (empty by then: the agent
    deletes what it reads, the rule the rest).

    Attributes:
        bucket: the bucket.
    """

    def __init__(self, scope: Construct, id_: str) -> None:
        super().__init__(scope, id_)
        self.bucket = s3.Bucket(
            self, "Bucket", encryption=s3.BucketEncryption.S3_MANAGED, enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL, versioned=False,
            removal_policy=cdk.RemovalPolicy.DESTROY,
            lifecycle_rules=[s3.LifecycleRule(id="ExpireLoadJobs", expiration=cdk.Duration.days(RESULTS_EXPIRE_DAYS),
                                              abort_incomplete_multipart_upload_after=cdk.Duration.days(1))])
        acknowledge(self.bucket, "AwsSolutions-S1",
                    "It holds load jobs and their results for minutes (a day at most, by its lifecycle rule), read "
                    "and deleted by the run that wrote them; access logs would need a second bucket that outlives "
                    "it, and CloudTrail records the API calls")
        skip_checkov(self.bucket, "CKV_AWS_18", "Load jobs and their results live minutes (a day at most, its "
                     "lifecycle rule); access logs would need a second bucket outliving it; CloudTrail has the calls")
        skip_checkov(self.bucket, "CKV_AWS_21", "Each object is written once, read once and deleted by the run that "
                     "wrote it: versions would keep what the run deletes, and the base stack could not be destroyed")
