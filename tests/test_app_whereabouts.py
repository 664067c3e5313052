"""app.py synthesizes every rig stack where CloudFormation says it is, without local state."""

from __future__ import annotations

import json
import socket

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

import app
from rigs.catalog.model import load_catalog
from rigs.context_keys import DESTROYING, LOOKED_UP
from rigs.estate import whereabouts
from rigs.placement import placement

TEMPLATE = json.dumps({"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}})


@pytest.fixture
def state(tmp_path, monkeypatch):
    monkeypatch.setenv(placement.STATE_DIR_ENV, str(tmp_path / "state"))
    return tmp_path / "state"


def create_stack(name: str, region: str) -> None:
    boto3.client("cloudformation", region_name=region).create_stack(StackName=name, TemplateBody=TEMPLATE)


def test_a_stack_in_two_regions_is_synthesized_in_both_under_one_name(tmp_path):
    lines: list[str] = []
    context = {"deployed_regions.InferenceG6": "us-west-2,us-east-1", LOOKED_UP.key(): True}
    app.build_app(context=context, outdir=str(tmp_path), say=lines.append).synth()
    artifacts = json.loads((tmp_path / "manifest.json").read_text())["artifacts"]
    assert artifacts["InferenceG6"]["environment"].endswith("/us-east-1")
    assert artifacts["InferenceG6-us-west-2"]["environment"].endswith("/us-west-2")
    assert artifacts["InferenceG6-us-west-2"]["properties"]["stackName"] == "InferenceG6"
    assert "InferenceG6 -> us-east-1 (deployed there (CloudFormation))" in lines
    assert any("InferenceG6 also exists in us-west-2" in line for line in lines)
    # the other rigs are nowhere: the catalog's first region, and said so
    assert "InferenceInf2 -> us-east-2 (the catalog's first region for inf2)" in lines


def test_no_account_means_no_call_and_the_placement_file_decides(state, monkeypatch):
    monkeypatch.delenv("CDK_DEFAULT_ACCOUNT", raising=False)
    monkeypatch.setattr(whereabouts, "locate", lambda *a, **k: pytest.fail("CloudFormation asked offline"))
    lines: list[str] = []
    assert app.deployed_context(load_catalog(), lines.append) == {}
    assert "CloudFormation not asked" in lines[0]


def test_rigs_up_synths_do_not_ask_again_nor_touch_the_placement_file(state, monkeypatch):
    """`python -m rigs up` chose the region and records it; its synths say so to the app."""
    from rigs.deploy.cdk_cli import CdkCli

    monkeypatch.setenv("CDK_DEFAULT_ACCOUNT", "123456789012")
    monkeypatch.setattr(whereabouts, "locate", lambda *a, **k: pytest.fail("CloudFormation asked for up's synth"))
    monkeypatch.setattr(placement, "reconcile", lambda *a, **k: pytest.fail("placement written beside up"))
    for key, value in CdkCli.ENV.items():
        monkeypatch.setenv(key, value)
    lines: list[str] = []
    assert app.deployed_context(load_catalog(), lines.append) == {}
    assert lines == ["CloudFormation not asked: python -m rigs up chose each rig's region and records it"]


def test_after_a_failover_a_clone_without_state_finds_the_rig(state, monkeypatch):
    """The reference case: g6 failed over from us-east-2 to us-east-1; this clone has no placement."""
    monkeypatch.setenv("CDK_DEFAULT_ACCOUNT", "123456789012")
    with mock_aws():
        create_stack("InferenceG6", "us-east-1")
        create_stack("InferenceSageMaker", "us-east-2")
        create_stack("NotOurs", "us-west-2")
        lines: list[str] = []
        context = app.deployed_context(load_catalog(), lines.append)
    assert context == {"deployed_regions.InferenceG6": "us-east-1", "deployed_regions.InferenceSageMaker": "us-east-2",
                       LOOKED_UP.key(): True}
    assert lines[0] == ("account 123456789012: asked CloudFormation in us-east-1, us-east-2, us-west-2 for "
                        "this app's stacks: InferenceG6 in us-east-1 (CREATE_COMPLETE); InferenceSageMaker in "
                        "us-east-2 (CREATE_COMPLETE)")
    synth_lines: list[str] = []
    built = app.build_app(context=context, say=synth_lines.append)
    assert built.node.find_child("InferenceG6").region == "us-east-1"
    assert "InferenceG6 -> us-east-1 (deployed there (CloudFormation))" in synth_lines


def test_the_placement_file_follows_cloudformation(state, monkeypatch):
    monkeypatch.setenv("CDK_DEFAULT_ACCOUNT", "123456789012")
    placement.record_deployed("g6", "us-east-2", ("us-east-2a",), "InferenceG6")
    placement.record_deployed("inf2", "us-west-2", (), "InferenceInf2")
    with mock_aws():
        create_stack("InferenceG6", "us-east-1")
        lines: list[str] = []
        app.deployed_context(load_catalog(), lines.append)
    assert "placement: g6: deployed in us-east-1, not us-east-2; record updated" in lines
    assert "placement: inf2: not deployed in any region; cleared the record of us-west-2" in lines
    assert placement.load().deployed_region("g6") == "us-east-1"
    assert placement.load().deployed_region("inf2") is None


def test_deleted_stacks_are_not_found():
    with mock_aws():
        create_stack("InferenceG6", "us-east-2")
        boto3.client("cloudformation", region_name="us-east-2").delete_stack(StackName="InferenceG6")
        create_stack("InferenceTrn1", "us-east-2")
        where = whereabouts.locate(["InferenceG6", "InferenceTrn1"])
    assert where.complete
    assert where.regions_of("InferenceG6") == ()
    assert where.regions_of("InferenceTrn1") == ("us-east-2",)


def test_an_unreachable_endpoint_is_named_and_not_trusted(state, monkeypatch):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed once the block ends: connections are refused
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("CDK_DEFAULT_ACCOUNT", "123456789012")
    placement.record_deployed("g6", "us-east-1", (), "InferenceG6")
    lines: list[str] = []
    context = app.deployed_context(load_catalog(), lines.append)
    assert context == {}  # nothing asked, nothing concluded
    assert lines == [f"could not ask which account this app's credentials are in (cannot reach "
                     f"http://127.0.0.1:{port}/): CloudFormation not asked; stacks go where the placement file or the "
                     "catalog says"]
    assert placement.load().deployed_region("g6") == "us-east-1"  # the record is kept
    choice = app.region_choice(app.build_app(context={**app.recorded_placement(), **context}),
                               load_catalog().rigs["g6"])
    assert choice.region == "us-east-1" and "recorded" in choice.why


def test_a_destroy_leaves_out_what_is_deployed_nowhere(tmp_path):
    """`./scripts/cdk destroy` tells the app; the CLI then reports "destroyed" only for stacks that existed."""
    lines: list[str] = []
    context = {DESTROYING.key(): True, LOOKED_UP.key(): True,
               "deployed_regions.InferenceG6": "us-east-1", "deployed_regions.InferenceBase-us-east-1": "us-east-1"}
    app.build_app(context=context, outdir=str(tmp_path), say=lines.append).synth()
    artifacts = json.loads((tmp_path / "manifest.json").read_text())["artifacts"]
    stacks = sorted(n for n, a in artifacts.items() if a["type"] == "aws:cloudformation:stack")
    assert stacks == ["InferenceBase-us-east-1", "InferenceG6"]
    assert "InferenceInf2: not deployed in any region; nothing to destroy" in lines


def test_without_a_complete_lookup_a_destroy_keeps_every_stack(tmp_path):
    context = {DESTROYING.key(): True, "deployed_regions.InferenceG6": "us-east-1"}
    app.build_app(context=context, outdir=str(tmp_path)).synth()
    artifacts = json.loads((tmp_path / "manifest.json").read_text())["artifacts"]
    assert {"InferenceInf2", "InferenceBase-us-west-2", "InferenceG5gImage"} <= set(artifacts)


def test_credentials_of_another_account_stop_synth_with_the_fix(state, monkeypatch, capsys):
    """`npx cdk destroy --all --profile X`: the CLI passes the app X's account, not the profile; the app's
    default credentials are another account's. Asking there would find nothing and clear the record."""
    monkeypatch.setenv("CDK_DEFAULT_ACCOUNT", "111122223333")
    monkeypatch.setattr(whereabouts, "locate", lambda *a, **k: pytest.fail("CloudFormation asked in another account"))
    placement.record_deployed("g6", "us-east-1", (), "InferenceG6")
    with mock_aws(), pytest.raises(SystemExit) as stopped:
        app.main()
    assert stopped.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "app: the CDK CLI works in account 111122223333, but this app's AWS credentials (the default credentials) "
        "are account 123456789012: the CLI passes the app its account, not its --profile. Run it through "
        "./scripts/cdk (it hands --profile to the app), or set AWS_PROFILE to the profile you gave the CLI")
    assert placement.load().deployed_region("g6") == "us-east-1"  # the record is kept


def test_the_fix_names_the_profile_the_app_used(monkeypatch):
    monkeypatch.setenv("AWS_PROFILE", "other")
    assert "this app's AWS credentials (AWS_PROFILE=other) are account 2" in app.lookup_account_fix("1", "2")


def test_the_same_account_is_looked_up(state, monkeypatch):
    monkeypatch.setenv("CDK_DEFAULT_ACCOUNT", "123456789012")
    with mock_aws():
        create_stack("InferenceTrn1", "us-east-2")
        context = app.deployed_context(load_catalog(), lambda _line: None)
    assert context == {"deployed_regions.InferenceTrn1": "us-east-2", LOOKED_UP.key(): True}


class DeniesUsWest1:
    """A session whose CloudFormation refuses every call in us-west-1, as an organisation policy denying that
    region does; the other regions are moto's. Records the regions asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.stubbers: list[Stubber] = []

    def client(self, service: str, region_name: str, config=None):
        self.asked.append(region_name)
        client = boto3.client(service, region_name=region_name, config=config)
        if region_name == "us-west-1":
            stubber = Stubber(client)
            stubber.add_client_error("list_stacks", "AccessDenied", "explicit deny in a service control policy", 403)
            stubber.activate()
            self.stubbers.append(stubber)
        return client


def test_the_lookup_asks_only_the_regions_the_app_deploys_to():
    """No rig runs in us-west-1: a policy denying it does not leave every destroy "not verified"."""
    assert whereabouts.app_regions() == ("us-east-1", "us-east-2", "us-west-2")
    session = DeniesUsWest1()
    with mock_aws():
        create_stack("InferenceG6", "us-west-2")
        where = whereabouts.locate(whereabouts.app_stacks(), session=session)
    assert sorted(session.asked) == ["us-east-1", "us-east-2", "us-west-2"]
    assert where.complete and where.regions_of("InferenceG6") == ("us-west-2",)
    assert where.summary().startswith("asked CloudFormation in us-east-1, us-east-2, us-west-2 for this app's stacks")
    denied = whereabouts.locate(["InferenceG6"], regions=("us-west-1",), session=session)
    assert denied.failed == {"us-west-1": "AccessDenied: explicit deny in a service control policy"}
