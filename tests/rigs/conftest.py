"""Fixtures shared by the provisioning tests."""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from typing import Iterator

import boto3
import pytest
from moto import mock_aws

from agent.local_rig import free_port
from tests.conftest import PROJECT_DIR

from tests.rigs import ourstuff


@pytest.fixture(autouse=True)
def _no_default_amis(monkeypatch):
    """moto's EC2 backend loads hundreds of public AMIs per region; these tests name their own image
    ids and never list AMIs, so skip that (about a quarter of each moto test's time)."""
    monkeypatch.setenv("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")


@pytest.fixture
def moto_estate(monkeypatch):
    """A moto account holding resources of ours and of someone else's in the four regions."""
    monkeypatch.setattr("rigs.aws.time.sleep", lambda _s: None)
    with mock_aws():
        monkeypatch.setattr("rigs.cli._session", lambda args: boto3.Session(region_name="us-east-1"))
        yield ourstuff.build()


@pytest.fixture(scope="session")
def moto_server(tmp_path_factory) -> Iterator[str]:
    """moto's server from rigs/offline/moto_server.py, once per test process (a start costs about 2.5 s; it was once
    per module): each test that uses it gets a reset account (``endpoint``)."""
    port = free_port()
    log = tmp_path_factory.mktemp("moto") / "server.log"
    with log.open("w") as handle:
        server = subprocess.Popen([sys.executable, "-m", "rigs.offline.moto_server", "--port", str(port),
                                   "--stop-on-stdin-eof"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=handle, text=True, cwd=PROJECT_DIR)
    line = server.stdout.readline()
    assert line.startswith("ready"), f"moto server did not start: {line!r}; see {log}"
    yield f"http://localhost:{port}"
    # Killed, not stopped: nothing in it outlives the tests, and its interpreter's clean exit with moto's state took
    # 2 to 7 s. (--stop-on-stdin-eof still stops it when this process dies first.)
    server.kill()
    server.wait()
    server.stdin.close()


@pytest.fixture
def endpoint(moto_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A clean moto account (the launcher re-seeds the AMI parameters after the reset)."""
    urllib.request.urlopen(urllib.request.Request(f"{moto_server}/moto-api/reset", method="POST"), timeout=30)
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    return moto_server
