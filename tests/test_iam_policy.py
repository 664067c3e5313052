"""``docs/iam-policy.json`` grants every AWS call of ``rigs/`` and ``agent/``, and every ``aws`` command the docs tell
its user to run, and nothing else.

The calls are read from the source (:mod:`tests.awscalls`), each mapped to its IAM action through
botocore's models (:func:`rigs.account.permissions.action`). What the code does not call through boto3 but
still needs is listed in :data:`EXTERNAL` with the tool that calls it. The stacks' deploy-time
handlers are not the user's: each runs under its own function's role, granted by its stack. The docs' commands
(``aws <service> <command>`` in README.md and docs/*.md, in code blocks and inline code) are mapped the same way, the
CLI's own commands through :data:`CLI_COMMANDS`; a command the policy does not grant (one an administrator or the
account owner runs, the CLI's own configuration and sign-ins) is in :data:`NOT_GRANTED` with why.
"""

from __future__ import annotations

import fnmatch
import json
import re
import textwrap
from datetime import date
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from rigs.account import permissions
from rigs.catalog.model import load_catalog
from tests.awscalls import aws_calls, operations, services
from tests.conftest import PROJECT_DIR

CODE = sorted(p for folder in ("rigs", "agent") for p in (PROJECT_DIR / folder).rglob("*.py")
              if p.name != "moto_server.py")  # moto's own server: it talks to moto's backends, never to AWS
NOT_CALLS = {"rigs/userdata/__init__.py: boot.signal_resource"}
"""Names that look like an operation but are not a call (file and name, its line left out so an edit above it
moves nothing): the boot settings' CloudFormation resource to signal."""
EXTERNAL = {
    "sts:AssumeRole": "the CDK CLI (./scripts/cdk deploy, destroy) works through the bootstrap's roles",
    "ssm:StartSession": "`aws ssm start-session`, the agent's port forwards (agent/reach/forwarding.py)",
    "ssm:TerminateSession": "the Session Manager plugin ends the session when the forward stops",
    "ssm:ResumeSession": "the Session Manager plugin reconnects a dropped session",
}
POLICY = json.loads((PROJECT_DIR / "docs" / "iam-policy.json").read_text(encoding="utf-8"))


def code_actions() -> dict[str, list[str]]:
    calls, unresolved = aws_calls(CODE)
    assert {re.sub(r":\d+:", ":", u.replace(f"{PROJECT_DIR}/", "")) for u in unresolved} == NOT_CALLS
    actions: dict[str, list[str]] = {}
    for call in calls:
        action = permissions.action(call.service, call.operation)
        if action is not None:
            actions.setdefault(action, []).append(call.where.replace(f"{PROJECT_DIR}/", ""))
    return actions


MANTLE = {action for actions in permissions.MANTLE_CALLS.values() for action in actions}
"""Bedrock's OpenAI-compatible endpoint is called over plain HTTP (no boto3 operation to read from the source)."""

DOCS = [PROJECT_DIR / "README.md", *sorted((PROJECT_DIR / "docs").glob("*.md"))]
AWS_COMMAND = re.compile(r"(?<![\w./:-])aws(?:[ \t]|\\\n)+(?P<service>[a-z][a-z0-9-]*)"
                         r"(?:(?:[ \t]|\\\n)+(?P<command>[a-z][a-z0-9-]*))?")
"""``aws <service> <command>`` (a line continued with a backslash included); ``aws configure`` has no command."""
CLI_COMMANDS: dict[str, tuple[str, ...]] = {
    "logs tail": ("logs:FilterLogEvents",),
}
"""The AWS CLI's own commands, which are no API operation of their service, with the actions of the calls they make.
``aws logs tail`` pages FilterLogEvents, and with ``--follow`` polls it (aws-cli v2's
awscli/customizations/logs/tail.py, https://github.com/aws/aws-cli/blob/v2/awscli/customizations/logs/tail.py)."""
NOT_GRANTED: dict[str, str] = {
    "configure": "`aws configure` writes the CLI's own config and credentials files, `aws configure list-profiles` "
                 "reads them: no AWS call",
    "sso login": "signs in through IAM Identity Center for the credentials this policy is then checked against; what "
                 "the sign-in may do is the permission set an administrator assigns, not this policy",
    "login": "signs in with console credentials for the credentials this policy is then checked against; it needs "
             "signin:AuthorizeOAuth2Access and signin:CreateOAuth2Token, AWS's managed policy "
             "SignInLocalDevelopmentAccess, which an administrator attaches",
    "iam create-policy": "an administrator creates this policy (docs/provisioning.md, Permissions): a user who "
                         "could would not need it",
    "iam attach-user-policy": "an administrator attaches this policy to the user (docs/provisioning.md, Permissions)",
    "iam simulate-custom-policy": "an optional check of EndOwnSessions that, the docs say, needs "
                                  "iam:SimulateCustomPolicy, which this policy does not grant: an administrator's",
    "freetier upgrade-account-plan": "moves the account to the Paid plan: the account owner's billing decision, the "
                                     "Account plan check's fix (docs/doctor.md), also in the Billing console",
}
"""Documented commands the policy does not grant, each with why: an administrator's or the account owner's, or the
CLI's own configuration and sign-ins, which need no action of this policy. The key is ``service command``, or
``service`` alone for every command of it."""
MARKDOWN = MarkdownIt("commonmark").enable("table")


def quoted_code(markdown: str) -> list[str]:
    """The code ``markdown`` quotes: each code block, each inline code (in a table too; a line break in it a space)."""
    code = []
    for token in MARKDOWN.parse(markdown):
        if token.type in ("fence", "code_block"):
            code.append(token.content)
        elif token.type == "inline":
            code.extend(child.content for child in token.children or () if child.type == "code_inline")
    return code


def quoted_commands(paths: list[Path]) -> dict[str, list[str]]:
    """``service command`` (``service`` where none follows) -> the files that quote ``aws service command`` in code."""
    found: dict[str, list[str]] = {}
    for path in paths:
        for code in quoted_code(path.read_text(encoding="utf-8")):
            for match in AWS_COMMAND.finditer(code):
                command = " ".join(word for word in match.group("service", "command") if word)
                where = str(path.relative_to(PROJECT_DIR)) if path.is_relative_to(PROJECT_DIR) else path.name
                if where not in found.setdefault(command, []):
                    found[command].append(where)
    return found


def not_granted(command: str) -> str | None:
    """Why the policy does not grant ``command`` (None: it must)."""
    return NOT_GRANTED.get(command, NOT_GRANTED.get(command.split()[0]))


def cli_actions(command: str) -> tuple[str, ...] | None:
    """The IAM actions ``service command`` needs (empty: none, as for ``sts get-caller-identity``); None when neither
    botocore's model of the service nor :data:`CLI_COMMANDS` knows the command."""
    if command in CLI_COMMANDS:
        return CLI_COMMANDS[command]
    service, _, name = command.partition(" ")
    if service not in services():
        return None
    operation = {method.replace("_", "-"): op for method, op in operations(service).items()}.get(name)
    if operation is None:
        return None
    action = permissions.action(service, operation)
    return () if action is None else (action,)


def docs_actions() -> dict[str, list[str]]:
    """Each action a command the docs give the policy's user needs -> those commands."""
    actions: dict[str, list[str]] = {}
    for command in quoted_commands(DOCS):
        if not_granted(command) is None:
            for action in cli_actions(command) or ():
                actions.setdefault(action, []).append(command)
    return actions


def test_every_aws_call_of_the_code_is_granted_by_the_policy() -> None:
    actions = code_actions()
    assert len(actions) > 70  # the walk finds the calls (a walk that found none would pass anything)
    missing = {action: where for action, where in actions.items() if not permissions.granting(action, POLICY)}
    assert missing == {}, f"not in docs/iam-policy.json: {missing}"
    assert all(permissions.granting(action, POLICY) for action in (*EXTERNAL, *MANTLE))


def test_every_aws_command_the_docs_give_their_reader_is_granted_by_the_policy() -> None:
    commands = quoted_commands(DOCS)
    assert len(commands) > 15 and "codebuild start-build" in commands  # the walk finds them (the g5g image build's)
    unknown = {c: where for c, where in commands.items() if not_granted(c) is None and cli_actions(c) is None}
    assert unknown == {}, f"neither an API operation nor in CLI_COMMANDS (nor in NOT_GRANTED): {unknown}"
    missing = {c: (cli_actions(c), where) for c, where in commands.items() if not_granted(c) is None
               and not all(permissions.granting(action, POLICY) for action in cli_actions(c) or ())}
    assert missing == {}, f"documented for the user, not in docs/iam-policy.json: {missing}"


def test_each_command_the_policy_leaves_out_is_documented_and_not_granted() -> None:
    commands = quoted_commands(DOCS)
    stale = [key for key in NOT_GRANTED if not any(c == key or c.split()[0] == key for c in commands)]
    assert stale == [], f"no longer in the docs: remove from NOT_GRANTED: {stale}"
    theirs = {action for c in commands if not_granted(c) for action in cli_actions(c) or ()}
    assert theirs >= {"iam:CreatePolicy", "iam:AttachUserPolicy", "iam:SimulateCustomPolicy",
                      "freetier:UpgradeAccountPlan"}
    assert [action for action in theirs if permissions.granting(action, POLICY)] == []


def test_the_docs_commands_are_read_from_their_code_only(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(textwrap.dedent('''
        Run the aws account checks first (prose: not a command), then `aws codebuild start-build --project-name p`.

        ```
        group=$(aws cloudformation describe-stacks --stack-name S \\
          --query 'Stacks[0].Outputs' --output text)
        aws logs tail /aws-inference/g6 --follow   # a comment naming aws-inference, arn:aws:iam::1:role/x
        ```

        | Command | Settles |
        |---|---|
        | `aws sts get-caller-identity` | who you are |

        Store it with `aws ssm put-parameter --name /x --type
        SecureString`, or ask an administrator to run `aws iam create-policy`; sign in with `aws sso login` or
        `aws configure`.

            aws ec2 describe-vpcs
    '''), encoding="utf-8")
    commands = quoted_commands([page])
    assert sorted(commands) == ["cloudformation describe-stacks", "codebuild start-build", "configure",
                                "ec2 describe-vpcs", "iam create-policy", "logs tail", "ssm put-parameter", "sso login",
                                "sts get-caller-identity"]
    assert [cli_actions(c) for c in ("codebuild start-build", "logs tail", "sts get-caller-identity", "sso login")] == [
        ("codebuild:StartBuild",), ("logs:FilterLogEvents",), (), None]
    assert cli_actions("sagemaker-runtime invoke-endpoint") == ("sagemaker:InvokeEndpoint",)
    assert cli_actions("service-quotas list-service-quotas") == ("servicequotas:ListServiceQuotas",)
    assert [not_granted(c) is None for c in ("iam create-policy", "configure list-profiles", "iam list-roles")] == [
        False, False, True]


def test_the_policy_grants_nothing_the_code_or_the_docs_reader_does_not_need() -> None:
    needed = {a.lower() for a in (*code_actions(), *docs_actions(), *EXTERNAL, *MANTLE)}
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


def test_an_assumed_role_holding_the_policy_is_allowed_its_calls_by_moto_s_own_iam_checks(monkeypatch) -> None:
    """An assumed role's session (as an SSO user's is) holding docs/iam-policy.json, under moto's IAM enforcement:
    the project's calls go through, a call the policy does not name is refused. (moto evaluates actions here, not
    the resource patterns or tag conditions: see the EndOwnSessions test below.)"""
    import boto3
    from botocore.exceptions import ClientError
    from moto import mock_aws, settings
    from moto.core.responses import ActionAuthenticatorMixin

    with mock_aws():
        iam = boto3.client("iam", region_name="us-east-1")
        trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                        "Principal": {"AWS": "arn:aws:iam::123456789012:root"}}]}
        role = iam.create_role(RoleName="runner", AssumeRolePolicyDocument=json.dumps(trust))["Role"]
        iam.put_role_policy(RoleName="runner", PolicyName="aws-inference", PolicyDocument=json.dumps(POLICY))
        assumed = boto3.client("sts", region_name="us-east-1").assume_role(
            RoleArn=role["Arn"], RoleSessionName="alice@example.com")["Credentials"]
        session = boto3.Session(aws_access_key_id=assumed["AccessKeyId"], aws_secret_access_key=assumed["SecretAccessKey"],
                                aws_session_token=assumed["SessionToken"], region_name="us-east-2")
        monkeypatch.setattr(settings, "INITIAL_NO_AUTH_ACTION_COUNT", 0)
        monkeypatch.setattr(ActionAuthenticatorMixin, "request_count", 0)
        assert assumed["AccessKeyId"].startswith("ASIA")  # temporary credentials of the role's session
        ec2 = session.client("ec2")
        assert ec2.describe_volumes()["Volumes"] == []  # ReadOnly's ec2:DescribeVolumes
        with pytest.raises(ClientError, match="AccessDenied"):
            ec2.create_volume(Size=10, AvailabilityZone="us-east-2a")  # no statement names ec2:CreateVolume


def test_every_action_the_policy_names_is_one_the_service_authorization_reference_lists() -> None:
    reference = json.loads(permissions.REFERENCE_PATH.read_text(encoding="utf-8"))
    prefixes = {a.split(":")[0] for s in POLICY["Statement"] for a in permissions._listed(s["Action"])}
    assert set(reference["services"]) == prefixes  # the lists of the services the policy uses, each whole
    assert date.fromisoformat(reference["as_of"]) <= date.fromisoformat(reference["written"])
    assert all(entry["page"].startswith("https://docs.aws.amazon.com/service-authorization/latest/reference/list_")
               for entry in reference["services"].values())
    assert permissions.unlisted(POLICY) == []
    mapped = [a for a in permissions.ACTIONS.values() if a] + list(EXTERNAL) + list(MANTLE) + [
        a for actions in CLI_COMMANDS.values() for a in actions]
    assert permissions.unlisted({"Statement": [{"Action": mapped}]}) == []
    # what the check catches: a typo, and an API operation that is no action of its service
    assert permissions.unlisted({"Statement": [{"Action": ["ec2:DescribeVolume", "ec2:DescribeVolumes",
                                                           "bedrock:Converse", "freetier:GetAccountPlanState"]}]}) == [
        "ec2:DescribeVolume", "bedrock:Converse"]


SESSION_OWNERS = {
    # caller kind: (aws:userid, the session's id, the aws:ssmmessages:session-id tag Session Manager puts on it)
    "IAM user": ("AIDAEXAMPLEUSERID0001", "alice-0a1b2c3d4e5f6a7b8", "AIDAEXAMPLEUSERID0001"),
    "assumed role": ("AROAEXAMPLEROLEID0001:botocore-session-1764633600",
                     "botocore-session-1764633600-0a1b2c3d4e5f6a7b8",
                     "AROAEXAMPLEROLEID0001:botocore-session-1764633600"),
    "SSO": ("AROAEXAMPLESSOROLE001:alice@example.com", "alice@example.com-0a1b2c3d4e5f6a7b8",
            "AROAEXAMPLESSOROLE001:alice@example.com"),
}
"""Documented values (Session Manager's sample policies, "Allow a user to end only sessions they started", method 2:
the tag is the user's ID for a user, ``role-id:caller-specified-role-name`` for an assumed role, which an SSO
session is; a session's id begins with the caller's name, not its ID)."""


def _allowed(statement: dict, action: str, resource: str, userid: str, tags: dict[str, str]) -> bool:
    """IAM's answer for one Allow statement of string conditions: policy variables substituted, wildcards matched.

    moto's IAM cannot evaluate this statement: it authorizes SSM calls against the resource ``*`` and fills in no
    resource tag or policy variable, so a condition on ``ssm:resourceTag/...`` never holds there."""
    def resolve(pattern: str) -> str:
        return pattern.replace("${aws:userid}", userid)

    if not any(fnmatch.fnmatchcase(action, resolve(a)) for a in permissions._listed(statement["Action"])):
        return False
    if not any(fnmatch.fnmatchcase(resource, resolve(r)) for r in permissions._listed(statement["Resource"])):
        return False
    for operator, keys in statement.get("Condition", {}).items():
        assert operator in ("StringLike", "StringEquals"), operator
        for key, wanted in keys.items():
            value = tags.get(key.removeprefix("ssm:resourceTag/"))
            match = fnmatch.fnmatchcase if operator == "StringLike" else str.__eq__
            if value is None or not any(match(value, resolve(w)) for w in permissions._listed(wanted)):
                return False
    return True


@pytest.mark.parametrize("caller", SESSION_OWNERS)
def test_every_kind_of_caller_may_end_and_resume_its_own_session_and_no_other(caller: str) -> None:
    """The Session Manager plugin's TerminateSession on Ctrl-C (and ResumeSession on a dropped link): allowed on the
    caller's own session whatever kind of caller it is, refused on another caller's."""
    statement = next(s for s in POLICY["Statement"] if s["Sid"] == "EndOwnSessions")
    userid, session_id, tag = SESSION_OWNERS[caller]
    own = {"aws:ssmmessages:session-id": tag, "aws:ssmmessages:target-id": "i-0123456789abcdef0"}
    arn = f"arn:aws:ssm:us-east-2:123456789012:session/{session_id}"
    for action in ("ssm:TerminateSession", "ssm:ResumeSession"):
        assert _allowed(statement, action, arn, userid, own), (caller, action)
    for other, (other_id, other_session, other_tag) in SESSION_OWNERS.items():
        if other != caller:
            theirs = {**own, "aws:ssmmessages:session-id": other_tag}
            other_arn = f"arn:aws:ssm:us-east-2:123456789012:session/{other_session}"
            assert not _allowed(statement, "ssm:TerminateSession", other_arn, userid, theirs), (caller, other)
    assert not _allowed(statement, "ssm:StartSession", arn, userid, own)
