"""Fixtures shared by the provisioning tests."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_default_amis(monkeypatch):
    """moto's EC2 backend loads hundreds of public AMIs per region; these tests name their own image
    ids and never list AMIs, so skip that (about a quarter of each moto test's time)."""
    monkeypatch.setenv("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")
