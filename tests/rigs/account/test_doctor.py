"""``python -m rigs doctor`` against moto's server, each check passing and failing.

moto's server (``rigs/offline/moto_server.py``: the catalog's AMI parameters seeded, state reset
between tests) answers CloudFormation, SSM, EC2, ECR (the account's own repositories),
Secrets Manager and STS. Service Quotas (EC2, SageMaker and CodeBuild quotas) and ECR
on AWS's own registry are beyond moto: those calls get canned answers (:mod:`.answers`),
matched by parameters since the doctor calls in parallel.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Iterator

import boto3
import pytest

from rigs import aws

from rigs.account import doctor
from rigs.account.checks.account_plan import account_plan as check_account_plan
from rigs.account.checks.bedrock_model import bedrock_model
from rigs.account.checks.bootstrap import BOOTSTRAP_VERSION_PARAMETER
from rigs.account.checks.codebuild_quota import G5G_BUILD_QUOTA
from rigs.account.doctor import DOCTOR_CONFIG, FAIL, OK, WARN, run_doctor
from rigs.account.preflight import EC2_QUOTAS
from rigs.catalog.model import load_catalog
from rigs.cli import main
from rigs.placement.zones import choose_zones
from tests.fake_tools import AWS_CLI_V1
from tests.fake_tools import tools

from tests.agent.bench.fakes.mantle_fake import MantleFake
from tests.agent.bench.fakes.scripted import Script
from tests.agent.bench.fakes.sigv4 import verify
from tests.rigs.answers import CannedAnswers

CATALOG = load_catalog()
ACCOUNT = "123456789012"
SAGEMAKER = CATALOG.get("sagemaker")
G6, G5G, INF2, TRN1 = (CATALOG.get(n) for n in ("g6", "g5g", "inf2", "trn1"))
DLC_ACCOUNT = "763104351884"
PULL_TAG = SAGEMAKER.image.tag
DLC_DIGEST = SAGEMAKER.image.digest_for("us-east-2")
PINNED_SAGEMAKER = SAGEMAKER.model_copy(update={"image_digests": {region: DLC_DIGEST for region in SAGEMAKER.regions}})
"""The SageMaker rig as after `rigs pins refresh` in every region (the catalog pins only us-east-2)."""


class RecordingClients(aws.Clients):
    """The doctor's clients, with canned answers attached and every operation recorded."""

    def __init__(self, session: Any, answers: CannedAnswers) -> None:
        super().__init__(session, DOCTOR_CONFIG)
        self.answers = answers
        self.operations: list[str] = []
        self._attaching = threading.Lock()

    def __call__(self, service: str, region: str | None = None) -> Any:
        # One lock around making and attaching: another check's thread must not get the new client (and ask
        # moto) before its answers are attached.
        with self._attaching:
            known = (service, region) in self._clients
            client = super().__call__(service, region)
            if not known:
                self.answers.attach(client)
                client.meta.events.register("before-call", lambda model, **_: self.operations.append(model.name))
            return client


def quotas(answers: CannedAnswers, region: str | None = None, ec2: float = 64, sagemaker: float = 2,
           codebuild: float = 1, builds: list[tuple[str, str, float]] | None = None) -> None:
    for klass in EC2_QUOTAS.values():
        for code, name in klass.values():
            answers.add("service-quotas", "GetServiceQuota", {"ServiceCode": "ec2", "QuotaCode": code},
                        {"Quota": {"ServiceCode": "ec2", "QuotaCode": code, "QuotaName": name, "Value": ec2}}, region)
    for service, listed in (("sagemaker", [("ml.g6.xlarge for endpoint usage", "L-SMG6X", sagemaker)]),
                            ("codebuild", [(G5G_BUILD_QUOTA, "L-CBARMXL", codebuild)] if builds is None else builds)):
        answers.add("service-quotas", "ListServiceQuotas", {"ServiceCode": service}, {"Quotas": [
            {"ServiceCode": service, "QuotaName": name, "QuotaCode": code, "Value": value}
            for name, code, value in listed]}, region)


def account_plan(answers: CannedAnswers, plan: str = "PAID", status: str = "ACTIVE", **more: Any) -> None:
    """The Free Tier API's answer (moto has no Free Tier API), in the shape of botocore's model."""
    answers.add("freetier", "GetAccountPlanState", {}, {"accountId": ACCOUNT, "accountPlanType": plan,
                                                       "accountPlanStatus": status, **more})


def dlc_image(answers: CannedAnswers, region: str, present: bool = True, tag: str = PULL_TAG) -> None:
    digest = PINNED_SAGEMAKER.image.digest_for(region)
    params = {"registryId": DLC_ACCOUNT, "repositoryName": "vllm", "imageIds": [{"imageDigest": digest}]}
    if present:
        answers.add("ecr", "DescribeImages", params, {"imageDetails": [
            {"registryId": DLC_ACCOUNT, "repositoryName": "vllm", "imageDigest": digest, "imageTags": [tag]}]},
                    region)
    else:
        answers.add_error("ecr", "DescribeImages", params, "ImageNotFoundException",
                          f"The image with imageId {{imageDigest:'{digest}'}} does not exist", region)


def bootstrap(region: str, version: int = 30) -> None:
    boto3.client("cloudformation", region_name=region).create_stack(StackName="CDKToolkit", TemplateBody=json.dumps(
        {"Resources": {"Handle": {"Type": "AWS::CloudFormation::WaitConditionHandle"}}}))
    boto3.client("ssm", region_name=region).put_parameter(Name=BOOTSTRAP_VERSION_PARAMETER, Type="String",
                                                          Value=str(version))


def build_g5g_image(region: str) -> None:
    ecr = boto3.client("ecr", region_name=region)
    ecr.create_repository(repositoryName=G5G.image.repository)
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "size": 1,
                           "digest": "sha256:" + "0" * 64}, "layers": []}
    ecr.put_image(repositoryName=G5G.image.repository, imageManifest=json.dumps(manifest), imageTag=G5G.image.tag)


def run(rigs, answers: CannedAnswers, which, regions=None) -> tuple[doctor.DoctorReport, RecordingClients]:
    session = aws.make_session()
    clients = RecordingClients(session, answers)
    report = run_doctor(rigs, lambda: session, regions, which=which, clients=clients)
    return report, clients


@pytest.fixture
def which(tmp_path: Any) -> Any:
    """AWS CLI v2 and the Session Manager plugin, as real executables."""
    return tools(tmp_path / "bin")


def by_check(report: doctor.DoctorReport, check: str, region: str | None = None, subject: str | None = None):
    found = [f for f in report.findings if f.check == check and (region is None or f.region == region)
             and (subject is None or f.subject == subject)]
    assert found, f"no {check} finding for {subject} in {region}"
    return found[0] if len(found) == 1 else found


@pytest.fixture
def bedrock_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[MantleFake]:
    """Bedrock's OpenAI-compatible endpoint at AWS_ENDPOINT_URL_BEDROCK_MANTLE, serving the catalog's model under
    its route (Gemma 4 E2B: /openai/v1) only."""
    with MantleFake(Script(), model=CATALOG.get("bedrock-mantle").model_id) as fake:
        monkeypatch.delenv(aws.MANTLE_BASE_URL_VAR, raising=False)
        monkeypatch.setenv(aws.MANTLE_ENDPOINT_VAR, fake.endpoint)
        yield fake


def test_healthy_account_every_check_passes_and_nothing_is_written(endpoint: str, which: Any,
                                                                   bedrock_endpoint: MantleFake) -> None:
    answers = CannedAnswers()
    account_plan(answers)
    # a root volume floor below the AMI's snapshot: the deploy sizes the volume from the AMI, so it can deploy
    token_rig = G6.model_copy(update={"hf_token_required": True, "root_volume_gib": 8})
    for region in ("us-east-1", "us-east-2", "us-west-2"):
        bootstrap(region)
        quotas(answers, region)
        dlc_image(answers, region)
        boto3.client("secretsmanager", region_name=region).create_secret(
            Name="aws-inference/hf-token", SecretString="hf_x")
    for region in G5G.regions:
        build_g5g_image(region)
    report, clients = run([token_rig, G5G, INF2, TRN1, PINNED_SAGEMAKER], answers, which)
    problems = [f for f in report.findings if f.status != OK]
    assert problems == []
    assert report.ok and report.stopped is None
    checks = {f.check for f in report.findings}
    assert checks == set(doctor.CHECK_ORDER) - {"IAM permissions"}  # every check ran, and none was refused
    assert report.deployable("g6") == ["us-east-2", "us-east-1", "us-west-2"]  # the catalog's order
    assert report.deployable("g5g") == ["us-east-1", "us-west-2"]
    assert by_check(report, "Account plan").detail == "Paid plan (active)"
    assert "version 30" in by_check(report, "CDK bootstrap", "us-east-2").detail
    assert by_check(report, "AMI", "us-east-2", "g6").detail == (
        f"root volume {15 + G6.root_free_gib} GiB (snapshot 15 + {G6.root_free_gib} GiB free)")
    assert by_check(report, "AMI", "us-east-2", "inf2").detail == (
        f"root volume {INF2.root_volume_gib} GiB (the floor; snapshot 15 GiB)")
    assert "on-demand 64 vCPU (L-DB2E81BA), needs 4" in by_check(report, "Type and quota", "us-east-2", "g6").detail
    assert "L-CBARMXL" in by_check(report, "CodeBuild quota", "us-west-2", "g5g").detail
    assert by_check(report, "SageMaker image", "us-west-2", "sagemaker").detail == (
        f"{DLC_DIGEST[:19]}…: pinned, tagged here")
    assert by_check(report, "Bedrock model", "us-east-2").detail == "bedrock-mantle: google.gemma-4-e2b listed by its endpoint"
    assert [g for g in bedrock_endpoint.gets] == ["/openai/v1/models"] * 3  # one signed GET a region, on its route
    assert verify(bedrock_endpoint.received[0], "testing").service == "bedrock-mantle"
    # read-only: every call is a Describe/Get/List call
    assert clients.operations and all(op.startswith(("Describe", "Get", "List")) for op in clients.operations)


def test_bedrock_model_not_listed_or_refused_warns_without_blocking(bedrock_endpoint: MantleFake,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)  # AWS itself: the check is made
    session = boto3.Session(aws_access_key_id="AKIADOCTOR", aws_secret_access_key="doctor-secret",
                            region_name="us-east-2")
    scope = doctor.Scope(aws.Clients(session, DOCTOR_CONFIG), ACCOUNT, [G6], CATALOG, session=session)
    mantle = CATALOG.get("bedrock-mantle")
    bedrock_endpoint.pages["/openai/v1/models"] = {"object": "list", "data": [{"id": "openai.gpt-oss-20b"}]}
    (missing,) = bedrock_model(scope, mantle, "us-east-2")
    assert missing.status == WARN and not missing.blocks
    assert missing.detail == ("bedrock-mantle: google.gemma-4-e2b is not among the 1 models its endpoint lists here "
                              "under /openai/v1 (the other route: /v1): the benchmark's bedrock-mantle fails in this "
                              "region")
    assert verify(bedrock_endpoint.received[0], "doctor-secret").region == "us-east-2"
    bedrock_endpoint.pages["/openai/v1/models"] = 403
    (refused,) = bedrock_model(scope, mantle, "us-east-2")
    assert refused.denied == "bedrock-mantle:CreateInference" and "'InvokeBedrockOpenAIEndpoint'" in refused.fix
    monkeypatch.setenv(aws.MANTLE_BASE_URL_VAR, bedrock_endpoint.endpoint + "/v1")  # a whole URL, the wrong route
    (wrong,) = bedrock_model(scope, mantle, "us-east-2")
    assert wrong.status == WARN and bedrock_endpoint.refused == ["/v1/models"]
    assert wrong.detail == (f"bedrock-mantle: Bedrock's OpenAI-compatible endpoint does not serve google.gemma-4-e2b "
                            f"under /v1 ({bedrock_endpoint.endpoint}/v1/models): its route is another, likely "
                            "/openai/v1; fix the route in the catalog's models entry (bedrock_endpoint.route) or give "
                            "the whole base URL in AWS_BEDROCK_BASE_URL")


def test_each_check_fails_with_its_fix(endpoint: str, tmp_path: Any) -> None:
    answers = CannedAnswers()
    bootstrap("us-east-2")
    bootstrap("us-west-2", version=5)  # us-east-1 is not bootstrapped at all
    quotas(answers, ec2=0, sagemaker=0, codebuild=0)
    dlc_image(answers, "us-east-2", present=False)
    dlc_image(answers, "us-east-1")
    dlc_image(answers, "us-west-2", tag="an-older-tag")
    small_root = G6.model_copy(update={"root_free_gib": 16380})  # moto's 15 GiB snapshot + 16380: over gp3's 16 TiB
    missing_ami = INF2.model_copy(update={"ami_ssm_parameter": "/aws/service/not/published"})
    needs_token = TRN1.model_copy(update={"hf_token_required": True})
    report, _ = run([small_root, G5G, missing_ami, needs_token, PINNED_SAGEMAKER], answers,
                    tools(tmp_path / "bin", aws=AWS_CLI_V1, plugin=None))

    cli = by_check(report, "AWS CLI v2")
    assert cli.status == WARN and "AWS CLI 1.45.11 (v1)" in cli.detail and "install AWS CLI v2" in cli.fix
    plugin = by_check(report, "Session Manager plugin")
    assert plugin.status == WARN and "not on PATH" in plugin.detail and "session-manager" in plugin.fix
    assert not cli.blocks and not plugin.blocks  # the agent needs them, a deploy does not

    missing = by_check(report, "CDK bootstrap", "us-east-1")
    # the project's policy cannot bootstrap: an administrator runs the command
    assert (missing.status, missing.detail) == (FAIL, "not bootstrapped (no CDKToolkit stack): bootstrapping makes "
                                                      "IAM roles, which docs/iam-policy.json does not allow")
    assert missing.fix == f"an administrator runs `./scripts/cdk bootstrap aws://{ACCOUNT}/{{region}}`"
    old = by_check(report, "CDK bootstrap", "us-west-2")
    assert old.status == FAIL and "version 5; the templates need 6" in old.detail
    ami = by_check(report, "AMI", "us-east-2", "g6")
    assert ami.status == FAIL and ami.detail.endswith("root snapshot 15 GiB + 16380 GiB free needs a 16395 GiB root "
                                                      "volume, more than a gp3 volume holds (16384 GiB)")
    assert "-c ami.g6=" in ami.fix
    unresolved = by_check(report, "AMI", "us-east-1", "inf2")
    assert unresolved.status == FAIL and "/aws/service/not/published does not resolve" in unresolved.detail
    assert "-c ami.inf2=" in unresolved.fix
    quota = by_check(report, "Type and quota", "us-east-2", "g6")
    assert quota.status == FAIL and "quota is 0 vCPU" in quota.detail and "L-DB2E81BA" in quota.detail
    assert "request an increase" in quota.detail
    assert "--quota-code L-DB2E81BA --desired-value 4" in quota.fix
    endpoint_quota = by_check(report, "Endpoint quota", "us-east-2", "sagemaker")
    assert endpoint_quota.status == FAIL and "request an increase" in endpoint_quota.detail
    assert "--service-code sagemaker --quota-code L-SMG6X" in endpoint_quota.fix
    image = by_check(report, "SageMaker image", "us-east-2", "sagemaker")
    assert image.status == FAIL and "ImageNotFoundException" in image.detail
    assert f"imageTag={PULL_TAG}" in image.fix
    retagged = by_check(report, "SageMaker image", "us-west-2", "sagemaker")
    assert retagged.status == WARN and "no longer tagged" in retagged.detail
    secret = by_check(report, "HF token secret", "us-east-2", "trn1")
    assert secret.status == FAIL and "aws-inference/hf-token is missing" in secret.detail
    assert "create-secret --name aws-inference/hf-token" in secret.fix
    g5g_image = by_check(report, "g5g image", "us-east-1", "g5g")
    assert g5g_image.status == FAIL and "InferenceG5gImage stack is not deployed" in g5g_image.detail
    build = by_check(report, "CodeBuild quota", "us-east-1", "g5g")
    assert build.status == FAIL and "(L-CBARMXL): request an increase" in build.detail
    assert not report.ok
    assert all(report.deployable(rig) == [] for rig in report.rig_regions)
    verdict = by_check(report, "Can deploy", subject="g6")
    assert verdict.status == FAIL and verdict.detail.startswith("nowhere: blocked by CDK bootstrap, AMI")


def test_unreadable_quotas_and_refused_calls_warn_without_blocking(endpoint: str, which: Any) -> None:
    answers = CannedAnswers()  # no quota answers: moto's Service Quotas refuses the EC2 codes
    bootstrap("us-east-2")
    answers.add_error("ecr", "DescribeImages", {"registryId": DLC_ACCOUNT}, "AccessDeniedException",
                      "User is not authorized to perform: ecr:DescribeImages")
    report, _ = run([G6, SAGEMAKER], answers, which, regions=["us-east-2"])
    quota = by_check(report, "Type and quota", "us-east-2", "g6")
    assert quota.status == WARN and "not readable (NoSuchResourceException)" in quota.detail
    assert quota.fix == "check L-DB2E81BA in Service Quotas"
    image = by_check(report, "SageMaker image", "us-east-2", "sagemaker")
    assert image.status == WARN
    assert image.detail.startswith("not checked: ecr DescribeImages failed: AccessDeniedException: User is not")
    assert image.fix == ("the caller's IAM policy does not allow ecr:DescribeImages: statement 'ReadOnly' of "
                         "docs/iam-policy.json grants it")
    endpoint_quota = by_check(report, "Endpoint quota", "us-east-2", "sagemaker")
    assert endpoint_quota.status == WARN and "<" not in endpoint_quota.detail  # moto's HTML 500 page, made readable
    assert report.ok and report.deployable("g6") == ["us-east-2"] and report.deployable("sagemaker") == ["us-east-2"]
    summary = by_check(report, "IAM permissions")
    assert (summary.status, summary.detail) == (WARN, "refused: SageMaker image (ecr:DescribeImages)")
    assert summary.fix == "attach docs/iam-policy.json to the caller (statements ReadOnly)"


def test_each_refused_check_names_the_statement_that_grants_it(endpoint: str, which: Any) -> None:
    answers = CannedAnswers()
    for service, operation, code in (("cloudformation", "DescribeStacks", "AccessDenied"),
                                     ("service-quotas", "GetServiceQuota", "AccessDeniedException"),
                                     ("freetier", "GetAccountPlanState", "AccessDeniedException"),
                                     ("ec2", "DescribeAvailabilityZones", "UnauthorizedOperation")):
        answers.add_error(service, operation, {}, code, f"User: arn:aws:iam::{ACCOUNT}:user/u is not authorized "
                          "to perform this operation because no identity-based policy allows it")
    report, _ = run([G6], answers, which, regions=["us-east-2"])
    expected = {"CDK bootstrap": "cloudformation:DescribeStacks", "Type and quota": "servicequotas:GetServiceQuota",
                "Account plan": "freetier:GetAccountPlanState", "Zones": "ec2:DescribeAvailabilityZones"}
    for check, action in expected.items():
        finding = by_check(report, check, None if check == "Account plan" else "us-east-2",
                           "g6" if check == "Type and quota" else None)
        assert finding.status == WARN and finding.denied == action, finding
        assert finding.fix == (f"the caller's IAM policy does not allow {action}: statement 'ReadOnly' of "
                               "docs/iam-policy.json grants it")
    summary = by_check(report, "IAM permissions")
    assert summary.detail == ("refused: Account plan, CDK bootstrap, Zones, Type and quota (cloudformation:DescribeStacks, "
                              "ec2:DescribeAvailabilityZones, freetier:GetAccountPlanState, "
                              "servicequotas:GetServiceQuota)")
    assert report.deployable("g6") == ["us-east-2"]  # a check that could not be made blocks nothing


MOTO_500 = ("<!doctype html>\n<html lang=en>\n<title>500 Internal Server Error</title>\n<h1>Internal Server Error</h1>\n"
            "<p>The server encountered an internal error and was unable to complete your request.</p>\n")
"""What moto's server answers for a service it has no backend for (the Free Tier API): HTTP 500, an HTML page."""


def test_a_call_the_endpoint_does_not_serve_reads_not_available_here_not_a_permission_fix(endpoint: str,
                                                                                         which: Any) -> None:
    answers = CannedAnswers()
    quotas(answers)
    answers.add_error("freetier", "GetAccountPlanState", {}, "500", MOTO_500)
    bootstrap("us-east-2")
    report, _ = run([G6], answers, which, regions=["us-east-2"])
    plan = by_check(report, "Account plan")
    assert (plan.status, plan.detail, plan.fix, plan.denied) == (
        WARN, "not available here: this endpoint does not serve freetier GetAccountPlanState (HTTP 500)",
        "none: not a permission; AWS serves this call, so the check runs against AWS", "")
    assert not [f for f in report.findings if f.check == "IAM permissions"]
    assert report.deployable("g6") == ["us-east-2"]  # a check that could not be made blocks nothing


def test_a_free_plan_account_blocks_every_rig_everywhere_with_the_upgrade_as_the_fix(endpoint: str,
                                                                                    which: Any) -> None:
    answers = CannedAnswers()
    quotas(answers)
    account_plan(answers, "FREE", accountPlanRemainingCredits={"amount": 187.5, "unit": "USD"})
    bootstrap("us-east-2")
    report, _ = run([G6, PINNED_SAGEMAKER], answers, which, regions=["us-east-2"])
    plan = by_check(report, "Account plan")
    assert plan.status == FAIL and plan.region is None and set(plan.blocks) == {"g6", "sagemaker"}
    assert plan.detail.startswith("Free plan (active, 187.5 USD of credits left): it launches only Free Tier")
    assert plan.fix.startswith("upgrade the account to the Paid plan")
    assert "`aws freetier upgrade-account-plan --account-plan-type PAID`" in plan.fix
    assert report.deployable("g6") == [] and report.deployable("sagemaker") == []
    assert by_check(report, "Can deploy", subject="g6").detail == "nowhere: blocked by Account plan"
    assert "--skip-check account-plan" in plan.fix
    # `up --doctor --skip-check account-plan` and `rehearse --skip-check account-plan`: the row stops no rig
    assert report.deployable("g6", doctor.ignored_checks(False, ["account-plan"])) == ["us-east-2"]
    # an account from before the plans, and a refused call: neither blocks
    for answer in ("ResourceNotFoundException", "AccessDeniedException"):
        answers = CannedAnswers()
        quotas(answers)
        answers.add_error("freetier", "GetAccountPlanState", {}, answer, "no")
        report, _ = run([G6], answers, which, regions=["us-east-2"])
        assert by_check(report, "Account plan").status == (OK if answer.startswith("Resource") else WARN)
        assert report.deployable("g6") == ["us-east-2"]


def plan_finding(answers: CannedAnswers) -> doctor.Finding:
    """The account-plan check alone, for g6 (its one call is canned: no server needed)."""
    scope = doctor.Scope(RecordingClients(aws.make_session(), answers), ACCOUNT, [G6], CATALOG)
    [finding] = check_account_plan(scope)
    return finding


@pytest.mark.parametrize(("answer", "status", "detail"), [
    ({"accountPlanExpirationDate": "2027-01-31T00:00:00Z"}, FAIL, "Free plan (active, ends 2027-01-31): it launches"),
    ({"accountPlanRemainingCredits": {"amount": 0, "unit": "USD"}, "accountPlanExpirationDate": "2027-01-31T00:00:00Z"},
     FAIL, "Free plan (active, 0 USD of credits left, ends 2027-01-31): it launches"),
    ({}, WARN, "Free plan (active) without credits or an end date: not certain, so it blocks nothing"),
    ({"accountPlanRemainingCredits": {"unit": "USD"}}, WARN, "Free plan (active) without credits or an end date"),
])
def test_the_free_plan_blocks_only_when_the_answer_is_certain(answer, status, detail) -> None:
    """What the Free Tier API answers for accounts that predate the plans is not published: a FREE with neither
    credits nor an end date warns, with the check and the upgrade as the fix, and stops no rig."""
    answers = CannedAnswers()
    account_plan(answers, "FREE", **answer)
    plan = plan_finding(answers)
    assert (plan.status, plan.detail[:len(detail)]) == (status, detail)
    assert "`aws freetier upgrade-account-plan --account-plan-type PAID`" in plan.fix
    report = doctor.DoctorReport((plan,), {"g6": ("us-east-2",)})
    assert report.deployable("g6") == ([] if status == FAIL else ["us-east-2"])


def test_a_free_tier_refusal_naming_no_action_points_at_billing_access_not_the_policy() -> None:
    answers = CannedAnswers()
    answers.add_error("freetier", "GetAccountPlanState", {}, "AccessDeniedException", "Access denied")
    plan = plan_finding(answers)
    assert plan.status == WARN and "IAM access to billing information is off" in plan.detail
    assert "'IAM user and role access to Billing information'" in plan.fix and "iam-policy.json" not in plan.fix
    assert not plan.denied and not doctor._permissions_summary([plan])  # not counted as the policy's refusal


def test_only_the_account_plan_can_be_skipped_by_name(capsys: Any) -> None:
    for command in (["up", "g6", "--doctor"], ["rehearse", "g6"]):
        with pytest.raises(SystemExit) as ended:
            main([*command, "--skip-check", "cdk-bootstrap"])
        assert ended.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--skip-check: invalid choice: 'cdk-bootstrap'" in err, err


def test_the_base_network_takes_the_zones_offering_most_rig_types():
    """rigs/placement/zones.py, which the base stack's deploy-time handler inlines (tests/stacks/test_deploy_time_handlers.py
    runs both on the same account)."""
    offered = {"us-west-2a": 3, "us-west-2b": 4, "us-west-2c": 3, "us-west-2d": 3, "us-west-2e": 0}
    assert choose_zones(offered, 2) == ("us-west-2a", "us-west-2b")
    assert choose_zones({"us-west-2a": 1, "us-west-2e": 0}, 3) == ("us-west-2a",) * 3  # repeated
    assert choose_zones({"us-west-2e": 0}, 2) == ()


def test_offered_zones_outside_the_base_network(endpoint: str, which: Any) -> None:
    answers = CannedAnswers()
    quotas(answers)
    bootstrap("us-west-2")
    # one zone, and trn1 not among the region's rigs: moto offers g6, g5g and inf2 in 2a-2c (2a comes first)
    # and trn1.2xlarge only in 2b and 2d
    one_zone = CATALOG.model_copy(update={
        "regions": {**CATALOG.regions,
                    "us-west-2": CATALOG.regions["us-west-2"].model_copy(update={"availability_zones": 1})},
        "rigs": {name: (rig.model_copy(update={"regions": ("us-east-2",)}) if name == "trn1" else rig)
                 for name, rig in CATALOG.rigs.items()}})
    session = aws.make_session()
    report = run_doctor([G6, TRN1], lambda: session, ["us-west-2"], catalog=one_zone, which=which,
                        clients=RecordingClients(session, answers))
    zones = by_check(report, "Zones", "us-west-2")
    assert zones.status == OK and zones.detail == "base network in a"
    trn1 = by_check(report, "Type and quota", "us-west-2", "trn1")
    assert trn1.status == FAIL and trn1.detail == "offered only in b, d, outside the base network's zones (a)"
    assert "-c zones.{region}=a,b" in trn1.fix
    assert by_check(report, "Type and quota", "us-west-2", "g6").status == OK
    assert report.deployable("g6") == ["us-west-2"] and report.deployable("trn1") == []


def test_an_unpinned_region_reports_the_digest_its_deploy_reads_and_fails_only_without_the_tag(endpoint: str,
                                                                                                   which: Any) -> None:
    answers = CannedAnswers()
    quotas(answers)
    dlc_image(answers, "us-east-2")
    tag_digest = "sha256:" + "7" * 64
    answers.add("ecr", "DescribeImages", {"registryId": DLC_ACCOUNT, "repositoryName": "vllm",
                                          "imageIds": [{"imageTag": PULL_TAG}]},
                {"imageDetails": [{"registryId": DLC_ACCOUNT, "repositoryName": "vllm", "imageDigest": tag_digest,
                                   "imageTags": [PULL_TAG]}]}, "us-east-1")
    answers.add_error("ecr", "DescribeImages", {"registryId": DLC_ACCOUNT, "imageIds": [{"imageTag": PULL_TAG}]},
                      "ImageNotFoundException", "The image with imageId {imageTag:'…'} does not exist", "us-west-2")
    for region in SAGEMAKER.regions:
        bootstrap(region)
    report, _ = run([SAGEMAKER], answers, which)  # the catalog pins us-east-2 only
    assert by_check(report, "SageMaker image", "us-east-2", "sagemaker").status == OK
    read = by_check(report, "SageMaker image", "us-east-1", "sagemaker")
    assert (read.status, read.detail) == (OK, "sha256:777777777777…: the tag's digest here, read at deploy")
    missing = by_check(report, "SageMaker image", "us-west-2", "sagemaker")
    assert missing.status == FAIL and missing.detail.startswith(f"the tag vllm:{PULL_TAG} is not in this region's "
                                                                "registry (ImageNotFoundException)")
    assert report.deployable("sagemaker") == ["us-east-2", "us-east-1"]


def test_one_screen_of_rows_merged_across_regions(endpoint: str, tmp_path: Any) -> None:
    from rich.console import Console

    answers = CannedAnswers()
    quotas(answers, ec2=0)
    report, _ = run(CATALOG.deployable(), answers, tools(tmp_path / "bin", aws=None, plugin=None))
    console = Console(width=160, record=True, file=open("/dev/null", "w"))  # noqa: SIM115 - closed with the test
    console.print(doctor.render(report))
    text = console.export_text()
    assert len(text.splitlines()) <= 60, text
    bootstrap_rows = [line for line in text.splitlines() if line.startswith("│ CDK bootstrap")]
    assert len(bootstrap_rows) == 1 and "│ all " in bootstrap_rows[0]  # three regions, one row
    assert f"aws://{ACCOUNT}/<region>" in text


def test_cli_exit_status_is_0_only_when_every_rig_named_can_deploy(endpoint: str, capsys: Any) -> None:
    assert main(["doctor", "g6", "--regions", "us-east-2"]) == 1  # not bootstrapped
    out = capsys.readouterr().out
    assert "CDK bootstrap" in out and "not bootstrapped" in out and "Can deploy" in out
    bootstrap("us-east-2")
    assert main(["doctor", "g6", "--regions", "us-east-2", "--json"]) == 0  # quotas unreadable: warnings only
    data = json.loads(capsys.readouterr().out)
    assert data["deployable"] == {"g6": ["us-east-2"]} and data["account"] == ACCOUNT
    assert {f["check"] for f in data["findings"]} >= {"Credentials", "CDK bootstrap", "Zones", "AMI", "Type and quota"}
    assert main(["doctor", "bedrock"]) == 0  # nothing to deploy, and the account answers
    assert "bedrock: Bedrock, nothing to deploy" in capsys.readouterr().out


def test_up_with_doctor_stops_before_any_deploy(endpoint: str, capsys: Any, tmp_path: Any,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGS_STATE_DIR", str(tmp_path / "state"))
    assert main(["up", "g6", "--doctor", "--evidence", str(tmp_path / "evidence")]) == 1
    captured = capsys.readouterr()
    assert "doctor: g6 cannot deploy anywhere (see the FAIL rows); nothing deployed" in captured.err
    assert boto3.client("cloudformation", region_name="us-east-2").describe_stacks()["Stacks"] == []
    assert not (tmp_path / "evidence").exists()


@pytest.mark.parametrize(("listed", "status", "detail"), [
    # AWS's own spelling is unknown offline: the ARM build quotas are found by their prefix, what is found is said
    ([("Concurrently running builds for ARM/Small environment", "L-A1", 1),
      ("Concurrently running builds for Linux ARM/XLarge environment", "L-A3", 2),
      ("Concurrently running builds for ARM/Large environment", "L-A2", 1),
      ("Concurrently running builds for ARM Lambda/1GB environment", "L-AL", 10),
      ("Concurrently running builds for Linux/XLarge environment", "L-X", 5)], OK,
     "ARM XLarge builds at once: 2 (L-A3); ARM build quotas: ARM/Large 1 (L-A2), ARM/Small 1 (L-A1), "
     "Linux ARM/XLarge 2 (L-A3)"),
    ([("Concurrently running builds for ARM/Small environment", "L-A1", 1),
      ("Concurrently running builds for ARM/2XLarge environment", "L-A4", 1)], WARN,
     "no ARM XLarge build quota listed here; ARM build quotas: ARM/2XLarge 1 (L-A4), ARM/Small 1 (L-A1)"),
    ([], WARN, "no ARM XLarge build quota listed here; ARM build quotas: none"),
])
def test_the_codebuild_quota_is_found_among_the_arm_build_quotas(endpoint: str, which: Any, listed, status,
                                                                   detail) -> None:
    answers = CannedAnswers()
    quotas(answers, builds=listed)
    report, _ = run([G5G], answers, which, regions=["us-east-1"])
    found = by_check(report, "CodeBuild quota", "us-east-1", "g5g")
    assert (found.status, found.detail) == (status, detail)


def test_the_largest_root_volume_is_the_deploy_time_handlers() -> None:
    from rigs.catalog.model import MAX_ROOT_VOLUME_GIB
    from stacks.parts.handlers.root_volume import GP3_MAX_GIB

    assert MAX_ROOT_VOLUME_GIB == GP3_MAX_GIB


def test_g5g_build_quota_matches_the_image_build() -> None:
    import inspect

    from aws_cdk import aws_codebuild as codebuild

    from stacks.parts.images.build import ImageBuild

    compute = inspect.signature(ImageBuild.__init__).parameters["compute_type"].default
    size = {codebuild.ComputeType.SMALL: "Small", codebuild.ComputeType.MEDIUM: "Medium",
            codebuild.ComputeType.LARGE: "Large", codebuild.ComputeType.X_LARGE: "XLarge",
            codebuild.ComputeType.X2_LARGE: "2XLarge"}[compute]
    assert G5G_BUILD_QUOTA == f"Concurrently running builds for ARM/{size} environment"
