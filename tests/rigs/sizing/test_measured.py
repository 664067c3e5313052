"""The KV cache vLLM logged on a deployed rig is kept, and the next fit at the same settings uses it ("measured")."""

from __future__ import annotations

import json

import pytest

from agent.backends import Backend
from agent.reach.measured_kv import record_all
from kit import generated
from rigs.catalog.facts import fact
from rigs.catalog.model import load_catalog
from rigs.cli import main
from rigs.deploy.model_options import ModelOptionsError, ModelRequest, serve
from rigs.sizing import measured

MODEL, SIZE, CONTEXT = "Qwen/Qwen3-8B", "g6.xlarge", 8192
LOGGED = 31_000
"""Tokens the boot report says vLLM allocated: not what the fit predicts (so a test can tell which is shown)."""


def booted(tokens: int = LOGGED, version: str = "0.30.0") -> Backend:
    """A g6 rig serving Qwen3-8B whose boot report and server were read as :mod:`agent.reach.provenance` reads them."""
    read = {"kv_cache_tokens": fact(tokens, "vLLM's log, the rig's boot report"),
            "instance_type": fact(SIZE, "EC2 DescribeInstances i-0abc"),
            "context_tokens": fact(CONTEXT, "GET /v1/models max_model_len"),
            "engine_version": fact(version, "GET /version")}
    return Backend(name="g6", label="g6", kind="openai", model_id=MODEL, tool_calls=True,
                   base_url="http://127.0.0.1:8000/v1", provenance={"read": read})


def fit_json(capsys, *flags: str, context: int = CONTEXT) -> dict:
    assert main(["fit", "--model", MODEL, "--instance-type", SIZE, "--context", str(context), "--json", *flags]) == 0
    return json.loads(capsys.readouterr().out)["instances"][0]


def test_a_boot_report_with_logged_kv_tokens_is_stored_with_the_settings_it_was_served_at(tmp_path):
    path = tmp_path / "measured_kv.json"
    lines = record_all([booted()], "2026-12-05T013000Z-run", path)
    kept = measured.load(path).measurements
    assert [(m.model_id, m.instance_type, m.engine, m.engine_version, m.tensor_parallel, m.max_model_len,
             m.kv_cache_dtype, m.gpu_memory_utilization, m.kv_tokens, m.run) for m in kept] == [
        (MODEL, SIZE, "0.30", "0.30.0", 1, CONTEXT, "auto", 0.9, LOGGED, "2026-12-05T013000Z-run")]
    assert lines == [f"g6: vLLM logged 31,000 tokens of KV cache on g6.xlarge (tensor parallel 1, 8,192 tokens); kept "
                     f"in {path}: python -m rigs fit uses it in place of its prediction"]
    record_all([booted(30_500)], "later", path)  # the same settings again: the newer one replaces it
    assert [(m.kv_tokens, m.run) for m in measured.load(path).measurements] == [(30_500, "later")]


def test_a_backend_without_logged_tokens_records_nothing(tmp_path):
    unread = Backend(name="g6", label="g6", kind="openai", model_id=MODEL, tool_calls=True,
                     base_url="http://127.0.0.1:8000/v1")
    assert record_all([unread], "run", tmp_path / "m.json") == [] and not (tmp_path / "m.json").exists()


def test_the_next_fit_at_the_same_settings_uses_the_measurement_and_says_so(capsys):
    predicted = fit_json(capsys)
    assert (predicted["kv_tokens_source"], predicted["measured"]) == ("predicted", None)
    assert predicted["kv_tokens"] != LOGGED
    record_all([booted()], "2026-12-05T013000Z-run")
    used = fit_json(capsys)
    assert (used["kv_tokens"], used["kv_tokens_source"]) == (LOGGED, "measured")
    assert used["measured"].startswith("measured 20") and used["measured"].endswith(
        "(vLLM 0.30.0, run 2026-12-05T013000Z-run)")
    assert main(["fit", "--model", MODEL, "--instance-type", SIZE, "--context", str(CONTEXT)]) == 0
    text = capsys.readouterr().out
    assert "31,000 measured" in text and f"measured: {SIZE}'s KV tokens are what vLLM logged" in text


@pytest.mark.parametrize("flags", [("--kv-cache-dtype", "fp8"), ("--gpu-memory-utilization", "0.8"),
                                   ("--vllm", "0.27.0"), ("--max-num-seqs", "16")])
def test_a_fit_at_other_settings_keeps_the_prediction(capsys, flags):
    record_all([booted()], "run")
    other = fit_json(capsys, *flags)
    assert (other["kv_tokens_source"], other["measured"]) == ("predicted", None) and other["kv_tokens"] != LOGGED


def test_each_engine_version_and_context_has_its_own_measurement(capsys):
    record_all([booted(), booted(29_000, version="0.27.2")], "run")
    assert fit_json(capsys)["kv_tokens"] == LOGGED  # the g6 rig's vLLM 0.30
    assert fit_json(capsys, "--vllm", "0.27.0")["kv_tokens"] == 29_000
    assert fit_json(capsys, context=4096)["kv_tokens_source"] == "predicted"  # another max_model_len


def test_a_deploy_sized_with_model_rig_uses_the_measurement_in_its_line():
    record_all([booted()], "run")
    served = serve(load_catalog().get("g6"), load_catalog(), ModelRequest(model=MODEL, max_model_len=str(CONTEXT)))
    assert served.rig.instance_type == SIZE
    assert "31,000 tokens of KV cache a replica (measured " in str(served.said)


def test_a_corrupt_file_is_one_line_naming_it_and_the_fix(capsys):
    path = measured.measured_path()
    path.parent.mkdir(parents=True)
    path.write_text('{"version": 1, "measurements": [{"model_id": "x"}]}')
    assert main(["fit", "--model", MODEL, "--instance-type", SIZE]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(path) in err and "measurements.0.instance_type: Field required" in err
    assert "delete it (the next benchmark run on a deployed rig records its KV cache again)" in err
    path.write_text("{not json")
    assert main(["fit", "--model", MODEL]) == 2 and "not valid JSON" in capsys.readouterr().err
    with pytest.raises(ModelOptionsError, match="not valid JSON.*delete it"):  # synth's one line, exit 2
        serve(load_catalog().get("g6"), load_catalog(), ModelRequest(model=MODEL))


def test_the_committed_schema_is_current():
    assert generated.stale([measured.schema_file()]) == [], "run: python -m rigs.sizing.measured --write"
