"""Per-deploy choices: -c region./zones./<rig>_variant/max_hours/image./ami. validated and applied."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigs.catalog.images import ServerImage
from rigs.catalog.model import load_catalog
from rigs.context_keys import OptionsError
from rigs.deploy.options import parse_rig_options
from tests.conftest import synth
from tests.contract.templates import rig_environment
from tests.contract.templates import one
from tests.contract.templates import resources_of

CATALOG = load_catalog()
CONTEXT = {
    "region.g6": "us-west-2",
    "zones.trn1": "us-east-2c",
    "inf2_variant": "tp2",
    "g6_variant": "big",
    "sagemaker_variant": "big",
    "max_hours": "2",
    "max_hours.sagemaker": "0.5",
    "region.g5g": "us-west-2",
    "image.g5g": "210987654321.dkr.ecr.us-west-2.amazonaws.com/team/vllm-sm75:v1@sha256:" + "a" * 64,
    "ami.g6": "ami-0123456789abcdef0",
}


@pytest.fixture(scope="module")
def varied(tmp_path_factory) -> dict:
    """One extra synth of the whole app with every option exercised."""
    out = synth(tmp_path_factory.mktemp("options"), context=CONTEXT)
    manifest = json.loads((out / "manifest.json").read_text())
    regions = {name: a["environment"].rsplit("/", 1)[-1] for name, a in manifest["artifacts"].items()
               if a["type"] == "aws:cloudformation:stack"}
    templates = {name: json.loads((out / f"{name}.template.json").read_text()) for name in regions}
    return {"regions": regions, "templates": templates, "out": out}


def test_region_option_moves_the_rig_and_its_image_stack(varied):
    assert varied["regions"]["InferenceG6"] == "us-west-2"
    assert varied["regions"]["InferenceG5g"] == "us-west-2"
    assert varied["regions"]["InferenceG5gImage"] == "us-west-2"
    subnets = one(varied["templates"]["InferenceG6"], "Custom::OfferedSubnets")["Properties"]["SubnetIds"]
    assert {s["Fn::GetStackOutput"]["StackName"] for s in subnets} == {"InferenceBase-us-west-2"}


def test_zones_option_reaches_the_offered_subnets_filter(varied):
    props = one(varied["templates"]["InferenceTrn1"], "Custom::OfferedSubnets")["Properties"]
    assert props["AllowedZones"] == ["us-east-2c"]


def test_variant_option_runs_the_tp2_image(varied):
    env = rig_environment(varied["templates"]["InferenceInf2"], varied["out"])
    assert env["RIG_IMAGE"] == "docker.io/xbill9/gemma4-optb:tp2-slim"


def test_big_variant_serves_the_bigger_checkpoint_with_its_longer_wait(varied):
    template = varied["templates"]["InferenceG6"]
    env = rig_environment(template, varied["out"])
    assert env["RIG_MODEL_ID"] == "google/gemma-4-12B-it-qat-w4a16-ct"
    assert env["RIG_IMAGE"] == CATALOG.get("g6").image.pull_reference()  # the same vLLM image
    assert env["RIG_READY_TIMEOUT_SECONDS"] == str(50 * 60)
    outputs = {k: v["Value"] for k, v in template["Outputs"].items()}
    assert "google/gemma-4-12B-it-qat-w4a16-ct" in outputs.values()  # what the agent reads and sends


def test_big_variant_of_the_endpoint_sets_the_containers_model(varied):
    model = one(varied["templates"]["InferenceSageMaker"], "AWS::SageMaker::Model")["Properties"]
    environment = model["PrimaryContainer"]["Environment"]
    assert environment["SM_VLLM_MODEL"] == environment["SM_VLLM_SERVED_MODEL_NAME"] == \
        "google/gemma-4-12B-it-qat-w4a16-ct"
    assert environment["SM_VLLM_TOOL_CALL_PARSER"] == "gemma4"  # the rig's own settings stay


def test_max_hours_sets_every_lifetime_and_a_per_rig_value_wins(varied):
    for stack in ("InferenceG6", "InferenceG5g", "InferenceInf2", "InferenceTrn1"):
        assert one(varied["templates"][stack], "Custom::Deadline")["Properties"]["LifetimeMinutes"] == "120"
    assert one(varied["templates"]["InferenceSageMaker"], "Custom::Deadline")["Properties"]["LifetimeMinutes"] == "30"


def test_image_option_pulls_from_the_named_ecr_repository_with_a_grant(varied):
    template = varied["templates"]["InferenceG5g"]
    env = rig_environment(template, varied["out"])
    # pulled by the digest alone (the tag of `repo:tag@sha256:…` dropped: the Docker CLI is to refuse the pair)
    assert env["RIG_IMAGE"] == "210987654321.dkr.ecr.us-west-2.amazonaws.com/team/vllm-sm75@sha256:" + "a" * 64
    assert env["RIG_REGISTRY"] == "210987654321.dkr.ecr.us-west-2.amazonaws.com"
    policies = json.dumps(resources_of(template, "AWS::IAM::Policy"))
    assert ":ecr:us-west-2:210987654321:repository/team/vllm-sm75" in policies


def test_ami_option_replaces_the_ssm_parameter(varied):
    data = one(varied["templates"]["InferenceG6"], "AWS::EC2::LaunchTemplate")["Properties"]["LaunchTemplateData"]
    assert data["ImageId"] == "ami-0123456789abcdef0"


@pytest.mark.parametrize("context, fix", [
    ({"region.g5g": "us-east-2"}, r"region.g5g=us-east-2: g5g runs in us-east-1, us-west-2"),
    ({"zones.g6": "us-east-1a"}, r"zones.g6: 'us-east-1a' is not a zone of us-east-2"),
    ({"g6_variant": "tp2"}, r"g6_variant=tp2: g6 has no such variant \(variants: big\)"),
    ({"sagemaker_variant": "tp2"}, r"sagemaker_variant=tp2: sagemaker has no such variant \(variants: big\)"),
    ({"max_hours": "0"}, r"max_hours='0'.*above 0"),
    ({"max_hours": "1000"}, r"at most 168"),
    ({"image.g6": "vllm/vllm-openai:latest"}, r"image.g6=.*never :latest"),
    ({"image.g6": "vllm/vllm-openai"}, r"image.g6=.*pinned image reference"),
    ({"ami.inf2": "ubuntu"}, r"ami.inf2=ubuntu: give an AMI id"),
    ({"modle.g6": "google/gemma-4"}, r"^-c modle.g6: not a context key of this app; its keys are region.<rig>, "),
    ({"g6_varient": "big"}, r"^-c g6_varient: not a context key"),
])
def test_a_bad_option_fails_synth_with_the_fix(tmp_path: Path, context, fix):
    from app import build_app

    with pytest.raises(OptionsError, match=fix):
        build_app(context=context, outdir=str(tmp_path))


def test_under_the_cdk_cli_a_bad_value_is_one_line_and_exit_2(monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture):
    """The app run by the CLI says what is wrong in one line, no traceback (the context here comes in beside the
    recorded placement: the CLI's own, CDK_CONTEXT_JSON, is read by jsii's process, started once per session)."""
    import app

    monkeypatch.delenv("CDK_DEFAULT_ACCOUNT", raising=False)
    monkeypatch.setattr(app, "recorded_placement", lambda: {"g6_variant": "tp9", "max_hours": "-1"})
    with pytest.raises(SystemExit) as ended:
        app.main()
    err = capsys.readouterr().err.splitlines()
    assert ended.value.code == 2 and "Traceback" not in "".join(err)
    assert err[-1] == ("app: error: -c g6_variant=tp9: g6 has no such variant (variants: big); -c max_hours='-1' for "
                       "g6: give a number of hours above 0 and at most 168")


def test_every_problem_is_reported_at_once():
    with pytest.raises(OptionsError) as error:
        parse_rig_options(CATALOG.get("inf2"), region="eu-west-1", variant="tp3", max_hours="x", ami="nope")
    assert len(error.value.problems) == 4


def test_sagemaker_takes_only_region_and_lifetime():
    options = parse_rig_options(CATALOG.get("sagemaker"), region="us-west-2", max_hours=1)
    assert (options.region, options.lifetime_minutes, options.image) == ("us-west-2", 60, None)
    with pytest.raises(OptionsError, match="managed endpoint"):
        parse_rig_options(CATALOG.get("sagemaker"), image="repo/x:1")


def test_catalog_images_resolve_to_public_references_or_the_accounts_own_ecr():
    g6 = CATALOG.get("g6")
    assert parse_rig_options(g6).image == ServerImage(public=f"vllm/vllm-openai@{g6.image.digest}")
    own = parse_rig_options(CATALOG.get("g5g")).image
    assert own.public is None and own.ecr.account is None
    assert own.ecr.repository == CATALOG.get("g5g").image.repository


@pytest.mark.parametrize("given, pulled", [
    ("vllm/vllm-openai:v0.30.0@sha256:" + "b" * 64, "vllm/vllm-openai@sha256:" + "b" * 64),
    ("registry.example.com/team/vllm:v1@sha256:" + "b" * 64, "registry.example.com/team/vllm@sha256:" + "b" * 64),
    ("registry.example.com/team/vllm@sha256:" + "b" * 64, "registry.example.com/team/vllm@sha256:" + "b" * 64),
    ("registry.example.com/team/vllm:v1", "registry.example.com/team/vllm:v1"),
])
def test_an_image_named_by_tag_and_digest_is_pulled_by_the_digest_alone(given, pulled):
    assert parse_rig_options(CATALOG.get("g6"), image=given).image == ServerImage(public=pulled)
