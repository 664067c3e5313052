"""Custom resource: the digest an image tag points to in this region's registry, read at deploy time.

AWS publishes its SageMaker containers under the same tags in a separate registry per
region, each with its own digests. This reads the tag's digest here (ECR DescribeImages;
BatchGetImage where the registry lets the caller pull but not describe), so the model
runs the image by digest in whichever region the stack is in, and the deploy fails at
once, with the reason, when this region's registry does not have the tag.
Properties: RegistryId, RepositoryName, ImageTag. Returns Digest.
"""
import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

NOT_FOUND = {"ImageNotFoundException", "RepositoryNotFoundException", "ImageNotFound"}
MANIFESTS = ["application/vnd.docker.distribution.manifest.v2+json",
             "application/vnd.docker.distribution.manifest.list.v2+json",
             "application/vnd.oci.image.manifest.v1+json", "application/vnd.oci.image.index.v1+json"]
CONFIG = Config(connect_timeout=5, read_timeout=20, retries={"total_max_attempts": 3, "mode": "standard"})


def compute(properties, ecr=None):
    ecr = ecr or boto3.client("ecr", config=CONFIG)
    ids = {"registryId": properties["RegistryId"], "repositoryName": properties["RepositoryName"],
           "imageIds": [{"imageTag": properties["ImageTag"]}]}
    try:
        return {"Digest": ecr.describe_images(**ids)["imageDetails"][0]["imageDigest"]}
    except ClientError as exc:
        error = exc.response["Error"]
        if error["Code"] in NOT_FOUND:
            raise not_here(properties, ecr, error["Code"], error.get("Message")) from None
        if error["Code"] != "AccessDeniedException":
            raise
    found = ecr.batch_get_image(**ids, acceptedMediaTypes=MANIFESTS)
    if found.get("images"):
        return {"Digest": found["images"][0]["imageId"]["imageDigest"]}
    failure = (found.get("failures") or [{}])[0]
    code, reason = failure.get("failureCode") or "ImageNotFound", failure.get("failureReason")
    raise not_here(properties, ecr, code, reason) if code in NOT_FOUND else RuntimeError(f"{code}: {reason}")


def not_here(properties, ecr, code, message):
    """The deploy's failure reason for a tag this region's registry does not have."""
    region = ecr.meta.region_name
    image = (f"{properties['RegistryId']}.dkr.ecr.{region}.amazonaws.com/"
             f"{properties['RepositoryName']}:{properties['ImageTag']}")
    return RuntimeError(f"{code}: {image} is not in {region}'s registry ({message or 'no such tag'}); deploy the "
                        "rig in another of its regions, or pin a tag published here")
