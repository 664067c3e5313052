"""Cost arithmetic against the reference's figures and the ceiling method (both: docs/reference-run.md)."""

from __future__ import annotations

import pytest
import yaml

from agent.bench.analysis import cost
from agent.bench.analysis.blocks.cost import cost_block
from agent.bench.analysis.ceiling import DEVICES_PATH, ceiling_for, ceiling_tok_per_s, load_devices
from agent.bench.results.blocks.chat import ChatLevel
from agent.bench.results.run import HourlyPrice, TokenPrice


def chat_level(concurrency: int, rate: float | None) -> ChatLevel:
    return ChatLevel(concurrency=concurrency, requests=5, ok=5, errors=0, resends=0, usage_missing=0, wall_s=1.0,
                     output_tokens=100, output_tok_per_s=rate, requests_per_s=5.0)


def test_reference_g6_cost_per_million_and_month():
    assert round(cost.usd_per_million_output(0.8048, 131.5), 2) == 1.70
    assert round(cost.monthly_24x7(0.8048), 2) == 587.50


@pytest.mark.parametrize(
    "usd_h,tok_s,expected",
    [(0.556, 37.2, 4.15), (0.7582, 36.4, 5.79), (1.3438, 37.1, 10.06), (1.1267, 106.3, 2.94),
     (0.8048, 132.45, 1.69), (1.1267, 1259.15, 0.25)],
)
def test_reference_cost_table(usd_h, tok_s, expected):
    assert round(cost.usd_per_million_output(usd_h, tok_s), 2) == expected


def test_reference_monthly_figures():
    assert [round(cost.monthly_24x7(p), 2) for p in (1.1267, 0.7582, 1.3438, 0.556)] == [822.49, 553.49, 980.97,
                                                                                         405.88]


def test_break_even_against_nova_micro():
    # output only at $0.14/M: 1,597 tok/s; with 5 input tokens ($0.035/M) per output token: $0.315/M, ~710 tok/s
    assert round(cost.break_even_tok_per_s(0.8048, 0.14)) == 1597
    effective = cost.bedrock_usd_per_million_output(0.035, 0.14, 5)
    assert effective == pytest.approx(0.315)
    assert round(cost.break_even_tok_per_s(0.8048, effective)) == 710
    assert cost.monthly_tokens(1000.0) == 1000.0 * 3600 * 730


def test_cost_block_for_a_rig_and_for_bedrock():
    hourly = HourlyPrice(usd_per_hour=0.8048, source="offline-file", as_of="2026-10-05")
    bedrock = TokenPrice(model_id="us.amazon.nova-micro-v1:0", usd_per_m_input=0.035, usd_per_m_output=0.14)
    block = cost_block(hourly=hourly, per_token=None, levels=[chat_level(1, 131.5), chat_level(16, None)],
                       bedrock_price=bedrock, input_per_output=0.2)
    assert block.per_concurrency[0].usd_per_m_output == pytest.approx(1.7, abs=0.001)
    assert block.per_concurrency[1].usd_per_m_output is None
    assert block.monthly_24x7_usd == 587.5
    rows = {r.mix: r for r in block.break_even.rows}
    assert rows["output only"].output_tok_per_s == pytest.approx(1596.8, abs=0.1)
    assert rows["measured mix"].input_per_output == 0.2
    b = cost_block(hourly=None, per_token=TokenPrice(usd_per_m_input=0.035, usd_per_m_output=0.14),
                   levels=[chat_level(1, 110.0)], bedrock_price=bedrock, input_per_output=0.2)
    assert b.per_concurrency[0].usd_per_m_output == pytest.approx(0.147)
    assert b.monthly_24x7_usd is None and b.break_even is None
    none = cost_block(hourly=None, per_token=None, levels=[], bedrock_price=bedrock, input_per_output=None)
    assert none.reason


def test_device_file_has_sources_for_every_figure():
    table = load_devices()
    assert table.devices["nvidia-l4"].bandwidth_gb_s == 300
    assert table.devices["nvidia-t4g"].bandwidth_gb_s == 277.0
    assert table.devices["nvidia-t4g"].theoretical_gb_s == 320.1
    assert table.devices["inferentia2"].bandwidth_gb_s == 820
    assert table.devices["inferentia2"].per_core_gb_s == 410
    assert table.devices["trainium1"].bandwidth_gb_s == 820
    for dev in table.devices.values():
        assert dev.source and dev.status
    for model in table.models:
        assert model.source
    assert table.device_for("ml.g6.xlarge") == "nvidia-l4" and table.device_for("g5g.2xlarge") == "nvidia-t4g"


def test_every_problem_of_a_device_file_with_its_path(tmp_path):
    data = yaml.safe_load(DEVICES_PATH.read_text())
    del data["devices"]["nvidia-l4"]["source"]
    data["devices"]["nvidia-t4g"]["bandwith_gb_s"] = 1
    data["models"][2]["scope"] = "die"
    path = tmp_path / "devices.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError) as caught:
        load_devices(path)
    assert str(caught.value) == (f"{path}: devices.nvidia-l4: missing source; devices.nvidia-t4g.bandwith_gb_s: "
                                 "unknown key; models[2].scope: Input should be 'chip' or 'core'")


def test_an_instance_type_of_an_unknown_device_is_refused(tmp_path):
    data = yaml.safe_load(DEVICES_PATH.read_text())
    data["instances"]["p5."] = "nvidia-h100"
    path = tmp_path / "devices.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match=r"devices.yaml: instances: p5\. names unknown device nvidia-h100$"):
        load_devices(path)


@pytest.mark.parametrize("bw,bytes_,expected", [(277, 3.38, 82), (410, 3.42, 120), (820, 3.42, 240), (300, 3.38, 89),
                                                (300, 1.86, 161)])
def test_reference_worked_ceilings(bw, bytes_, expected):
    assert round(ceiling_tok_per_s(bw, bytes_)) == expected


def test_ceiling_blocks():
    g6 = ceiling_for(instance_type="g6.xlarge", model_id="xbill9/gemma-4-E2B-it-qat-q4_0-w4a16-ct-text-emb4",
                     kind="openai", measured_decode_tok_s=131.5)
    assert g6.ceiling_tok_per_s == 161.3 and g6.share == pytest.approx(0.815, abs=0.001)
    inf2 = ceiling_for(instance_type="inf2.xlarge", model_id="gemma-4-E2B-it", kind="neuron",
                       measured_decode_tok_s=36.4)
    assert inf2.bandwidth_gb_s == 410 and inf2.chip_ceiling_tok_per_s == 239.8
    assert inf2.share == pytest.approx(0.304, abs=0.001)
    g5g = ceiling_for(instance_type="g5g.2xlarge", model_id="google/gemma-4-E2B-it", kind="openai",
                      measured_decode_tok_s=None)
    assert g5g.ceiling_tok_per_s == 82.0 and g5g.share is None
    bedrock = ceiling_for(instance_type=None, model_id="us.amazon.nova-micro-v1:0", kind="bedrock",
                          measured_decode_tok_s=110.0)
    assert bedrock.ceiling_tok_per_s is None and "managed" in bedrock.reason
    unknown = ceiling_for(instance_type="g6.xlarge", model_id="some/other-model", kind="openai",
                          measured_decode_tok_s=10.0)
    assert unknown.ceiling_tok_per_s is None and "not on file" in unknown.reason
