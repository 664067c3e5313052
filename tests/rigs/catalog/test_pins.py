"""``python -m rigs pins refresh`` against ECR answers given by botocore's Stubber (moto has no DLC registry)."""

from __future__ import annotations

import argparse
import shutil
import stat

import boto3
import pytest
from botocore.stub import Stubber

from rigs import cli

from rigs.catalog import pins
from rigs.catalog.model import CATALOG_PATH, load_catalog, parse_catalog

RIG = load_catalog().get("sagemaker")
PINNED = RIG.image.digest_for("us-east-2")
NEW = "sha256:" + "1" * 64
OTHER = "sha256:" + "2" * 64
REQUEST = {"registryId": "763104351884", "repositoryName": "vllm", "imageIds": [{"imageTag": RIG.image.tag}]}


@pytest.fixture
def catalog(tmp_path):
    path = tmp_path / "catalog.yaml"
    shutil.copy(CATALOG_PATH, path)
    return path


class Registry:
    """One stubbed ECR client per region; ``answer`` queues what the region's registry says."""

    def __init__(self) -> None:
        self.clients: dict[str, object] = {}
        self.stubbers: dict[str, Stubber] = {}

    def __call__(self, region: str):
        return self.clients[region]

    def region(self, region: str) -> Stubber:
        if region not in self.clients:
            self.clients[region] = boto3.client("ecr", region_name=region)
            self.stubbers[region] = Stubber(self.clients[region]).__enter__()
        return self.stubbers[region]

    def digest(self, region: str, digest: str) -> None:
        self.region(region).add_response("describe_images", {"imageDetails": [
            {"registryId": "763104351884", "repositoryName": "vllm", "imageDigest": digest,
             "imageTags": [RIG.image.tag]}]}, REQUEST)

    def error(self, region: str, operation: str, code: str, expected: dict | None = None) -> None:
        self.region(region).add_client_error(operation, service_error_code=code, service_message=f"{code} here",
                                             http_status_code=400, expected_params=expected)

    def verify(self) -> None:
        for stubber in self.stubbers.values():
            stubber.assert_no_pending_responses()


def pins_in(path) -> dict[str, str]:
    return dict(parse_catalog(path.read_text()).get("sagemaker").image.digests)


def test_refresh_pins_each_region_from_its_own_registry_and_keeps_every_other_line(catalog):
    registry = Registry()
    registry.digest("us-east-2", PINNED)
    registry.digest("us-east-1", NEW)
    registry.error("us-west-2", "describe_images", "ImageNotFoundException", REQUEST)
    results = pins.refresh([RIG], registry, path=catalog)
    registry.verify()
    assert [r.line() for r in results] == [
        f"sagemaker us-east-2: {PINNED} (unchanged)",
        f"sagemaker us-east-1: {NEW} (new pin)",
        "sagemaker us-west-2: not in this region's registry (ImageNotFoundException); left unpinned: "
        "a deploy here fails on it",
    ]
    assert pins_in(catalog) == {"us-east-2": PINNED, "us-east-1": NEW}
    before, after = CATALOG_PATH.read_text().splitlines(), catalog.read_text().splitlines()
    assert [line for line in after if line not in before] == [f"      us-east-1: {NEW}"]
    assert [line for line in before if line not in after] == []


def test_a_caller_who_may_pull_but_not_describe_reads_the_digest_by_batch_get_image(catalog):
    registry = Registry()
    registry.error("us-east-2", "describe_images", "AccessDeniedException", REQUEST)
    registry.region("us-east-2").add_response(
        "batch_get_image", {"images": [{"imageId": {"imageDigest": OTHER, "imageTag": RIG.image.tag}}],
                            "failures": []},
        {**REQUEST, "acceptedMediaTypes": pins._MANIFEST_TYPES})
    [result] = pins.refresh([RIG], registry, regions=["us-east-2"], path=catalog)
    registry.verify()
    assert result.line() == f"sagemaker us-east-2: {OTHER} (was {PINNED})"
    assert pins_in(catalog) == {"us-east-2": OTHER}


def test_a_stale_pin_is_removed_where_the_tag_is_gone(catalog):
    registry = Registry()
    registry.digest("us-east-1", NEW)
    pins.refresh([RIG], registry, regions=["us-east-1"], path=catalog)
    registry.error("us-east-1", "describe_images", "ImageNotFoundException", REQUEST)
    [result] = pins.refresh([parse_catalog(catalog.read_text()).get("sagemaker")], registry, regions=["us-east-1"],
                            path=catalog)
    assert result.line() == ("sagemaker us-east-1: not in this region's registry (ImageNotFoundException); "
                             "pin removed: a deploy here fails on it")
    assert pins_in(catalog) == {"us-east-2": PINNED}


def test_a_region_that_cannot_be_read_keeps_its_pin_and_the_command_exits_1(catalog):
    registry = Registry()
    registry.error("us-east-2", "describe_images", "AccessDeniedException", REQUEST)
    registry.error("us-east-2", "batch_get_image", "AccessDeniedException")
    registry.digest("us-east-1", NEW)
    said = []
    args = argparse.Namespace(rigs=[], regions=["us-east-2", "us-east-1"], dry_run=False)
    assert pins.run(args, lambda: FakeSession(registry), said.append, path=catalog) == 1
    assert said == ["sagemaker us-east-2: not read (AccessDeniedException); pin kept as it was",
                    f"sagemaker us-east-1: {NEW} (new pin)",
                    "changed 1 pin(s) in catalog.yaml"]
    assert pins_in(catalog) == {"us-east-2": PINNED, "us-east-1": NEW}


class FakeSession:
    """What aws.Clients needs of a boto3 session: clients, here the stubbed ones."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    def client(self, service: str, region_name: str | None = None, config=None):
        assert service == "ecr"
        return self.registry(region_name)


def test_a_refresh_that_would_write_an_invalid_pin_writes_nothing(catalog):
    registry = Registry()
    registry.digest("us-east-2", "sha256:short")
    with pytest.raises(pins.PinsError, match=r"^catalog.yaml not written, the refreshed pins would be invalid: "
                                             r"rigs.sagemaker.image_digests.us-east-2: must look like sha256:"):
        pins.refresh([RIG], registry, regions=["us-east-2"], path=catalog)
    assert catalog.read_text() == CATALOG_PATH.read_text()


def test_the_default_regions_pin_is_optional_too(catalog):
    """Without a pin the stack reads the tag's digest at deploy (stacks/parts/images/pin.py)."""
    registry = Registry()
    registry.error("us-east-2", "describe_images", "ImageNotFoundException", REQUEST)
    pins.refresh([RIG], registry, regions=["us-east-2"], path=catalog)
    assert pins_in(catalog) == {}
    assert "    image_digests:\n" not in catalog.read_text()


def test_a_refreshed_catalog_stays_readable_by_everyone_and_leaves_no_temporary_file(catalog):
    catalog.chmod(0o644)
    registry = Registry()
    registry.digest("us-east-1", NEW)
    pins.refresh([RIG], registry, regions=["us-east-1"], path=catalog)
    assert pins_in(catalog)["us-east-1"] == NEW
    assert stat.S_IMODE(catalog.stat().st_mode) == 0o644
    assert [p.name for p in catalog.parent.iterdir()] == [catalog.name]


def test_a_dry_run_writes_nothing(catalog):
    registry = Registry()
    registry.digest("us-east-1", NEW)
    [result] = pins.refresh([RIG], registry, regions=["us-east-1"], path=catalog, write=False)
    assert result.pin == NEW
    assert catalog.read_text() == CATALOG_PATH.read_text()


def test_a_rig_without_a_regional_image_is_bad_input_before_any_aws_call(capsys):
    assert cli.main(["pins", "refresh", "g6"]) == cli.EXIT_USAGE
    assert capsys.readouterr().err == ("error: g6: not pinned per region (only images in a regional registry are; "
                                       "those rigs pin one digest in rigs/catalog.yaml)\n")


def test_rewrite_adds_the_block_after_the_image_line_when_there_is_none():
    text = "rigs:\n  sm:\n    kind: sagemaker\n    image: r/{region}:t\n    model_id: m\n  other:\n    kind: x\n"
    assert pins.rewrite_pins(text, "sm", {"us-east-2": PINNED}) == (
        "rigs:\n  sm:\n    kind: sagemaker\n    image: r/{region}:t\n    image_digests:\n"
        f"      us-east-2: {PINNED}\n    model_id: m\n  other:\n    kind: x\n")
