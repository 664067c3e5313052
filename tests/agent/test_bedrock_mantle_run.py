"""``python -m agent.run`` with Bedrock's OpenAI-compatible endpoint (``bedrock-mantle``): named alone with
``AWS_BEDROCK_BASE_URL`` it asks no AWS endpoint but that one (no STS, no CloudFormation, no Pricing API: its price
is the dated file's, and the report says so), its requests signed with the credentials of the chain; without any
credential or API key it is one line; a run with it and the local rig ends with both in the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest

from agent import run as run_module
from agent.local_rig import Installation, LocalRigConfig, local_backend
from rigs import aws

from tests.agent.bench.fakes.mantle_fake import MantleFake
from tests.agent.bench.fakes.openai_fake import FakeOpenAI
from tests.agent.bench.fakes.scripted import Script
from tests.agent.bench.fakes.sigv4 import verify
from tests.agent.conftest import FakeRunner

MODELS = {"/v1/models": {"object": "list", "data": [{"id": "google.gemma-4-e2b", "owned_by": "google"}]}}


@pytest.fixture
def no_other_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    """Known credentials in the chain, and every AWS API client refused (STS, CloudFormation, Pricing...)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAMANTLERUN")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "run-secret")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv(aws.MANTLE_TOKEN_VAR, raising=False)

    def refused(self: Any, service: str, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"an AWS API was asked: {service}")

    monkeypatch.setattr(boto3.Session, "client", refused)


def test_named_alone_with_its_base_url_it_asks_no_other_aws_endpoint(no_other_aws: None, fake_runner: FakeRunner,
                                                                      tmp_path: Path) -> None:
    with FakeOpenAI(Script(), pages=MODELS) as fake:
        code = run_module.main(["--backends", "bedrock-mantle", "--out", str(tmp_path / "out")],
                               env={aws.MANTLE_BASE_URL_VAR: fake.base_url})
    assert code == 0
    (call,) = fake_runner.calls
    (backend,) = call["backends"]
    assert (backend.name, backend.kind, backend.base_url) == ("bedrock-mantle", "bedrock-mantle", fake.base_url)
    assert call["session"] is None  # no AWS session for the run: its prices are the dated file's
    assert backend.provenance["read"]["model"]["value"] == "google.gemma-4-e2b"  # its GET /v1/models, signed
    assert verify(fake.received[0], "run-secret").access_key == "AKIAMANTLERUN"


def test_without_credentials_or_an_api_key_it_is_one_line(no_aws: None, fake_runner: FakeRunner, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture) -> None:
    code = run_module.main(["--backends", "bedrock-mantle", "--out", str(tmp_path / "out")],
                           env={aws.MANTLE_BASE_URL_VAR: "http://127.0.0.1:9/v1"})
    assert code != 0 and fake_runner.calls == []
    err = capsys.readouterr().err
    assert ("bedrock-mantle: no AWS credentials found, so nothing to sign its requests with, and no "
            "AWS_BEARER_TOKEN_BEDROCK") in err


def test_a_run_with_it_and_the_local_rig_ends_with_both_in_the_report(no_other_aws: None, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI(Script(), pages=MODELS) as bedrock, FakeOpenAI(Script()) as local:
        rig = local_backend(local.base_url, Installation(tmp_path / "smollm2.gguf", "b7342"), LocalRigConfig())
        monkeypatch.setattr(run_module, "_start_local", lambda stack, out_dir, ui: rig)
        out = tmp_path / "out"
        code = run_module.main(["--backends", "bedrock-mantle,local", "--demos", "chat", "--runs", "1",
                                "--out", str(out)], env={aws.MANTLE_BASE_URL_VAR: bedrock.base_url})
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary["backends"]) == ["bedrock-mantle", "local"]
    assert all(b["chat"]["requests"] and not b["chat"]["errors"] for b in summary["backends"].values())
    report = (out / "REPORT.md").read_text()
    assert "| bedrock-mantle | thin evidence |" in report and "| local | no native tool calls" in report
    # priced at the mix measured (the fake server's usage: as many prompt tokens as output tokens), 0.08 + 1 x 0.04
    assert ("bedrock-mantle: $12.00 a month: 100 M output tokens x $0.12/M (output price + 1 input tokens per "
            "output token, as measured)") in report
    assert "AWS_BEDROCK_BASE_URL=" in report and "its price is the dated offline file's" in report
    priced = json.loads((out / "run.json").read_text())["prices"]["backends"]["bedrock-mantle"]["per_token"]
    assert priced["source"] == "offline-file" and priced["usd_per_m_output"] == 0.08
    assert all(verify(r, "run-secret").service == "bedrock-mantle" for r in bedrock.received)


def test_its_host_from_aws_endpoint_url_bedrock_mantle_every_request_goes_under_the_models_route(
        no_other_aws: None, tmp_path: Path) -> None:
    """The done-when of the routes: a stand-in serving Gemma 4 E2B only under /openai/v1 (its model card's route)
    answers every request, none under /v1; it reasons by default (30 tokens a reply, as its usage reports them),
    which the report counts and prices beside the answer tokens."""
    with MantleFake(Script(reasoning_tokens=30)) as bedrock:
        code = run_module.main(["--backends", "bedrock-mantle", "--demos", "chat", "--runs", "1",
                                "--out", str(tmp_path / "out")], env={aws.MANTLE_ENDPOINT_VAR: bedrock.endpoint})
    assert code == 0
    assert bedrock.requests and bedrock.refused == []
    assert {r.path_qs.rsplit("/", 1)[0] for r in bedrock.received} == {"/openai/v1", "/openai/v1/chat"}
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    chat = summary["backends"]["bedrock-mantle"]["chat"]
    assert chat["requests"] and not chat["errors"]
    spent = chat["reasoning"]
    assert spent["reasoning_tokens"] == 30 * spent["requests"] and spent["answer_tokens"] == 12 * spent["requests"]
    report = (tmp_path / "out" / "REPORT.md").read_text()
    n = spent["requests"]
    assert (f"{30 * n:,} reasoning + {12 * n:,} answer tokens = {42 * n:,} output tokens (71.4% reasoning) over {n} "
            f"requests; at $0.08/M output, $0.28 per million answer tokens") in report
    assert ("- **bedrock-mantle: not like for like.** bedrock-mantle does not offer parallel tool calls "
            "(https://docs.aws.amazon.com/bedrock/latest/userguide/model-card-google-gemma-4-e2b.html); bedrock-mantle "
            "reasons before it answers") in report  # in "Which one?", above any answer


def test_a_whole_base_url_is_used_as_given_and_the_wrong_route_is_one_line(
        no_other_aws: None, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    with MantleFake(Script()) as bedrock:
        code = run_module.main(["--backends", "bedrock-mantle", "--demos", "chat", "--runs", "1",
                                "--out", str(tmp_path / "out")],
                               env={aws.MANTLE_BASE_URL_VAR: bedrock.endpoint + "/v1"})
    assert code != 0
    assert bedrock.refused == ["/v1/models"] and bedrock.requests == []  # asked where told, refused before the run
    err = capsys.readouterr().err
    assert (f"bedrock-mantle: Bedrock's OpenAI-compatible endpoint does not serve google.gemma-4-e2b under /v1 "
            f"({bedrock.endpoint}/v1/models): its route is another, likely /openai/v1") in err


def test_a_host_variable_with_a_path_is_one_line(no_other_aws: None, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture) -> None:
    code = run_module.main(["--backends", "bedrock-mantle", "--out", str(tmp_path / "out")],
                           env={aws.MANTLE_ENDPOINT_VAR: "http://127.0.0.1:9/openai/v1"})
    assert code == 2
    assert ("AWS_ENDPOINT_URL_BEDROCK_MANTLE='http://127.0.0.1:9/openai/v1' has a path; it takes scheme, host and "
            "port only") in capsys.readouterr().err
