"""Which backends a run uses: selection, local fallback, AWS availability, discovery results."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

from agent.backends import from_env
from agent.reach.discovery import Discovery, FoundRig, Skipped
from agent.plan import make_plan, needs_aws
from rigs.catalog.model import load_catalog
from rigs.contract import REGIONS, RigOutputs

CATALOG = load_catalog()


def found_g6(region: str = "us-east-2") -> FoundRig:
    outputs = RigOutputs(rig="g6", region=region, runtime="vllm", model_id="deployed-model",
                         instance_type="g6.xlarge", remote_port=8000, auto_scaling_group="asg",
                         endpoint_name=None, log_group=None)
    return FoundRig(name="g6", region=region, stack_name="InferenceG6", outputs=outputs, instance_id="i-0abc",
                    metadata=MappingProxyType({"ami_id": "ami-1", "availability_zone": f"{region}a"}))


def found_sagemaker() -> FoundRig:
    outputs = RigOutputs(rig="sagemaker", region="us-east-2", runtime="sagemaker-vllm", model_id="sm-model",
                         instance_type="ml.g6.xlarge", remote_port=None, auto_scaling_group=None,
                         endpoint_name="ep-1", log_group=None)
    return FoundRig(name="sagemaker", region="us-east-2", stack_name="InferenceSageMaker", outputs=outputs)


def plan(env=None, selection=None, local=False, aws_ok=False, reason="", discovery=None, overrides=None):
    return make_plan(catalog=CATALOG, env=from_env(env or {}, CATALOG), selection=selection, local=local,
                     aws_ok=aws_ok, aws_reason=reason, discovery=discovery,
                     model_overrides=overrides or {})


def test_nothing_configured_selects_the_local_rig() -> None:
    result = plan(reason="no AWS credentials found")
    assert result.names == ["local"]
    assert "nothing else is configured (no AWS credentials found" in result.local_reason
    assert result.missing == []
    skipped = {s.name: s.reason for s in result.skipped}
    assert skipped["bedrock"] == "no AWS credentials found"
    assert "G6_URL" in skipped["g6"] and "SM_ENDPOINT" in skipped["sagemaker"]


def test_a_url_needs_no_aws_and_no_local_rig() -> None:
    result = plan(env={"G6_URL": "http://127.0.0.1:9/v1"}, reason="no AWS credentials found")
    assert result.names == ["g6"]
    assert not result.local


def test_local_beside_the_others() -> None:
    result = plan(env={"G6_URL": "http://127.0.0.1:9/v1"}, local=True)
    assert result.names == ["g6", "local"]
    assert result.local_reason == "selected with --local"


def test_local_by_name() -> None:
    result = plan(selection=("local",))
    assert result.names == ["local"] and result.missing == []


def test_selected_but_unavailable_is_missing() -> None:
    result = plan(selection=("bedrock", "g6"), reason="no AWS credentials found")
    assert result.missing == ["bedrock", "g6"]
    assert not result.local  # an explicit selection never falls back to the local rig


def test_credentials_bring_bedrock_and_discovered_rigs() -> None:
    discovery = Discovery(regions=REGIONS, rigs=[found_g6(), found_sagemaker()],
                          skipped=[Skipped("inf2", "no deployed stack found in us-east-1")])
    result = plan(aws_ok=True, discovery=discovery, env={"BEDROCK_MODEL": "us.amazon.nova-lite-v1:0"})
    assert result.names == ["bedrock", "bedrock-mantle", "g6", "sagemaker"]  # Bedrock's two ways, on by default
    assert not result.local
    bedrock, mantle, sagemaker = result.ready
    assert (mantle.model_id, mantle.region, mantle.base_url) == ("google.gemma-4-e2b", "us-east-1",
                                                                  "https://bedrock-mantle.us-east-1.api.aws/openai/v1")
    assert bedrock.model_id == "us.amazon.nova-lite-v1:0" and bedrock.region == "us-east-1"
    assert (sagemaker.endpoint_name, sagemaker.region, sagemaker.model_id) == ("ep-1", "us-east-2", "sm-model")
    target = result.forwards[0]
    assert target.model_id == "deployed-model" and target.local_port == 8001
    backend = target.backend("http://127.0.0.1:8001/v1", "SSM port forward ...")
    assert backend.kind == "openai" and backend.tool_calls
    assert backend.metadata["ami_id"] == "ami-1"
    assert backend.metadata["image_digest"].startswith("sha256:")
    assert "--tool-call-parser" in backend.metadata["serve_flags"]
    assert [s.name for s in result.skipped] == ["inf2"]


def test_sagemaker_image_is_shown_for_its_region() -> None:
    result = plan(aws_ok=True, discovery=Discovery(regions=REGIONS, rigs=[found_sagemaker()]))
    sagemaker = next(b for b in result.ready if b.name == "sagemaker")
    image = sagemaker.metadata["image"]
    assert image.startswith("763104351884.dkr.ecr.us-east-2.amazonaws.com/vllm:") and "{region}" not in image
    assert image.endswith("@" + sagemaker.metadata["image_digest"])
    from_env_only = from_env({"SM_ENDPOINT": "ep", "SM_REGION": "us-west-2"}, CATALOG)
    assert ".us-west-2.amazonaws.com/vllm:" in from_env_only.backends[0].metadata["image"]


def test_a_rig_served_at_another_context_is_limited_and_predicted_at_it() -> None:
    """-c max_model_len.sagemaker=31232 (a rehearsal's --workload): the stack's ContextTokens output, not the
    catalog's 8,192, is the endpoint's limit (its server is not asked) and the context its KV cache is predicted at."""
    found = found_sagemaker()
    found = dataclasses.replace(found, outputs=dataclasses.replace(found.outputs, model_id="Qwen/Qwen3-8B",
                                                                   instance_type="ml.g6.12xlarge",
                                                                   context_tokens=31232))
    sagemaker, = plan(aws_ok=True, discovery=Discovery(regions=REGIONS, rigs=[found]), selection=("sagemaker",)).ready
    assert sagemaker.max_total_tokens == 31232
    expected = sagemaker.provenance["expected"]
    assert expected["context_tokens"] == {"value": 31232, "source": "the stack's ContextTokens output (the context it "
                                                                     "was served at)"}
    assert "31,232 tokens" in expected["kv_cache_tokens"]["source"]
    assert CATALOG.get("sagemaker").stated_limits()["max_total_tokens"] == 8192  # the catalog's, without the output


def test_url_beats_discovery_and_model_variables_apply() -> None:
    discovery = Discovery(regions=REGIONS, rigs=[found_g6()])
    result = plan(aws_ok=True, discovery=discovery, env={"G6_URL": "http://127.0.0.1:9"})
    assert result.forwards == []
    assert [b.base_url for b in result.ready if b.name == "g6"] == ["http://127.0.0.1:9/v1"]
    result = plan(aws_ok=True, discovery=discovery, overrides={"G6_MODEL": "repack"})
    assert result.forwards[0].model_id == "repack"


def test_backends_filter() -> None:
    discovery = Discovery(regions=REGIONS, rigs=[found_g6(), found_sagemaker()])
    result = plan(aws_ok=True, discovery=discovery, selection=("sagemaker",))
    assert result.names == ["sagemaker"]


def test_sm_endpoint_without_credentials() -> None:
    result = plan(env={"SM_ENDPOINT": "ep"}, selection=("sagemaker",), reason="no AWS credentials found")
    assert result.missing == ["sagemaker"]
    assert "SM_ENDPOINT=ep in us-east-2, but no AWS credentials found" in str(result.skipped)


def test_needs_aws() -> None:
    env = from_env({"G6_URL": "http://h:1", "SM_ENDPOINT": "ep"}, CATALOG)
    assert not needs_aws(None, env)
    assert not needs_aws(("g6", "local"), env)
    assert needs_aws(("g6", "sagemaker"), env)
    assert needs_aws(("bedrock",), env)
    assert needs_aws(("inf2",), env)


def found_g6_serving(model_id: str) -> FoundRig:
    g6 = found_g6()
    return dataclasses.replace(g6, outputs=dataclasses.replace(g6.outputs, model_id=model_id))


def test_bedrock_mantle_serves_the_rigs_model_where_bedrock_serves_it() -> None:
    g6 = CATALOG.get("g6")
    same = plan(aws_ok=True, discovery=Discovery(regions=REGIONS, rigs=[found_g6_serving(g6.model_id)]))
    mantle = next(b for b in same.ready if b.name == "bedrock-mantle")
    assert mantle.model_id == "google.gemma-4-e2b" and mantle.metadata["weights_model"] == "Gemma 4 E2B"
    big = g6.variants["big"].model_id  # Gemma 4 12B: no such model on Bedrock
    other = plan(aws_ok=True, discovery=Discovery(regions=REGIONS, rigs=[found_g6_serving(big)]),
                 selection=("bedrock-mantle", "g6"))
    assert "bedrock-mantle" not in other.names and other.missing == ["bedrock-mantle"]
    assert {s.name: s.reason for s in other.skipped}["bedrock-mantle"].startswith(
        "the rigs serve Gemma 4 12B, which Bedrock's OpenAI-compatible endpoint does not serve")
    # a model of the catalog's models section: the id its entry names, or why not (its bedrock_note)
    oss = plan(aws_ok=True, discovery=Discovery(regions=REGIONS, rigs=[found_g6_serving("openai/gpt-oss-20b")]))
    mantle = next(b for b in oss.ready if b.name == "bedrock-mantle")
    assert (mantle.model_id, mantle.metadata["weights_model"], mantle.metadata["weights_precision"]) == (
        "openai.gpt-oss-20b", "gpt-oss-20b", "not published")
    mistral = plan(aws_ok=True, discovery=Discovery(regions=REGIONS,
                                                    rigs=[found_g6_serving("mistralai/Mistral-7B-Instruct-v0.3")]))
    assert "(Bedrock serves Mistral 7B Instruct v0.2 (mistral.mistral-7b-instruct-v0:2), not v0.3)" in {
        s.name: s.reason for s in mistral.skipped}["bedrock-mantle"]
    named = plan(aws_ok=True, discovery=Discovery(regions=REGIONS, rigs=[found_g6_serving(big)]),
                 env={"BEDROCK_MANTLE_MODEL": "google.gemma-4-31b"})
    assert next(b for b in named.ready if b.name == "bedrock-mantle").model_id == "google.gemma-4-31b"


def test_bedrock_mantle_with_an_api_key_needs_no_aws_credentials() -> None:
    keyed = plan(env={"AWS_BEARER_TOKEN_BEDROCK": "key"}, reason="no AWS credentials found")
    assert keyed.names == ["bedrock-mantle"] and keyed.ready[0].metadata["auth_mode"] == "bearer"
    assert needs_aws(("bedrock-mantle",), from_env({}, CATALOG)) is False  # signed locally, no AWS API asked first
    unsigned = plan(selection=("bedrock-mantle",), reason="no AWS credentials found")
    assert unsigned.missing == ["bedrock-mantle"] and not unsigned.local


def test_a_neuron_rig_deployed_on_the_vllm_neuron_image_is_reached_as_vllm_serves_it() -> None:
    """inf2's stack says it runs neuron-vllm (``-c model.inf2=Qwen/Qwen3-8B``): an OpenAI-compatible vLLM server at
    the image's port, with no hand-ported 128-token prompt limit, and expected to be what the deploy made."""
    outputs = RigOutputs(rig="inf2", region="us-east-2", runtime="neuron-vllm", model_id="Qwen/Qwen3-8B",
                         instance_type="inf2.8xlarge", remote_port=8000, auto_scaling_group="asg",
                         endpoint_name=None, log_group=None)
    found = FoundRig(name="inf2", region="us-east-2", stack_name="InferenceInf2", outputs=outputs, instance_id="i-0n")
    [target] = plan(aws_ok=True, discovery=Discovery(regions=REGIONS, rigs=[found]), selection=("inf2",)).forwards
    backend = target.backend("http://127.0.0.1:9/v1", "test")
    assert (backend.kind, backend.model_id, backend.max_prompt_tokens, backend.max_total_tokens) == (
        "openai", "Qwen/Qwen3-8B", None, 8192)
    expected = backend.provenance["expected"]
    assert (expected["engine"]["value"], expected["engine_version"]["value"], expected["instance_type"]["value"]) == (
        "vLLM", "0.16.0", "inf2.8xlarge")
    assert "kv_cache_tokens" not in expected  # compiled for 4 x 8,192: nothing for rigs fit to predict
    assert backend.metadata["image"] == CATALOG.neuron_vllm.image.reference()
    assert backend.metadata["weights_engine"] == CATALOG.neuron_vllm.engine
