"""The ``tasks`` lane on the real local rig (SmolLM2 on llama.cpp, constrained mode): one task, stopped at its first
tool call (``--tasks-max-tool-calls 1``: the call that reaches the limit ends the task, so no long text answer is
generated on the CPU).

Asserts structure (the task recorded with a real call run on its APIs, graded, the Tasks section and the summary
block written), never that a 135M model is right.
"""

from __future__ import annotations

import json

import pytest

from agent.bench.analysis import summary
from agent.bench.command import evidence, runner

from tests.agent.bench.conftest import make_options


@pytest.mark.e2e
@pytest.mark.timeout(900)  # a CPU-served model on a shared 2-core machine: 10 to 40 s for the one constrained call
def test_a_task_on_the_local_rig_is_run_graded_and_reported(local_rig, tmp_path):
    out = tmp_path / "out"
    # seed 16 draws multi_turn_base_105 (the trading APIs), whose short first turn keeps the prompt small
    code = runner.run([local_rig.backend()], make_options("--demos", "tasks", "--tasks-n", "1", "--tasks-seed", "16",
                                                          "--tasks-max-tool-calls", "1"), out)
    s = json.loads((out / "summary.json").read_text())
    summary.validate(s)
    b = s["backends"]["local"]
    assert code == 0 and b["completed"] and b["constrained"]
    block = b["tasks"]
    assert (block["run"], block["graded"], block["succeeded"], block["stopped"]) == (1, 1, 0, 1)
    assert block["usd_per_success"] is None and block["cost_reason"] == "CPU-served local rig: no hourly price applies"
    assert block["task_s_p50"] > 0 and block["input_tokens"]["n"] == 1
    [record] = evidence.read_requests(out / "requests.jsonl")
    assert record["task"] == "multi_turn_base_105" and record["stopped"] == "tool-call limit of 1 reached"
    [call] = record["calls"]
    assert call["status"] == "success" and call["result"] and [len(step) for step in record["steps"][0]] == [1]
    assert "## Tasks (BFCL multi-turn, done by the agent)" in (out / "REPORT.md").read_text()
    assert "<h2>Tasks (BFCL multi-turn, done by the agent)</h2>" in (out / "REPORT.html").read_text()
