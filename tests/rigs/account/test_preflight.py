"""Preflight: moto answers EC2 offerings and instance types; Service Quotas goes through botocore's Stubber."""

from __future__ import annotations

import json

import boto3
import botocore.exceptions
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from rigs import aws

from rigs.account.preflight import NOT_LISTED, OK, SKIP, quota_class, render, run_preflight, select_rigs
from rigs.catalog.model import UnknownRigError, load_catalog
from rigs.catalog.pricing import PriceBook
from rigs.cli import main
from rigs.placement import placement

from tests.rigs.awsfakes import StubSession

from tests.rigs.awsfakes import plain_client

CATALOG = load_catalog()


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(placement.STATE_DIR_ENV, str(tmp_path / "state"))
    monkeypatch.setattr("rigs.aws.time.sleep", lambda _s: None)
    return tmp_path / "state"


def quota(code: str, value: float, name: str = "q") -> dict:
    return {"Quota": {"ServiceCode": "ec2", "QuotaCode": code, "QuotaName": name, "Value": value,
                      "Unit": "None", "Adjustable": True, "GlobalQuota": False}}


class QuotaStubs:
    """One stubbed Service Quotas client per region; responses are added in call order."""

    def __init__(self, regions):
        self.clients = {r: plain_client("service-quotas", r) for r in regions}
        self.stubbers = {r: Stubber(c) for r, c in self.clients.items()}

    def ec2(self, region, code, value, name="q"):
        self.stubbers[region].add_response("get_service_quota", quota(code, value, name),
                                           {"ServiceCode": "ec2", "QuotaCode": code})

    def ec2_error(self, region, code, error="NoSuchResourceException"):
        self.stubbers[region].add_client_error("get_service_quota", service_error_code=error,
                                               expected_params={"ServiceCode": "ec2", "QuotaCode": code})

    def sagemaker(self, region, quotas):
        self.stubbers[region].add_response("list_service_quotas", {"Quotas": [
            {"ServiceCode": "sagemaker", "QuotaName": name, "QuotaCode": f"L-SM{i}", "Value": value}
            for i, (name, value) in enumerate(quotas.items())]}, {"ServiceCode": "sagemaker"})

    def session(self):
        return StubSession({("service-quotas", r): c for r, c in self.clients.items()})

    def __enter__(self):
        for stubber in self.stubbers.values():
            stubber.activate()
        return self

    def __exit__(self, *exc):
        for stubber in self.stubbers.values():
            stubber.deactivate()
        if exc[0] is None:
            for stubber in self.stubbers.values():
                stubber.assert_no_pending_responses()


def test_quota_classes():
    assert [quota_class(t) for t in ("g6.xlarge", "g5g.2xlarge", "inf2.xlarge", "trn1.2xlarge", "vt1.3xlarge")] == \
        ["g", "g", "inf", "trn", "vt"]


@mock_aws
def test_inf2_us_east_2_with_quota_free_is_placed_with_its_zones():
    with QuotaStubs(["us-east-2"]) as stubs:
        stubs.ec2("us-east-2", "L-1945791B", 80, "Running On-Demand Inf instances")
        stubs.ec2("us-east-2", "L-B5D1601B", 96, "All Inf Spot Instance Requests")
        report = run_preflight([CATALOG.get("inf2")], stubs.session(), ["us-east-2"])
    (check,) = report.checks
    assert check.verdict == OK
    assert check.zones == ("us-east-2a", "us-east-2b", "us-east-2c")
    assert check.vcpus == 4
    assert (check.on_demand.code, check.on_demand.value, check.on_demand.used) == ("L-1945791B", 80, 0)
    assert check.price.usd_per_hour == pytest.approx(0.7582)
    recorded = placement.load().get("inf2")
    assert [(c.region, c.zones) for c in recorded.candidates] == [("us-east-2", ("us-east-2a", "us-east-2b",
                                                                                 "us-east-2c"))]


@mock_aws
def test_trn_quota_zero_is_reported_as_quota_zero_not_capacity():
    with QuotaStubs(["us-east-2"]) as stubs:
        stubs.ec2("us-east-2", "L-2C3B7624", 0, "Running On-Demand Trn instances")
        stubs.ec2("us-east-2", "L-6B0D517C", 0, "All Trn Spot Instance Requests")
        report = run_preflight([CATALOG.get("trn1")], stubs.session(), ["us-east-2"])
    (check,) = report.checks
    assert check.verdict == SKIP
    assert check.zones == ("us-east-2c",)  # offered in one zone only
    assert "quota is 0 vCPU" in check.reason and "L-2C3B7624" in check.reason
    assert "capacity" not in check.reason.lower()
    assert report.placements["trn1"] == ()
    assert report.unplaceable == ["trn1"]


@mock_aws
def test_quota_already_used_by_running_instances_is_counted():
    ec2 = boto3.client("ec2", region_name="us-east-1")
    ec2.run_instances(ImageId="ami-12c6146b", MinCount=2, MaxCount=2, InstanceType="g6.xlarge")  # not ours: counts
    with QuotaStubs(["us-east-1"]) as stubs:
        stubs.ec2("us-east-1", "L-DB2E81BA", 8, "Running On-Demand G and VT instances")
        stubs.ec2("us-east-1", "L-3819A6DF", 8)
        report = run_preflight([CATALOG.get("g6")], stubs.session(), ["us-east-1"])
    (check,) = report.checks
    assert check.verdict == SKIP
    assert check.on_demand.used == 8 and check.on_demand.free == 0
    assert "0 free, g6.xlarge needs 4" in check.reason


@mock_aws
def test_region_that_offers_none_is_skipped_with_the_reason_and_never_queries_quotas():
    with QuotaStubs(["us-west-1"]) as stubs:  # no responses queued: a quota call would fail the test
        report = run_preflight(CATALOG.ec2_rigs(), stubs.session(), ["us-west-1"])
    assert {c.rig: c.verdict for c in report.checks} == {"g6": SKIP, "g5g": SKIP, "inf2": SKIP, "trn1": SKIP}
    for check in report.checks:
        assert check.reason == f"us-west-1 offers no {check.instance_type} in any zone"
        assert "capacity" not in check.reason


@mock_aws
def test_full_preflight_all_rigs_all_regions_with_unknown_quotas():
    """Service Quotas unavailable (moto's server answers like this): quotas unknown, rigs still placed."""
    regions = ["us-east-1", "us-east-2", "us-west-1", "us-west-2"]
    rigs, _ = select_rigs([])
    sagemaker = CATALOG.get("sagemaker")
    dlc = boto3.client("ecr", region_name="us-east-1")  # AWS's registry in us-east-1 has the tag; us-west-2's not
    dlc.create_repository(repositoryName="vllm", registryId="763104351884")
    dlc.put_image(registryId="763104351884", repositoryName="vllm", imageTag=sagemaker.image.tag,
                  imageManifest=json.dumps({"schemaVersion": 2, "layers": [],
                                            "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                                            "config": {"digest": "sha256:" + "1" * 64, "size": 1,
                                                       "mediaType": "application/vnd.docker.container.image.v1+json"}}))
    with QuotaStubs(regions) as stubs:
        offered = {"us-east-1": ["g", "inf", "trn"], "us-east-2": ["g", "inf", "trn"], "us-west-1": [],
                   "us-west-2": ["g", "inf", "trn"]}
        codes = {"g": ("L-DB2E81BA", "L-3819A6DF"), "inf": ("L-1945791B", "L-B5D1601B"),
                 "trn": ("L-2C3B7624", "L-6B0D517C")}
        for region, classes in offered.items():
            for klass in classes:
                for code in codes[klass]:
                    stubs.ec2_error(region, code)
            stubs.stubbers[region].add_client_error("list_service_quotas", service_error_code="500",
                                                    http_status_code=500)
        report = run_preflight(rigs, stubs.session(), regions, prices=PriceBook())
    by = {(c.rig, c.region): c for c in report.checks}
    assert by[("g5g", "us-east-2")].verdict == SKIP  # moto: no g5g in us-east-2
    assert by[("g5g", "us-east-1")].verdict == OK
    assert by[("g6", "us-east-1")].on_demand.unknown_reason == "Service Quotas: NoSuchResourceException"
    assert by[("sagemaker", "us-west-1")].verdict == NOT_LISTED
    assert [c.region for c in report.placements["g6"]] == ["us-east-2", "us-east-1", "us-west-2"]  # catalog order
    assert [c.region for c in report.placements["g5g"]] == ["us-east-1", "us-west-2"]
    # the catalog pins the SageMaker image in us-east-2 only; elsewhere the tag is looked for in the region's
    # registry (the stack reads its digest there at deploy time): us-east-1 has it, us-west-2 does not
    assert [c.region for c in report.placements["sagemaker"]] == ["us-east-2", "us-east-1"]
    missing = by[("sagemaker", "us-west-2")]
    assert missing.verdict == SKIP and missing.reason == (
        f"its image tag {sagemaker.image.tag} is not in us-west-2's registry (RepositoryNotFoundException): the "
        "deploy would fail there")
    assert report.placements["trn1"][0].zones == ("us-east-2c",)
    from rich.console import Console
    console = Console(record=True, width=250)
    console.print(render(report))
    text = console.export_text()
    assert "us-west-1 offers no g6.xlarge in any zone" in text
    assert "quota not readable (500)" in text


@mock_aws
def test_sagemaker_endpoint_quota_used_by_a_live_endpoint_and_type_not_offered():
    sm = boto3.client("sagemaker", region_name="us-east-2")
    sm.create_model(ModelName="m", ExecutionRoleArn="arn:aws:iam::123456789012:role/r",
                    PrimaryContainer={"Image": "img"})
    sm.create_endpoint_config(EndpointConfigName="c", ProductionVariants=[{
        "VariantName": "AllTraffic", "ModelName": "m", "InstanceType": "ml.m5.large", "InitialInstanceCount": 1}])
    sm.create_endpoint(EndpointName="someone-elses", EndpointConfigName="c")
    rig = CATALOG.get("sagemaker")
    # the endpoint above uses ml.m5.large; count it against a copy of the rig using that type
    m5 = rig.model_copy(update={"instance_type": "ml.m5.large"})
    with QuotaStubs(["us-east-2", "us-west-1"]) as stubs:
        stubs.sagemaker("us-east-2", {"ml.m5.large for endpoint usage": 1, "ml.g6.xlarge for endpoint usage": 1})
        stubs.sagemaker("us-west-1", {"ml.m5.large for endpoint usage": 2})
        report = run_preflight([m5, rig], stubs.session(), ["us-east-2", "us-west-1"])
    by = {(c.instance_type, c.region): c for c in report.checks}
    assert by[("ml.m5.large", "us-east-2")].verdict == SKIP
    assert "1 in use by someone-elses" in by[("ml.m5.large", "us-east-2")].reason
    assert by[("ml.g6.xlarge", "us-east-2")].verdict == OK
    assert "not offered for endpoints in us-west-1" in by[("ml.g6.xlarge", "us-west-1")].reason


@mock_aws
def test_throttled_service_quotas_is_retried_not_fatal():
    with QuotaStubs(["us-east-2"]) as stubs:
        stubs.stubbers["us-east-2"].add_client_error("get_service_quota", service_error_code="TooManyRequestsException")
        stubs.ec2("us-east-2", "L-1945791B", 80)
        stubs.ec2("us-east-2", "L-B5D1601B", 96)
        report = run_preflight([CATALOG.get("inf2")], stubs.session(), ["us-east-2"])
    assert report.checks[0].on_demand.value == 80


def test_unknown_rig_lists_the_known_ones(capsys):
    with pytest.raises(UnknownRigError, match="known rigs: g6, g5g, inf2, trn1, sagemaker, bedrock"):
        select_rigs(["g7"])
    assert main(["preflight", "g7"]) == 2
    assert "unknown rig 'g7'; known rigs: g6, g5g" in capsys.readouterr().err


def test_bedrock_is_not_deployed():
    rigs, nothing = select_rigs(["bedrock", "g6"])
    assert [r.name for r in rigs] == ["g6"] and nothing == ["bedrock"]


def test_expired_credentials_one_line_before_any_work(monkeypatch, capsys):
    sts = plain_client("sts")
    with Stubber(sts) as stubber:
        stubber.add_client_error("get_caller_identity", service_error_code="ExpiredToken",
                                 service_message="The security token included in the request is expired")
        monkeypatch.setattr("rigs.aws.make_session", lambda *a, **k: StubSession({"sts": sts}))
        assert main(["preflight", "g6"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "ExpiredToken" in err[0] and "aws sso login" in err[0] and "AWS_PROFILE" in err[0]


def test_missing_credentials(monkeypatch, capsys):
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    assert main(["status"]) == 3
    assert "no AWS credentials found" in capsys.readouterr().err


def test_error_classification_by_code():
    assert aws.classify_code("InsufficientInstanceCapacity") == aws.CAPACITY
    assert aws.classify_code("Unsupported") == aws.UNSUPPORTED
    assert aws.classify_code("VcpuLimitExceeded") == aws.QUOTA
    assert aws.classify_code("ResourceLimitExceeded") == aws.QUOTA
    assert aws.classify_code("TooManyRequestsException") == aws.THROTTLED
    assert aws.classify_code("RequestLimitExceeded") == aws.THROTTLED
    assert aws.classify_code("ExpiredToken") == aws.CREDENTIALS
    # codes inside asynchronous failure messages: whole known codes only
    sm = ("Unable to provision requested ML compute capacity due to InsufficientInstanceCapacity error. "
          "Please retry using a different ML instance type or after some time.")
    assert aws.classify_message(sm).kind == aws.CAPACITY
    unsupported = ("Launching a new EC2 instance. Status Reason: Your requested instance type (trn1.2xlarge) is not "
                   "supported in your requested Availability Zone (us-east-2a). Launching EC2 instance failed. "
                   "Unsupported")
    assert aws.classify_message(unsupported).kind == aws.UNSUPPORTED
    assert aws.classify_message("no capacity anywhere").kind == aws.OTHER  # loose words never count
    quota_message = ("You have requested more vCPU capacity than your current vCPU limit of 0 allows for the "
                     "instance bucket that the specified instance type belongs to. (VcpuLimitExceeded)")
    assert aws.classify_message(quota_message).code == "VcpuLimitExceeded"


def test_free_plan_not_here_and_sagemaker_capacity_failures_by_code():
    """Each message as published: EC2's Free-plan refusal (nilbuild/developer-roadmap#10171), SageMaker's capacity
    failure reasons (aws/deep-learning-containers#6673, DIAGNijmegen/rse-grand-challenge#2631,
    aws/amazon-sagemaker-feedback#99) and quota refusal (aws-samples/sagemaker-custom-project-templates#51),
    and the SageMaker stack's image read (stacks/parts/handlers/image_digest.py) as CloudFormation reports it."""
    free = ("The specified instance type is not eligible for Free Tier. For a list of Free Tier instance types, run "
            "'describe-instance-types' with the filter 'free-tier-eligible=true'.")
    refused = botocore.exceptions.ClientError({"Error": {"Code": "InvalidParameterCombination", "Message": free}},
                                              "RunInstances")
    assert (aws.classify(refused).code, aws.classify(refused).kind) == ("InvalidParameterCombination", aws.FREE_PLAN)
    other = botocore.exceptions.ClientError({"Error": {"Code": "InvalidParameterCombination",
                                                       "Message": "Network interfaces and an instance-level "
                                                                  "security groups may not be specified"}}, "RunInstances")
    assert aws.classify(other).kind == aws.OTHER  # the same code for another mistake
    assert aws.classify_message(f"Resource handler returned message: \"{free}\"").kind == aws.FREE_PLAN
    image = ("Received response status [FAILED] from custom resource. Message returned: RuntimeError: "
             "ImageNotFoundException: 763104351884.dkr.ecr.us-west-2.amazonaws.com/vllm:0.30.0-gpu is not in "
             "us-west-2's registry (The image with imageId {imageTag:'0.30.0-gpu'} does not exist); deploy the rig "
             "in another of its regions, or pin a tag published here")
    assert (aws.classify_message(image).code, aws.classify_message(image).kind) == ("ImageNotFoundException",
                                                                                    aws.NOT_HERE)
    for reason in ("CapacityError: Unable to provision requested ML compute capacity. Please retry using a "
                   "different ML instance type.",
                   "EC2InsufficientCapacityError: Instance type 'ml.g6.xlarge' is temporarily unavailable in "
                   "supported availability zones [use2-az1]. Try again in a few minutes, or try a different "
                   "instance type.",
                   "Unable to provision requested ML compute capacity due to InsufficientInstanceCapacity error."):
        assert aws.classify_message(reason).kind == aws.CAPACITY, reason
    limit = ("The account-level service limit 'ml.g6.xlarge for endpoint usage' is 0 Instances, with current "
             "utilization of 0 Instances and a request delta of 1 Instances. Please contact AWS support to request "
             "an increase for this limit. (Service: AmazonSageMaker; Status Code: 400; Error Code: "
             "ResourceLimitExceeded; Request ID: dee8f280)")
    assert (aws.classify_message(limit).code, aws.classify_message(limit).kind) == ("ResourceLimitExceeded", aws.QUOTA)


def test_preflight_json_cli(monkeypatch, capsys):
    with mock_aws():
        with QuotaStubs(["us-east-2"]) as stubs:
            stubs.ec2("us-east-2", "L-1945791B", 80)
            stubs.ec2("us-east-2", "L-B5D1601B", 96)
            monkeypatch.setattr("rigs.cli._session", lambda args: stubs.session())
            assert main(["preflight", "inf2", "--regions", "us-east-2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["placement"]["inf2"][0]["region"] == "us-east-2"
    assert data["checks"][0]["on_demand_quota"]["code"] == "L-1945791B"
