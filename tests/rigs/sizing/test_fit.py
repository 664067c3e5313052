"""``python -m rigs fit``: a model's weights, its KV cache and the sizes it fits, against figures worked by hand.

The memory each accelerator gives, as ``rigs/sizing/fit.py`` counts it: an L4 (22,888 MiB = 23,999,807,488 bytes)
x 0.9 = 21,599,826,739, less the engine's 1.5 GiB (1,610,612,736) = 19,989,214,003 bytes for weights and KV cache;
a T4G (16,384 MiB = 17,179,869,184) x 0.9 = 15,461,882,265, less 1.5 GiB = 13,851,269,529.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigs.catalog.model import load_catalog
from rigs.cli import main
from rigs.sizing.config import ConfigError, architecture, read_config
from rigs.sizing.fit import candidates, fit, kv_bytes_per_sequence

CATALOG = load_catalog()
L4_USABLE = 19_989_214_003
T4G_USABLE = 13_851_269_529

FULL_ATTENTION = {  # Llama 2 7B's shape: every head its own KV (no num_key_value_heads), float16
    "architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
    "num_attention_heads": 32, "vocab_size": 32000, "max_position_embeddings": 4096, "torch_dtype": "float16"}
GPT_OSS = {  # gpt-oss-20b's config.json, the parts sizing reads
    "hidden_size": 2880, "intermediate_size": 2880, "num_hidden_layers": 24, "num_attention_heads": 64,
    "num_key_value_heads": 8, "head_dim": 64, "num_local_experts": 32, "experts_per_token": 4, "vocab_size": 201088,
    "sliding_window": 128, "layer_types": ["sliding_attention", "full_attention"] * 12,
    "max_position_embeddings": 131072, "torch_dtype": "bfloat16", "quantization_config": {"quant_method": "mxfp4"}}


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["fit", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_full_attention_weights_and_kv_cache_as_worked_by_hand():
    arch = architecture(FULL_ATTENTION, "llama2.json")
    # params: embeddings and head 32000 x 4096 x 2 = 262,144,000; per layer attention 4096 x 128 x (2 x 32 + 2 x 32)
    # = 67,108,864 and MLP 3 x 4096 x 11008 = 135,266,304; 32 layers: 6,476,005,376; all 6,738,149,376, x 2 bytes
    assert arch.parameters == 6_738_149_376 and arch.kv_heads == 32 and arch.head_dim == 128
    result = fit(arch, candidates(CATALOG, None), context=4096)
    assert result.weights_bytes == 13_476_298_752
    assert result.kv_bytes_per_token == 32 * 2 * 32 * 128 * 2 == 524_288  # every layer, K and V, 32 heads of 128
    assert result.kv_bytes_per_sequence == 524_288 * 4096 == 2_147_483_648
    g6 = result.of("g6.xlarge")
    cache = L4_USABLE - 13_476_298_752  # 6,512,915,251 bytes of KV cache
    assert (g6.fits, g6.tensor_parallel, g6.max_sequences, g6.kv_tokens) == (True, 1, 3, cache // 524_288)


def test_grouped_query_attention_on_one_and_on_two_gpus():
    result = fit(CATALOG.models["Qwen/Qwen3-8B"].architecture, candidates(CATALOG, "Qwen3 8B"), context=8192)
    assert result.weights_bytes == 16_400_000_000  # 8.2B parameters x 2 bytes (bfloat16)
    assert result.kv_bytes_per_token == 36 * 2 * 8 * 128 * 2 == 147_456  # 8 KV heads, not 32
    g6 = result.of("g6.xlarge")  # 3,589,214,003 bytes left: 24,340 tokens, 2 sequences of 8,192
    assert (g6.fits, g6.kv_tokens, g6.max_sequences) == (True, 24_340, 2)
    assert not result.of("g5g.2xlarge").fits  # 16.4 GB of weights on one T4G's 13.85
    two = result.of("g5g.16xlarge")  # TP 2: 13,851,269,529 - 8,200,000,000 = 5,651,269,529 on each
    assert (two.fits, two.tensor_parallel, two.kv_tokens, two.max_sequences) == (True, 2, 76_650, 9)


def test_a_sliding_window_layer_holds_at_most_its_window():
    arch = architecture(GPT_OSS, "gpt-oss.json")
    # 12 sliding layers hold 128 tokens each: 2 x 8 x 64 x 2 = 2,048 bytes x 128 = 262,144; 12 full hold 8,192
    assert kv_bytes_per_sequence(arch, 8192) == 12 * 262_144 + 12 * 2048 * 8192 == 204_472_320
    assert kv_bytes_per_sequence(arch, 64) == 24 * 2048 * 64  # a context inside the window: every layer holds it all
    assert fit(arch, [], context=8192).kv_bytes_per_token == 24_960


def test_layers_that_share_kv_count_once():
    """Gemma 4 E2B: 35 layers, the last 20 read earlier layers' KV; of the first 15, 12 sliding (1 KV head of 256,
    window 512) and 3 full (1 KV head of 512)."""
    arch = CATALOG.models["google/gemma-4-E2B-it"].architecture
    assert kv_bytes_per_sequence(arch, 8192) == 12 * (2 * 256 * 2) * 512 + 3 * (2 * 512 * 2) * 8192 == 56_623_104


def test_a_mixture_of_experts_counts_every_expert_and_its_quantized_bits():
    arch = architecture(GPT_OSS, "gpt-oss.json")
    # embeddings and head 201088 x 2880 x 2 = 1,158,266,880; per layer attention 2880 x 64 x (128 + 16) = 26,542,080,
    # 32 experts 3 x 2880 x 2880 x 32 = 796,262,400 and their router 92,160; 24 layers: 19,749,519,360
    assert arch.parameters == 20_907_786_240 and (arch.experts, arch.experts_per_token) == (32, 4)
    # MXFP4 4.25 bits for the layers, bfloat16 embeddings: 2,316,533,760 + 19,749,519,360 x 4.25 / 8
    assert arch.weight_bytes == 2_316_533_760 + 10_491_932_160


def test_a_model_too_big_for_a_size_goes_to_the_smallest_degree_that_fits_and_divides_the_heads():
    result = fit(CATALOG.models["meta-llama/Llama-3.1-70B-Instruct"].architecture,
                 candidates(CATALOG, "Llama 3.1 70B"), context=8192)
    four = result.of("g6.12xlarge")  # 141.2 GB of weights over 4 L4s: 35.3 GB on each, more than 19.99
    assert (four.fits, four.tensor_parallel) == (False, 4)
    assert four.why.startswith(f"{4 * 35_300_000_000 + 2_684_354_560 - 4 * L4_USABLE:,} bytes short")
    eight = result.of("g6.48xlarge")  # 19,989,214,003 - 17,650,000,000 = 2,339,214,003 on each of 8
    assert (eight.fits, eight.tensor_parallel, eight.max_sequences) == (True, 8, 6)


def test_a_model_nxd_inference_serves_fits_the_neuron_sizes_by_neuroncores_and_host_memory():
    """Llama 3.1 8B, 4 sequences of 8,192 tokens (what AWS's vLLM Neuron image is compiled for): a NeuronCore has
    16,384 MiB (32 GiB a device over its 2 cores), 13,851,269,529 bytes as fit counts them (the T4G's figure)."""
    result = fit(CATALOG.models["meta-llama/Llama-3.1-8B-Instruct"].architecture, candidates(CATALOG, "Llama 3.1 8B"),
                 context=8192, sequences=4)
    assert result.kv_bytes_per_sequence == 32 * 2 * 8 * 128 * 2 * 8192 == 1_073_741_824
    eight = result.of("inf2.8xlarge")  # 16.06 GB: TP 2, 8,030,000,000 on each core, 5,821,269,529 left on each
    cache = 2 * (T4G_USABLE - 8_030_000_000)
    assert (eight.fits, eight.tensor_parallel, eight.why) == (True, 2, None)
    assert (eight.max_sequences, eight.kv_tokens) == (cache // 1_073_741_824, cache * 8192 // 1_073_741_824) == (
        10, 88_825)
    small = result.of("inf2.xlarge")  # the same 2 cores, but 16 GiB of host memory less 4 GiB cannot hold 16.06 GB
    assert not small.fits and small.why.startswith("the host's 16 GiB, less 4 GiB for the system, cannot hold")
    assert small.short_bytes == 16_060_000_000 - (16 - 4) * 2**30 == 3_175_098_112
    assert result.of("trn1.2xlarge").fits  # 32 GiB of host memory
    assert result.of("ml.inf2.8xlarge").why == CATALOG.get("inf2").other_models  # the project's endpoint is on GPUs


def test_the_neuron_rows_say_why_not_for_a_model_neither_neuron_image_serves():
    gpt_oss = fit(CATALOG.models["openai/gpt-oss-20b"].architecture, candidates(CATALOG, "gpt-oss-20b"), context=2048)
    gemma12 = fit(CATALOG.models["google/gemma-4-12B-it-qat-w4a16-ct"].architecture, candidates(CATALOG, "Gemma 4 12B"),
                  context=2048)
    gemma = fit(CATALOG.models["google/gemma-4-E2B-it"].architecture, candidates(CATALOG, "Gemma 4 E2B"), context=2048)
    for size in ("inf2.xlarge", "inf2.48xlarge", "trn1.2xlarge", "trn1.32xlarge"):
        why = gpt_oss.of(size).why
        assert not gpt_oss.of(size).fits and "\n" not in why
        assert why.startswith(CATALOG.get(size[:4]).other_models + "; AWS's vLLM Neuron image serves only what NxD "
                              "Inference serves (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, "
                              "Qwen3ForCausalLM), and gpt-oss-20b is GptOssForCausalLM")
        assert gemma12.of(size).why.endswith("and Gemma 4 12B is Gemma4ForConditionalGeneration")
    assert gemma.of("inf2.xlarge").fits and gemma.of("inf2.xlarge").why is None  # the hand-ported image's own


def test_json_has_exactly_the_documented_fields_for_every_candidate(capsys):
    code, out, _ = run(capsys, "--model", "Qwen/Qwen3-8B", "--context", "8192", "--concurrency", "2", "--json")
    data = json.loads(out)
    assert code == 0 and list(data) == ["weights_bytes", "kv_bytes_per_token", "kv_bytes_per_sequence", "instances"]
    assert [set(i) for i in data["instances"]] == [{
        "instance_type", "accelerators", "accelerator_memory_bytes", "tensor_parallel", "fits", "kv_tokens",
        "max_sequences", "why"}] * len(data["instances"])
    types = [i["instance_type"] for i in data["instances"]]
    assert {"g6.xlarge", "ml.g6.xlarge", "g6e.48xlarge", "g5g.metal", "inf2.48xlarge", "ml.trn1.2xlarge"} <= set(types)
    assert not any(t.startswith("ml.g5g") for t in types)
    by_type = {i["instance_type"]: i for i in data["instances"]}
    assert by_type["g6.xlarge"]["fits"] and by_type["g6.xlarge"]["max_sequences"] == 2  # 2 of 8,192: just fits
    assert by_type["g6.xlarge"]["why"] is None and by_type["g6.xlarge"]["accelerator_memory_bytes"] == 23_999_807_488


def test_dtype_float32_doubles_an_unquantized_model_and_its_kv(capsys):
    _, out, _ = run(capsys, "--model", "Qwen/Qwen3-8B", "--context", "1024", "--dtype", "float32", "--json")
    data = json.loads(out)
    assert (data["weights_bytes"], data["kv_bytes_per_token"]) == (32_800_000_000, 2 * 147_456)


def test_a_config_file_is_read_and_bad_input_is_one_line(capsys, tmp_path: Path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"text_config": FULL_ATTENTION}))  # a multimodal config's language model
    code, out, _ = run(capsys, "--model-config", str(path), "--context", "4096")
    assert code == 0 and "g6.xlarge" in out and "weights 12.55 GiB" in out
    code, _, err = run(capsys, "--model-config", str(path), "--context", "5000")
    assert code == 2 and err.strip() == "error: --context 5000: the model takes at most 4,096 tokens " \
                                        "(max_position_embeddings)"
    code, _, err = run(capsys, "--model", "acme/unknown")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "give its config.json with --model-config FILE" in err
    path.write_text(json.dumps({**FULL_ATTENTION, "layer_types": ["linear_attention"] * 32}))
    with pytest.raises(ConfigError, match="sizing knows full_attention and sliding_attention layers only"):
        read_config(path)
    with pytest.raises(ConfigError, match="num_hidden_layers is None"):
        architecture({k: v for k, v in FULL_ATTENTION.items() if k != "num_hidden_layers"}, "c.json")


def test_a_workload_gives_the_context_its_longest_request_needs(capsys):
    """30,000 + 1,000 tokens a request, rounded up to 31,232 (the benchmark's count): 4.29 GiB of Qwen3 8B's KV,
    over what one L4 leaves beside its weights (24,340 tokens), so two of g6.12xlarge's four."""
    code, out, err = run(capsys, "--model", "Qwen/Qwen3-8B", "--workload",
                         "prompt_input_tokens_mean=30000,output_tokens_mean=1000", "--json")
    assert code == 0 and err.strip() == ("--workload prompt_input_tokens_mean=30000,output_tokens_mean=1000: its "
                                         "longest request, prompt and output, rounded up: 31,232 tokens")
    instances = {i["instance_type"]: i for i in json.loads(out)["instances"]}
    assert json.loads(out)["kv_bytes_per_sequence"] == 31232 * 147456
    assert not instances["g6.xlarge"]["fits"] and instances["g6.12xlarge"]["tensor_parallel"] == 2
    code, _, err = run(capsys, "--model", "Qwen/Qwen3-8B", "--workload", "preset=reference")
    assert code == 2 and "the reference's one prompt has no context of its own" in err and len(err.splitlines()) == 1
