"""``plan.json`` and ``timeline.json`` as typed records: the keys a reader finds, in their order, written
whole (0644, no temporary file left), and a misspelt field refused where the record is made."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone

import pydantic
import pytest

from rigs.rehearsal import estimate as estimating
from rigs.rehearsal import plan, timeline

PHASE = estimating.PhasePlan(rig="g6", phase="small", region="us-east-2", instance_type="g6.xlarge", model_id="m",
                             ready_timeout_minutes=40, max_hours=4, usd_per_hour=0.8048, price="offline file",
                             lane_minutes=1.5, ready_basis="40 min: boot 38 + download 1 (2.9 GiB at 50 MiB/s) + "
                                                           "compile 0 + load 1 (at 125 MiB/s)")


def test_plan_json_keeps_its_keys_and_the_lane_once(tmp_path):
    result = estimating.estimate([PHASE])
    record = plan.record([PHASE], result, account="123456789012", offline=True, big=False, skipped={"inf2": "x"},
                         no_big_model={}, benchmark="python -m agent.run")
    path = plan.write(tmp_path, record)
    data = json.loads(path.read_text())
    assert list(data) == ["account", "offline", "big", "model", "sized", "context_tokens", "phases", "skipped",
                          "no_big_model", "benchmark", "estimate"]
    assert (data["model"], data["sized"], data["context_tokens"]) == (None, [], None)  # the catalog's model and context
    assert data["phases"] == [{"rig": "g6", "phase": "small", "region": "us-east-2", "instance_type": "g6.xlarge",
                               "model_id": "m", "ready_timeout_minutes": 40, "max_hours": 4, "usd_per_hour": 0.8048,
                               "price": "offline file", "ready_basis": PHASE.ready_basis}]
    assert list(data["estimate"]) == ["minutes", "usd", "backstop_usd", "unpriced", "benchmark_allowance_minutes",
                                      "destroy_allowance_minutes", "phases"]
    assert list(data["estimate"]["phases"][0]) == ["phase", "rigs", "ready_minutes", "lane_minutes", "minutes", "usd",
                                                   "unpriced"]
    assert data["estimate"]["phases"][0]["lane_minutes"] == 1.5
    assert os.stat(path).st_mode & 0o777 == 0o644 and [p.name for p in tmp_path.iterdir()] == ["plan.json"]


def test_timeline_json_keeps_its_keys(tmp_path):
    line = timeline.PhaseTimeline(rig="g6", phase="small", model_id="m", instance_launched="2026-11-29T10:00:00Z",
                                  destroyed="2026-11-29T10:30:00Z", usd_per_hour=1.0)
    now = datetime(2026, 11, 29, 11, 0, tzinfo=timezone.utc)
    record = timeline.TimelineRecord(offline=True, started="2026-11-29T09:59:00Z", finished="2026-11-29T11:00:00Z",
                                     interrupted=None, phases=[line.record(now)], cost_usd=0.5,
                                     benchmarks={"small": timeline.BenchmarkRun(exit=0, folder="bench")},
                                     skipped={}, no_big_model={}, left={}, notes=["n"])
    data = json.loads(timeline.write(tmp_path, record).read_text())
    assert list(data) == ["offline", "started", "finished", "interrupted", "phases", "cost_usd", "benchmarks",
                          "skipped", "no_big_model", "left", "notes"]
    phase = data["phases"][0]
    assert list(phase)[:3] == ["rig", "phase", "model_id"] and list(phase)[-3:] == ["notes", "billed_hours", "cost_usd"]
    assert (phase["billed_hours"], phase["cost_usd"]) == (0.5, 0.5)
    assert data["benchmarks"] == {"small": {"exit": 0, "folder": "bench"}}


def test_a_misspelt_field_is_refused_where_the_record_is_made():
    with pytest.raises(pydantic.ValidationError, match="destroyd"):
        timeline.PhaseTimeline(rig="g6", phase="small", model_id="m", destroyd="2026-11-29T10:30:00Z")
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        timeline.BenchmarkRun(exit=0, folder=None).exit = 1  # type: ignore[misc]
