"""Every synthesized template passes cfn-lint for its region and cdk-nag's AwsSolutions pack."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from cfnlint.api import ManualArgs, lint_file

from stacks.parts.checks import acknowledge, add_nag_checks


def test_every_template_passes_cfn_lint_for_its_region(assembly_dir: Path, stack_regions):
    findings = {}
    for stack, region in stack_regions.items():
        matches = lint_file(assembly_dir / f"{stack}.template.json", config=ManualArgs(regions=[region]))
        if matches:
            findings[stack] = [f"{m.rule.id} {m.path_string}: {m.message}"[:300] for m in matches]
    assert not findings, json.dumps(findings, indent=1)


def test_the_sagemaker_stack_without_a_pin_passes_cfn_lint_and_cdk_nag_in_every_region(unpinned_endpoint_dirs):
    for region, outdir in unpinned_endpoint_dirs.items():
        matches = lint_file(outdir / "InferenceSageMaker.template.json", config=ManualArgs(regions=[region]))
        assert not matches, [f"{m.rule.id} {m.path_string}: {m.message}"[:300] for m in matches]
        report = json.loads((outdir / "validation-report.json").read_text())
        assert [v["ruleName"] for plugin in report["pluginReports"] for v in plugin.get("violations", [])] == []


def test_cfn_lint_catches_an_instance_type_the_region_does_not_offer(assembly_dir: Path, tmp_path: Path):
    """The lint test is a real check: g5g is not offered in us-east-2."""
    template = json.loads((assembly_dir / "InferenceBase-us-east-2.template.json").read_text())
    template["Resources"]["Probe"] = {"Type": "AWS::EC2::Instance",
                                      "Properties": {"InstanceType": "g5g.2xlarge", "ImageId": "ami-12345678"}}
    probe = tmp_path / "probe.template.json"
    probe.write_text(json.dumps(template))
    rules = {m.rule.id for m in lint_file(probe, config=ManualArgs(regions=["us-east-2"]))}
    assert "E3628" in rules


def test_cdk_nag_reports_no_unacknowledged_finding(assembly_dir: Path):
    report = json.loads((assembly_dir / "validation-report.json").read_text())
    violations = [v["ruleName"] for plugin in report["pluginReports"] for v in plugin.get("violations", [])]
    assert violations == []


def acknowledgments(assembly_dir: Path, stack_regions) -> dict[str, str]:
    found = {}
    for stack in stack_regions:
        metadata = json.loads((assembly_dir / f"{stack}.metadata.json").read_text())
        for path, entries in metadata.items():
            for entry in entries:
                if entry["type"] == "aws:cdk:acknowledged-rules":
                    for rule, reason in entry["data"].items():
                        if "AwsSolutions" in rule:
                            found[f"{path} {rule}"] = reason
    return found


def test_every_nag_acknowledgment_gives_a_specific_reason(assembly_dir: Path, stack_regions):
    found = acknowledgments(assembly_dir, stack_regions)
    assert found, "expected the reasoned acknowledgments of the instance role"
    for where, reason in found.items():
        assert len(reason) >= 40, f"{where}: reason too short: {reason!r}"
        assert not reason.lower().startswith(("suppress", "ok", "fine", "n/a")), where


def test_nag_fails_synth_on_an_open_inbound_port(tmp_path: Path):
    """cdk-nag is wired as a blocking validation: an SSH rule open to the world fails synth."""
    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "Probe", env=cdk.Environment(region="us-east-1"))
    vpc = ec2.Vpc(stack, "Vpc", nat_gateways=0, max_azs=1,
                  subnet_configuration=[ec2.SubnetConfiguration(name="p", subnet_type=ec2.SubnetType.PUBLIC)])
    group = ec2.SecurityGroup(stack, "Open", vpc=vpc)
    group.add_ingress_rule(ec2.Peer.any_ipv4(), ec2.Port.tcp(22))
    add_nag_checks(app)
    with pytest.raises(Exception, match="ValidationFailed"):
        app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    rules = {v["ruleName"] for p in report["pluginReports"] for v in p["violations"]}
    assert any(rule.startswith("AwsSolutions-EC23") for rule in rules), rules


def test_an_acknowledgment_without_a_real_reason_is_refused():
    stack = cdk.Stack(cdk.App(), "Probe")
    with pytest.raises(ValueError, match="specific reason"):
        acknowledge(stack, "AwsSolutions-VPC7", "ok")
