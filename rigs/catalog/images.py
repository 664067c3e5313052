"""A rig's server image as the catalog writes it (``image``, ``image_digest``, ``image_digests``) and as the
code uses it (:class:`ContainerImage`)."""

from __future__ import annotations

import re
from typing import Any, ClassVar, Mapping

from pydantic import Field, StrictStr, ValidationInfo, field_validator

from rigs.catalog.checks import Frozen, checked
from rigs.contract import REGIONS

REGION_PLACEHOLDER = "{region}"
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


class ContainerImage(Frozen):
    """A container image pinned by tag, and by digest where it is known.

    A registry that is one for the world (Docker Hub) has one digest per tag: ``digest``.
    A regional registry (a ``{region}`` placeholder in the repository, such as AWS's
    SageMaker DLC registry) is a separate registry per region, and a digest read in one
    region is not guaranteed in another, so its pins are per region and optional:
    ``digests`` (region -> digest, written by ``python -m rigs pins refresh``). Where a
    region has no pin, the stack reads the digest its tag points to there at deploy time
    (``stacks/parts/images/pin.py``) and runs the image by that digest.
    """

    repository: str
    tag: str
    digest: str | None = None
    digests: Mapping[str, str] = {}

    @property
    def regional(self) -> bool:
        """Whether the repository names a per-region registry (a ``{region}`` placeholder)."""
        return REGION_PLACEHOLDER in self.repository

    def digest_for(self, region: str | None) -> str | None:
        """The pinned digest of this tag in ``region``; None where nothing is pinned there."""
        if not self.regional:
            return self.digest
        return self.digests.get(region) if region else None

    def repository_in(self, region: str | None) -> str:
        """The repository with a ``{region}`` placeholder filled (unchanged when ``region`` is None)."""
        return self.repository.replace(REGION_PLACEHOLDER, region) if region else self.repository

    def reference(self, region: str | None = None) -> str:
        """The pull reference in ``region``: ``repo:tag@sha256:…`` where a digest is pinned there.

        A regional image without a pin in ``region`` (or without a region) gives
        ``repo:tag`` only; :meth:`digest_for` says whether there is a pin.
        """
        ref = f"{self.repository_in(region)}:{self.tag}"
        digest = self.digest_for(region)
        return f"{ref}@{digest}" if digest else ref


def _image_text(text: str) -> str | None:
    if "@" in text:
        return "put the digest in image_digest, not in image"
    if ":" not in text.rsplit("/", 1)[-1]:
        return f"{text!r} has no tag; pin a version tag (never :latest)"
    if text.rsplit(":", 1)[1] == "latest":
        return f"{text!r} uses :latest; pin a version tag"
    return None


def _in_regions(region: str) -> str | None:
    return None if region in REGIONS else f"outside the four regions {', '.join(REGIONS)}"


ImageText = checked(StrictStr, _image_text)
Digest = checked(StrictStr, lambda d: None if _DIGEST.match(d) else f"must look like sha256:<64 hex digits>, got {d!r}",
                 pattern=_DIGEST.pattern)
RegionName = checked(StrictStr, _in_regions, enum=list(REGIONS))


class ImageFields(Frozen):
    """The ``image`` (``repository:tag``) and ``image_digest`` keys, checked the same way wherever they are."""

    regional_images: ClassVar[bool] = False
    """Whether the image may live in a regional registry (a ``{region}`` placeholder)."""

    @field_validator("image_reference", check_fields=False)
    @classmethod
    def _placeholder(cls, text: str | None) -> str | None:
        if text and REGION_PLACEHOLDER in text and not cls.regional_images:
            raise ValueError("a {region} placeholder is only allowed for SageMaker images")
        return text

    @field_validator("image_digest", check_fields=False)
    @classmethod
    def _one_digest(cls, digest: str | None, info: ValidationInfo) -> str | None:
        if digest and REGION_PLACEHOLDER in (info.data.get("image_reference") or ""):
            raise ValueError("a regional registry is pinned per region: use image_digests "
                             "(region: digest; `python -m rigs pins refresh` writes them)")
        return digest


class PinnedImage(ImageFields):
    """A rig's own image: ``image``, one ``image_digest`` or, in a regional registry, ``image_digests``."""

    image_reference: ImageText = Field(alias="image")
    image_digest: Digest | None = None
    image_digests: Mapping[RegionName, Digest] = {}
    """Per-region pins of an image in a regional registry (``python -m rigs pins refresh`` writes them)."""

    @field_validator("image_digests")
    @classmethod
    def _pins(cls, pins: Mapping[str, str], info: ValidationInfo) -> Mapping[str, str]:
        if REGION_PLACEHOLDER not in (info.data.get("image_reference") or REGION_PLACEHOLDER):
            raise ValueError("only an image with a {region} placeholder is pinned per region; use image_digest")
        regions: Any = info.data.get("regions") or ()
        stray = sorted(set(pins) - set(regions))
        if stray and "regions" in info.data:
            raise ValueError(f"pins for {', '.join(stray)}, which the rig does not run in "
                             f"(its regions: {', '.join(regions)})")
        return pins

    @property
    def image(self) -> ContainerImage:
        """The image as the stacks and the agent use it."""
        repository, tag = self.image_reference.rsplit(":", 1)
        return ContainerImage(repository=repository, tag=tag, digest=self.image_digest,
                              digests=dict(self.image_digests))
