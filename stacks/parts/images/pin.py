"""The image a SageMaker model runs, always by digest: pinned in the catalog, or read at deploy time."""

from __future__ import annotations

import aws_cdk as cdk
from constructs import Construct

from rigs.catalog.images import ecr_image
from rigs.catalog.model import ContainerImage

from ..custom_resources import ImageDigest
from .pull import ecr_repository_arn


class PinnedImage(Construct):
    """``image`` in ``region`` as ``repository@digest``.

    The digest is the catalog's pin for the region where it has one (``image_digests``,
    written by ``python -m rigs pins refresh``: an override for one chosen digest), else
    the digest the tag points to in the region's registry when the stack deploys
    (:class:`ImageDigest`), so the stack deploys in every region of the rig and the model
    never runs a tag that could move.

    Attributes:
        uri: ``repository@digest`` (deploy-time when read at deploy).
        digest: ``sha256:…`` (deploy-time when read at deploy).
        repository_arn: the ECR repository the model's role may pull from.
        pinned: whether the digest is the catalog's pin.
    """

    def __init__(self, scope: Construct, id_: str, *, image: ContainerImage, region: str) -> None:
        super().__init__(scope, id_)
        repository = image.repository_in(region)
        location = ecr_image(f"{repository}:{image.tag}")
        if location is None or location.account is None:
            raise ValueError(f"{repository} is not an ECR repository of a named registry")
        self.repository_arn: str = ecr_repository_arn(repository=location.repository, account=location.account,
                                                      region=location.region)
        pin = image.digest_for(region)
        self.pinned = pin is not None
        self.digest: str = pin or ImageDigest(self, "Digest", registry_id=location.account,
                                              repository=location.repository, tag=image.tag,
                                              repository_arn=self.repository_arn).digest
        # SageMaker takes registry/repository:tag or registry/repository@digest, not both.
        self.uri: str = cdk.Fn.join("@", [repository, self.digest])
