"""Where a rig's server image is pulled from: the catalog's images and the ECR references a user may give.

Images under :data:`OWN_IMAGE_PREFIX` are built by this app into the account's own ECR (the g5g image); every other
catalog image is public. The deploy options (``-c image.<rig>``), the pins, the doctor, the stacks and the offline
AWS read image references through this module.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

from rigs.catalog.served import PinnedImage
from rigs.contract import MANAGED_BY

OWN_IMAGE_PREFIX = f"{MANAGED_BY}/"
"""Catalog images under this namespace are built by this app into the account's own ECR
(the g5g image, by the InferenceG5gImage stack); they have no public registry."""

_ECR = re.compile(r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com/"
                  r"(?P<repository>[a-z0-9][a-z0-9._/-]*?)(?P<ref>(:[\w][\w.-]{0,127})?(@sha256:[0-9a-f]{64})?)$")


class _Typed(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class EcrImage(_Typed):
    """An image in an ECR repository; ``account`` None means the deploying account."""

    repository: str
    ref: str
    """``:tag``, ``@sha256:…`` or both."""
    account: str | None = None
    region: str | None = None


class ServerImage(_Typed):
    """Where an EC2 rig pulls its server image: a public reference or an ECR image."""

    public: str | None = None
    ecr: EcrImage | None = None


def ecr_image(reference: str) -> EcrImage | None:
    """Split an ECR pull reference into account, region, repository and tag/digest."""
    match = _ECR.match(reference)
    if not match or not match.group("ref"):
        return None
    return EcrImage(repository=match.group("repository"), ref=match.group("ref"),
                    account=match.group("account"), region=match.group("region"))


def pull_form(reference: str) -> str:
    """``repo:tag@sha256:…`` as ``repo@sha256:…`` (Docker pulls such a reference by the digest alone, and
    docker/cli#7181 refuses the pair); any other reference unchanged."""
    name, at, digest = reference.partition("@")
    if not at:
        return reference
    path, slash, last = name.rpartition("/")
    return f"{path}{slash}{last.partition(':')[0]}@{digest}"


def catalog_image(rig: PinnedImage) -> ServerImage:
    """The catalog's image, as pulled (:meth:`rigs.catalog.served.ContainerImage.pull_reference`): the account's own
    ECR for ``aws-inference/…``, else public."""
    if rig.image.repository.startswith(OWN_IMAGE_PREFIX):
        ref = f"@{rig.image.digest}" if rig.image.digest else f":{rig.image.tag}"
        return ServerImage(ecr=EcrImage(repository=rig.image.repository, ref=ref))
    return ServerImage(public=rig.image.pull_reference())
