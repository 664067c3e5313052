"""The rig catalog: the shipped file is valid; every kind of bad input is reported, all at once."""

from __future__ import annotations

import copy

import pytest
import yaml

from rigs.catalog.model import (CATALOG_PATH, BedrockBackend, CatalogError, Ec2Rig, SageMakerRig, UnknownRigError,
                          load_catalog, parse_catalog)
from rigs.contract import REGIONS

RAW = yaml.safe_load(CATALOG_PATH.read_text())


def problems_for(mutate) -> list[str]:
    data = copy.deepcopy(RAW)
    mutate(data)
    with pytest.raises(CatalogError) as caught:
        parse_catalog(yaml.safe_dump(data), source="test")
    return caught.value.problems


def test_shipped_catalog_describes_every_backend_of_the_reference():
    catalog = load_catalog()
    assert list(catalog.rigs) == ["g6", "g5g", "inf2", "trn1", "sagemaker", "bedrock", "bedrock-mantle"]
    g6, g5g, inf2, trn1 = (catalog.get(n) for n in ("g6", "g5g", "inf2", "trn1"))
    assert isinstance(g6, Ec2Rig) and (g6.instance_type, g6.architecture, g6.runtime, g6.port) == (
        "g6.xlarge", "x86_64", "vllm", 8000)
    assert g6.image.reference() == ("vllm/vllm-openai:v0.30.0@sha256:"
                                    "8a69ffad015f138d7170c4ddc429e230a3bc1c1719f67e14324749df200a4b90")
    assert "--enable-auto-tool-choice" in g6.serve_flags and "gemma4" in g6.serve_flags
    assert (g5g.instance_type, g5g.architecture) == ("g5g.2xlarge", "arm64")
    assert (inf2.instance_type, inf2.port, inf2.swap_gib, inf2.neuron_devices) == (
        "inf2.xlarge", 8080, 16, ("/dev/neuron0",))
    assert (trn1.instance_type, trn1.root_volume_gib) == ("trn1.2xlarge", 200)
    assert inf2.with_variant("tp2").image.tag == "tp2-slim"
    sagemaker = catalog.get("sagemaker")
    assert isinstance(sagemaker, SageMakerRig) and sagemaker.instance_type == "ml.g6.xlarge"
    assert sagemaker.image.reference("us-east-2").startswith("763104351884.dkr.ecr.us-east-2.amazonaws.com/vllm:")
    bedrock = catalog.get("bedrock")
    assert isinstance(bedrock, BedrockBackend) and bedrock.model_id == "us.amazon.nova-micro-v1:0"
    mantle = catalog.get("bedrock-mantle")  # the rigs' model through Bedrock's OpenAI-compatible endpoint
    assert isinstance(mantle, BedrockBackend) and (mantle.model_id, mantle.runtime) == ("google.gemma-4-e2b",
                                                                                        "bedrock-mantle")
    for rig in catalog.rigs.values():
        assert set(rig.regions) <= set(REGIONS)
    assert len({r.local_port for r in catalog.ec2_rigs()}) == 4


def test_unknown_rig_names_the_known_ones():
    with pytest.raises(UnknownRigError, match="unknown rig 'g7'; known rigs: g6, g5g, inf2, trn1, sagemaker, bedrock"):
        load_catalog().get("g7")


def test_unknown_key_is_reported_with_its_path():
    problems = problems_for(lambda d: d["rigs"]["g6"].update(instnce_type="g6.xlarge"))
    assert any(p.startswith("rigs.g6.instnce_type: unknown key") for p in problems)


@pytest.mark.parametrize("name", list(RAW["rigs"]))
def test_an_unknown_key_in_any_rig_fails_with_its_path_and_what_that_rig_takes(name):
    problems = problems_for(lambda d: d["rigs"][name].update(colour="red"))
    [problem] = problems
    assert problem.startswith(f"rigs.{name}.colour: unknown key (allowed: ")
    allowed = problem.split("(allowed: ", 1)[1].rstrip(")").split(", ")
    assert set(RAW["rigs"][name]) <= set(allowed) and "colour" not in allowed
    assert ("neuron_devices" in allowed) == (RAW["rigs"][name]["runtime"] == "neuronx")


def test_an_unknown_key_in_a_variant_or_the_weights_fails_with_its_path():
    def misspell(d):
        d["rigs"]["inf2"]["variants"]["tp2"]["max_prompt_token"] = 4096
        d["rigs"]["bedrock"]["weights"]["enigne"] = "x"

    problems = problems_for(misspell)
    assert any(p.startswith("rigs.inf2.variants.tp2.max_prompt_token: unknown key") for p in problems)
    assert any(p.startswith("rigs.bedrock.weights.enigne: unknown key") for p in problems)


def test_missing_field_is_reported_with_its_path():
    problems = problems_for(lambda d: d["rigs"]["trn1"].pop("port"))
    assert "rigs.trn1.port: missing required field" in problems


@pytest.mark.parametrize("image", ["vllm/vllm-openai:latest", "vllm/vllm-openai"])
def test_unpinned_image_is_refused(image):
    problems = problems_for(lambda d: d["rigs"]["g6"].update(image=image))
    assert any(p.startswith("rigs.g6.image:") and ("latest" in p or "no tag" in p) for p in problems)


def test_neuron_runtime_on_a_gpu_instance_is_refused():
    problems = problems_for(lambda d: d["rigs"]["g6"].update(runtime="neuronx"))
    assert any(p.startswith("rigs.g6.runtime: neuronx needs a Neuron instance") for p in problems)


def test_vllm_on_a_neuron_instance_is_refused():
    problems = problems_for(lambda d: d["rigs"]["inf2"].update(runtime="vllm"))
    assert any(p.startswith("rigs.inf2.runtime: vllm is for GPU instances") for p in problems)


def test_architecture_must_match_the_instance_family():
    problems = problems_for(lambda d: d["rigs"]["g5g"].update(architecture="x86_64"))
    assert "rigs.g5g.architecture: g5g.2xlarge is arm64, not x86_64" in problems


def test_region_outside_the_four_is_refused():
    problems = problems_for(lambda d: d["rigs"]["inf2"].update(regions=["us-east-2", "eu-west-1"]))
    assert any(p.startswith("rigs.inf2.regions: eu-west-1 outside the four regions") for p in problems)


def test_local_port_clash_is_refused():
    problems = problems_for(lambda d: d["rigs"]["trn1"].update(local_port=8002))
    assert any(p.startswith("rigs.trn1.local_port: port clash: 8002") and "'inf2'" in p for p in problems)


def test_duplicate_rig_name_is_refused():
    text = CATALOG_PATH.read_text() + "\n  g6:\n    kind: bedrock\n"
    with pytest.raises(CatalogError) as caught:
        parse_catalog(text)
    assert any(p.startswith("rigs.g6: duplicate name") for p in caught.value.problems)


def test_duplicate_stack_name_is_refused():
    problems = problems_for(lambda d: d["rigs"]["trn1"].update(stack_name="InferenceInf2"))
    assert any(p.startswith("rigs.trn1.stack_name: InferenceInf2 is also the stack of rig 'inf2'") for p in problems)


def test_every_problem_is_reported_together():
    def break_many(d):
        d["rigs"]["g6"]["image"] = "vllm/vllm-openai:latest"
        d["rigs"]["inf2"]["regions"] = ["ap-south-1"]
        d["rigs"]["trn1"].pop("model_id")
        d["rigs"]["sagemaker"]["instance_type"] = "g6.xlarge"

    problems = problems_for(break_many)
    paths = {p.split(":", 1)[0] for p in problems}
    assert {"rigs.g6.image", "rigs.inf2.regions", "rigs.trn1.model_id", "rigs.sagemaker.instance_type"} <= paths


def test_wrong_types_are_reported_not_crashed_on():
    def break_types(d):
        d["rigs"]["g6"]["port"] = "8000"
        d["rigs"]["g6"]["serve_flags"] = ["--max-model-len", 8192]
        d["rigs"]["g6"]["tool_calls"] = "yes"
        d["rigs"]["bedrock"] = ["not", "a", "mapping"]

    problems = problems_for(break_types)
    assert any(p.startswith("rigs.g6.port: must be int") for p in problems)
    assert any(p.startswith("rigs.g6.serve_flags: every entry must be a string") for p in problems)
    assert any(p.startswith("rigs.g6.tool_calls: must be bool") for p in problems)
    assert any(p.startswith("rigs.bedrock: must be a mapping") for p in problems)


def test_not_yaml_is_one_clear_problem():
    with pytest.raises(CatalogError, match="not valid YAML"):
        parse_catalog("rigs: [unclosed")


def test_error_message_lists_every_problem_on_its_own_line():
    error = CatalogError(["a.b: one", "c.d: two"], "catalog.yaml")
    assert str(error) == "catalog.yaml: 2 problem(s) in the rig catalog:\n  - a.b: one\n  - c.d: two"


# --- per-region image pins ----------------------------------------------------------------

DLC_DIGEST = "sha256:f50ad6bf72933a1d30526e9f4c5793273d7799e9835840f7bacbb0da74dfc835"


def test_a_regional_image_is_pinned_per_region_and_unpinned_elsewhere():
    image = load_catalog().get("sagemaker").image
    assert image.regional and image.digests == {"us-east-2": DLC_DIGEST}
    assert image.digest_for("us-east-2") == DLC_DIGEST
    assert image.digest_for("us-east-1") is None and image.digest_for(None) is None
    assert image.reference("us-east-2") == (
        f"763104351884.dkr.ecr.us-east-2.amazonaws.com/vllm:{image.tag}@{DLC_DIGEST}")
    assert image.reference("us-east-1") == f"763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm:{image.tag}"


def test_a_global_image_has_one_digest_in_every_region():
    image = load_catalog().get("g6").image
    assert not image.regional
    assert image.digest_for("us-east-1") == image.digest_for("us-west-2") == image.digest


def test_a_regional_image_takes_no_single_digest():
    problems = problems_for(lambda d: d["rigs"]["sagemaker"].update(image_digest=DLC_DIGEST))
    assert any(p.startswith("rigs.sagemaker.image_digest: a regional registry is pinned per region") for p in problems)


def test_a_global_image_takes_no_per_region_pins():
    problems = problems_for(lambda d: d["rigs"]["g6"].update(image_digests={"us-east-2": DLC_DIGEST}))
    assert any(p.startswith("rigs.g6.image_digests: only an image with a {region} placeholder") for p in problems)


@pytest.mark.parametrize("pins", [{"us-east-1": DLC_DIGEST}, None], ids=["another-region", "none"])
def test_pins_are_optional_in_every_region_the_default_one_included(pins):
    """An unpinned region's digest is read at deploy time (stacks/parts/images/pin.py)."""
    data = copy.deepcopy(RAW)
    data["rigs"]["sagemaker"].pop("image_digests")
    if pins:
        data["rigs"]["sagemaker"]["image_digests"] = pins
    image = parse_catalog(yaml.safe_dump(data), source="test").get("sagemaker").image
    assert image.digest_for("us-east-2") is None and dict(image.digests) == (pins or {})


def test_bad_pins_are_reported_with_their_region():
    def break_pins(d):
        d["rigs"]["sagemaker"]["image_digests"] = {"us-east-2": DLC_DIGEST, "us-east-1": "sha256:short",
                                                   "eu-west-1": DLC_DIGEST}

    problems = problems_for(break_pins)
    assert any(p.startswith("rigs.sagemaker.image_digests.us-east-1: must look like sha256:") for p in problems)
    assert any(p.startswith("rigs.sagemaker.image_digests.eu-west-1: outside the four regions") for p in problems)


def test_a_pin_for_a_region_the_rig_does_not_run_in_is_refused():
    problems = problems_for(lambda d: d["rigs"]["sagemaker"]["image_digests"].update({"us-west-1": DLC_DIGEST}))
    assert any(p.startswith("rigs.sagemaker.image_digests: pins for us-west-1, which the rig does not run in")
               for p in problems)


# --- root volumes -------------------------------------------------------------------------------


def test_root_volume_is_the_snapshot_plus_what_the_rig_needs_and_never_below_its_floor():
    g6 = load_catalog().get("g6")
    assert (g6.root_volume_gib, g6.root_free_gib) == (100, 40)
    assert g6.root_volume_gib_for(45) == 100  # a small AMI: the floor
    assert g6.root_volume_gib_for(95) == 135  # a large AMI: its snapshot plus 40 GiB free


def test_every_ec2_rig_states_what_it_needs_free():
    problems = problems_for(lambda d: d["rigs"]["inf2"].pop("root_free_gib"))
    assert "rigs.inf2.root_free_gib: missing required field" in problems
    problems = problems_for(lambda d: d["rigs"]["inf2"].update(root_free_gib=0))
    assert "rigs.inf2.root_free_gib: must be 1 to 1024 GiB" in problems


def test_hf_token_required_is_a_flag_of_ec2_rigs_off_by_default():
    assert not any(rig.hf_token_required for rig in load_catalog().ec2_rigs())  # the catalog's models are ungated
    gated = copy.deepcopy(RAW)
    gated["rigs"]["g5g"]["hf_token_required"] = True
    assert parse_catalog(yaml.safe_dump(gated), source="test").get("g5g").hf_token_required
    assert problems_for(lambda d: d["rigs"]["g6"].update(hf_token_required="yes")) == [
        "rigs.g6.hf_token_required: must be bool, got 'yes'"]
    assert problems_for(lambda d: d["rigs"]["sagemaker"].update(hf_token_required=True))[0].startswith(
        "rigs.sagemaker.hf_token_required: unknown key")


def test_every_rig_states_what_it_serves_and_the_same_weights_are_told_apart():
    from rigs.catalog.model import weights_for

    catalog = load_catalog()
    g6, g5g, inf2, trn1, sm, bedrock, mantle = (catalog.get(n).weights for n in catalog.rigs)
    assert (g6.model, g6.precision, g6.bytes_per_weight, g6.memory_gib, g6.engine) == (
        "Gemma 4 E2B", "W4A16 (emb4 repack)", 0.5, 2.86, "vLLM 0.30.0")
    assert g6 == sm and catalog.get("g6").model_id == catalog.get("sagemaker").model_id  # the same weights, same engine
    assert (g5g.precision, g5g.bytes_per_weight, g5g.memory_gib) == ("fp16", 2.0, 9.8) and g5g.engine != g6.engine
    assert inf2 == trn1 and inf2.bytes_per_weight == 2.0 and inf2.engine.startswith("torch-neuronx")
    assert (bedrock.model, bedrock.bytes_per_weight, bedrock.memory_gib) == ("Amazon Nova Micro", None, None)
    assert (mantle.model, mantle.precision, mantle.bytes_per_weight) == (g6.model, "not published", None)
    for rig in catalog.rigs.values():
        assert rig.weights is not None and rig.weights.source.startswith("https://")
        assert rig.weights.memory_gib is None or rig.weights.memory_basis
    # a variant that changes the model states its own; another model than the catalog's has none on file
    big = weights_for(catalog.get("g6"), "google/gemma-4-12B-it-qat-w4a16-ct")
    assert big.model == "Gemma 4 12B" and catalog.get("g6").with_variant("big").weights == big
    assert weights_for(catalog.get("g6"), "someone/else") is None
    assert g6.metadata("weights_") == {
        "weights_model": "Gemma 4 E2B", "weights_precision": "W4A16 (emb4 repack)", "weights_bytes_per_weight": "0.5",
        "weights_memory_gib": "2.86", "weights_memory_basis": g6.memory_basis, "weights_engine": "vLLM 0.30.0",
        "weights_source": g6.source}


def test_bad_weights_are_reported_with_their_paths_at_once():
    def break_weights(d):
        d["rigs"]["g6"].pop("weights")
        w = d["rigs"]["g5g"]["weights"]
        w.update(bytes_per_weight=0, precision=" ", source="http://example.com/x", colour="red")
        w.pop("memory_basis")
        d["rigs"]["sagemaker"]["variants"]["big"].pop("weights")

    problems = problems_for(break_weights)
    assert "rigs.g6.weights: missing required field" in problems
    assert any(p.startswith("rigs.g5g.weights.colour: unknown key") for p in problems)
    assert "rigs.g5g.weights.bytes_per_weight: must be above 0 and at most 4" in problems
    assert "rigs.g5g.weights.precision: must not be empty" in problems
    assert any(p.startswith("rigs.g5g.weights.source: must be an https:// address") for p in problems)
    assert "rigs.g5g.weights.memory_basis: say where memory_gib comes from (a published log or report)" in problems
    assert any(p.startswith("rigs.sagemaker.variants.big.weights: a variant that changes the model must say what "
                            "it serves") for p in problems)


def test_the_models_and_instance_families_are_checked_with_their_paths():
    def break_them(d):
        arch = d["models"]["Qwen/Qwen3-8B"]["architecture"]
        arch.update(kv_heads=5, layer_pattern=["sliding", "full"])
        arch.pop("parameters")
        d["models"]["openai/gpt-oss-20b"]["architecture"]["kv_shared_layers"] = 24
        d["instance_families"]["g6"]["sizes"]["g6e.xlarge"] = 1

    problems = problems_for(break_them)
    assert "models.Qwen/Qwen3-8B.architecture.kv_heads: 5 KV heads do not divide 32 attention heads" in problems
    assert ("models.Qwen/Qwen3-8B.architecture.sliding_window: a pattern with sliding layers needs their window "
            "(tokens)") in problems
    assert any(p.startswith("models.Qwen/Qwen3-8B.architecture.parameters: give the parameter count") for p in problems)
    assert "models.openai/gpt-oss-20b.architecture.kv_shared_layers: must be fewer than the 24 layers" in problems
    assert "instance_families.g6.sizes.g6e.xlarge: not a size of g6 (g6.<size>)" in problems


def test_every_deployable_rig_runs_on_a_listed_family_and_neuron_rigs_say_why_they_serve_one_model():
    assert problems_for(lambda d: d["rigs"]["g5g"].update(instance_type="g5g.24xlarge")) == [
        "rigs.g5g.instance_type: g5g.24xlarge is in no instance family of instance_families: add its family "
        "(accelerator, memory, sizes)"]
    assert problems_for(lambda d: d["rigs"]["trn1"].pop("other_models")) == ["rigs.trn1.other_models: missing "
                                                                             "required field"]
    catalog = load_catalog()
    assert catalog.family_of("ml.g6.12xlarge")[0] == "g6" and catalog.family_of("ml.g5g.xlarge") is None


def test_a_model_bedrock_serves_says_what_its_openai_compatible_endpoint_offers():
    def mutate(data):
        del data["models"]["openai/gpt-oss-20b"]["bedrock_endpoint"]
        data["models"]["Qwen/Qwen3-8B"]["bedrock_endpoint"] = {"route": "/v2", "reasoning": "by-default",
                                                               "source": "https://docs.aws.amazon.com/x.html"}

    found = problems_for(mutate)
    assert any(p.startswith("models.openai/gpt-oss-20b.bedrock_endpoint: a model Bedrock serves (bedrock_id) says "
                            "what its OpenAI-compatible endpoint offers") for p in found), found
    assert any(p.startswith("models.Qwen/Qwen3-8B.bedrock_endpoint.route:") for p in found), found
    gemma = load_catalog().bedrock_endpoint("google.gemma-4-e2b")
    assert (gemma.route, gemma.parallel_tool_calls, gemma.reasoning) == ("/openai/v1", False, "by-default")


def test_the_families_a_rig_also_deploys_on_are_listed_of_its_kind_and_offered_where_it_runs():
    def also_on(data: dict) -> None:
        data["rigs"]["g6"]["also_on"] = ["g7", "inf2", "g5g"]
        data["instance_families"]["g4dn"]["sagemaker"] = False
        data["rigs"]["sagemaker"]["also_on"] = ["g4dn"]

    assert problems_for(also_on) == [
        "rigs.g6.also_on[0]: g7 is not one of instance_families",
        "rigs.g6.also_on[1]: inf2 is not the same kind of instance as g6.xlarge",
        "rigs.g6.also_on[2]: g5g is not the same kind of instance as g6.xlarge",
        "rigs.sagemaker.also_on[0]: SageMaker hosting offers no ml.g4dn sizes"]


def test_a_gpu_family_states_its_compute_capability_and_a_neuron_family_none():
    def capability(data: dict) -> None:
        del data["instance_families"]["g6"]["compute_capability"]
        data["instance_families"]["inf2"]["compute_capability"] = "8.9"

    found = problems_for(capability)
    assert any(p.startswith("instance_families.g6.compute_capability: a GPU family needs its CUDA compute "
                            "capability") for p in found)
    assert any(p.startswith("instance_families.inf2.compute_capability: a Neuron family has none") for p in found)
