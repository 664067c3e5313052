"""The g5g image (a rig that runs an image of its own, built by CodeBuild) in the account's ECR."""

from __future__ import annotations

from rigs import aws
from rigs.account.checks.base import FAIL, OK, Check, Finding, Outcome, Scope, builds_own_image, each_rig, unknown
from rigs.catalog.model import Ec2Rig


def own_image(scope: Scope, rig: Ec2Rig, region: str) -> Outcome:
    """The g5g image in the account's ECR; gives whether it is built (None: unknown)."""
    fix = (f"`./scripts/cdk deploy {rig.stack_name}Image -c region.{rig.name}={{region}}`, then run its "
           "StartBuildCommand output (a build takes hours)")
    try:
        aws.call(scope.clients("ecr", region).describe_images, repositoryName=rig.image.repository,
                 imageIds=[{"imageTag": rig.image.tag}], attempts=3)
    except Exception as exc:  # noqa: BLE001
        code = aws.error_code(exc)
        if code == "RepositoryNotFoundException":
            return Outcome([Finding("g5g image", rig.name, region, FAIL, f"no ECR repository {rig.image.repository} "
                            f"(the {rig.stack_name}Image stack is not deployed here)", fix, (rig.name,))], False)
        if code == "ImageNotFoundException":
            return Outcome([Finding("g5g image", rig.name, region, FAIL,
                            f"{rig.image.repository}:{rig.image.tag} is not built yet", fix, (rig.name,))], False)
        return Outcome([unknown("g5g image", rig.name, region, exc, "ecr")], None)
    return Outcome([Finding("g5g image", rig.name, region, OK, f"{rig.image.repository}:{rig.image.tag} built")], True)


CHECK = Check("g5g image", each_rig(builds_own_image), own_image)
