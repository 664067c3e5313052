"""One line and one exit code for one AWS cause: ``python -m rigs``, ``python -m agent.run``, ``./scripts/cdk``.

Each cause a user can meet before anything works: no credentials, a bad ``AWS_PROFILE``,
an endpoint that cannot be reached (refused, a name that does not resolve, a proxy that
does not answer), and ``AWS_REGION`` set without ``AWS_DEFAULT_REGION``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import boto3
import botocore.exceptions
import pytest

from agent import run as agent_run
from agent.local_rig import free_port
from rigs import aws
from rigs.cli import main as rigs_main
from tests.conftest import PROJECT_DIR

NO_CREDENTIALS = str(aws.CredentialsError(aws.NO_CREDENTIALS))
BAD_PROFILE = str(aws.ProfileNotFoundError("nosuch", "AWS_PROFILE"))


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))


@pytest.fixture
def bad_profile(no_credentials: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_PROFILE", "nosuch")


@pytest.fixture
def refused(monkeypatch: pytest.MonkeyPatch) -> str:
    """An endpoint on loopback where nothing listens."""
    url = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("AWS_ENDPOINT_URL", url)
    return url


def cdk(*args: str) -> subprocess.CompletedProcess:
    """``./scripts/cdk`` with this process's environment (the fixtures' AWS settings)."""
    return subprocess.run([str(PROJECT_DIR / "scripts" / "cdk"), *args], capture_output=True, text=True,
                          timeout=300, cwd=PROJECT_DIR, env=dict(os.environ))


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_no_credentials_same_line_and_exit_3_everywhere(no_credentials: None, capsys: Any) -> None:
    assert rigs_main(["status"]) == 3
    assert one_line(capsys.readouterr().err) == f"error: {NO_CREDENTIALS}"
    assert agent_run.main(["--backends", "bedrock"], env={}) == 3
    assert one_line(capsys.readouterr().err).startswith(f"error: {NO_CREDENTIALS} (without AWS: `--backends local`")
    done = cdk("deploy", "InferenceG6")
    assert done.returncode == 3
    assert one_line(done.stderr) == f"error: {NO_CREDENTIALS}"  # not CDK's "Unable to resolve AWS account"


def test_no_credentials_doctor_shows_the_row_with_the_fix(no_credentials: None, capsys: Any) -> None:
    assert rigs_main(["doctor", "sagemaker"]) == 3
    out = capsys.readouterr().out
    assert "Credentials" in out and "no AWS credentials found" in out and "aws configure" in out


def test_bad_profile_is_named_and_does_not_block_the_local_rig(bad_profile: None, capsys: Any) -> None:
    assert "'nosuch' (from AWS_PROFILE)" in BAD_PROFILE and "unset AWS_PROFILE" in BAD_PROFILE
    assert rigs_main(["sweep"]) == 3
    assert one_line(capsys.readouterr().err) == f"error: {BAD_PROFILE}"
    assert agent_run.main(["--backends", "bedrock"], env={}) == 3
    assert one_line(capsys.readouterr().err).startswith(f"error: {BAD_PROFILE}")
    assert agent_run.main(["--list"], env={}) == 0  # nothing selected: the local rig, with the reason
    out = capsys.readouterr().out
    assert "local" in out and "AWS profile 'nosuch' (from AWS_PROFILE) is not in the AWS config files" in out
    done = cdk("destroy", "--all", "--force")
    assert done.returncode == 3 and one_line(done.stderr) == f"error: {BAD_PROFILE}"


def test_profile_option_is_named_as_the_option(no_credentials: None, capsys: Any) -> None:
    assert rigs_main(["--profile", "typo", "status"]) == 3
    assert "AWS profile 'typo' (from --profile) is not in the AWS config files" in capsys.readouterr().err
    done = cdk("deploy", "--profile", "typo", "InferenceG6")
    assert done.returncode == 3 and "AWS profile 'typo' (from --profile)" in done.stderr


def test_refused_endpoint_one_line_and_exit_4_everywhere(refused: str, capsys: Any) -> None:
    expected = (f"error: cannot reach AWS at {refused}: connection refused: nothing listens there "
                "(check AWS_ENDPOINT_URL)")
    assert rigs_main(["status"]) == 4
    assert one_line(capsys.readouterr().err) == expected
    assert agent_run.main(["--backends", "bedrock"], env={}) == 4
    assert one_line(capsys.readouterr().err).startswith(expected)
    assert agent_run.main([], env={}) == 4  # credentials are configured: say AWS is out of reach, not "refresh"
    assert "refresh" not in capsys.readouterr().err
    done = cdk("deploy", "InferenceG6")
    assert done.returncode == 4 and one_line(done.stderr) == expected
    assert rigs_main(["doctor", "g6"]) == 4
    assert "cannot reach AWS at" in capsys.readouterr().out


def test_unreachable_is_never_a_traceback(refused: str) -> None:
    done = subprocess.run([sys.executable, "-m", "rigs", "sweep"], capture_output=True, text=True, timeout=120,
                          cwd=PROJECT_DIR, env=dict(os.environ))
    assert done.returncode == 4
    assert "Traceback" not in done.stderr and one_line(done.stderr).startswith("error: cannot reach AWS at")


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No DNS: every name but localhost fails to resolve, as on a machine without a network."""
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host in ("localhost", "127.0.0.1"):
            return real(host, *args, **kwargs)
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)


def test_offline_names_the_endpoint_and_the_likely_cause(offline: None, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: Any) -> None:
    monkeypatch.setenv("AWS_REGION", "us-east-2")
    assert rigs_main(["preflight", "g6", "--no-record"]) == 4
    assert one_line(capsys.readouterr().err) == (
        "error: cannot reach AWS at https://sts.us-east-2.amazonaws.com: the name did not resolve: offline, or DNS "
        "is failing (a proxy may be needed: HTTPS_PROXY)")


def test_misspelt_region_is_named(offline: None, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    monkeypatch.setenv("AWS_REGION", "us-est-1")
    assert rigs_main(["status"]) == 4
    assert one_line(capsys.readouterr().err) == (
        "error: cannot reach AWS at https://sts.us-est-1.amazonaws.com: the name did not resolve: 'us-est-1' is "
        "not an AWS region (did you mean us-east-1 or us-west-1?)")


def test_proxy_that_does_not_answer_is_named(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    proxy = f"http://127.0.0.1:{free_port()}"
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.setenv("HTTPS_PROXY", proxy)
    assert rigs_main(["status"]) == 4
    line = one_line(capsys.readouterr().err)
    assert line.startswith("error: cannot reach AWS at https://sts.us-east-1.amazonaws.com: the proxy")
    assert proxy in line and "check HTTPS_PROXY" in line


def test_aws_region_alone_is_honoured_as_the_cdk_cli_does(endpoint: str, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: Any) -> None:
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.setenv("AWS_REGION", "us-east-2")
    assert aws.make_session().region_name == "us-east-2"
    assert agent_run._session(None, None).region_name == "us-east-2"
    assert rigs_main(["status"]) == 0
    out = capsys.readouterr().out
    assert "nothing of ours" in out and "not checked" not in out  # IAM is checked too
    assert rigs_main(["sweep", "--yes"]) == 0
    assert "left: nothing of ours" in capsys.readouterr().out
    assert agent_run.main(["--list"], env={}) == 0
    assert "AWS: account 123456789012" in capsys.readouterr().out


def test_aws_region_beats_aws_default_region(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    monkeypatch.setenv("AWS_REGION", "us-east-2")
    assert aws.make_session().region_name == "us-east-2"
    assert aws.make_session(region="us-east-1").region_name == "us-east-1"
    monkeypatch.delenv("AWS_REGION")
    assert boto3.Session().region_name == aws.make_session().region_name == "us-west-2"


def test_html_error_pages_become_their_title() -> None:
    page = ("<!doctype html>\n<html lang=en>\n<title>500 Internal Server Error</title>\n<h1>Internal Server Error"
            "</h1>\n<p>The server encountered an internal error.</p>\n")
    assert aws.readable(page) == "an HTML page: 500 Internal Server Error"
    assert aws.readable("x" * 400).endswith("…") and len(aws.readable("x" * 400)) == aws.MESSAGE_LIMIT
    # no AWS error code, only a status and a page: the endpoint does not serve the API (moto has no Free Tier API)
    served = botocore.exceptions.ClientError({"Error": {"Code": "500", "Message": page}}, "GetAccountPlanState")
    assert aws.classify(served).kind == aws.NOT_SERVED
    behind = botocore.exceptions.ClientError({"Error": {"Code": "AccessDenied", "Message": page}}, "GetObject")
    assert aws.classify(behind).kind == aws.OTHER  # AWS's own code decides, whatever the page


STS = "https://sts.us-east-1.amazonaws.com/"


@pytest.mark.parametrize(("error", "custom", "cause"), [
    (botocore.exceptions.ReadTimeoutError(endpoint_url=STS), None,
     "connected, but no answer in time: a firewall or proxy is holding the connection"),
    (botocore.exceptions.ConnectTimeoutError(endpoint_url=STS), None,
     "no answer to connect: offline, a firewall, or a proxy is needed (HTTPS_PROXY)"),
    (botocore.exceptions.SSLError(endpoint_url=STS, error="certificate verify failed"), None,
     "TLS verification failed: a proxy that inspects TLS needs its certificate in AWS_CA_BUNDLE"),
    (botocore.exceptions.EndpointConnectionError(
        endpoint_url="http://motobox:5000/", error=socket.gaierror(socket.EAI_NONAME, "Name or service not known")),
     "http://motobox:5000", "the name did not resolve: check AWS_ENDPOINT_URL"),
], ids=["read-timeout", "connect-timeout", "tls", "custom-endpoint-dns"])
def test_each_kind_of_unreachable_has_its_cause(monkeypatch: pytest.MonkeyPatch, error: Exception,
                                                custom: str | None, cause: str) -> None:
    if custom:
        monkeypatch.setenv("AWS_ENDPOINT_URL", custom)
    else:
        monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    assert aws.classify(error).kind == aws.UNREACHABLE
    assert aws.unreachable_error(error).cause == cause


def test_scripts_cdk_profile_is_the_one_its_checks_and_the_app_use(endpoint: str, no_credentials: None,
                                                                     tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """With --profile and no default credentials, the four-region check before `destroy --all` asks
    with that profile (the CDK CLI does not hand it to the app) and finds nothing to destroy."""
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    (tmp_path / "config").write_text(f"[profile rehearsal]\nregion = us-east-1\nendpoint_url = {endpoint}\n")
    (tmp_path / "credentials").write_text("[rehearsal]\naws_access_key_id = testing\naws_secret_access_key = testing\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    done = cdk("destroy", "--all", "--force", "--profile", "rehearsal")
    assert done.returncode == 0, done.stderr
    assert "nothing to destroy" in done.stderr and "could not" not in done.stderr
