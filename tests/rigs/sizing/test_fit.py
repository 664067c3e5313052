"""``python -m rigs fit``: a model's weights, its KV cache and the sizes it fits, against figures worked by hand.

What one GPU gives, as ``rigs/sizing/engine.py`` counts vLLM's budget: an L4 shows CUDA 21.96 GiB; the g6 rig pins
vLLM 0.30 with ``--gpu-memory-utilization 0.90`` and leaves ``--max-num-seqs`` and ``--max-num-batched-tokens`` at
vLLM's defaults for a card under 70 GiB (256 and 2,048). The engine's own terms are the module's named figures.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from rigs.catalog.model import load_catalog
from rigs.catalog.pricing import PriceBook, PriceError
from rigs.cli import main
from rigs.sizing import engine
from rigs.sizing.config import ConfigError, architecture, read_config
from rigs.sizing.fit import PRICE_REGION, Ask, candidates, fit, kv_bytes_per_sequence
from rigs.sizing.kv import layout

CATALOG = load_catalog()
GIB = 2 ** 30
T4G_USABLE = 13_851_269_529  # a NeuronCore's 16,384 MiB x 0.9 less 1.5 GiB (the Neuron allowance)

FULL_ATTENTION = {  # Llama 2 7B's shape: every head its own KV (no num_key_value_heads), float16
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008,
    "num_hidden_layers": 32, "num_attention_heads": 32, "vocab_size": 32000, "max_position_embeddings": 4096,
    "torch_dtype": "float16"}
GPT_OSS = {  # gpt-oss-20b's config.json, the parts sizing reads
    "model_type": "gpt_oss", "hidden_size": 2880, "intermediate_size": 2880, "num_hidden_layers": 24,
    "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64, "num_local_experts": 32,
    "experts_per_token": 4, "vocab_size": 201088, "sliding_window": 128,
    "layer_types": ["sliding_attention", "full_attention"] * 12, "max_position_embeddings": 131072,
    "torch_dtype": "bfloat16", "quantization_config": {"quant_method": "mxfp4"}}


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["fit", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


PER_LOGIT = engine.TERMS[0].bytes_per_logit  # vLLM 0.30's


def l4_budget(weights: int, vocab: int, hidden: int, width: int) -> int:
    """What vLLM 0.30 leaves for KV on one L4 under the g6 rig's flags, worked through the named terms."""
    requested = int(round(21.96 * GIB) * 0.9)
    sampler = PER_LOGIT * 256 * vocab + 2048 * hidden * 4
    forward = 2048 * (2 * hidden + 3 * width) * 2
    return requested - weights - max(sampler, forward) - engine.NON_TORCH_BYTES - engine.CUDA_GRAPH_BYTES


def test_full_attention_weights_and_kv_cache_as_worked_by_hand():
    arch = architecture(FULL_ATTENTION, "llama2.json")
    # params: embeddings and head 32000 x 4096 x 2 = 262,144,000; per layer attention 4096 x 128 x (2 x 32 + 2 x 32)
    # = 67,108,864 and MLP 3 x 4096 x 11008 = 135,266,304; 32 layers: 6,476,005,376; all 6,738,149,376, x 2 bytes
    assert arch.parameters == 6_738_149_376 and arch.kv_heads == 32 and arch.head_dim == 128
    result = fit(arch, candidates(CATALOG, None), Ask(context=4096))
    assert result.weights_bytes == 13_476_298_752
    assert result.kv_bytes_per_token == 32 * 2 * 32 * 128 * 2 == 524_288  # every layer, K and V, 32 heads of 128
    assert result.kv_bytes_per_sequence == 524_288 * 4096 == 2_147_483_648
    g6 = result.of("g6.xlarge")
    available = l4_budget(13_476_298_752 + 4096 * 128 * 2, 32000, 4096, 11008)  # and the rotary table, 4,096 x 128
    blocks = available // (16 * 524_288)  # a block is 16 tokens of every layer
    assert (g6.fits, g6.tensor_parallel, g6.data_parallel) == (True, 1, 1)
    assert (g6.kv_tokens, g6.max_sequences) == (blocks * 16, blocks // 256)


def test_grouped_query_attention_and_every_gpu_of_a_four_gpu_size_serving(capsys):
    code, out, _ = run(capsys, "--model", "Qwen/Qwen3-8B", "--instance-type", "g6.12xlarge", "--json")
    [size] = json.loads(out)["instances"]
    assert code == 0 and json.loads(out)["kv_bytes_per_token"] == 36 * 2 * 8 * 128 * 2 == 147_456
    # 40,960 tokens do not fit beside 16.4 GB on one L4: two replicas of two L4s, all four serving
    assert (size["tensor_parallel"], size["data_parallel"], size["fits"]) == (2, 2, True)
    assert size["weights_bytes_per_accelerator"] == 8_200_000_000 + 40960 * 128 * 2  # and the whole rotary table
    assert size["overhead_bytes_per_accelerator"] == (
        PER_LOGIT * 256 * 151936 + 2048 * 4096 * 4 + engine.NON_TORCH_BYTES
        + round(engine.TERMS[0].communication_gib * GIB) + engine.CUDA_GRAPH_BYTES)
    assert size["max_sequences"] == 2 * (size["kv_tokens"] // 40960)


def test_weights_vllm_logged_loading_already_hold_the_rotary_table(capsys):
    """Gemma 4 E2B's catalog weights are vLLM's "Model loading took 9.8 GiB" (``weight_bytes_loaded``): no second
    table on top; sized from its parameters instead, the table (131,072 positions x 256 + 512 wide) is added."""
    arch = CATALOG.models["google/gemma-4-E2B-it"].architecture
    code, out, _ = run(capsys, "--model", "google/gemma-4-E2B-it", "--instance-type", "g5g.xlarge", "--json")
    [size] = json.loads(out)["instances"]
    assert code == 0 and arch.weight_bytes_loaded and size["weights_bytes_per_accelerator"] == arch.weight_bytes
    checkpoint = arch.model_copy(update={"weight_bytes_loaded": False})
    [g5g] = [c for c in candidates(CATALOG, None, checkpoint) if c.instance_type == "g5g.xlarge"]
    assert fit(checkpoint, [g5g], Ask(context=8192)).of("g5g.xlarge").weights_bytes_per_accelerator == \
        arch.weight_bytes + 131072 * (256 + 512) * 2


def test_fp8_kv_holds_twice_the_tokens_at_the_split_the_models_own_kv_dtype_chooses(capsys):
    sizes = {}
    for kv in ("auto", "fp8"):
        _, out, _ = run(capsys, "--model", "Qwen/Qwen3-8B", "--instance-type", "g6.12xlarge", "--kv-cache-dtype", kv,
                        "--json")
        [sizes[kv]] = json.loads(out)["instances"]
    split = {kv: (size["tensor_parallel"], size["data_parallel"]) for kv, size in sizes.items()}
    assert split["fp8"] == split["auto"] == (2, 2)  # bf16 KV needs two L4s a replica: fp8 keeps that split
    assert 1.8 <= sizes["fp8"]["kv_tokens"] / sizes["auto"]["kv_tokens"] <= 2.2
    _, out, _ = run(capsys, "--model", "Qwen/Qwen3-8B", "--instance-type", "g6.12xlarge", "--kv-cache-dtype", "fp8")
    [hint] = [line for line in out.splitlines() if "also fits" in line]
    _, out, _ = run(capsys, "--model", "Qwen/Qwen3-8B", "--instance-type", "g6.12xlarge", "--kv-cache-dtype", "fp8",
                    "--tensor-parallel", "1", "--json")
    [one] = json.loads(out)["instances"]
    assert (one["tensor_parallel"], one["data_parallel"], one["fits"]) == (1, 4, True)  # asked: served at degree 1
    assert hint == f"g6.12xlarge: fp8 KV also fits at --tensor-parallel 1 (4 replicas of {one['kv_tokens']:,} tokens)"


def test_where_the_models_own_kv_dtype_fits_no_split_fp8s_smallest_that_fits_applies():
    arch = CATALOG.models["Qwen/Qwen3-8B"].architecture
    [one] = [c for c in candidates(CATALOG, "Qwen3 8B") if c.instance_type == "g6.xlarge"]
    auto, fp8 = (fit(arch, [one], Ask(context=32768, settings=engine.Settings(kv_cache_dtype=kv))).of("g6.xlarge")
                 for kv in ("auto", "fp8"))
    assert (auto.fits, fp8.fits, fp8.kv_tokens >= 32768) == (False, True, True)
    # 10 sequences of 40,960 fit no split of g6.12xlarge at bf16 KV: fp8's own smallest degree that fits, 2, not 4
    [four] = [c for c in candidates(CATALOG, "Qwen3 8B") if c.instance_type == "g6.12xlarge"]
    auto, fp8 = (fit(arch, [four], Ask(context=40960, sequences=10, settings=engine.Settings(kv_cache_dtype=kv)))
                 .of("g6.12xlarge") for kv in ("auto", "fp8"))
    assert (auto.fits, fp8.fits, fp8.tensor_parallel, fp8.data_parallel) == (False, True, 2, 2)
    # the rig's own --kv-cache-dtype fp8 is the split's dtype too: asking fp8 again changes nothing
    rig_fp8 = replace(four, settings=engine.Settings(kv_cache_dtype="fp8"))
    assert fit(arch, [rig_fp8], Ask(context=40960)).instances == fit(
        arch, [rig_fp8], Ask(context=40960, settings=engine.Settings(kv_cache_dtype="fp8"))).instances


def test_a_sliding_window_layer_keeps_its_window_and_the_tokens_in_flight():
    """vLLM's rule (``SlidingWindowSpec.max_memory_usage_bytes``): a sliding layer holds min(window - 1 + the tokens
    in flight, context) tokens of a sequence, plus a block; in vLLM 0.30 two steps of max_num_batched_tokens are in
    flight."""
    arch = architecture(GPT_OSS, "gpt-oss.json")
    page = 16 * 2 * 8 * 64 * 2  # 16 tokens x K and V x 8 heads of 64 x 2 bytes: 32,768
    # 12 full layers x 512 blocks of 8,192 tokens, 12 sliding x (cdiv(127 + 2 x 2,048, 16) + 1 = 265 blocks)
    assert kv_bytes_per_sequence(arch, 8192) == 12 * page * (512 + 265)
    # at 8,192 batched tokens a sliding layer costs as much as a full one, and a block more
    assert kv_bytes_per_sequence(arch, 8192, batched=8192) == 12 * page * (512 + 513)
    assert fit(arch, [], Ask(context=8192)).kv_bytes_per_token == 24 * 2 * 8 * 64 * 2


def test_layers_that_share_kv_count_once_and_pages_are_made_equal():
    """Gemma 4 E2B: 35 layers, the last 20 read earlier layers' KV; of the first 15, 12 sliding (1 KV head of 256)
    and 3 full (1 KV head of 512): the sliding layers' blocks hold 32 tokens so that every page is 32,768 bytes,
    in 5 groups of 3 layers (4 sliding, 1 full)."""
    lay = layout(CATALOG.models["google/gemma-4-E2B-it"].architecture, 1, 2, (0, 30))
    assert (lay.page, lay.group_size, [g.block for g in lay.groups]) == (32_768, 3, [32, 32, 32, 32, 16])
    blocks = 10 * GIB // (32_768 * 3)
    assert lay.tokens(10 * GIB, 8192, 2048, (0, 19)) == blocks // 5 * 16  # 0.19: the blocks over the groups
    # 0.30: the concurrency x 8,192, a sequence taking 4 sliding groups x (cdiv(511 + 2,048, 32) + 1) + 512 blocks
    assert lay.tokens(10 * GIB, 8192, 2048, (0, 30)) == int(blocks / (4 * 81 + 512) * 8192)


def test_a_mixture_of_experts_counts_every_expert_and_mxfp4_packs_only_the_experts_padded():
    arch = architecture(GPT_OSS, "gpt-oss.json")
    # embeddings and head 201088 x 2880 x 2 = 1,158,266,880; per layer attention 2880 x 64 x (128 + 16) = 26,542,080,
    # 32 experts 3 x 2880 x 2880 x 32 = 796,262,400 and their router 92,160; 24 layers
    assert arch.parameters == 20_907_786_240 and (arch.experts, arch.experts_per_token) == (32, 4)
    # MXFP4 4.25 bits for the experts, held with 2,880 padded to 3,072 both ways; bfloat16 for the rest
    assert arch.weight_bytes == round((1_158_266_880 + 24 * 26_542_080) * 2
                                      + 24 * 796_354_560 * 4.25 * (3072 / 2880) ** 2 / 8)


def test_config_defaults_follow_transformers_per_model_type():
    gemma2 = {"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "hidden_size": 2304,
              "intermediate_size": 9216, "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
              "head_dim": 256, "vocab_size": 256000, "max_position_embeddings": 8192, "sliding_window": 4096,
              "torch_dtype": "float32"}
    arch = architecture(gemma2, "gemma-2.json")
    assert arch.layer_pattern == ("sliding", "full") and arch.dtype == "bfloat16"  # vLLM's auto serves fp32 as bf16
    assert arch.parameters - architecture({**gemma2, "tie_word_embeddings": False}, "x").parameters == -256000 * 2304
    mistral = architecture({**gemma2, "model_type": "mistral"}, "mistral.json")
    assert mistral.layer_pattern == ("sliding",)  # every layer sliding where its type does not alternate


def test_quantized_checkpoints_are_costed_as_vllm_loads_them():
    block_fp8 = {**FULL_ATTENTION, "torch_dtype": "bfloat16", "quantization_config": {
        "quant_method": "fp8", "weight_block_size": [128, 128], "fmt": "e4m3"}}  # Qwen3-*-FP8: no "bits"
    dense = architecture({**FULL_ATTENTION, "torch_dtype": "bfloat16"}, "dense.json")
    layers = dense.parameters - 262_144_000
    assert architecture(block_fp8, "fp8.json").weight_bytes == 262_144_000 * 2 + layers
    gptq = {**block_fp8, "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128}}
    assert architecture(gptq, "gptq.json").weight_bytes == round(262_144_000 * 2 + layers * (4 + 20 / 128) / 8)
    awq = {**block_fp8, "quantization_config": {"quant_method": "awq", "w_bit": 4, "q_group_size": 128}}
    assert architecture(awq, "awq.json").weight_bytes == architecture(gptq, "gptq.json").weight_bytes


def test_a_vision_tower_counts_where_the_checkpoint_holds_it():
    tower = {"hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 27}  # SigLIP's shape
    text = {**FULL_ATTENTION, "torch_dtype": "bfloat16"}
    both = {"architectures": ["Gemma3ForConditionalGeneration"], "text_config": text, "vision_config": tower}
    text_only = {**both, "architectures": ["Gemma3ForCausalLM"]}
    assert architecture(both, "mm.json").parameters - architecture(text_only, "text.json").parameters == \
        27 * (4 * 1152 * 1152 + 2 * 1152 * 4304)


def test_the_engine_version_decides_its_terms(capsys):
    def overhead(*more: str) -> int:
        _, out, _ = run(capsys, "--model", "Qwen/Qwen3-8B", "--instance-type", "g6.xlarge", "--context", "8192",
                        "--json", *more)
        return json.loads(out)["instances"][0]["overhead_bytes_per_accelerator"]

    # graphs are profiled from 0.21; the sampler's bytes a logit of 256 sequences x 151,936 differ by version
    assert overhead() - overhead("--vllm", "0.19.0") == engine.CUDA_GRAPH_BYTES - (13 - 10) * 256 * 151936
    assert overhead("--vllm", "0.16.0") - overhead("--vllm", "0.19.0") == (36 - 13) * 256 * 151936
    assert overhead("--max-num-seqs", "512") - overhead() == PER_LOGIT * 256 * 151936


def test_a_model_too_big_for_a_size_goes_to_the_smallest_degree_that_fits_and_divides_the_gpus():
    result = fit(CATALOG.models["meta-llama/Llama-3.1-70B-Instruct"].architecture,
                 candidates(CATALOG, "Llama 3.1 70B"), Ask(context=2048))
    four = result.of("g6.12xlarge")  # 141.2 GB of weights over 4 L4s: 35.3 GB on each, and a 32 MiB rotary table
    assert (four.fits, four.tensor_parallel) == (False, 4)
    assert four.why.startswith(f"{four.short_bytes:,} bytes short: on each of 4 x NVIDIA L4, weights 32.91 GiB")
    eight = result.of("g6.48xlarge")  # 17.65 GB on each of 8, beside the engine's 3.2 GiB at tensor parallel 8
    assert (eight.fits, eight.tensor_parallel, eight.data_parallel) == (True, 8, 1)


def test_a_model_nxd_inference_serves_fits_the_neuron_sizes_by_neuroncores_and_host_memory():
    """Llama 3.1 8B, 4 sequences of 8,192 tokens (what AWS's vLLM Neuron image is compiled for)."""
    result = fit(CATALOG.models["meta-llama/Llama-3.1-8B-Instruct"].architecture, candidates(CATALOG, "Llama 3.1 8B"),
                 Ask(context=8192, sequences=4))
    eight = result.of("inf2.8xlarge")  # 16.06 GB: TP 2, 8,030,000,000 on each core
    cache = 2 * (T4G_USABLE - 8_030_000_000)
    per_sequence = 32 * 2 * 8 * 128 * 2 * 8192
    assert (eight.fits, eight.tensor_parallel, eight.why) == (True, 2, None)
    assert (eight.max_sequences, eight.kv_tokens) == (cache // per_sequence, cache * 8192 // per_sequence)
    small = result.of("inf2.xlarge")  # the same 2 cores, but 16 GiB of host memory less 4 GiB cannot hold 16.06 GB
    assert not small.fits and small.why.startswith("the host's 16 GiB, less 4 GiB for the system, cannot hold")
    assert small.short_bytes == 16_060_000_000 - (16 - 4) * 2**30
    assert result.of("trn1.2xlarge").fits  # 32 GiB of host memory
    assert result.of("ml.inf2.8xlarge").why == CATALOG.get("inf2").other_models  # the project's endpoint is on GPUs


def test_the_neuron_rows_say_why_not_for_a_model_neither_neuron_image_serves():
    gpt_oss = fit(CATALOG.models["openai/gpt-oss-20b"].architecture, candidates(CATALOG, "gpt-oss-20b"),
                  Ask(context=2048))
    gemma = fit(CATALOG.models["google/gemma-4-E2B-it"].architecture, candidates(CATALOG, "Gemma 4 E2B"),
                Ask(context=2048))
    for size in ("inf2.xlarge", "inf2.48xlarge", "trn1.2xlarge", "trn1.32xlarge"):
        why = gpt_oss.of(size).why
        assert not gpt_oss.of(size).fits and "\n" not in why
        assert why.startswith(CATALOG.get(size[:4]).other_models + "; AWS's vLLM Neuron image serves only what NxD "
                              "Inference serves")
    assert gemma.of("inf2.xlarge").fits and gemma.of("inf2.xlarge").why is None  # the hand-ported image's own


def test_json_has_exactly_the_documented_fields_for_every_candidate(capsys):
    code, out, _ = run(capsys, "--model", "Qwen/Qwen3-8B", "--context", "8192", "--concurrency", "2", "--json")
    data = json.loads(out)
    assert code == 0 and list(data) == ["weights_bytes", "kv_bytes_per_token", "kv_bytes_per_sequence", "instances"]
    assert [list(i) for i in data["instances"]] == [[
        "instance_type", "accelerators", "accelerator_memory_bytes", "tensor_parallel", "data_parallel", "fits",
        "kv_tokens", "kv_tokens_source", "measured", "max_sequences", "weights_bytes_per_accelerator",
        "overhead_bytes_per_accelerator", "kv_bytes_per_token", "why", "usd_per_hour"]] * len(data["instances"])
    types = [i["instance_type"] for i in data["instances"]]
    assert {"g6.xlarge", "ml.g6.xlarge", "g6e.48xlarge", "g5g.metal", "inf2.48xlarge", "ml.trn1.2xlarge"} <= set(types)
    assert not any(t.startswith("ml.g5g") for t in types)
    gpus = [i for i in data["instances"] if i["instance_type"].startswith(("g", "ml.g"))]
    assert all(i["tensor_parallel"] * i["data_parallel"] == i["accelerators"] for i in gpus)


def test_each_size_has_the_dated_files_price_or_is_unpriced_never_free(capsys):
    dated = PriceBook().instance_hourly_price("p5.48xlarge", PRICE_REGION).usd_per_hour
    with pytest.raises(PriceError):  # the file's p5e.48xlarge rows carry no on-demand price
        PriceBook().instance_hourly_price("p5e.48xlarge", PRICE_REGION)
    _, out, _ = run(capsys, "--model", "Qwen/Qwen3-8B", "--context", "8192", "--json")
    prices = {i["instance_type"]: i["usd_per_hour"] for i in json.loads(out)["instances"]}
    assert prices["p5.48xlarge"] == dated and prices["p5e.48xlarge"] is None
    _, out, _ = run(capsys, "--model", "Qwen/Qwen3-8B", "--context", "8192")
    rows = {line.split()[0]: line.split() for line in out.splitlines()[3:]}
    assert f"{dated:.4f}" in rows["p5.48xlarge"] and "unpriced" in rows["p5e.48xlarge"]
    assert not any("0.0000" in row for row in rows.values())


def test_dtype_float32_doubles_an_unquantized_model_and_its_kv(capsys):
    _, out, _ = run(capsys, "--model", "Qwen/Qwen3-8B", "--context", "1024", "--dtype", "float32", "--json")
    data = json.loads(out)
    assert (data["weights_bytes"], data["kv_bytes_per_token"]) == (32_800_000_000, 2 * 147_456)


def test_a_config_file_is_read_and_bad_input_is_one_line(capsys, tmp_path: Path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"text_config": FULL_ATTENTION}))  # a multimodal config's language model
    code, out, _ = run(capsys, "--config", str(path), "--context", "4096")
    assert code == 0 and "g6.xlarge" in out and "weights 12.55 GiB" in out
    bad = {("--config", str(path), "--context", "5000"): "--context 5000: the model takes at most 4,096 tokens",
           ("--model", "acme/unknown"): "give its config.json with --config, --model-config FILE",
           ("--model", "Qwen/Qwen3-8B", "--instance-type", "p9.huge"): "--instance-type p9.huge: not a size of",
           ("--model", "Qwen/Qwen3-8B", "--tensor-parallel", "3"): "--tensor-parallel 3: does not divide the model's"}
    for argv, line in bad.items():
        code, _, err = run(capsys, *argv)
        assert code == 2 and len(err.strip().splitlines()) == 1 and line in err
    path.write_text(json.dumps({**FULL_ATTENTION, "layer_types": ["linear_attention"] * 32}))
    with pytest.raises(ConfigError, match="sizing knows full_attention and sliding_attention layers only"):
        read_config(path)
    with pytest.raises(ConfigError, match="num_hidden_layers is None"):
        architecture({k: v for k, v in FULL_ATTENTION.items() if k != "num_hidden_layers"}, "c.json")


def test_a_workload_gives_the_context_its_longest_request_needs(capsys):
    """30,000 + 1,000 tokens a request, rounded up to 31,232 (the benchmark's count): over what one L4 leaves
    beside Qwen3 8B's weights, so two of g6.12xlarge's four, twice."""
    code, out, err = run(capsys, "--model", "Qwen/Qwen3-8B", "--workload",
                         "prompt_input_tokens_mean=30000,output_tokens_mean=1000", "--json")
    assert code == 0 and err.splitlines()[0] == ("--workload prompt_input_tokens_mean=30000,output_tokens_mean=1000: "
                                                 "its longest request, prompt and output, rounded up: 31,232 tokens")
    instances = {i["instance_type"]: i for i in json.loads(out)["instances"]}
    assert json.loads(out)["kv_bytes_per_sequence"] == 31232 * 147456
    assert not instances["g6.xlarge"]["fits"]
    assert (instances["g6.12xlarge"]["tensor_parallel"], instances["g6.12xlarge"]["data_parallel"]) == (2, 2)
    code, _, err = run(capsys, "--model", "Qwen/Qwen3-8B", "--workload", "preset=reference")
    assert code == 2 and "the reference's one prompt has no context of its own" in err and len(err.splitlines()) == 1
