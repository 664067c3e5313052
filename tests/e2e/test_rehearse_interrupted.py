"""End to end: ``python -m rigs rehearse --offline`` interrupted in the middle of the benchmark must still
destroy everything it created, and leave no process behind (the whole flow: ``test_rehearse_offline.py``).

It rehearses trn1, a rig the whole flow leaves out: the two files run at the same time on different
workers, and each rig's forward first tries its own catalog port (8001 for g6, 8003 for trn1), so they
never race for one port.
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


def test_an_interrupt_in_the_benchmark_still_destroys_everything(tmp_path: Path) -> None:
    require_local_rig()
    evidence = tmp_path / "evidence"
    code, out, started = rehearse(["trn1", "--offline", "--yes",
                                   "--bench-options=--runs 500 --demos chat --max-tokens 16",  # short first reply
                                   "--evidence", str(evidence)], tmp_path,
                                  interrupt_when=evidence / "bench" / "requests.jsonl")
    assert code == 130
    assert "benchmark interrupted: it stops and writes what it measured" in out
    assert "interrupted: cleaning up everything this rehearsal created" in out
    assert "nothing of ours left billing in us-east-1, us-east-2, us-west-1, us-west-2" in out
    timeline = timeline_of(evidence)
    (trn1,) = timeline["phases"]
    assert trn1["rig"] == "trn1" and trn1["first_answer"] and trn1["destroyed"]
    assert timeline["left"]["billing"] == [] and timeline["left"]["stacks"] == {}
    assert timeline["interrupted"].startswith("interrupted during the benchmark (small model) at ")
    assert timeline["interrupted"].endswith("the clean-up then destroyed everything the rehearsal created")
    assert (evidence / "TIMELINE.md").read_text().startswith("# Rehearsal timeline (offline: a rehearsal of the "
                                                              "flow, not of the hardware) (interrupted)")
    run = json.loads((evidence / "bench" / "run.json").read_text())
    assert run["interrupted"] is True
    requests = (evidence / "bench" / "requests.jsonl").read_text().splitlines()
    assert 0 < len(requests) < 2 * 501  # stopped part-way
    assert started and alive_after(started) == set()
