"""The ``bfcl`` part on the real local rig (SmolLM2 on llama.cpp, constrained mode).

Asserts structure (every case recorded and graded, the constrained label, the run completes),
never that a 135M model is right.
"""

from __future__ import annotations

import json

import pytest

from agent.bench.command import evidence, runner
from agent.bench.analysis import summary
from agent.bench.grading.bfcl_grading import OUTCOMES

from tests.agent.bench.conftest import make_options


@pytest.mark.e2e
@pytest.mark.timeout(900)  # a CPU-served model on a shared 2-core machine: about 10 s per case when busy
def test_bfcl_on_the_local_rig_completes_and_is_labelled_constrained(local_rig, tmp_path):
    out = tmp_path / "out"
    code = runner.run([local_rig.backend()], make_options("--demos", "bfcl", "--bfcl-n", "2"), out)
    s = json.loads((out / "summary.json").read_text())
    summary.validate(s)
    b = s["backends"]["local"]
    assert code == 0 and b["completed"] and b["constrained"] and b["toy_model"]
    block = b["bfcl"]
    assert block["requests"] == 2 and block["constrained"] and block["interface"] == "openai-constrained"
    assert block["cases"] + block["errors"] == 2 and block["cases"] >= 1
    records = evidence.read_requests(out / "requests.jsonl")
    for d in block["detail"]:
        r = next(r for r in records if r["seq"] == d["seq"])
        assert r["constrained"] and r["output_tokens"] and (r["error"] or r["text"].startswith("{"))
        assert d["outcome"] in OUTCOMES
    report = (out / "REPORT.md").read_text()
    assert "local (constrained, CPU toy model)" in report and "**local: constrained.**" in report
