"""``python -m agent.run``: options, --list, bad input, the AWS session check, the runner call site."""

from __future__ import annotations

import io
import json
import types
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from agent import run as run_module
from agent.reach.discovery import AwsClients
from rigs.catalog.model import load_catalog
from rigs.contract import MANAGED_BY, TAG_MANAGED_BY, OutputKey

from tests.agent.conftest import ChatServer, FakeRunner

CATALOG = load_catalog()


def test_help_names_every_option_and_the_benchmarks(fake_runner: FakeRunner, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as done:
        run_module.main(["--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    for option in ("--backends", "--local", "--list", "--runs", "--out", "--region", "--profile", "--demos"):
        assert option in text
    assert "G6_URL" in text and "BACKENDS=a,b" in text


def test_unknown_backend_lists_known_ones(fake_runner: FakeRunner, capsys: pytest.CaptureFixture) -> None:
    assert run_module.main(["--backends", "g6,h100"], env={}) == 2
    err = capsys.readouterr().err
    assert "unknown backend 'h100'; known backends: bedrock, bedrock-mantle, g6, g5g, sagemaker, inf2, trn1, local" in err
    assert fake_runner.calls == []


def test_unknown_backend_in_variable(fake_runner: FakeRunner, capsys: pytest.CaptureFixture) -> None:
    assert run_module.main([], env={"BACKENDS": "a100"}) == 2
    assert "known backends" in capsys.readouterr().err


def test_list_without_aws_offers_the_local_rig(no_aws: None, fake_runner: FakeRunner,
                                              capsys: pytest.CaptureFixture) -> None:
    assert run_module.main(["--list"], env={}) == 0
    out = capsys.readouterr().out
    assert "AWS: not used" in out
    assert "local" in out and "nothing else is configured (no AWS credentials found" in out
    assert "bedrock: no AWS credentials found" in out
    assert "g6: not discovered" in out and "G6_URL" in out
    assert fake_runner.calls == []


def test_list_with_a_url_only(no_aws: None, fake_runner: FakeRunner, capsys: pytest.CaptureFixture) -> None:
    assert run_module.main(["--list"], env={"G6_URL": "http://127.0.0.1:9/v1"}) == 0
    out = capsys.readouterr().out
    assert "G6_URL=http://127.0.0.1:9/v1" in out
    assert "  local" not in out


def test_explicit_aws_backend_without_credentials_is_one_line(no_aws: None, fake_runner: FakeRunner,
                                                               capsys: pytest.CaptureFixture) -> None:
    assert run_module.main(["--backends", "bedrock"], env={}) == 3  # as `python -m rigs` and ./scripts/cdk
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no AWS credentials found: run `aws configure`" in err[0]
    assert "--backends local" in err[0]


class ExpiredSession:
    """Credentials are present, STS says they expired."""

    def __init__(self) -> None:
        self.client_calls: list[str] = []

    def get_credentials(self) -> object:
        return object()

    def client(self, service: str, **kwargs: Any) -> Any:
        self.client_calls.append(service)
        client = boto3.client(service, region_name=kwargs.get("region_name"))
        stubber = Stubber(client)
        stubber.add_client_error("get_caller_identity", "ExpiredToken", "The security token included in the "
                                                                        "request is expired")
        stubber.activate()
        return client


def test_expired_session_is_one_line_before_any_work(monkeypatch: pytest.MonkeyPatch, fake_runner: FakeRunner,
                                                     capsys: pytest.CaptureFixture) -> None:
    session = ExpiredSession()
    monkeypatch.setattr(run_module, "_session", lambda profile, region: session)
    assert run_module.main([], env={}) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "AWS rejected the credentials (ExpiredToken" in err[0] and "aws sso login" in err[0]
    assert session.client_calls == ["sts"]  # no discovery, nothing started
    assert fake_runner.calls == []


def test_urls_only_never_touch_aws(monkeypatch: pytest.MonkeyPatch, fake_runner: FakeRunner, chat_server: ChatServer,
                                   tmp_path: Path) -> None:
    def no_session(profile: str | None, region: str | None) -> None:
        raise AssertionError("AWS was used")

    monkeypatch.setattr(run_module, "_session", no_session)
    code = run_module.main(["--backends", "g6", "--runs", "2", "--out", str(tmp_path / "out")],
                           env={"G6_URL": chat_server.base_url, "G6_MODEL": "served"})
    assert code == 0
    (call,) = fake_runner.calls
    (backend,) = call["backends"]
    assert (backend.name, backend.base_url, backend.model_id) == ("g6", chat_server.base_url, "served")
    assert call["options"].runs == 2 and call["options"].demos == "counting,orchestrator,chat"
    assert call["options"].backends == "g6"  # the user's choice, for run.json (the recommendation chooses among them)
    assert call["out_dir"] == tmp_path / "out" and call["out_dir_ready"]  # claimed before the runner was called
    assert not call["out_dir"].exists()  # and released, as the (fake) runner started no run in it
    assert call["session"] is None


def test_runner_exit_code_is_the_commands(fake_runner: FakeRunner, chat_server: ChatServer, tmp_path: Path) -> None:
    fake_runner.code = 1
    assert run_module.main(["--backends", "g6", "--out", str(tmp_path)], env={"G6_URL": chat_server.base_url}) == 1


def test_backends_named_by_the_environment_are_the_users_choice_too(fake_runner: FakeRunner, chat_server: ChatServer,
                                                                    tmp_path: Path) -> None:
    env = {"G6_URL": chat_server.base_url, "G5G_URL": chat_server.base_url, "BACKENDS": "G5G, g6"}
    assert run_module.main(["--out", str(tmp_path / "out")], env=env) == 0
    assert fake_runner.calls[0]["options"].backends == "g6,g5g"  # parsed, in registry order


def make_endpoint(session: boto3.Session) -> None:
    sm = session.client("sagemaker", region_name="us-east-2")
    sm.create_model(ModelName="m", ExecutionRoleArn="arn:aws:iam::123456789012:role/r",
                    PrimaryContainer={"Image": "123456789012.dkr.ecr.us-east-2.amazonaws.com/vllm:x"})
    sm.create_endpoint_config(EndpointConfigName="c", ProductionVariants=[{
        "VariantName": "AllTraffic", "ModelName": "m", "InitialInstanceCount": 1, "InstanceType": "ml.m5.large"}])
    sm.create_endpoint(EndpointName="ep-1", EndpointConfigName="c")
    outputs = {OutputKey.RIG: "sagemaker", OutputKey.REGION: "us-east-2", OutputKey.RUNTIME: "sagemaker-vllm",
               OutputKey.MODEL_ID: "sm-model", OutputKey.INSTANCE_TYPE: "ml.g6.xlarge", OutputKey.ENDPOINT_NAME: "ep-1"}
    template = {"Resources": {"T": {"Type": "AWS::SNS::Topic"}},
                "Outputs": {k: {"Value": v} for k, v in outputs.items()}}
    session.client("cloudformation", region_name="us-east-2").create_stack(
        StackName="InferenceSageMaker", TemplateBody=json.dumps(template),
        Tags=[{"Key": TAG_MANAGED_BY, "Value": MANAGED_BY}])


def test_list_with_aws(aws: boto3.Session, fake_runner: FakeRunner, capsys: pytest.CaptureFixture) -> None:
    make_endpoint(aws)
    assert run_module.main(["--list"], env={}) == 0
    out = capsys.readouterr().out
    assert "AWS: account 123456789012; searched us-east-1, us-east-2, us-west-1, us-west-2" in out
    assert "bedrock" in out and "Bedrock runtime API in us-east-1" in out
    assert "SageMaker runtime API, endpoint ep-1 in us-east-2" in out
    assert "g6: no deployed stack found in us-east-1, us-east-2, us-west-1, us-west-2" in out
    assert "  local" not in out


def test_run_with_aws_passes_the_session_and_fails_for_missing_selected(
        aws: boto3.Session, fake_runner: FakeRunner, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    make_endpoint(aws)
    code = run_module.main(["--backends", "sagemaker,inf2", "--out", str(tmp_path)], env={})
    assert code == 1  # inf2 was asked for and is not deployed
    (call,) = fake_runner.calls
    assert [b.name for b in call["backends"]] == ["sagemaker"]
    assert call["session"] is not None
    assert "not run: inf2" in capsys.readouterr().err


def test_missing_ssm_tools_stop_before_anything_starts(aws: boto3.Session, fake_runner: FakeRunner, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture) -> None:
    from tests.agent.reach.test_discovery import make_ec2_rig

    instance = make_ec2_rig(aws, "us-east-2", "g6")

    class StubbedClients(AwsClients):
        def get(self, service: str, region: str) -> Any:
            client = super().get(service, region)
            if service == "ssm" and not hasattr(client, "_stubbed"):
                stubber = Stubber(client)
                stubber.add_response("describe_instance_information",
                                     {"InstanceInformationList": [{"InstanceId": instance, "PingStatus": "Online"}]})
                stubber.activate()
                client._stubbed = stubber
            return client

    monkeypatch.setattr(run_module, "AwsClients", StubbedClients)
    monkeypatch.setenv("PATH", str(tmp_path))  # neither aws nor session-manager-plugin
    code = run_module.main(["--backends", "g6", "--out", str(tmp_path / "out")], env={})
    assert code == 2
    err = capsys.readouterr().err
    assert "AWS CLI v2" in err and "Session Manager plugin" in err
    assert fake_runner.calls == []
    assert not (tmp_path / "out").exists()


@pytest.mark.local_rig
def test_local_rig_run_end_to_end(no_aws: None, fake_runner: FakeRunner, tmp_path: Path) -> None:
    """No AWS, no URLs: the command starts the local rig, hands it to the runner, and stops it."""
    assert run_module.main(["--out", str(tmp_path)], env={}) == 0
    (call,) = fake_runner.calls
    (backend,) = call["backends"]
    assert backend.name == "local" and backend.toy_model and backend.constrained_tools and not backend.tool_calls
    assert call["alive"] == {"local": True}
    assert "llama-server" in backend.metadata["engine"]
    assert (tmp_path / "logs" / "llama-server.log").exists()
    port = int(backend.base_url.rsplit(":", 1)[1].split("/")[0])
    import socket
    with pytest.raises(ConnectionRefusedError):  # stopped: nothing listens there any more
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


def _stub_ssm_online(*instances: str) -> type[AwsClients]:
    class StubbedClients(AwsClients):
        def get(self, service: str, region: str) -> Any:
            client = super().get(service, region)
            if service == "ssm" and not hasattr(client, "_stubbed"):
                stubber = Stubber(client)
                for _ in range(4):
                    stubber.add_response("describe_instance_information", {"InstanceInformationList": [
                        {"InstanceId": instance, "PingStatus": "Online"} for instance in instances]})
                stubber.activate()
                client._stubbed = stubber
            return client
    return StubbedClients


def test_discovered_ec2_rig_is_reached_through_a_forward(aws: boto3.Session, fake_runner: FakeRunner, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         chat_server: ChatServer, capsys: pytest.CaptureFixture) -> None:
    """The whole path with a TCP relay in place of SSM: discover, forward, wait, run, close."""
    from agent.reach.forwarding import RelayPortForward
    from tests.agent.reach.test_discovery import make_ec2_rig

    instance = make_ec2_rig(aws, "us-east-2", "g6")
    other = make_ec2_rig(aws, "us-west-2", "inf2", port=8080)
    monkeypatch.setattr(run_module, "AwsClients", _stub_ssm_online(instance, other))
    monkeypatch.setattr(run_module, "check_ssm_tools", lambda: None)
    created: list[RelayPortForward] = []

    def relay(name: str, *, instance_id: str, remote_port: int, region: str, local_port: int, **kw: Any):
        # g6 reaches the chat server; the other rig's server is "not listening yet"
        target = chat_server.port if name == "g6" else run_module.preferred_port(None)
        created.append(RelayPortForward(name, target_port=target, local_port=local_port, log_dir=kw.get("log_dir")))
        return created[-1]

    monkeypatch.setattr(run_module, "SsmPortForward", relay)
    code = run_module.main(["--backends", "g6,inf2", "--ready-timeout", "2", "--out", str(tmp_path)], env={})
    assert code == 1  # inf2 never answered
    (call,) = fake_runner.calls
    (backend,) = call["backends"]
    assert backend.name == "g6" and call["alive"] == {"g6": True}
    assert backend.base_url == f"http://127.0.0.1:{created[0].local_port}/v1"
    assert backend.model_id == CATALOG.get("g6").model_id
    assert backend.metadata["instance_id"] == instance
    assert "TCP relay" in backend.metadata["reached_via"]
    assert "answered" in backend.metadata["readiness_probe"]
    # and one to g6's byte source, where nothing answers like a bytes source (a rig booted before it had one)
    assert [f.name for f in created] == ["g6", "inf2", "g6-tunnel"]
    assert backend.metadata["tunnel"]["forwards"] == 1 and "byte source" in backend.metadata["tunnel"]["unmeasured"]
    assert all(f.pid is None for f in created)  # all closed
    assert "inf2 not reachable" in capsys.readouterr().err
    assert (tmp_path / "logs" / "forward-g6.log").exists()


def test_list_explains_an_explicit_aws_backend_without_credentials(no_aws: None, fake_runner: FakeRunner,
                                                                    capsys: pytest.CaptureFixture) -> None:
    assert run_module.main(["--list", "--backends", "bedrock,g6"], env={}) == 0
    out = capsys.readouterr().out
    assert "bedrock: no AWS credentials found" in out
    assert "Selected but not available: bedrock, g6" in out


def test_broken_credential_setup_is_one_line(monkeypatch: pytest.MonkeyPatch, fake_runner: FakeRunner,
                                             capsys: pytest.CaptureFixture) -> None:
    from botocore.exceptions import CredentialRetrievalError

    class Broken:
        def get_credentials(self) -> None:
            raise CredentialRetrievalError(provider="custom-process", error_msg="helper failed")

    monkeypatch.setattr(run_module, "_session", lambda profile, region: Broken())
    assert run_module.main(["--backends", "bedrock"], env={}) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "AWS credentials could not be loaded" in err[0]


def test_list_warns_of_missing_ssm_tools_for_a_forward_unless_a_stand_in_plays_the_rigs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """--list with a discovered EC2 rig says when the AWS CLI or its plugin is missing; a stand-in needs neither."""
    from agent.reach.forwarding import ForwardToolsMissing
    from agent.plan import BackendPlan

    def missing() -> None:
        raise ForwardToolsMissing("the Session Manager plugin is not installed")

    monkeypatch.setattr(run_module, "check_ssm_tools", missing)
    found = types.SimpleNamespace(describe=lambda: "SSM port forward to i-0abc in us-east-2")
    plan = BackendPlan(forwards=[types.SimpleNamespace(name="g6", model_id="m", found=found, local_port=8001)])
    listed = {}
    for stand_in in (None, types.SimpleNamespace(port=1, host="127.0.0.1")):
        buffer = io.StringIO()
        run_module.print_list(plan, "123456789012", None, None, out=buffer, stand_in=stand_in)
        listed[stand_in is None] = buffer.getvalue()
    assert "g6" in listed[True] and "SSM port forward to i-0abc in us-east-2" in listed[True]
    assert "Warning: the Session Manager plugin is not installed" in listed[True]
    assert "Warning" not in listed[False]


def test_list_says_why_a_neuron_rig_serves_its_own_model_beside_rigs_serving_another(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from agent.plan import BackendPlan
    from rigs.catalog.model import load_catalog

    catalog = load_catalog()
    found = types.SimpleNamespace(describe=lambda: "SSM port forward")
    forwards = [types.SimpleNamespace(name=name, model_id=model, found=found, local_port=port, rig=catalog.get(name))
                for name, model, port in (("g6", "Qwen/Qwen3-8B", 8001), ("inf2", "gemma-4-E2B-it", 8002))]
    plan = BackendPlan(forwards=forwards)
    assert run_module.one_model_notes(plan) == [
        "inf2: serves Gemma 4 E2B, not Qwen3 8B: deploy it with -c model.inf2=Qwen/Qwen3-8B to serve it with AWS's "
        "vLLM Neuron image"]
    plan.forwards[0] = types.SimpleNamespace(**{**vars(forwards[0]), "model_id": "openai/gpt-oss-20b"})
    why = catalog.neuron_why_not(catalog.get("inf2"), "gpt-oss-20b", catalog.models["openai/gpt-oss-20b"].architecture)
    assert run_module.one_model_notes(plan) == [f"inf2: serves Gemma 4 E2B, not gpt-oss-20b: {why}"]
    buffer = io.StringIO()
    monkeypatch.setattr(run_module, "check_ssm_tools", lambda: None)
    run_module.print_list(plan, "123456789012", None, None, out=buffer)
    assert "Serving their own model only (the others serve another):\n  inf2: serves Gemma 4 E2B, not gpt-oss-20b: " \
           "its hand-ported image" in buffer.getvalue()
    plan.forwards[0] = types.SimpleNamespace(**{**vars(forwards[0]), "model_id": catalog.get("g6").model_id})
    assert run_module.one_model_notes(plan) == []  # g6 on its own Gemma 4 E2B: the same model, nothing to say
