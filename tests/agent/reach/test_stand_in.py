"""``python -m agent.run --stand-in URL``: one server plays every discovered rig (offline rehearsals).

The EC2 rig is found by discovery (moto, SSM ``Online`` stubbed) and reached through a TCP relay to
the stand-in's port, with no AWS CLI or Session Manager plugin on PATH; SageMaker keeps its API. Both
are labelled with the model the stand-in reports, marked as a rehearsal, and not priced.
"""

from __future__ import annotations

import json
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import boto3
import pytest

from agent import run as run_module
from agent.local_rig import free_port
from agent.reach.forwarding import RelayPortForward
from agent.reach.stand_in import StandInError, parse_stand_in
from rigs.catalog.model import load_catalog

from tests.agent.conftest import ChatServer

from tests.agent.conftest import _ChatHandler
from tests.agent.conftest import FakeRunner
from tests.agent.test_run import _stub_ssm_online, make_endpoint

MODEL = "SmolLM2-stand-in"
CATALOG_G6_MODEL = load_catalog().get("g6").model_id


class _StandInHandler(_ChatHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        body = json.dumps({"object": "list", "data": [{"id": MODEL, "object": "model"}]}).encode()
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def stand_in() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _StandInHandler)
    httpd.daemon_threads = True
    httpd.requests = []  # type: ignore[attr-defined]
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()  # quick shutdown
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def test_discovered_rigs_are_played_by_the_stand_in_without_ssm(
        aws: boto3.Session, fake_runner: FakeRunner, stand_in: ThreadingHTTPServer, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.agent.reach.test_discovery import make_ec2_rig

    instance = make_ec2_rig(aws, "us-east-2", "g6")
    make_endpoint(aws)
    monkeypatch.setattr(run_module, "AwsClients", _stub_ssm_online(instance))
    monkeypatch.setenv("PATH", str(tmp_path))  # neither aws nor session-manager-plugin: not needed

    def no_ssm(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("an SSM port forward was opened despite --stand-in")

    monkeypatch.setattr(run_module, "SsmPortForward", no_ssm)
    url = f"http://127.0.0.1:{stand_in.server_address[1]}"
    code = run_module.main(["--backends", "g6,sagemaker", "--stand-in", url, "--out", str(tmp_path / "out")], env={})
    assert code == 0
    (call,) = fake_runner.calls
    g6, sagemaker = call["backends"]
    assert call["alive"] == {"g6": True}  # answered through the relay
    assert "TCP relay" in g6.metadata["reached_via"] and f"127.0.0.1:{stand_in.server_address[1]}" in \
        g6.metadata["reached_via"]
    assert g6.metadata["instance_id"] == instance  # discovery found the (moto) instance
    for backend, rig in ((g6, "g6.xlarge"), (sagemaker, "ml.g6.xlarge")):
        assert backend.model_id == MODEL
        assert backend.label.endswith(f"played by {MODEL} (offline rehearsal)")
        assert "instance_type" not in backend.metadata  # so neither priced nor given a ceiling
        assert backend.metadata["rig_instance_type"] == rig
        assert backend.metadata["rig_model_id"] in ("sm-model", CATALOG_G6_MODEL)  # what the rig itself serves
        assert f"not of {rig}" in backend.metadata["stand_in"]
        assert "not priced" in backend.metadata["unpriced"]
        assert not [k for k in backend.metadata if k.startswith("weights_")]  # the rig's weights are not the stand-in's
    assert sagemaker.kind == "sagemaker" and sagemaker.endpoint_name == "ep-1"  # still the SageMaker API
    # what served each, read over the relay from the stand-in and from (moto's) EC2 and SageMaker, beside what the
    # catalog expects of the rig: the stand-in's model and the endpoint config's instance type are not the rig's
    assert g6.provenance["read"]["model"] == {"value": MODEL, "source": "GET /v1/models"}
    assert g6.provenance["expected"]["model"]["value"] == CATALOG_G6_MODEL
    assert g6.provenance["read"]["instance_type"]["source"] == f"EC2 DescribeInstances {instance}"
    assert "HTTP 404" in g6.provenance["read"]["engine_version"]["not_reported"]  # the stand-in has no /version
    assert sagemaker.provenance["read"]["instance_type"]["value"] == "ml.m5.large"
    assert sagemaker.provenance["expected"]["instance_type"]["value"] == "ml.g6.xlarge"
    assert {request["model"] for _, request in stand_in.requests} == {MODEL}  # type: ignore[attr-defined]


def test_a_port_taken_after_it_looked_free_is_tried_once_more_elsewhere(
        aws: boto3.Session, fake_runner: FakeRunner, stand_in: ThreadingHTTPServer, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, chat_server: ChatServer, capsys: pytest.CaptureFixture) -> None:
    """Another run took g6's port between the check that it was free and the relay's bind: g6 is reached on
    another port, through its own relay to the stand-in, never through the other run's forward."""
    from tests.agent.reach.test_discovery import make_ec2_rig

    monkeypatch.setattr(run_module, "AwsClients", _stub_ssm_online(make_ec2_rig(aws, "us-east-2", "g6")))
    monkeypatch.setenv("PATH", str(tmp_path))
    port = free_port()
    free = run_module.preferred_port
    # the catalog's port looked free when asked (as it did to both runs in the race)
    monkeypatch.setattr(run_module, "preferred_port", lambda preferred, taken: port if preferred else free(None, taken))
    url = f"http://127.0.0.1:{stand_in.server_address[1]}"
    with RelayPortForward("g6", target_port=chat_server.port, local_port=port) as other_runs:
        other_runs.open("m", timeout_s=20)
        code = run_module.main(["--backends", "g6", "--stand-in", url, "--out", str(tmp_path / "out")], env={})
        assert other_runs.pid is not None  # still the other run's
    assert code == 0
    (call,) = fake_runner.calls
    (g6,) = call["backends"]
    assert call["alive"] == {"g6": True}
    assert f":{port}/" not in g6.base_url and f"127.0.0.1:{stand_in.server_address[1]}" in g6.metadata["reached_via"]
    assert len(chat_server.requests) == 1  # the other run's own probe only
    assert {request["model"] for _, request in stand_in.requests} == {MODEL}  # type: ignore[attr-defined]
    assert f"g6: port {port} was taken by another program after it looked free; trying port" in \
        capsys.readouterr().out


@pytest.mark.parametrize("url", ["127.0.0.1:8000", "http://127.0.0.1", "https://127.0.0.1:8443", "ftp://x:1"])
def test_a_bad_stand_in_address_is_one_line(url: str) -> None:
    with pytest.raises(StandInError, match=r"^--stand-in .*http://HOST:PORT"):
        parse_stand_in(url)


def test_a_bad_stand_in_is_refused_before_anything_starts(fake_runner: FakeRunner, capsys: pytest.CaptureFixture,
                                                          tmp_path: Path) -> None:
    assert run_module.main(["--stand-in", "localhost", "--out", str(tmp_path / "out")], env={}) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--stand-in localhost" in err[0]
    assert fake_runner.calls == [] and not (tmp_path / "out").exists()


def test_the_stand_in_url_may_name_the_v1_root() -> None:
    parsed = parse_stand_in("http://127.0.0.1:8123/v1/")
    assert (parsed.base_url, parsed.host, parsed.port) == ("http://127.0.0.1:8123/v1", "127.0.0.1", 8123)
