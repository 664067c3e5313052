"""The image handlers: the SageMaker image's digest read at deploy time, and stopping the g5g
image's running builds when its stack is deleted.

ECR and CodeBuild answers come from botocore's Stubber (the request shapes are checked against
botocore's models) and, for ECR, from moto; each handler also runs as its inline Lambda source,
so the reason CloudFormation would show in the stack events (``Received response status [FAILED]
from custom resource. Message returned: <reason>``) is the one asserted.
"""

from __future__ import annotations

import json
from unittest import mock

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from rigs.catalog.model import load_catalog
from stacks.parts.handlers import build_stop, image_digest
from stacks.parts.inline_function import inline_source

TAG = load_catalog().get("sagemaker").image.tag
PROPERTIES = {"RegistryId": "763104351884", "RepositoryName": "vllm", "ImageTag": TAG}
REQUEST = {"registryId": "763104351884", "repositoryName": "vllm", "imageIds": [{"imageTag": TAG}]}
DIGEST = "sha256:" + "4f" * 32
IMAGE_US_WEST_2 = f"763104351884.dkr.ecr.us-west-2.amazonaws.com/vllm:{TAG}"


@pytest.fixture
def ecr():
    client = boto3.client("ecr", region_name="us-west-2")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def run_inline(handler: str, event: dict, clients: dict) -> dict:
    """Run ``handler``'s inline Lambda source with ``clients`` for boto3; the answer it PUTs to CloudFormation."""
    namespace: dict = {}
    exec(compile(inline_source(handler), f"{handler}.py", "exec"), namespace)  # noqa: S102 - the Lambda's own code
    namespace["boto3"] = type("Boto3", (), {"client": staticmethod(lambda service, **_: clients[service])})
    sent = []
    with mock.patch("urllib.request.urlopen", lambda request, timeout: sent.append(json.loads(request.data))):
        namespace["handler"](event, None)
    [answer] = sent
    return answer


def event(request_type: str, properties: dict) -> dict:
    return {"RequestType": request_type, "ResponseURL": "https://cfn-response.example/put", "StackId": "stack",
            "RequestId": "req", "LogicalResourceId": "Res", "ResourceProperties": properties,
            **({"PhysicalResourceId": "Res"} if request_type != "Create" else {})}


# --- the SageMaker image's digest ---------------------------------------------------------------


def test_the_digest_is_read_from_the_regions_registry(ecr):
    client, stubber = ecr
    stubber.add_response("describe_images", {"imageDetails": [{"imageDigest": DIGEST, "imageTags": [TAG]}]}, REQUEST)
    assert image_digest.compute(PROPERTIES, ecr=client) == {"Digest": DIGEST}


def test_a_registry_that_allows_pulls_only_is_read_with_batch_get_image(ecr):
    client, stubber = ecr
    stubber.add_client_error("describe_images", "AccessDeniedException", "not authorized", 400, expected_params=REQUEST)
    stubber.add_response("batch_get_image", {"images": [{"imageId": {"imageDigest": DIGEST, "imageTag": TAG},
                                                         "imageManifest": "{}"}], "failures": []},
                         {**REQUEST, "acceptedMediaTypes": image_digest.MANIFESTS})
    assert image_digest.compute(PROPERTIES, ecr=client) == {"Digest": DIGEST}


NOT_HERE = (f"ImageNotFoundException: {IMAGE_US_WEST_2} is not in us-west-2's registry (no tag {TAG} here); "
            "deploy the rig in another of its regions, or pin a tag published here")


def test_a_tag_the_region_does_not_have_fails_the_deploy_with_the_image_and_region(ecr):
    client, stubber = ecr
    stubber.add_client_error("describe_images", "ImageNotFoundException", f"no tag {TAG} here", 400,
                             expected_params=REQUEST)
    answer = run_inline("image_digest", event("Create", PROPERTIES), {"ecr": client})
    assert answer["Status"] == "FAILED" and answer["Reason"] == f"RuntimeError: {NOT_HERE}"
    assert answer["Data"] == {}


def test_a_missing_tag_reported_by_batch_get_image_reads_the_same(ecr):
    client, stubber = ecr
    stubber.add_client_error("describe_images", "AccessDeniedException", "not authorized", 400, expected_params=REQUEST)
    stubber.add_response("batch_get_image", {"images": [], "failures": [
        {"imageId": {"imageTag": TAG}, "failureCode": "ImageNotFound", "failureReason": "Requested image not found"}]})
    with pytest.raises(RuntimeError) as failed:
        image_digest.compute(PROPERTIES, ecr=client)
    assert str(failed.value) == (f"ImageNotFound: {IMAGE_US_WEST_2} is not in us-west-2's registry (Requested image "
                                 "not found); deploy the rig in another of its regions, or pin a tag published here")


def test_another_error_is_reported_with_its_code(ecr):
    client, stubber = ecr
    stubber.add_client_error("describe_images", "ThrottlingException", "Rate exceeded", 400, expected_params=REQUEST)
    answer = run_inline("image_digest", event("Create", PROPERTIES), {"ecr": client})
    assert answer["Status"] == "FAILED"
    assert "ThrottlingException" in answer["Reason"] and "Rate exceeded" in answer["Reason"]


def test_the_client_has_short_timeouts():
    config = image_digest.CONFIG
    assert (config.connect_timeout, config.read_timeout) == (5, 20)
    assert config.retries == {"total_max_attempts": 3, "mode": "standard"}


def test_against_moto_the_tag_is_found_in_one_region_and_missing_in_another():
    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                           "config": {"digest": "sha256:" + "0" * 64}, "layers": []})
    with mock_aws():
        west = boto3.client("ecr", region_name="us-west-2")
        west.create_repository(repositoryName="vllm", registryId="763104351884")
        pushed = west.put_image(registryId="763104351884", repositoryName="vllm", imageManifest=manifest,
                                imageTag=TAG)["image"]["imageId"]["imageDigest"]
        assert image_digest.compute(PROPERTIES, ecr=west) == {"Digest": pushed}
        with pytest.raises(RuntimeError, match=r"^RepositoryNotFoundException: 763104351884.dkr.ecr.us-east-1"
                                               r".amazonaws.com/vllm:.* is not in us-east-1's registry"):
            image_digest.compute(PROPERTIES, ecr=boto3.client("ecr", region_name="us-east-1"))


# --- stopping the image build's running builds ------------------------------------------------------


BUILDS = {"projectName": "ImageProject-abc", "sortOrder": "DESCENDING"}


@pytest.fixture
def codebuild():
    client = boto3.client("codebuild", region_name="us-east-1")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def builds(stubber: Stubber, statuses: dict[str, str]) -> None:
    ids = list(statuses)
    stubber.add_response("list_builds_for_project", {"ids": ids}, BUILDS)
    stubber.add_response("batch_get_builds", {"builds": [{"id": i, "buildStatus": s} for i, s in statuses.items()]},
                         {"ids": ids})


def test_deleting_the_stack_stops_every_build_still_running(codebuild):
    client, stubber = codebuild
    builds(stubber, {"ImageProject-abc:3": "IN_PROGRESS", "ImageProject-abc:2": "IN_PROGRESS",
                     "ImageProject-abc:1": "SUCCEEDED"})
    for build in ("ImageProject-abc:3", "ImageProject-abc:2"):
        stubber.add_response("stop_build", {"build": {"id": build, "buildStatus": "STOPPED"}}, {"id": build})
    answer = run_inline("build_stop", event("Delete", {"ProjectName": "ImageProject-abc"}), {"codebuild": client})
    assert answer["Status"] == "SUCCESS" and answer["PhysicalResourceId"] == "Res"


def test_nothing_running_or_no_project_stops_nothing(codebuild):
    client, stubber = codebuild
    builds(stubber, {"ImageProject-abc:1": "FAILED"})
    assert build_stop.on_delete({"ProjectName": "ImageProject-abc"}, codebuild=client) == []
    stubber.add_client_error("list_builds_for_project", "ResourceNotFoundException", "no project", 400,
                             expected_params=BUILDS)
    assert build_stop.on_delete({"ProjectName": "ImageProject-abc"}, codebuild=client) == []
    stubber.add_response("list_builds_for_project", {}, BUILDS)  # a project that never built
    assert build_stop.on_delete({"ProjectName": "ImageProject-abc"}, codebuild=client) == []


def test_a_build_that_cannot_be_stopped_fails_the_delete_with_its_id_and_the_fix(codebuild):
    client, stubber = codebuild
    builds(stubber, {"ImageProject-abc:4": "IN_PROGRESS"})
    stubber.add_client_error("stop_build", "AccessDeniedException", "not authorized", 400,
                             expected_params={"id": "ImageProject-abc:4"})
    answer = run_inline("build_stop", event("Delete", {"ProjectName": "ImageProject-abc"}), {"codebuild": client})
    assert answer["Status"] == "FAILED"
    assert answer["Reason"] == ("RuntimeError: could not stop ImageProject-abc:4 (AccessDeniedException): stop it "
                                "with `aws codebuild stop-build --id <id>` and delete the stack again")


@pytest.mark.parametrize("request_type", ["Create", "Update"])
def test_create_and_update_touch_no_build(codebuild, request_type):
    client, _ = codebuild  # no stubbed answer: any call would fail the test
    answer = run_inline("build_stop", event(request_type, {"ProjectName": "ImageProject-abc"}), {"codebuild": client})
    assert answer["Status"] == "SUCCESS" and answer["Data"] == {}
