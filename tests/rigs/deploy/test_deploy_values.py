"""Every per-deploy value is checked where it is given: ``python -m rigs up`` refuses a bad ``--max-hours``, a bad
``-c`` value and an unknown ``-c`` key in one line, exit 2, before it asks AWS anything; the app's context keys are
declared once (``rigs/context_keys.py``), and the CDK's own keys pass."""

from __future__ import annotations

import pytest

from rigs import aws
from rigs import context_keys
from rigs.catalog.model import load_catalog
from rigs.cli import main
from rigs.deploy.cdk_cli import cdk_json_keys

RIGS = [rig.name for rig in load_catalog().deployable()]


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any session made fails the test: the values are checked before AWS is asked anything."""

    def refused(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("AWS asked before the values were checked")

    monkeypatch.setattr(aws, "make_session", refused)


@pytest.mark.parametrize("args, problem", [
    (["--max-hours", "-1"], "argument --max-hours: '-1': give a number of hours above 0 and at most 168"),
    (["--max-hours", "0"], "argument --max-hours: '0': give a number of hours above 0 and at most 168"),
    (["--ready-timeout", "0"], "argument --ready-timeout: '0': give a number of minutes above 0"),
    (["--capacity-grace", "-5"], "argument --capacity-grace: '-5': give a number of minutes from 0"),
])
def test_a_bad_flag_is_refused_by_the_parser_in_one_line(no_aws: None, capsys: pytest.CaptureFixture, args: list[str],
                                                         problem: str):
    with pytest.raises(SystemExit) as refused:
        main(["up", "g6", *args])
    err = capsys.readouterr().err.splitlines()
    assert refused.value.code == 2 and len(err) == 1 and problem in err[0]


@pytest.mark.parametrize("context, problem", [
    (["max_hours.g6=0"], "-c max_hours='0' for g6: give a number of hours above 0 and at most 168"),
    (["g6_variant=tp2"], "-c g6_variant=tp2: g6 has no such variant (variants: big)"),
    (["image.g6=vllm/vllm-openai:latest"], "-c image.g6=vllm/vllm-openai:latest: give a pinned image reference"),
    (["region.g6=eu-west-1"], "-c region.g6=eu-west-1: g6 runs in"),
    (["az_count.us-east-2=9"], "-c az_count.us-east-2='9': give a whole number of zones from 1 to 6"),
    (["modle.g6=Qwen/Qwen3-8B"], "-c modle.g6: not a context key of this app; its keys are region.<rig>, "
                                 "zones.<rig>, <rig>_variant, max_hours, max_hours.<rig>, image.<rig>, ami.<rig>, "
                                 "zones.<region>, az_count.<region>, model.<rig>, model, model_config.<rig>, "
                                 "instance_type.<rig>, hf_token_parameter, max_model_len.<rig>, max_model_len (<rig>: "
                                 "g6, g5g, inf2, trn1, sagemaker; <region>: us-east-1, us-east-2, us-west-1, "
                                 "us-west-2)"),
    (["model.g6=someone/unknown-7b"], "-c model.g6=someone/unknown-7b: the catalog's models section does not list it"),
    (["max_model_len.g6=8k"], "-c max_model_len.g6=8k: give the tokens one sequence may hold (prompt and output), a "
                              "positive whole number, e.g. 8192"),
    (["zones"], "-c 'zones': give KEY=VALUE"),
])
def test_a_bad_context_key_or_value_is_one_line_before_anything(no_aws: None, capsys: pytest.CaptureFixture,
                                                               context: list[str], problem: str):
    assert main(["up", "g6", *(f"-c{item}" for item in context)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {problem}")


def test_every_bad_value_of_up_is_named_at_once(no_aws: None, capsys: pytest.CaptureFixture):
    assert main(["up", "g6", "inf2", "-c", "inf2_variant=tp9", "-c", "ami.g6=nope", "-c", "colour=red"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "-c colour: not a context key" in line and "-c inf2_variant=tp9: inf2 has no such variant" in line
    assert "-c ami.g6=nope: give an AMI id" in line


def test_the_app_knows_its_own_keys_and_the_cdks_pass():
    known = ["region.g6", "zones.trn1", "inf2_variant", "max_hours", "max_hours.sagemaker", "image.g5g", "ami.g6",
             "zones.us-east-1", "az_count.us-west-2", "recorded_region.g6", "recorded_zones.g6",
             "deployed_regions.InferenceBase-us-east-2", "deployed_regions_complete", "aws-inference:destroying"]
    cdks = ["@aws-cdk/core:bootstrapQualifier", "aws:cdk:enable-path-metadata", "aws-cdk:enableDiffNoFail",
            "availability-zones:account=123456789012:region=us-east-1", "acknowledged-issue-numbers",
            *cdk_json_keys()]
    assert context_keys.unknown_keys(known + cdks, RIGS) is None
    unknown = context_keys.unknown_keys(["region.g7", "zones.eu-west-1", "bedrock_variant", "models"], RIGS)
    assert unknown is not None and unknown.problems[0].startswith(
        "-c bedrock_variant, models, region.g7, zones.eu-west-1: not a context key of this app")


def test_per_rig_keys_are_declared_by_pattern():
    """A key per rig is one declaration, ``{rig}`` the rig's name (the table app.py reads)."""
    key = context_keys.ContextKey("name.{rig}", "a per-rig key")
    assert key.key(rig="g6") == "name.g6"
    assert key.matches("name.g6", {"rig": RIGS}) and not key.matches("name.g7", {"rig": RIGS})
    assert not key.matches("name.g6.x", {"rig": RIGS})
    assert {k.pattern for k in context_keys.CONTEXT_KEYS} >= {"region.{rig}", "max_hours", "zones.{region}"}


@pytest.mark.parametrize("command", ["up", "rehearse"])
def test_help_says_what_every_argument_takes(command: str):
    """``python -m rigs up --help``: the rigs have help naming the catalog's, and no metavar is argparse's DEST."""
    import argparse

    from rigs.cli import build_parser
    from rigs.shared_options import RIG_HELP

    (commands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    for action in commands.choices[command]._actions:
        assert action.help, action.dest
        if action.nargs != 0 and not action.choices:
            assert action.metavar and action.metavar != action.dest.upper(), action.dest
    assert all(f" {name}" in RIG_HELP for name in load_catalog().rigs)
