"""Status against moto: everything of ours in the four regions, what it costs per hour, nothing of theirs."""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws

from rigs.estate import inventory, kinds, resources
from rigs.estate.kinds.base import Listing
from rigs.cli import main
from rigs.catalog.pricing import PriceBook

from tests.rigs import ourstuff


def test_status_lists_only_ours_with_hourly_costs(moto_estate, capsys):
    inv = inventory.discover(boto3.Session(region_name="us-east-1"), prices=PriceBook())
    ids = {r.id for r in inv.resources}
    for region, items in moto_estate.ours.items():
        for item in items:
            kind, ident = item.split(":", 1)
            assert ident in ids or any(ident in r.id for r in inv.resources), item
    for region, items in moto_estate.foreign.items():
        for item in items:
            kind, ident = item.split(":", 1)
            assert kind == "stack" or ident not in ids, item
    assert not any(r.name.startswith("their-") for r in inv.resources)
    assert not any(r.kind == resources.STACK and r.id == "TheirStack" for r in inv.resources)
    instances = inv.of_kind(resources.INSTANCE)
    assert len(instances) == 2 + 2  # one tagged instance and one ASG-launched instance per region
    g6 = [i for i in instances if i.get("instance_type") == "g6.xlarge"]
    assert g6 and all(i.hourly_usd == pytest.approx(0.8048 + 0.005) for i in g6)  # + its public IPv4
    assert all("public IPv4" in i.price_note for i in g6)
    volumes = inv.of_kind(resources.VOLUME)
    assert all(v.hourly_usd == pytest.approx(100 * 0.08 / 730) for v in volumes)
    assert inv.hourly_usd == pytest.approx(sum(r.hourly_usd for r in inv.resources))

    assert main(["status", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["hourly_usd"] == pytest.approx(round(inv.hourly_usd, 6), abs=1e-5)
    assert main(["status"]) == 0
    out = capsys.readouterr().out
    assert "total: $" in out and "ours-endpoint-us-east-2" in out and "their-endpoint" not in out


def test_status_collapses_what_a_stack_manages_and_shows_the_lifetime(monkeypatch, capsys):
    monkeypatch.setattr("rigs.aws.time.sleep", lambda _s: None)
    with mock_aws():
        monkeypatch.setattr("rigs.cli._session", lambda args: boto3.Session(region_name="us-east-1"))
        template = json.dumps({
            "Resources": {"Group": {"Type": "AWS::EC2::SecurityGroup", "Properties": {
                "GroupDescription": "rig", "Tags": [{"Key": "ManagedBy", "Value": "aws-inference"}]}}},
            "Outputs": {"ExpiresAt": {"Value": "2026-11-29T22:00:00Z"}}})
        boto3.client("cloudformation", region_name="us-west-2").create_stack(
            StackName="InferenceInf2", TemplateBody=template, Tags=ourstuff.tags("inf2"))
        assert main(["status"]) == 0
        out = capsys.readouterr().out
        assert "lifetime ends 2026-11-29T22:00:00Z" in out
        assert "also manages 1 security-group" in out
        assert main(["status", "--all-resources"]) == 0
        assert "security-group" in capsys.readouterr().out.split("InferenceInf2", 1)[1]


def test_status_with_nothing_of_ours(monkeypatch, capsys):
    with mock_aws():
        monkeypatch.setattr("rigs.cli._session", lambda args: boto3.Session(region_name="us-east-1"))
        assert main(["status"]) == 0
    out = capsys.readouterr().out
    assert "nothing of ours in us-east-1, us-east-2, us-west-1, us-west-2" in out
    assert "total: $0.0000/h" in out


def test_status_lists_what_outlives_destroy_with_its_cost(moto_estate, capsys):
    """The bootstrap stack, SageMaker's endpoint log groups and the token secret outlive `cdk destroy`:
    status lists them with what they cost and how to remove them, and the sweep never touches them."""
    region = "us-east-2"
    boto3.client("cloudformation", region_name=region).create_stack(
        StackName="CDKToolkit", TemplateBody=json.dumps({"Resources": {"B": {"Type": "AWS::S3::Bucket"}}}))
    logs = boto3.client("logs", region_name=region)
    for endpoint in ("ours-endpoint-us-east-2", "their-endpoint-us-east-2", "deleted-endpoint"):
        logs.create_log_group(logGroupName=f"/aws/sagemaker/Endpoints/{endpoint}")
    boto3.client("secretsmanager", region_name=region).create_secret(Name="aws-inference/hf-token",
                                                                      SecretString="hf_x")
    assert main(["status", "--json"]) == 0
    outlasting = {(o["kind"], o["name"]): o for o in json.loads(capsys.readouterr().out)["outlasting"]}
    assert set(outlasting) == {("cdk-bootstrap", "CDKToolkit"), ("secret", "aws-inference/hf-token"),
                               ("log-group", "/aws/sagemaker/Endpoints/ours-endpoint-us-east-2"),
                               ("log-group", "/aws/sagemaker/Endpoints/deleted-endpoint")}
    assert outlasting[("secret", "aws-inference/hf-token")]["monthly_usd"] == pytest.approx(0.40)
    assert "stays after the endpoint is deleted" in outlasting[
        ("log-group", "/aws/sagemaker/Endpoints/ours-endpoint-us-east-2")]["cost"]
    assert "may be another app's" in outlasting[("log-group", "/aws/sagemaker/Endpoints/deleted-endpoint")]["cost"]
    assert "delete-stack --stack-name CDKToolkit --region us-east-2" in outlasting[
        ("cdk-bootstrap", "CDKToolkit")]["remove"]
    assert main(["status"]) == 0
    assert "Outlives cdk destroy and the sweep" in capsys.readouterr().out
    assert main(["sweep", "--yes", "--max-wait", "1"]) == 0
    capsys.readouterr()
    assert main(["status", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["outlasting"]) == 4  # the sweep left them alone


def test_what_outlives_destroy_is_asked_for_by_status_only(moto_estate, monkeypatch):
    """Listing log groups and secrets is status's business: the sweep and the rehearsal's check never
    call them, so a role refused those calls still has every region checked (a sweep that finds a
    problem is not clean)."""
    def refused(_finder) -> None:
        raise RuntimeError("AccessDenied")

    monkeypatch.setattr(kinds, "OUTLASTING", tuple(Listing(listing.what, refused) for listing in kinds.OUTLASTING))
    found = inventory.discover(boto3.Session(), prices=PriceBook())
    assert found.problems == () and found.resources
    for_status = inventory.discover(boto3.Session(), ("us-east-2",), PriceBook(), include_iam=False, outlasting=True)
    assert "us-east-2: could not list SageMaker endpoint log groups" in " ".join(for_status.problems)
