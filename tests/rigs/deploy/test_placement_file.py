"""``.rigs/placement.json`` as a typed file: its committed schema is the one the model generates, what is
written keeps its keys and order (``deployed`` only once a rig is up), and a file that is not of its shape
is refused with each problem's path."""

from __future__ import annotations

import json
import os

import jsonschema
import pytest

from kit import generated
from rigs.placement import placement
from rigs.placement.placement import Candidate


@pytest.fixture(autouse=True)
def state(tmp_path, monkeypatch):
    monkeypatch.setenv(placement.STATE_DIR_ENV, str(tmp_path / "state"))


def test_the_committed_schema_is_what_the_model_generates():
    assert generated.stale([placement.schema_file()]) == [], \
        "run: python -m rigs.placement.placement --write"


def test_the_file_keeps_its_keys_in_order_and_validates():
    placement.record_candidates("inf2", [Candidate(region="us-east-2", zones=("us-east-2b",))],
                                {"us-west-2": "no quota"})
    placement.record_candidates("g6", [Candidate(region="us-east-1")], {}, instance_type="g6.12xlarge")
    placement.record_deployed("g6", "us-east-1", ("us-east-1a",), "InferenceG6")
    path = placement.placement_path()
    data = json.loads(path.read_text())
    assert list(data) == ["version", "rigs"] and list(data["rigs"]) == ["g6", "inf2"]
    assert list(data["rigs"]["g6"]) == ["candidates", "skipped", "checked_at", "instance_type", "deployed"]
    assert list(data["rigs"]["inf2"]) == ["candidates", "skipped", "checked_at", "instance_type"]
    assert (data["rigs"]["g6"]["instance_type"], data["rigs"]["inf2"]["instance_type"]) == ("g6.12xlarge", None)
    assert data["rigs"]["inf2"]["candidates"] == [{"region": "us-east-2", "zones": ["us-east-2b"]}]
    assert list(data["rigs"]["g6"]["deployed"]) == ["region", "zones", "stack", "at"]
    assert os.stat(path).st_mode & 0o777 == 0o644
    assert [p.name for p in path.parent.iterdir()] == ["placement.json"]
    jsonschema.validate(data, json.loads(placement.SCHEMA_PATH.read_text()))


def test_a_misspelt_key_is_refused_with_its_path():
    path = placement.placement_path()
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"version": 1, "rigs": {"g6": {"candidates": [{"region": "us-east-1", "zone": []}]}}}))
    with pytest.raises(placement.PlacementError, match=r"not a placement file \(rigs\.g6\.candidates\.0\.zone: "
                                                       r"Extra inputs are not permitted\)"):
        placement.load()
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(json.loads(path.read_text()), json.loads(placement.SCHEMA_PATH.read_text()))
