"""``up`` shows the CDK CLI's own error when the CLI fails before CloudFormation creates anything.

The logs below are the CLI's output shapes: its error message, then one ``‣ Name: message``
line per cause (``aws-cdk`` ``lib/cli/pretty-print-error.js``), or ``❌  <stack> failed:``.
The first is a real log of ``cdk deploy`` against moto's server with the bootstrap version
parameter missing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from moto import mock_aws

from rigs import aws

from rigs.catalog.model import load_catalog
from rigs.deploy.cdk_cli import CdkCli, CdkResult, cli_failure
from rigs.deploy.up import Up, UpSettings
from rigs.deploy.watch import WatchSettings
from rigs.placement import placement
from rigs.placement.placement import Candidate

G6 = load_catalog().get("g6")

NOT_BOOTSTRAPPED = """$ scripts/cdk deploy --app assembly InferenceBase-us-east-2 --exclusively --require-approval never
\u2728  Synthesis time: 0.1s
(node:32305) Warning: NodeVersionSupportWarning: The AWS SDK for JavaScript (v3)
InferenceBase-us-east-2: SSM parameter /cdk-bootstrap/hnb659fds/version not found in aws://123456789012/us-east-2. \
Has the environment been bootstrapped? Please run 'cdk bootstrap' (see \
https://docs.aws.amazon.com/cdk/latest/guide/bootstrapping.html)
Parameter /cdk-bootstrap/hnb659fds/version not found.
\u2023 SsmParameterNotFound: SSM parameter /cdk-bootstrap/hnb659fds/version not found in aws://123456789012/us-east-2. \
Has the environment been bootstrapped? Please run 'cdk bootstrap' (see \
https://docs.aws.amazon.com/cdk/latest/guide/bootstrapping.html)
\u2023 ParameterNotFound: Parameter /cdk-bootstrap/hnb659fds/version not found.
"""
ASSETS_DENIED = """$ scripts/cdk deploy InferenceG6
InferenceG6: start: Publishing InferenceG6 Template (123456789012-us-east-2)
InferenceG6: fail: Access Denied
\x1b[31m \u274c  InferenceG6 failed: Error: Failed to publish asset InferenceG6 Template (123456789012-us-east-2)\x1b[39m
\u2023 AccessDenied: Access Denied
"""
EXPIRED = """$ scripts/cdk deploy InferenceG6
Need to perform AWS calls for account 123456789012, but the current credentials are expired
\u2023 ExpiredToken: The security token included in the request is expired
"""


@pytest.mark.parametrize(("log", "code", "kind", "shown"), [
    (NOT_BOOTSTRAPPED, "ParameterNotFound", aws.OTHER,
     "SsmParameterNotFound: SSM parameter /cdk-bootstrap/hnb659fds/version not found in aws://123456789012/us-east-2. "
     "Has the environment been bootstrapped?"),
    (ASSETS_DENIED, "AccessDenied", aws.OTHER,
     "InferenceG6 failed: Error: Failed to publish asset InferenceG6 Template (123456789012-us-east-2)"),
    (EXPIRED, "ExpiredToken", aws.CREDENTIALS, "ExpiredToken: The security token included in the request is expired"),
])
def test_the_cli_error_line_its_code_and_the_log(tmp_path: Path, log: str, code: str, kind: str, shown: str) -> None:
    path = tmp_path / "cdk.log"
    path.write_text(log, encoding="utf-8")
    failure = cli_failure(path, "cdk deploy InferenceG6 failed before CloudFormation created it")
    assert (failure.code, failure.kind) == (code, kind)
    assert failure.message.startswith(f"cdk deploy InferenceG6 failed before CloudFormation created it: {shown}")
    assert failure.message.endswith(f"(log: {path})")
    assert "\x1b[" not in failure.message and "\u274c" not in failure.message


class FailingCdk:
    """``cdk synth`` works; ``cdk deploy`` fails at once with ``log_text`` (nothing reaches CloudFormation)."""

    def __init__(self, log_text: str, fail: str) -> None:
        self.log_text, self.fail = log_text, fail

    def synth(self, outdir: Path, context, log: Path) -> CdkResult:
        outdir.mkdir(parents=True, exist_ok=True)
        region = context["region.g6"]
        (outdir / "manifest.json").write_text(json.dumps({"artifacts": {
            f"InferenceBase-{region}": {"type": "aws:cloudformation:stack"},
            "InferenceG6": {"type": "aws:cloudformation:stack", "dependencies": [f"InferenceBase-{region}"],
                            "properties": {"stackName": "InferenceG6"}}}}))
        return CdkResult(0, log)

    def deploy(self, app: Path, stacks, context, log: Path, outputs_file=None) -> CdkResult:
        if stacks[0] != self.fail:
            return CdkResult(0, log)
        log.write_text(self.log_text, encoding="utf-8")
        return CdkResult(1, log)

    def bootstrap(self, environments, log: Path) -> CdkResult:
        log.write_text(EXPIRED, encoding="utf-8")
        return CdkResult(1, log)


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(placement.STATE_DIR_ENV, str(tmp_path / "state"))


@pytest.mark.parametrize("failing", ["InferenceBase-us-east-2", "InferenceG6"])
@mock_aws
def test_up_shows_the_cli_error_and_claims_no_stack(tmp_path: Path, failing: str) -> None:
    import boto3

    said: list[str] = []
    fake = FailingCdk(NOT_BOOTSTRAPPED if failing.startswith("InferenceBase") else ASSETS_DENIED, failing)
    up = Up(boto3.Session(region_name="us-east-1"), fake,
            UpSettings(watch=WatchSettings(poll=0), evidence_dir=tmp_path / "evidence"), say=said.append,
            sleep=lambda _s: None)
    (result,) = up.run({"g6": (G6, [Candidate(region="us-east-2"), Candidate(region="us-east-1")])})
    assert not result.ok and len(result.attempts) == 1  # not a capacity failure: no second region
    line = said[-1]
    assert f"cdk deploy {failing} failed before CloudFormation created it: " in line
    assert ("Has the environment been bootstrapped?" if failing.startswith("InferenceBase")
            else "Failed to publish asset") in line
    log = f"cdk-{failing}.log" if failing.startswith("InferenceBase") else "cdk-g6-1.log"
    assert f"(log: {tmp_path / 'evidence' / log})" in line
    assert "InferenceG6 was not created in us-east-2: nothing to clean up" in line
    assert "left for inspection" not in line


@mock_aws
def test_bootstrap_failure_shows_the_cli_error(tmp_path: Path) -> None:
    import boto3

    up = Up(boto3.Session(region_name="us-east-1"), FailingCdk("", ""), UpSettings(evidence_dir=tmp_path / "ev"),
            say=lambda _line: None)
    failure = up.bootstrap("123456789012", ["us-east-2"])
    assert failure is not None and failure.kind == aws.CREDENTIALS
    assert failure.message == ("cdk bootstrap failed: ExpiredToken: The security token included in the request is "
                               f"expired (log: {tmp_path / 'ev' / 'cdk-bootstrap.log'})")


def test_bootstrap_synthesizes_beside_its_log_not_into_the_projects_cdk_out(tmp_path: Path) -> None:
    """The CLI synthesizes the app before it bootstraps, and refuses to while another of its commands
    synthesizes into the same folder: two `rigs up` (or rehearsals) at once must not share cdk.out."""
    recorder = tmp_path / "cdk"
    recorder.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')
    recorder.chmod(0o755)
    log = tmp_path / "run" / "cdk-bootstrap.log"
    assert CdkCli(cdk=str(recorder)).bootstrap(["aws://123456789012/us-east-2"], log).returncode == 0
    assert log.read_text().splitlines()[1:] == ["bootstrap", "aws://123456789012/us-east-2",
                                                "--output", str(tmp_path / "run" / "cdk.out-bootstrap")]
