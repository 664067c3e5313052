"""The digest the SageMaker deploy will run in each region: the catalog's pin, checked in the region's registry,
else the one the tag points to there."""

from __future__ import annotations

from rigs import aws
from rigs.account.checks.base import FAIL, OK, WARN, Check, Finding, Scope, each_rig, on_endpoint, refused, unknown
from rigs.catalog import pins
from rigs.catalog.images import ecr_image
from rigs.catalog.model import SageMakerRig


def sagemaker_image(scope: Scope, rig: SageMakerRig, region: str) -> list[Finding]:
    """The digest the deploy will run in ``region``: the catalog's pin, checked in that region's registry, or
    (no pin) the one the image's tag points to there, which the stack reads at deploy time."""
    image = ecr_image(rig.image.reference(region))
    digest = rig.image.digest_for(region)
    if image is None:
        return [Finding("SageMaker image", rig.name, region, FAIL, f"{rig.image.repository} is not an ECR "
                        "repository", "fix the image in rigs/catalog.yaml", (rig.name,))]
    if not digest:
        return _unpinned_image(scope, rig, region)
    tag = image.ref.partition("@")[0].lstrip(":")
    fix = (f"pin this region's digest of the tag: `aws ecr describe-images --registry-id {image.account} "
           f"--repository-name {image.repository} --image-ids imageTag={tag} --region {{region}}`")
    try:
        found = aws.call(scope.clients("ecr", region).describe_images, registryId=image.account,
                         repositoryName=image.repository, imageIds=[{"imageDigest": digest}],
                         attempts=3)["imageDetails"]
    except Exception as exc:  # noqa: BLE001
        code = aws.error_code(exc)
        if code in ("ImageNotFoundException", "RepositoryNotFoundException"):
            what = "digest" if code == "ImageNotFoundException" else f"repository {image.repository}"
            return [Finding("SageMaker image", rig.name, region, FAIL,
                            f"the pinned {what} is not in {image.account}'s registry ({code})", fix,
                            (rig.name,))]
        return [unknown("SageMaker image", rig.name, region, exc, "ecr")]
    tags = sorted({t for detail in found for t in detail.get("imageTags", [])})
    if tag not in tags:
        return [Finding("SageMaker image", rig.name, region, WARN,
                        f"{_short_digest(digest)} exists but is no longer tagged :{tag} "
                        f"(tags: {', '.join(tags) or 'none'})", fix)]
    return [Finding("SageMaker image", rig.name, region, OK, f"{_short_digest(digest)}: pinned, tagged here")]


def _unpinned_image(scope: Scope, rig: SageMakerRig, region: str) -> list[Finding]:
    found = pins.check_region(rig.name, rig.image, region, scope.clients("ecr", region))
    name = f"{rig.image.repository_in(region).rpartition('/')[2]}:{rig.image.tag}"
    if found.digest:
        return [Finding("SageMaker image", rig.name, region, OK,
                        f"{_short_digest(found.digest)}: the tag's digest here, read at deploy")]
    if found.missing:
        return [Finding("SageMaker image", rig.name, region, FAIL,
                        f"the tag {name} is not in this region's registry ({found.error}): the deploy would "
                        "fail here", "none here: `up` tries the rig's other regions", (rig.name,))]
    return [refused(Finding("SageMaker image", rig.name, region, WARN, f"not checked: ecr DescribeImages failed: "
                            f"{found.error}", "rerun `python -m rigs doctor`; if it persists, check the "
                            "permissions for this call"), found.error, "ecr:DescribeImages")]


def _short_digest(digest: str) -> str:
    return digest[:19] + "…"


CHECK = Check("SageMaker image", each_rig(on_endpoint), sagemaker_image)
