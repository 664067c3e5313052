"""Fixtures shared by the provisioning tests."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from . import ourstuff


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
