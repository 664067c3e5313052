"""``python -m rigs pins refresh``: pin regional images by digest, region by region, from their registry.

AWS's SageMaker DLC registry (account 763104351884) is a separate registry in every
region, and a digest read in one region is not guaranteed in another. The stacks read the
digest a tag points to in their region at deploy time; a pin (``image_digests``) overrides
that with one chosen digest per region. This command reads, in each region, the digest its
tag points to there (ECR ``DescribeImages``; ``BatchGetImage`` when the caller may pull but
not describe) and rewrites those lines of ``rigs/catalog.yaml``, nothing else:

- a tag the region's registry has: pinned to the digest read there;
- a tag the region's registry does not have (``ImageNotFoundException``): its pin, if any,
  is removed (a deploy there then fails at once, reading the same registry, with that reason);
- any other error (access denied, throttling, no network): that region's pin is kept as it
  was, the error is reported, and the command exits 1.

The file is written only when every rig it touches still validates, and atomically
(``kit.files.write_atomic``: a temporary file renamed over it, mode 0644), so an interrupted or failed
refresh leaves it unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from kit.files import write_atomic
from kit.options import Option, add_command
from rigs import aws
from rigs.catalog.images import ecr_image
from rigs.catalog.model import CATALOG_PATH, CatalogError, ContainerImage, SageMakerRig, load_catalog, parse_catalog
from rigs.shared_options import EACH_RIGS_REGIONS, Global

NOT_FOUND_CODES = ("ImageNotFoundException", "RepositoryNotFoundException", "ImageNotFound")
"""DescribeImages' error codes and BatchGetImage's failure code for a tag the registry does not have."""
_MANIFEST_TYPES = ["application/vnd.docker.distribution.manifest.v2+json",
                   "application/vnd.docker.distribution.manifest.list.v2+json",
                   "application/vnd.oci.image.manifest.v1+json",
                   "application/vnd.oci.image.index.v1+json"]


class PinsError(aws.RigsError):
    """The catalog cannot be refreshed as asked (nothing regional to pin, an invalid result)."""


class NotRegionalError(PinsError):
    """A rig named on the command line whose image is not pinned per region (bad input)."""


class ImageReadFailure(Exception):
    """BatchGetImage answered, but with a failure for the tag (its ``failureCode``)."""

    def __init__(self, code: str, reason: str) -> None:
        self.code = code
        super().__init__(f"{code}: {reason}")


@dataclass(frozen=True, slots=True)
class PinResult:
    """What one region's registry said about one rig's image tag."""

    rig: str
    region: str
    previous: str | None
    digest: str | None
    """The digest read there; None when the tag is not there or the read failed."""
    error: str = ""
    """Why no digest was read; empty when one was."""
    missing: bool = False
    """The registry answered that the tag (or repository) is not there."""

    @property
    def pin(self) -> str | None:
        """The pin to keep for this region: the new digest, none when missing, the old one on an error."""
        if self.digest:
            return self.digest
        return None if self.missing else self.previous

    def line(self) -> str:
        head = f"{self.rig} {self.region}:"
        if self.digest:
            change = "unchanged" if self.digest == self.previous else (
                f"was {self.previous}" if self.previous else "new pin")
            return f"{head} {self.digest} ({change})"
        if self.missing:
            return (f"{head} not in this region's registry ({self.error}); "
                    + ("pin removed" if self.previous else "left unpinned") + ": a deploy here fails on it")
        return f"{head} not read ({self.error}); " + ("pin kept as it was" if self.previous else "left unpinned")


def read_digest(ecr: Any, registry_id: str, repository: str, tag: str) -> str:
    """The digest ``repository:tag`` points to in this client's region (DescribeImages, else BatchGetImage)."""
    try:
        details = aws.call(ecr.describe_images, registryId=registry_id, repositoryName=repository,
                           imageIds=[{"imageTag": tag}])["imageDetails"]
        return details[0]["imageDigest"]
    except Exception as exc:  # noqa: BLE001 - only a refused describe falls back to a pull-side read
        if aws.error_code(exc) != "AccessDeniedException":
            raise
    found = aws.call(ecr.batch_get_image, registryId=registry_id, repositoryName=repository,
                     imageIds=[{"imageTag": tag}], acceptedMediaTypes=_MANIFEST_TYPES)
    if found.get("images"):
        return found["images"][0]["imageId"]["imageDigest"]
    failure = (found.get("failures") or [{}])[0]
    raise ImageReadFailure(failure.get("failureCode") or "ImageNotFound", failure.get("failureReason") or "")


def check_region(rig: str, image: ContainerImage, region: str, ecr: Any) -> PinResult:
    """Read the digest of ``image``'s tag in ``region``, classified as a pin, a missing tag or an error."""
    previous = image.digest_for(region)
    location = ecr_image(f"{image.repository_in(region)}:{image.tag}")
    if location is None or location.account is None:
        raise PinsError(f"{rig}: {image.repository} is not an ECR repository")
    try:
        digest = read_digest(ecr, location.account, location.repository, image.tag)
    except ImageReadFailure as exc:
        code = exc.code
    except Exception as exc:  # noqa: BLE001 - reported per region, classified by code
        failure = aws.classify(exc)
        if failure.kind == aws.CREDENTIALS:
            raise aws.CredentialsError(failure.code) from None
        code = failure.code
    else:
        return PinResult(rig, region, previous, digest)
    return PinResult(rig, region, previous, None, error=code, missing=code in NOT_FOUND_CODES)


def rewrite_pins(text: str, rig: str, pins: Mapping[str, str]) -> str:
    """``text`` (catalog.yaml) with ``rigs.<rig>.image_digests`` replaced by ``pins``; every other line kept.

    ``pins`` is written in the order given. The block is inserted after the rig's ``image:``
    line when it has none.
    """
    lines = text.splitlines(keepends=True)
    try:
        top = next(i for i, line in enumerate(lines) if line.rstrip() == "rigs:")
        start = next(i for i in range(top + 1, len(lines)) if lines[i].rstrip() == f"  {rig}:")
    except StopIteration:
        raise PinsError(f"rigs.{rig} not found in the catalog text") from None
    end = next((i for i in range(start + 1, len(lines))
                if lines[i].strip() and not lines[i].startswith("   ")), len(lines))
    block = ["    image_digests:\n"] + [f"      {region}: {digest}\n" for region, digest in pins.items()] \
        if pins else []
    existing = next((i for i in range(start, end) if lines[i].startswith("    image_digests:")), None)
    if existing is not None:
        stop = existing + 1
        while stop < end and lines[stop].startswith("      "):
            stop += 1
        return "".join(lines[:existing] + block + lines[stop:])
    image_line = next((i for i in range(start, end) if lines[i].startswith("    image:")), None)
    if image_line is None:
        raise PinsError(f"rigs.{rig} has no image line")
    return "".join(lines[:image_line + 1] + block + lines[image_line + 1:])


def regional_rigs(names: Sequence[str] = ()) -> list[SageMakerRig]:
    """The rigs whose image lives in a regional registry (named ones, or all of them)."""
    catalog = load_catalog()
    chosen = [catalog.get(name) for name in names] if names else list(catalog.rigs.values())
    regional = [r for r in chosen if r.pinned_per_region]
    if names and len(regional) != len(chosen):
        others = [r.name for r in chosen if r not in regional]
        raise NotRegionalError(f"{', '.join(others)}: not pinned per region (only images in a regional registry are; "
                        f"those rigs pin one digest in rigs/catalog.yaml)")
    return regional


def refresh(rigs: Iterable[SageMakerRig], ecr_for: Callable[[str], Any], regions: Sequence[str] | None = None,
            path: Path = CATALOG_PATH, write: bool = True) -> list[PinResult]:
    """Read every rig's digest in each of its regions (or ``regions``) and rewrite the catalog's pins."""
    text = path.read_text(encoding="utf-8")
    results: list[PinResult] = []
    for rig in rigs:
        asked = [r for r in rig.regions if regions is None or r in regions]
        found = {region: check_region(rig.name, rig.image, region, ecr_for(region)) for region in asked}
        results.extend(found.values())
        pins = {}
        for region in rig.regions:
            pin = found[region].pin if region in found else rig.image.digest_for(region)
            if pin:
                pins[region] = pin
        text = rewrite_pins(text, rig.name, pins)
    try:
        parse_catalog(text, source=path.name)
    except CatalogError as exc:
        raise PinsError(f"{path.name} not written, the refreshed pins would be invalid: "
                        + "; ".join(exc.problems)) from None
    if write and text != path.read_text(encoding="utf-8"):
        write_atomic(path, text)
    return results


class RefreshOptions(Global):
    """``python -m rigs pins refresh``."""

    rigs = Option((), "rigs to pin (default: every rig with a regional image)", default=(), nargs="*", metavar="RIG")
    regions = EACH_RIGS_REGIONS
    dry_run = Option(("--dry-run",), "print what would change; write nothing", default=False, switch=True)


def add_parser(sub: Any) -> None:
    """``pins refresh`` under ``python -m rigs``."""
    pins = sub.add_parser("pins", help="per-region image pins of regional registries (the SageMaker image)")
    actions = pins.add_subparsers(dest="pins_command", required=True, metavar="ACTION")
    add_command(actions, "refresh", RefreshOptions, "read each region's digest of the pinned tag from ECR and rewrite "
                "rigs/catalog.yaml's image_digests", beside=Global)


def run(args: Any, session: Callable[[], Any], say: Callable[[str], None] = print,
        path: Path = CATALOG_PATH) -> int:
    """The command: 0 when every region asked answered, 1 when some could not be read.

    ``session`` makes the AWS session (checking credentials) once the rigs named are known good.
    """
    rigs = regional_rigs(args.rigs)
    clients = aws.Clients(session())
    results = refresh(rigs, lambda region: clients("ecr", region), args.regions, path=path, write=not args.dry_run)
    for result in results:
        say(result.line())
    changed = [r for r in results if r.pin != r.previous]
    say(("would change" if args.dry_run else "changed") + f" {len(changed)} pin(s)"
        + ("" if args.dry_run or not changed else f" in {path.name}"))
    return 1 if any(r.error and not r.missing for r in results) else 0
