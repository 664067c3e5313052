"""-c model.<rig>=ID: any open model on the vLLM rigs, sized to fit, in one synth of the app.

g6 serves Qwen3 8B at the 32,768 tokens ``max_model_len.g6`` asks, with Qwen3's tool parser: more than one L4 holds
beside its weights, so on g6.12xlarge as two replicas of two L4s (vLLM's data parallelism: every GPU serves); g5g
is asked for Llama 3.1 8B, gated and too big for one T4G in float16, so it moves to g5g.16xlarge with tensor parallel 2
and reads the token's SSM parameter at boot; the SageMaker endpoint serves Qwen3 32B on ml.g6.48xlarge across eight
L4s, at its longest context (40,960 tokens) where ``max_model_len.sagemaker`` asks 65,536; inf2 serves Llama 3.1 8B
with AWS's vLLM Neuron image, moved to inf2.8xlarge (inf2.xlarge's 16 GiB of host memory cannot hold the checkpoint
NxD Inference shards) with the compile's allowance in its ready timeout. A model that fits no size is refused in one
line before any synth.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app import build_app
from rigs.deploy.model_options import ModelOptionsError
from tests.contract.templates import boot_environment, one, resources_of, rig_environment, stack_outputs, user_data_script

TOKEN_PARAMETER = "/aws-inference/hf-token"
CANARY = "hf_canaryTOKEN0123456789abcdef"
CONTEXT = {"model.g6": "Qwen/Qwen3-8B", "model.g5g": "meta-llama/Llama-3.1-8B-Instruct",
           "model.sagemaker": "Qwen/Qwen3-32B", "model.inf2": "meta-llama/Llama-3.1-8B-Instruct",
           "hf_token_parameter": TOKEN_PARAMETER, "max_model_len.g6": "32768", "max_model_len.sagemaker": "65536"}


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory) -> dict:
    """The app with CONTEXT, synthesized once; a token in the environment must reach no file of it."""
    out = tmp_path_factory.mktemp("models")
    said: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
            patch.setenv(name, CANARY)
        build_app(context=CONTEXT, outdir=str(out), say=said.append).synth()
    manifest = json.loads((out / "manifest.json").read_text())
    names = [n for n, a in manifest["artifacts"].items() if a["type"] == "aws:cloudformation:stack"]
    return {"out": out, "said": said, "templates": {n: json.loads((out / f"{n}.template.json").read_text())
                                                    for n in names}}


def flags(synthesized: dict, stack: str) -> list[str]:
    return rig_environment(synthesized["templates"][stack], synthesized["out"])["RIG_SERVE_FLAGS"].split("\n")


def instance_type(template: dict) -> str:
    return one(template, "AWS::EC2::LaunchTemplate")["Properties"]["LaunchTemplateData"]["InstanceType"]


def test_a_model_that_needs_two_gpus_serves_on_every_gpu_of_a_four_gpu_size_with_its_tool_parser(synthesized):
    template = synthesized["templates"]["InferenceG6"]
    env = rig_environment(template, synthesized["out"])
    assert env["RIG_MODEL_ID"] == "Qwen/Qwen3-8B" and instance_type(template) == "g6.12xlarge"
    served = flags(synthesized, "InferenceG6")
    assert served[served.index("--tool-call-parser") + 1] == "hermes" and "--enable-auto-tool-choice" in served
    assert [served[served.index(f) + 1] for f in ("--max-model-len", "--tensor-parallel-size",
                                                  "--data-parallel-size", "--reasoning-parser")] == [
        "32768", "2", "2", "qwen3"]  # Qwen3's thinking comes back as reasoning, on every replica
    assert [stack_outputs(template)[k] for k in ("ModelId", "InstanceType", "ContextTokens")] == [
        "Qwen/Qwen3-8B", "g6.12xlarge", "32768"]
    assert any(line.startswith("InferenceG6: Qwen/Qwen3-8B on g6.12xlarge (tensor parallel 2 x 2 replicas) at "
                               "32,768 tokens") for line in synthesized["said"])


def test_a_model_too_big_for_the_size_goes_to_a_bigger_one_with_tensor_parallel(synthesized):
    template = synthesized["templates"]["InferenceG5g"]
    assert instance_type(template) == "g5g.16xlarge" and stack_outputs(template)["InstanceType"] == "g5g.16xlarge"
    served = flags(synthesized, "InferenceG5g")
    assert served[served.index("--tensor-parallel-size") + 1] == "2"
    assert served[served.index("--tool-call-parser") + 1] == "llama3_json"
    assert "--dtype" in served and served[served.index("--max-model-len") + 1] == "16384"  # the rig's own flags stay
    assert any("g5g.16xlarge (tensor parallel 2)" in line and "g5g.2xlarge is too small" in line
               for line in synthesized["said"])


def test_a_gated_model_reads_its_token_parameter_at_boot_and_the_token_is_in_no_file(synthesized):
    template = synthesized["templates"]["InferenceG5g"]
    assert boot_environment(user_data_script(template))["RIG_HF_TOKEN_PARAMETER"] == TOKEN_PARAMETER
    [policy] = [p for p in resources_of(template, "AWS::IAM::Policy").values()
                if "ReadHuggingFaceTokenParameter" in json.dumps(p)]
    [statement] = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Action"] == "ssm:GetParameter"
    assert json.dumps(statement["Resource"]).endswith(':parameter/aws-inference/hf-token"]]}')
    for path in Path(synthesized["out"]).rglob("*"):
        if path.is_file():
            assert CANARY not in path.read_text(errors="replace"), path


def test_a_neuron_rig_serves_a_model_nxd_serves_with_the_vllm_neuron_image_compiled_at_boot(synthesized):
    template = synthesized["templates"]["InferenceInf2"]
    env = rig_environment(template, synthesized["out"])
    assert env["RIG_IMAGE"] == ("public.ecr.aws/neuron/pytorch-inference-vllm-neuronx:0.16.0-neuronx-py312-sdk2.31.1-"
                                "ubuntu24.04")
    assert (env["RIG_RUNTIME"], env["RIG_MODEL_ID"], env["RIG_CONTAINER_PORT"], env["RIG_PORT"]) == (
        "neuron-vllm", "meta-llama/Llama-3.1-8B-Instruct", "8000", "8000")
    assert (env["RIG_NEURON_DEVICES"], env["RIG_HF_TOKEN_PARAMETER"]) == ("/dev/neuron0", TOKEN_PARAMETER)
    served = flags(synthesized, "InferenceInf2")
    assert [served[served.index(f) + 1] for f in ("--max-model-len", "--max-num-seqs", "--tensor-parallel-size",
                                                  "--tool-call-parser")] == ["8192", "4", "2", "llama3_json"]
    assert instance_type(template) == "inf2.8xlarge" and stack_outputs(template)["Runtime"] == "neuron-vllm"
    assert stack_outputs(template)["RemotePort"] == "8000"
    # the rig's boot (37 minutes), Llama 3.1 8B's 15 GiB (download 6, load 3) and 30 for compiling an 8B: the boot
    # script's deadline, and the creation policy's 36 minutes longer than trn1's (its hand-ported image, 40)
    assert env["RIG_READY_TIMEOUT_SECONDS"] == str(76 * 60)
    timeouts = [int(one(synthesized["templates"][name], "AWS::AutoScaling::AutoScalingGroup")["CreationPolicy"][
        "ResourceSignal"]["Timeout"].strip("PTS")) for name in ("InferenceInf2", "InferenceTrn1")]
    assert timeouts[0] - timeouts[1] == 36 * 60
    assert any(line.startswith("InferenceInf2: meta-llama/Llama-3.1-8B-Instruct on inf2.8xlarge with AWS's vLLM Neuron "
                               "image, tensor parallel 2 over NeuronCores, compiled at boot for 4 x 8,192 tokens "
                               "(allowed 30 min, ready timeout 76 min): inf2.xlarge is too small for it")
               for line in synthesized["said"])
    assert rig_environment(synthesized["templates"]["InferenceTrn1"], synthesized["out"])["RIG_RUNTIME"] == "neuronx"


def test_the_endpoint_sets_its_containers_variables_from_the_same_facts(synthesized):
    template = synthesized["templates"]["InferenceSageMaker"]
    environment = one(template, "AWS::SageMaker::Model")["Properties"]["PrimaryContainer"]["Environment"]
    assert environment["SM_VLLM_MODEL"] == "Qwen/Qwen3-32B"
    assert (environment["SM_VLLM_TENSOR_PARALLEL_SIZE"], environment["SM_VLLM_MAX_MODEL_LEN"]) == ("8", "40960")
    assert any(line.startswith("InferenceSageMaker: Qwen/Qwen3-32B on ml.g6.48xlarge (tensor parallel 8) at 40,960 "
                               "tokens (the model's longest: -c max_model_len.sagemaker=65536 asks more)")
               for line in synthesized["said"])
    assert (environment["SM_VLLM_TOOL_CALL_PARSER"], environment["SM_VLLM_ENABLE_AUTO_TOOL_CHOICE"]) == (
        "hermes", "true")
    config = one(template, "AWS::SageMaker::EndpointConfig")["Properties"]["ProductionVariants"][0]
    assert config["InstanceType"] == "ml.g6.48xlarge" and stack_outputs(template)["ContextTokens"] == "40960"
    assert "RIG_HF_TOKEN_PARAMETER" not in json.dumps(template)  # SageMaker takes no token


def test_a_model_that_fits_no_size_is_refused_in_one_line(tmp_path):
    config = tmp_path / "config.json"  # Llama 3.1 405B's sizes: 810 GB of bfloat16 weights
    config.write_text(json.dumps({
        "hidden_size": 16384, "intermediate_size": 53248, "num_hidden_layers": 126, "num_attention_heads": 128,
        "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072, "torch_dtype": "bfloat16"}))
    with pytest.raises(ModelOptionsError) as caught:
        build_app(context={"model.g6": "acme/huge", "model_config.g6": str(config)})
    line = str(caught.value)
    assert "\n" not in line and line.startswith("-c model.g6=acme/huge: fits no g6, g6e or g5 size at 8,192 tokens: "
                                                "the largest, g6.48xlarge (8 x NVIDIA L4), is ")
    assert line.split("is ", 1)[1].split(" bytes short")[0].replace(",", "").isdigit()


def test_a_context_that_is_not_a_positive_whole_number_stops_the_synth_in_one_line():
    with pytest.raises(ModelOptionsError) as caught:
        build_app(context={"max_model_len": "8k"})
    assert str(caught.value) == ("-c max_model_len=8k: give the tokens one sequence may hold (prompt and output), a "
                                 "positive whole number, e.g. 8192")


@pytest.mark.parametrize(("context", "start"), [
    ({"model.g5g": "openai/gpt-oss-20b"}, "-c model.g5g=openai/gpt-oss-20b: g5g cannot serve it: MXFP4 weights need "
                                          "compute capability 8.0 or more and the NVIDIA T4G is 7.5"),
    ({"model.g6": ""}, "-c model.g6= is empty: give a Hugging Face model id, or leave the key out"),
    ({"model_config.g6": "config.json"}, "-c model_config.g6=config.json: names no model: give the id it is the "
                                         "config of with -c model.g6=ID"),
], ids=["mxfp4-on-the-t4g", "an-empty-model", "a-config-with-no-model"])
def test_what_the_rig_cannot_serve_as_asked_stops_the_synth_in_one_line(context: dict, start: str):
    with pytest.raises(ModelOptionsError) as caught:
        build_app(context=context)
    assert str(caught.value).startswith(start) and "\n" not in str(caught.value)
