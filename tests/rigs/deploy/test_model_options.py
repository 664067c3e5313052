"""-c model.<rig>, model, model_config.<rig>, instance_type.<rig>, hf_token_parameter, max_model_len.<rig>,
max_model_len: what each rig may be asked, and the one line that refuses what it cannot serve (the synth of the sized
rigs: tests/stacks/test_rig_models.py)."""

from __future__ import annotations

import json

import pytest

from rigs.catalog.model import load_catalog
from rigs.context_keys import MODEL_KEYS
from rigs.deploy.model_options import ModelOptionsError, ModelRequest, as_deployed, model_request, serve
from rigs.sizing.fit import Ask, candidates, fit_one

CATALOG = load_catalog()


def refusal(rig: str, **request: object) -> str:
    with pytest.raises(ModelOptionsError) as caught:
        serve(CATALOG.get(rig), CATALOG, ModelRequest(**request))
    assert "\n" not in str(caught.value)
    return str(caught.value)


def test_the_keys_are_read_for_one_rig_or_all_and_declared():
    context = {"model": "Qwen/Qwen3-8B", "instance_type.g6": "g6e.xlarge", "hf_token_parameter": "/t"}.get
    assert model_request(context, "g6") == ModelRequest(model="Qwen/Qwen3-8B", for_all=True,
                                                        instance_type="g6e.xlarge", hf_token_parameter="/t")
    own = {"model": "Qwen/Qwen3-8B", "model.g5g": "openai/gpt-oss-20b"}.get
    assert model_request(own, "g5g") == ModelRequest(model="openai/gpt-oss-20b")
    assert {key.pattern for key in MODEL_KEYS} == {"model.{rig}", "model", "model_config.{rig}",
                                                   "instance_type.{rig}", "hf_token_parameter",
                                                   "max_model_len.{rig}", "max_model_len"}
    lengths = {"max_model_len": "4096", "max_model_len.g6": "8192"}.get
    assert model_request(lengths, "g6").max_model_len == "8192"  # the rig's own beats the one for every rig
    assert model_request(lengths, "g5g") == ModelRequest(max_model_len="4096", max_model_len_for_all=True)


def test_nothing_asked_leaves_the_rig_as_the_catalog_has_it():
    rig = CATALOG.get("g6")
    assert serve(rig, CATALOG, ModelRequest()).rig is rig


def test_the_neuron_rigs_say_why_not_for_a_class_nxd_does_not_serve_and_keep_their_model_under_a_model_for_all():
    why = CATALOG.neuron_why_not(CATALOG.get("inf2"), "gpt-oss-20b", CATALOG.models["openai/gpt-oss-20b"].architecture)
    assert why.endswith("and gpt-oss-20b is GptOssForCausalLM") and "\n" not in why
    assert refusal("inf2", model="openai/gpt-oss-20b") == \
        f"-c model.inf2=openai/gpt-oss-20b: inf2 cannot serve it: {why}"
    served = serve(CATALOG.get("trn1"), CATALOG, ModelRequest(model="openai/gpt-oss-20b", for_all=True))
    assert served.rig.model_id == "gemma-4-E2B-it" and served.said == f"InferenceTrn1: keeps Gemma 4 E2B: {why}"
    assert refusal("inf2", instance_type="inf2.48xlarge").startswith(
        "-c instance_type.inf2: inf2 cannot be given another model or size: its hand-ported image")
    assert serve(CATALOG.get("inf2"), CATALOG, ModelRequest(model="gemma-4-E2B-it")).rig is CATALOG.get("inf2")
    same = serve(CATALOG.get("inf2"), CATALOG, ModelRequest(model="google/gemma-4-E2B-it"))  # the model it serves
    assert same.rig is CATALOG.get("inf2") and same.said == ("InferenceInf2: keeps its hand-ported Gemma 4 E2B "
                                                             "(google/gemma-4-E2B-it is the same model in another "
                                                             "checkpoint)")


def test_a_model_nxd_serves_goes_to_the_vllm_neuron_image_on_the_smallest_size_that_holds_it():
    """Qwen3 8B (16.4 GB, not gated) for every rig: trn1.2xlarge holds it (32 GiB of host memory); inf2.xlarge's
    16 GiB cannot hold the checkpoint while NxD Inference shards it, so inf2 moves to inf2.8xlarge."""
    section = CATALOG.neuron_vllm
    for rig, size in (("trn1", "trn1.2xlarge"), ("inf2", "inf2.8xlarge")):
        served = serve(CATALOG.get(rig), CATALOG, ModelRequest(model="Qwen/Qwen3-8B", for_all=True))
        moved = served.rig
        assert (moved.runtime, moved.instance_type, moved.image.pull_reference()) == (
            "neuron-vllm", size, section.image.pull_reference())
        assert moved.serve_flags == ("--max-model-len", "8192", "--max-num-seqs", "4", "--tensor-parallel-size", "2",
                                     "--no-enable-prefix-caching", "--num-gpu-blocks-override", "4",
                                     "--enable-auto-tool-choice", "--tool-call-parser", "hermes",
                                     "--reasoning-parser", "qwen3")
        assert moved.neuron_devices == ("/dev/neuron0",) and moved.port == 8000 and moved.tool_calls
        # the rig's boot (its 40 minutes less Gemma 4 E2B's 3.2 GiB: download 2, load 1), then Qwen3 8B's 15.3 GiB:
        # download 6 (at 50 MiB/s), compile 30, load 3 (at 125 MiB/s)
        assert (moved.compile_allowance_minutes, moved.ready_timeout_minutes) == (30, 37 + 6 + 30 + 3)
        assert moved.weights.engine == section.engine and moved.weights.model == "Qwen3 8B"
        assert served.said.startswith(f"{moved.stack_name}: Qwen/Qwen3-8B on {size} with AWS's vLLM Neuron image, "
                                      "tensor parallel 2 over NeuronCores, compiled at boot for 4 x 8,192 tokens "
                                      "(allowed 30 min, ready timeout 76 min)")
    big = serve(CATALOG.get("inf2"), CATALOG, ModelRequest(model="Qwen/Qwen3-32B")).rig  # 65.6 GB: TP 8 of 12 cores
    assert (big.instance_type, big.serve_flags[5], len(big.neuron_devices), big.ready_timeout_minutes) == (
        "inf2.24xlarge", "8", 6, 37 + 21 + 60 + 9)  # 61.1 GiB: download 21, compile 60, load 9
    assert "gated on the Hugging Face Hub" in refusal("inf2", model="meta-llama/Llama-3.1-8B-Instruct")
    # 141.2 GB over 16 of trn1.32xlarge's 32 NeuronCores: more than its 8 KV heads, each replicated on 2 cores
    seventy = serve(CATALOG.get("trn1"), CATALOG, ModelRequest(model="meta-llama/Llama-3.1-70B-Instruct",
                                                              hf_token_parameter="/t"))
    assert "on trn1.32xlarge with AWS's vLLM Neuron image, tensor parallel 16 over NeuronCores" in seventy.said


def test_a_deployed_neuron_stack_on_the_vllm_image_is_read_back_as_deployed():
    served = serve(CATALOG.get("inf2"), CATALOG, ModelRequest(model="Qwen/Qwen3-8B")).rig
    read = as_deployed(CATALOG.get("inf2"), CATALOG, "neuron-vllm", "Qwen/Qwen3-8B", "inf2.8xlarge")
    assert read == served and read.name == "inf2"
    assert as_deployed(CATALOG.get("inf2"), CATALOG, "neuronx", "gemma-4-E2B-it", "inf2.xlarge") is CATALOG.get("inf2")
    unlisted = as_deployed(CATALOG.get("inf2"), CATALOG, "neuron-vllm", "acme/llama-fine-tune", "inf2.8xlarge")
    assert (unlisted.runtime, unlisted.model_id, unlisted.max_prompt_tokens, unlisted.weights.engine) == (
        "neuron-vllm", "acme/llama-fine-tune", None, CATALOG.neuron_vllm.engine)


def test_an_unknown_model_needs_its_config_and_a_gated_one_its_token():
    assert refusal("g6", model="acme/model").endswith("give its config.json with -c model_config.g6=PATH (read "
                                                      "here, never fetched)")
    assert "gated on the Hugging Face Hub: give -c hf_token_parameter=NAME" in refusal(
        "g6", model="mistralai/Mistral-7B-Instruct-v0.3")
    assert "serve it on an EC2 rig" in refusal("sagemaker", model="meta-llama/Llama-3.1-8B-Instruct",
                                               hf_token_parameter="/aws-inference/hf-token")
    assert "give an SSM parameter name" in refusal("g6", model="Qwen/Qwen3-8B", hf_token_parameter="bad name!")
    assert refusal("g6", model="acme/model", config="/no/such/config.json").startswith(
        "-c model_config.g6: /no/such/config.json: cannot read it")


def test_a_model_config_is_sized_and_served_without_a_tool_parser(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
                                "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 32000,
                                "max_position_embeddings": 4096, "torch_dtype": "bfloat16"}))
    served = serve(CATALOG.get("g6"), CATALOG, ModelRequest(model="acme/small", config=str(path))).rig
    assert served.model_id == "acme/small" and not served.tool_calls and "--tool-call-parser" not in served.serve_flags
    flags = list(served.serve_flags)
    assert flags[flags.index("--max-model-len") + 1] == "4096"  # the model's longest, under the rig's 8,192
    assert served.weights.model == "acme/small" and served.weights.source == "https://huggingface.co/acme/small"


def test_an_instance_type_override_is_taken_when_the_model_fits_it_and_the_rig_can_run_there():
    served = serve(CATALOG.get("g6"), CATALOG, ModelRequest(model="Qwen/Qwen3-32B", instance_type="g6e.12xlarge"))
    flags = list(served.rig.serve_flags)  # two of its four L40S hold 32.8 GB of weights each: the smallest degree
    assert served.rig.instance_type == "g6e.12xlarge" and flags[flags.index("--tensor-parallel-size") + 1] == "2"
    assert served.said.startswith("InferenceG6: Qwen/Qwen3-32B on g6e.12xlarge (tensor parallel 2 x 2 replicas) at "
                                  "8,192 tokens")  # every L40S serves: two replicas of two
    assert flags[flags.index("--data-parallel-size") + 1] == "2"
    assert served.said.endswith(": -c instance_type.g6")
    assert "not a size g6 runs on" in refusal("g6", instance_type="g5g.xlarge")  # arm64, not the g6 image's x86_64
    # the sizes it names are the g6 rig's own families' only: no Neuron, no other GPU family its image is not run on
    listed = refusal("g6", instance_type="inf2.xlarge").split("(", 1)[1].rstrip(")").split(", ")
    assert {size.split(".")[0] for size in listed} == {"g6", "g6e", "g5"} and listed[0] == "g6.xlarge"
    assert "Qwen/Qwen3-32B does not fit it at 8,192 tokens" in refusal("g6", model="Qwen/Qwen3-32B",
                                                                       instance_type="g6.xlarge")
    endpoint = serve(CATALOG.get("sagemaker"), CATALOG, ModelRequest(instance_type="ml.g6e.xlarge")).rig
    assert endpoint.instance_type == "ml.g6e.xlarge" and endpoint.container_env["SM_VLLM_TOOL_CALL_PARSER"] == "gemma4"


def test_a_bigger_model_gets_room_on_the_root_volume_for_its_weights():
    served = serve(CATALOG.get("g6"), CATALOG, ModelRequest(model="Qwen/Qwen3-32B")).rig
    assert served.instance_type == "g6.12xlarge" and served.root_free_gib == 62 + 30  # 61.1 GiB of weights, + 30


def test_a_neuron_rig_gets_room_for_the_checkpoint_it_downloads_once_and_its_swapfile():
    """The boot downloads the bf16 checkpoint and serves that path (the plugin's fp32 copy of a Hub id never made):
    Qwen3 32B's 61.1 GiB once, the 16 GiB swapfile, 30 GiB for the image and the compiled graphs."""
    served = serve(CATALOG.get("trn1"), CATALOG, ModelRequest(model="Qwen/Qwen3-32B")).rig
    assert served.instance_type == "trn1.32xlarge" and served.root_free_gib == 62 + 16 + 30


def max_model_len(served) -> int:
    flags = list(served.rig.serve_flags)
    return int(flags[flags.index("--max-model-len") + 1])


def test_a_shorter_context_fits_a_smaller_size_and_a_longer_one_serves_on_every_gpu_of_a_bigger():
    """One L4 holds as many tokens as rigs fit says of g6.xlarge (vLLM 0.30's budget, the g6 rig's flags); a context
    one token longer needs two L4s, so g6.12xlarge serves it as two replicas of two (all four GPUs)."""
    arch = CATALOG.models["Qwen/Qwen3-8B"].architecture
    one = next(c for c in candidates(CATALOG, "Qwen3 8B") if c.instance_type == "g6.xlarge")
    room = fit_one(arch, one, Ask(context=8192)).kv_tokens  # a full-attention model: the same at any context
    fits = serve(CATALOG.get("g6"), CATALOG, ModelRequest(model="Qwen/Qwen3-8B", max_model_len=str(room)))
    assert (fits.rig.instance_type, max_model_len(fits)) == ("g6.xlarge", room)
    assert fits.said.startswith(f"InferenceG6: Qwen/Qwen3-8B on g6.xlarge at {room:,} tokens, {room:,} tokens of KV "
                                "cache a replica (1 sequences in all): it fits the rig's own size")
    bigger = serve(CATALOG.get("g6"), CATALOG, ModelRequest(model="Qwen/Qwen3-8B", max_model_len=str(room + 16)))
    served = list(bigger.rig.serve_flags)
    assert bigger.rig.instance_type == "g6.12xlarge" and "(tensor parallel 2 x 2 replicas)" in bigger.said
    assert [served[served.index(f) + 1] for f in ("--tensor-parallel-size", "--data-parallel-size",
                                                  "--max-model-len")] == ["2", "2", str(room + 16)]


def test_a_context_above_the_models_is_the_models_and_said_so():
    served = serve(CATALOG.get("sagemaker"), CATALOG, ModelRequest(model="Qwen/Qwen3-8B", max_model_len="65536",
                                                                  max_model_len_for_all=True))
    assert served.rig.container_env["SM_VLLM_MAX_MODEL_LEN"] == "40960"  # Qwen3 8B's max_position_embeddings
    assert "at 40,960 tokens (the model's longest: -c max_model_len=65536 asks more)" in served.said


def test_a_context_alone_serves_the_rigs_own_model_at_it_and_the_neuron_rigs_keep_theirs():
    rig = CATALOG.get("g6")
    served = serve(rig, CATALOG, ModelRequest(max_model_len="4096"))
    assert (served.rig.model_id, served.rig.instance_type, max_model_len(served)) == (rig.model_id, "g6.xlarge", 4096)
    assert served.rig.weights == rig.weights and "--tool-call-parser" in served.rig.serve_flags
    kept = serve(CATALOG.get("inf2"), CATALOG, ModelRequest(max_model_len="4096", max_model_len_for_all=True))
    assert kept.rig is CATALOG.get("inf2") and kept.said.startswith("InferenceInf2: keeps Gemma 4 E2B: ")
    assert refusal("trn1", max_model_len="4096").startswith("-c max_model_len.trn1: trn1 cannot be given another "
                                                            "context: ")


@pytest.mark.parametrize("value", ["abc", "0", "-4096", "8k", "4096.5"])
def test_a_context_that_is_not_a_positive_whole_number_is_refused_in_one_line(value: str):
    assert refusal("g6", model="Qwen/Qwen3-8B", max_model_len=value) == (
        f"-c max_model_len.g6={value}: give the tokens one sequence may hold (prompt and output), a positive whole "
        "number, e.g. 8192")
    assert refusal("inf2", max_model_len=value, max_model_len_for_all=True).startswith(f"-c max_model_len={value}: ")


def test_a_key_given_empty_or_a_config_with_no_model_is_refused_in_one_line():
    with pytest.raises(ModelOptionsError, match=r"^-c model\.g6= is empty: give a Hugging Face model id, or leave "
                                                r"the key out$"):
        model_request({"model.g6": ""}.get, "g6")
    with pytest.raises(ModelOptionsError, match=r"^-c max_model_len= is empty: give a number of tokens"):
        model_request({"max_model_len": " "}.get, "g5g")
    with pytest.raises(ModelOptionsError, match=r"^-c model_config\.g6=config\.json: names no model: give the id "
                                                r"it is the config of with -c model\.g6=ID$"):
        model_request({"model_config.g6": "config.json"}.get, "g6")
    # a model for every rig names it too
    assert model_request({"model_config.g6": "c.json", "model": "acme/x"}.get, "g6").config == "c.json"


def test_a_model_whose_weights_the_rigs_gpu_cannot_run_is_refused_before_it_is_sized():
    line = refusal("g5g", model="openai/gpt-oss-20b")
    assert line.startswith("-c model.g5g=openai/gpt-oss-20b: g5g cannot serve it: MXFP4 weights need compute "
                           "capability 8.0 or more and the NVIDIA T4G is 7.5")
    assert "The quantization method mxfp4 is not supported for the current GPU SM75" in line
    on_l4 = serve(CATALOG.get("g6"), CATALOG, ModelRequest(model="openai/gpt-oss-20b")).rig  # the L4 is 8.9
    assert (on_l4.model_id, on_l4.instance_type) == ("openai/gpt-oss-20b", "g6.xlarge")


def test_bf16_weights_on_the_t4g_are_served_as_float16_and_said_so():
    served = serve(CATALOG.get("g5g"), CATALOG, ModelRequest(model="Qwen/Qwen3-8B", max_model_len="4096"))
    assert served.said.endswith("; bfloat16 weights served as float16 (--dtype float16): the NVIDIA T4G, compute "
                                "capability 7.5, has no bfloat16")
    flags = list(served.rig.serve_flags)
    assert flags[flags.index("--dtype") + 1] == "float16"
    on_l4 = serve(CATALOG.get("g6"), CATALOG, ModelRequest(model="Qwen/Qwen3-8B"))
    assert "float16" not in on_l4.said


def test_a_thinking_model_is_served_with_its_reasoning_parser_so_its_thinking_is_not_the_answer():
    flags = list(serve(CATALOG.get("g6"), CATALOG, ModelRequest(model="Qwen/Qwen3-8B")).rig.serve_flags)
    assert flags[flags.index("--reasoning-parser") + 1] == "qwen3"
    gpt = serve(CATALOG.get("g6"), CATALOG, ModelRequest(model="openai/gpt-oss-20b")).rig.serve_flags
    assert gpt[gpt.index("--reasoning-parser") + 1] == "openai_gptoss"
    endpoint = serve(CATALOG.get("sagemaker"), CATALOG, ModelRequest(model="Qwen/Qwen3-8B")).rig
    assert endpoint.container_env["SM_VLLM_REASONING_PARSER"] == "qwen3"
    llama = serve(CATALOG.get("g6"), CATALOG, ModelRequest(model="meta-llama/Llama-3.1-8B-Instruct",
                                                           hf_token_parameter="/t")).rig
    assert "--reasoning-parser" not in llama.serve_flags  # it answers without thinking first
