"""End to end: ``python -m rigs rehearse --offline``, the whole flow against moto's server and the local rig.

The real commands, as a user runs them: the rehearsal starts the local rig and moto's server, bootstraps
moto's account with the real CDK CLI, runs doctor and preflight, deploys g6, inf2 and SageMaker in
parallel (g6 has no capacity in us-east-2, so it fails over to us-east-1), benchmarks them through the
agent's discovery with the local rig behind the relay and the SageMaker runtime, moves g6 and SageMaker
to their big variant and benchmarks again, destroys exactly what it created, and checks that nothing of
ours is left billing. No process the rehearsal started may outlive it. (An interrupt in the middle of
the benchmark: ``test_rehearse_interrupted.py``.)

Small benchmark options keep the suite's time down (``--runs 1 --demos chat --max-tokens 16``: ten replies of 100
tokens on the CPU-served stand-in took about 20 s); a user's rehearsal runs the agent's defaults.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agent.conftest import alive_after

from tests.agent.conftest import require_local_rig

from tests.e2e.rehearsal import rehearse

from tests.e2e.rehearsal import timeline_of

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

SMALL_MODEL = "xbill9/gemma-4-E2B-it-qat-q4_0-w4a16-ct-text-emb4"
BIG_MODEL = "google/gemma-4-12B-it-qat-w4a16-ct"
EVENTS = ("deploy_start", "instance_launched", "instance_running", "ssm_online", "ready", "first_answer", "destroyed")


def test_offline_rehearsal_with_a_failover_and_the_big_model_leaves_nothing(tmp_path: Path) -> None:
    require_local_rig()
    evidence = tmp_path / "evidence"
    code, out, started = rehearse(["g6", "inf2", "sagemaker", "--big", "--offline", "--yes", "--inject-capacity",
                                   "g6.xlarge@us-east-2", "--bench-options=--runs 1 --demos chat --max-tokens 16",
                                   "--evidence", str(evidence)], tmp_path)
    assert code == 0

    # the plan, with the estimate a real account would pay: (0.8048 + 0.7582 + 1.1267) x 70/60 for the
    # small model, (0.8048 + 1.1267) x 80/60 for the big one
    assert "Rehearsal plan (offline: a rehearsal of the flow in moto, not of the hardware" in out
    assert "up to 1 h 10 min" in out and "up to $3.14" in out
    assert "big model (the big variant; g6, sagemaker): up to 1 h 20 min" in out and "up to $2.58" in out
    assert "total: up to 2 h 30 min, up to $5.71" in out
    assert "inf2: no big model: no published Neuron build of a bigger Gemma 4" in out
    plan = json.loads((evidence / "plan.json").read_text())
    assert plan["estimate"]["usd"] == pytest.approx(5.7133, abs=1e-4)
    assert {(p["rig"], p["phase"], p["model_id"]) for p in plan["phases"]} == {
        ("g6", "small", SMALL_MODEL), ("inf2", "small", "gemma-4-E2B-it"), ("sagemaker", "small", SMALL_MODEL),
        ("g6", "big", BIG_MODEL), ("sagemaker", "big", BIG_MODEL)}

    # the failover, the benchmark through the agent's discovery and relay, the big model, the down step
    assert ("g6: attempt 1/3: us-east-2 (us-east-2a,us-east-2b,us-east-2c): InsufficientInstanceCapacity "
            "(capacity); clean up, then try us-east-1") in out
    assert "g6: TCP relay 127.0.0.1:" in out
    assert "nothing of ours left billing in us-east-1, us-east-2, us-west-1, us-west-2" in out
    assert f"evidence: {evidence}" in out
    assert "the rehearsal's own cost: $" in out

    timeline = timeline_of(evidence)
    phases = {(p["rig"], p["phase"]): p for p in timeline["phases"]}
    assert set(phases) == {("g6", "small"), ("inf2", "small"), ("sagemaker", "small"), ("g6", "big"),
                           ("sagemaker", "big")}
    for key in (("g6", "small"), ("inf2", "small"), ("g6", "big")):
        assert all(phases[key][event] for event in EVENTS), phases[key]
    for key in (("sagemaker", "small"), ("sagemaker", "big")):
        assert all(phases[key][e] for e in ("deploy_start", "instance_launched", "ready", "first_answer",
                                            "destroyed")), phases[key]
    assert phases[("g6", "small")]["region"] == phases[("g6", "big")]["region"] == "us-east-1"
    assert phases[("g6", "big")]["model_id"] == BIG_MODEL
    for phase in timeline["phases"]:
        assert phase["destroyed"] >= phase["first_answer"] >= phase["ready"] >= phase["deploy_start"]
        assert phase["cost_usd"] == pytest.approx(phase["billed_hours"] * phase["usd_per_hour"], abs=1e-6)
    assert timeline["cost_usd"] == pytest.approx(sum(p["cost_usd"] for p in timeline["phases"]), abs=1e-5)
    assert timeline["left"] == {"billing": [], "not_billing": [], "not_checked": [], "stacks": {}}
    assert "| g6 | small | us-east-1 |" in (evidence / "TIMELINE.md").read_text()

    # the benchmark's evidence says what played each rig, and which model the rig itself was given
    for folder, model in (("bench", SMALL_MODEL), ("bench-big", BIG_MODEL)):
        run = json.loads((evidence / folder / "run.json").read_text())
        backends = {b["name"]: b for b in run["backends"]}
        assert backends["g6"]["metadata"]["rig_model_id"] == model
        assert any("offline rehearsal of the flow" in note for note in run["notes"])
        records = [json.loads(line) for line in (evidence / folder / "requests.jsonl").read_text().splitlines()]
        assert {r["backend"] for r in records if not r.get("error")} == set(backends)
    assert "InsufficientInstanceCapacity" in (evidence / "up" / "up.log").read_text()
    assert started and alive_after(started) == set()
