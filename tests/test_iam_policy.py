"""``docs/iam-policy.json`` grants every AWS call of ``rigs/`` and ``agent/``, and nothing they do not make.

The calls are read from the source (:mod:`tests.awscalls`), each mapped to its IAM action through
botocore's models (:func:`rigs.account.permissions.action`). What the code does not call through boto3 but
still needs is listed in :data:`EXTERNAL` with the tool that calls it. The stacks' deploy-time
handlers are not the user's: each runs under its own function's role, granted by its stack.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from rigs.account import permissions
from rigs.catalog.model import load_catalog
from tests.awscalls import aws_calls
from tests.conftest import PROJECT_DIR

CODE = sorted(p for folder in ("rigs", "agent") for p in (PROJECT_DIR / folder).rglob("*.py")
              if p.name != "moto_server.py")  # moto's own server: it talks to moto's backends, never to AWS
NOT_CALLS = {"rigs/userdata/__init__.py:78: boot.signal_resource"}
"""Names that look like an operation but are not a call: the boot settings' CloudFormation resource to signal."""
EXTERNAL = {
    "sts:AssumeRole": "the CDK CLI (./scripts/cdk deploy, destroy) works through the bootstrap's roles",
    "ssm:StartSession": "`aws ssm start-session`, the agent's port forwards (agent/reach/forwarding.py)",
    "ssm:TerminateSession": "the Session Manager plugin ends the session when the forward stops",
    "ssm:ResumeSession": "the Session Manager plugin reconnects a dropped session",
}
POLICY = json.loads((PROJECT_DIR / "docs" / "iam-policy.json").read_text(encoding="utf-8"))


def code_actions() -> dict[str, list[str]]:
    calls, unresolved = aws_calls(CODE)
    assert {u.replace(f"{PROJECT_DIR}/", "") for u in unresolved} == NOT_CALLS
    actions: dict[str, list[str]] = {}
    for call in calls:
        action = permissions.action(call.service, call.operation)
        if action is not None:
            actions.setdefault(action, []).append(call.where.replace(f"{PROJECT_DIR}/", ""))
    return actions


MANTLE = {action for actions in permissions.MANTLE_CALLS.values() for action in actions}
"""Bedrock's OpenAI-compatible endpoint is called over plain HTTP (no boto3 operation to read from the source)."""


def test_every_aws_call_of_the_code_is_granted_by_the_policy() -> None:
    actions = code_actions()
    assert len(actions) > 70  # the walk finds the calls (a walk that found none would pass anything)
    missing = {action: where for action, where in actions.items() if not permissions.granting(action, POLICY)}
    assert missing == {}, f"not in docs/iam-policy.json: {missing}"
    assert all(permissions.granting(action, POLICY) for action in (*EXTERNAL, *MANTLE))


def test_the_policy_grants_nothing_the_code_does_not_need() -> None:
    needed = {a.lower() for a in code_actions()} | {a.lower() for a in (*EXTERNAL, *MANTLE)}
    granted = {a.lower() for s in POLICY["Statement"] for a in permissions._listed(s["Action"])}
    assert granted - needed == set()
    assert all("*" not in a for a in granted)  # each action by name: no wildcard grants more than is called


def test_the_policy_is_one_managed_policy_with_a_named_statement_per_job() -> None:
    assert len(json.dumps(POLICY, separators=(",", ":"))) <= 6144  # IAM's limit for a managed policy
    sids = [s["Sid"] for s in POLICY["Statement"]]
    assert len(set(sids)) == len(sids) and all(s["Effect"] == "Allow" and s["Resource"] for s in POLICY["Statement"])
    reads = next(s for s in POLICY["Statement"] if s["Sid"] == "ReadOnly")
    assert all(a.split(":")[1].startswith(("Describe", "Get", "List", "BatchGet")) for a in reads["Action"])


def test_bedrock_is_granted_for_the_catalogs_model_only() -> None:
    model = load_catalog().get("bedrock").model_id  # a cross-region inference profile: us.<model>
    bedrock = next(s for s in POLICY["Statement"] if s["Sid"] == "InvokeBedrockModel")
    assert sorted(bedrock["Resource"]) == [f"arn:aws:bedrock:*:*:inference-profile/{model}",
                                           f"arn:aws:bedrock:*::foundation-model/{model.split('.', 1)[1]}"]


def test_the_walk_places_each_way_the_code_names_a_call(tmp_path: Path) -> None:
    source = tmp_path / "calls.py"
    source.write_text(textwrap.dedent('''
        SERVICE = "sagemaker-runtime"

        class Runtime:
            service = SERVICE

            def ask(self):
                return self.client.invoke_endpoint(EndpointName="e")

        def check(clients, region, pricing_client, unknown):
            made = clients("pricing", "us-east-1"), clients("ssm", region)  # services the code makes clients of
            cfn = clients("cloudformation", region)
            cfn.delete_stack(StackName="s")
            clients("ec2", region).describe_vpcs()
            aws.paginate(pricing_client, "get_products", "PriceList")
            ecr = clients("ecr", region)
            ecr.get_waiter("image_scan_complete")
            self._call("ssm", region, "describe_instance_information")
            unknown.terminate_instances(InstanceIds=[])
            aws.paginate(unknown, "describe_subnets", "Subnets")
    '''), encoding="utf-8")
    calls, unresolved = aws_calls([source])
    assert sorted((c.service, c.operation) for c in calls) == [
        ("cloudformation", "DeleteStack"), ("ec2", "DescribeVpcs"), ("ecr", "DescribeImageScanFindings"),
        ("pricing", "GetProducts"), ("sagemaker-runtime", "InvokeEndpoint"), ("ssm", "DescribeInstanceInformation")]
    assert [u.split(": ", 1)[1] for u in unresolved] == ["unknown.terminate_instances",
                                                         "'describe_subnets' in aws.paginate(...)"]
    assert permissions.action("service-quotas", "GetServiceQuota") == "servicequotas:GetServiceQuota"
    assert permissions.action("sagemaker-runtime", "InvokeEndpoint") == "sagemaker:InvokeEndpoint"
    assert permissions.action("bedrock-runtime", "ConverseStream") == "bedrock:InvokeModelWithResponseStream"
    assert permissions.action("sagemaker-runtime", "InvokeEndpointWithResponseStream") == "sagemaker:InvokeEndpoint"


def test_status_needs_only_the_read_only_statement_by_moto_s_own_iam_checks(monkeypatch) -> None:
    """moto maps each request to its IAM action itself: `rigs status` signed by a user holding only the
    ReadOnly statement lists everything, and is refused the one listing whose action is taken away."""
    import boto3
    from moto import mock_aws, settings
    from moto.core.responses import ActionAuthenticatorMixin

    from rigs.estate import inventory, resources
    from rigs.catalog.pricing import PriceBook

    read_only = next(s for s in POLICY["Statement"] if s["Sid"] == "ReadOnly")
    with mock_aws():
        boto3.client("ec2", region_name="us-east-2").create_volume(
            Size=10, AvailabilityZone="us-east-2a",
            TagSpecifications=[{"ResourceType": "volume", "Tags": [{"Key": "ManagedBy", "Value": "aws-inference"}]}])
        iam = boto3.client("iam", region_name="us-east-1")

        def session_with(user: str, statement: dict) -> boto3.Session:
            iam.create_user(UserName=user)
            iam.put_user_policy(UserName=user, PolicyName="p", PolicyDocument=json.dumps(
                {"Version": "2012-10-17", "Statement": [statement]}))
            key = iam.create_access_key(UserName=user)["AccessKey"]
            return boto3.Session(aws_access_key_id=key["AccessKeyId"], aws_secret_access_key=key["SecretAccessKey"],
                                 aws_session_token=None, region_name="us-east-2")

        allowed = session_with("reader", read_only)
        short = session_with("short", {**read_only, "Action": [a for a in read_only["Action"]
                                                               if a != "ec2:DescribeVolumes"]})
        monkeypatch.setattr(settings, "INITIAL_NO_AUTH_ACTION_COUNT", 0)
        monkeypatch.setattr(ActionAuthenticatorMixin, "request_count", 0)
        found = inventory.discover(allowed, ["us-east-2"], PriceBook(None))
        assert found.problems == () and [r.kind for r in found.resources] == [resources.VOLUME]
        refused = inventory.discover(short, ["us-east-2"], PriceBook(None))
        # moto answers AccessDenied where EC2 says UnauthorizedOperation; both are refusals to rigs.account.permissions
        assert refused.problems == ("us-east-2: could not list EBS volumes (AccessDenied)",)
