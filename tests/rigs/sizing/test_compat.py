"""rigs/sizing/compat.py: the weight formats and dtypes vLLM cannot run on a GPU family, found before anything is sized
or deployed (the refusals at synth: tests/rigs/deploy/test_model_options.py)."""

from __future__ import annotations

import json

from rigs.catalog.model import load_catalog
from rigs.cli import main
from rigs.sizing import compat
from rigs.sizing.config import architecture
from rigs.sizing.fit import Ask, candidates, fit

CATALOG = load_catalog()
FAMILIES = CATALOG.instance_families
GPT_OSS = CATALOG.models["openai/gpt-oss-20b"].architecture
BLOCK_FP8 = architecture({"architectures": ["Qwen3ForCausalLM"], "hidden_size": 4096, "intermediate_size": 12288,
                          "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
                          "head_dim": 128, "vocab_size": 151936, "max_position_embeddings": 40960,
                          "torch_dtype": "bfloat16", "quantization_config": {
                              "quant_method": "fp8", "activation_scheme": "dynamic",
                              "weight_block_size": [128, 128]}}, "Qwen3-8B-FP8/config.json")


def test_mxfp4_and_fp8_weights_are_refused_below_compute_capability_8_and_run_from_it():
    for arch, words in ((GPT_OSS, "MXFP4 weights need compute capability 8.0"),
                        (BLOCK_FP8, "FP8 weights need compute capability 8.0")):
        for name in ("g4dn", "g5g"):
            assert compat.refusal(arch, FAMILIES[name]).startswith(words)
        for name in ("g5", "g6", "g6e", "p4d", "p5"):  # the A10G and A100 run FP8 weight-only, through Marlin
            assert compat.refusal(arch, FAMILIES[name]) is None


def test_bf16_below_8_is_served_as_float16_not_refused_and_a_float16_model_needs_nothing():
    qwen = CATALOG.models["Qwen/Qwen3-8B"].architecture
    found = compat.run(qwen, FAMILIES["g4dn"])
    assert [(f.rule, f.refuses) for f in found] == [("bf16-as-fp16-below-8.0", False)]
    assert compat.notes(qwen, FAMILIES["g4dn"]) == ["bfloat16 weights served as float16 (--dtype float16): the NVIDIA "
                                                    "T4, compute capability 7.5, has no bfloat16"]
    assert compat.run(qwen, FAMILIES["g4dn"], dtype="float16") == [] and compat.run(qwen, FAMILIES["g6"]) == []


def test_neuron_families_have_no_capability_and_no_rule_applies():
    assert FAMILIES["inf2"].capability is None and compat.run(GPT_OSS, FAMILIES["inf2"]) == []
    assert FAMILIES["g6e"].capability == (8, 9) and FAMILIES["p6-b200"].capability == (10, 0)


def test_fit_marks_every_size_of_a_family_that_cannot_run_the_model_unfit_with_the_rules_line():
    result = fit(GPT_OSS, candidates(CATALOG, "gpt-oss-20b"), Ask(context=8192))
    t4 = [i for i in result.instances if i.instance_type.removeprefix("ml.").split(".")[0] in ("g4dn", "g5g")]
    assert t4 and all(not i.fits and "The quantization method mxfp4 is not supported for the current GPU SM75"
                      in (i.why or "") for i in t4)
    assert result.of("g6.xlarge").fits and result.of("ml.g5.xlarge").fits


def test_every_rig_serves_its_own_model_on_its_own_families():
    for rig in CATALOG.deployable():
        card = CATALOG.models.get(rig.model_id)
        if card is None:  # a hand-ported Neuron build, known by its image only
            continue
        for name in rig.families:
            assert compat.refusal(card.architecture, FAMILIES[name]) is None, (rig.name, name)
            if compat.notes(card.architecture, FAMILIES[name]):  # served as float16: the rig must say so to vLLM
                flags = list(rig.serve_flags)
                assert flags[flags.index("--dtype") + 1] == "float16", rig.name


def test_rigs_fit_says_on_stderr_where_bf16_weights_are_served_as_float16(capsys):
    assert main(["fit", "--model", "Qwen/Qwen3-8B", "--context", "4096", "--json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["instances"]  # the JSON stays JSON
    assert out.err.splitlines() == [
        "note: g4dn: bfloat16 weights served as float16 (--dtype float16): the NVIDIA T4, compute capability 7.5, "
        "has no bfloat16",
        "note: g5g: bfloat16 weights served as float16 (--dtype float16): the NVIDIA T4G, compute capability 7.5, "
        "has no bfloat16"]
